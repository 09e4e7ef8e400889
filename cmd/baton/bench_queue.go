package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	baton "github.com/batonhq/baton"
	"github.com/batonhq/baton/app"
	"github.com/batonhq/baton/controller"
	"github.com/batonhq/baton/httpapi"
	"github.com/batonhq/baton/internal/redisns"
	"github.com/batonhq/baton/worker"
)

// queueBenchResult is the JSON line baton bench queue --json prints last.
type queueBenchResult struct {
	Bench       string  `json:"bench"`
	Store       string  `json:"store"`
	Tasks       int     `json:"tasks"`
	TasksPerSec float64 `json:"tasksPerSec"`
	ElapsedMs   int64   `json:"elapsedMs"`
	// P50Ms/P99Ms: a claim long-polling an empty queue, from the moment a
	// task is submitted until the claim returns it.
	P50Ms       float64 `json:"p50Ms"`
	P99Ms       float64 `json:"p99Ms"`
	WakeSamples int     `json:"wakeSamples"`
	Workers     int     `json:"workers"`
	Concurrency int     `json:"concurrency"`
	Producers   int     `json:"producers"`
	Batch       int     `json:"batch"`
	GOMAXPROCS  int     `json:"gomaxprocs"`
}

func newBenchQueue() *cobra.Command {
	var (
		redisURL, db                string
		tasks, workers, conc, prods int
		batch, wakeSamples          int
		asJSON                      bool
	)
	cmd := &cobra.Command{
		Use:   "queue",
		Short: "No-op tasks end to end over HTTP: create → claim → result",
		RunE: func(cmd *cobra.Command, _ []string) error {
			_ = db
			res, err := benchQueue(cmd.Context(), cmd.ErrOrStderr(), redisURL, tasks, workers, conc, prods, batch, wakeSamples)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "store=%s tasks=%d elapsed=%s → %.0f tasks/s; empty-queue claim wake-up p50=%.2fms p99=%.2fms (%d samples)\n",
				res.Store, res.Tasks, time.Duration(res.ElapsedMs)*time.Millisecond, res.TasksPerSec, res.P50Ms, res.P99Ms, res.WakeSamples)
			if asJSON {
				b, _ := json.Marshal(res)
				fmt.Fprintln(out, string(b))
			}
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&redisURL, "redis", "", "Redis URL (empty = embedded SQLite store)")
	fs.StringVar(&db, "db", "", "main DB DSN (unused by the queue benchmark; accepted for symmetry)")
	fs.IntVar(&tasks, "tasks", 200000, "tasks to run")
	fs.IntVar(&workers, "workers", 8, "HTTP workers (each its own client, claiming and reporting in batches)")
	fs.IntVar(&conc, "concurrency", 256, "task slots per worker (also its claim batch, max 256)")
	fs.IntVar(&prods, "producers", 2, "concurrent producers creating tasks")
	fs.IntVar(&batch, "batch", 1000, "tasks per create request")
	fs.IntVar(&wakeSamples, "wake-samples", 200, "empty-queue claim wake-up samples")
	fs.BoolVar(&asJSON, "json", false, "print the figures as one JSON object on the last line")
	usageEnv(fs)
	return cmd
}

func benchQueue(ctx context.Context, progress io.Writer, redisURL string, n, nWorkers, conc, prods, batch, wakeSamples int) (queueBenchResult, error) {
	res := queueBenchResult{Bench: "queue", Store: "sqlite", Tasks: n, Workers: nWorkers, Concurrency: conc,
		Producers: prods, Batch: batch, WakeSamples: wakeSamples}
	if redisURL != "" {
		res.Store = "redis"
	}
	dir, err := os.MkdirTemp("", "baton-bench-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	ns := "bench-" + controller.NewID()
	if redisURL != "" {
		defer func() { _, _ = redisns.Drop(context.Background(), redisURL, ns) }()
	}
	a, err := app.New(ctx, app.Config{
		Addr: "127.0.0.1:0", DataDir: dir, Redis: redisURL, RedisNamespace: ns,
		Workers: 0, Logger: quiet,
	})
	if err != nil {
		return res, err
	}
	if err := a.Start(ctx); err != nil {
		return res, err
	}
	defer a.Shutdown(context.Background())
	admin := httpapi.NewClient(a.URL(), a.Tokens.Admin)

	var done atomic.Int64
	reg := worker.NewRegistry()
	reg.Register("bench.noop", worker.HandlerFunc(func(context.Context, *baton.Task) baton.Result {
		done.Add(1)
		return baton.Result{Outcome: baton.OutcomePass}
	}))
	wctx, wcancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for i := 0; i < nWorkers; i++ {
		w, err := worker.New(worker.Config{
			API: httpapi.NewClient(a.URL(), a.Tokens.Worker), Registry: reg, Concurrency: conc,
			MaxClaim: conc, ClaimWait: time.Second, ShutdownGrace: 5 * time.Second, Logger: quiet,
		})
		if err != nil {
			wcancel()
			return res, err
		}
		wg.Add(1)
		go func() { defer wg.Done(); _ = w.Run(wctx) }()
	}

	fmt.Fprintf(progress, "running %d no-op tasks through %s store...\n", n, res.Store)
	start := time.Now()
	var next atomic.Int64
	errc := make(chan error, prods)
	for p := 0; p < prods; p++ {
		go func() {
			for {
				lo := next.Add(int64(batch)) - int64(batch)
				if lo >= int64(n) {
					errc <- nil
					return
				}
				k := min(int64(batch), int64(n)-lo)
				specs := make([]controller.TaskSpec, k)
				for i := range specs {
					specs[i] = controller.TaskSpec{Type: "bench.noop"}
				}
				if _, err := admin.CreateTasks(ctx, specs); err != nil {
					errc <- err
					return
				}
			}
		}()
	}
	for p := 0; p < prods; p++ {
		if err := <-errc; err != nil {
			wcancel()
			return res, fmt.Errorf("create tasks: %w", err)
		}
	}
	// Completed = result accepted by the controller: wait until the queue is empty.
	for {
		qs, err := admin.Queues(ctx)
		if err != nil {
			wcancel()
			return res, err
		}
		busy := false
		for _, q := range qs {
			if q.Name == "bench.noop" && q.Ready+q.Running+q.Retry > 0 {
				busy = true
			}
		}
		if !busy && done.Load() >= int64(n) {
			break
		}
		time.Sleep(2 * time.Millisecond)
	}
	el := time.Since(start)
	wcancel()
	wg.Wait()
	res.ElapsedMs = el.Milliseconds()
	res.TasksPerSec = float64(n) / el.Seconds()
	res.GOMAXPROCS = runtime.GOMAXPROCS(0)

	// Wake-up latency: a claim waits on an empty queue; a task is created;
	// how long until the claim returns it?
	wc := httpapi.NewClient(a.URL(), a.Tokens.Worker)
	lat := make([]float64, 0, wakeSamples)
	for i := 0; i < wakeSamples; i++ {
		got := make(chan time.Time, 1)
		go func() {
			ts, err := wc.Claim(ctx, baton.ClaimRequest{WorkerID: "bench-probe", Types: []string{"bench.probe"}, Max: 1, WaitMs: 5000})
			got <- time.Now()
			if err == nil && len(ts) == 1 {
				_, _ = wc.Results(ctx, []baton.ResultItem{{TaskID: ts[0].ID, Result: baton.Result{LeaseToken: ts[0].LeaseToken, Outcome: baton.OutcomePass}}})
			}
		}()
		time.Sleep(5 * time.Millisecond) // let the claim start waiting
		t0 := time.Now()
		if _, err := admin.CreateTask(ctx, controller.TaskSpec{Type: "bench.probe"}); err != nil {
			return res, err
		}
		t1 := <-got
		lat = append(lat, float64(t1.Sub(t0).Microseconds())/1000)
	}
	sort.Float64s(lat)
	if len(lat) > 0 {
		res.P50Ms = lat[len(lat)*50/100]
		res.P99Ms = lat[min(len(lat)-1, len(lat)*99/100)]
	}
	return res, nil
}
