package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/batonhq/baton/app"
	"github.com/batonhq/baton/controller"
	"github.com/batonhq/baton/httpapi"
	"github.com/batonhq/baton/internal/redisns"
	"github.com/batonhq/baton/pipeline"
	"github.com/batonhq/baton/sandbox"
)

// pipelineBenchResult is the JSON line baton bench pipeline --json prints last.
type pipelineBenchResult struct {
	Bench         string  `json:"bench"`
	Store         string  `json:"store"`
	DB            string  `json:"db"`
	Domains       int     `json:"domains"`
	Steps         int     `json:"steps"`
	StepRuns      int64   `json:"stepRuns"`
	DomainsPerSec float64 `json:"domainsPerSec"`
	StepsPerSec   float64 `json:"stepsPerSec"`
	ElapsedMs     int64   `json:"elapsedMs"`
	// P50Ms/P99Ms: time from the scan to a domain's final ledger write.
	P50Ms      float64 `json:"p50Ms"`
	P99Ms      float64 `json:"p99Ms"`
	Workers    int     `json:"workers"`
	Failures   bool    `json:"failures"`
	GOMAXPROCS int     `json:"gomaxprocs"`
}

func newBenchPipeline() *cobra.Command {
	var (
		redisURL, db string
		n, workers   int
		failures     bool
		asJSON       bool
	)
	cmd := &cobra.Command{
		Use:   "pipeline",
		Short: "Domains through all seven steps against the sandbox",
		RunE: func(cmd *cobra.Command, _ []string) error {
			res, err := benchPipeline(cmd.Context(), cmd.ErrOrStderr(), redisURL, db, n, workers, failures)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "store=%s db=%s domains=%d step runs=%d elapsed=%s → %.0f domains/s, %.0f step runs/s; scan→final p50=%.0fms p99=%.0fms\n",
				res.Store, res.DB, res.Domains, res.StepRuns, time.Duration(res.ElapsedMs)*time.Millisecond, res.DomainsPerSec, res.StepsPerSec, res.P50Ms, res.P99Ms)
			if asJSON {
				b, _ := json.Marshal(res)
				fmt.Fprintln(out, string(b))
			}
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&redisURL, "redis", "", "Redis URL (empty = embedded SQLite store)")
	fs.StringVar(&db, "db", "", "main DB DSN (empty = SQLite in a temporary directory)")
	fs.IntVar(&n, "domains", 2000, "domains to run")
	fs.IntVar(&workers, "workers", 64, "in-process worker slots")
	fs.BoolVar(&failures, "failures", false, "use the sandbox's outcome bands with their 429/5xx/timeouts (default: names that pass every step, to measure the engine)")
	fs.BoolVar(&asJSON, "json", false, "print the figures as one JSON object on the last line")
	usageEnv(fs)
	return cmd
}

// passName returns a name the sandbox passes at every step: the markers
// pick each step's good final behaviour.
func passName(i int) string {
	return fmt.Sprintf("b%d-free-indexed-weight-br-clean-history-ok-x.com", i)
}

func benchPipeline(ctx context.Context, progress io.Writer, redisURL, db string, n, workers int, failures bool) (pipelineBenchResult, error) {
	res := pipelineBenchResult{Bench: "pipeline", Store: "sqlite", DB: "sqlite", Domains: n, Steps: len(pipeline.Steps),
		Workers: workers, Failures: failures, GOMAXPROCS: runtime.GOMAXPROCS(0)}
	if redisURL != "" {
		res.Store = "redis"
	}
	if db != "" {
		res.DB = strings.SplitN(db, ":", 2)[0]
	}
	dir, err := os.MkdirTemp("", "baton-bench-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	ns := "bench-" + controller.NewID()
	if redisURL != "" {
		defer func() { _, _ = redisns.Drop(context.Background(), redisURL, ns) }()
	}
	a, err := app.New(ctx, app.Config{
		Addr: "127.0.0.1:0", DataDir: dir, Redis: redisURL, RedisNamespace: ns, DB: db, Sandbox: true,
		Workers: workers, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Pipeline: app.PipelineConfig{NoDispatchLoop: true, SandboxHang: 3 * time.Second, CheckTimeout: time.Second, MaxInFlight: int64(n) + 1},
	})
	if err != nil {
		return res, err
	}
	if err := a.Start(ctx); err != nil {
		return res, err
	}
	defer a.Shutdown(context.Background())
	c := httpapi.NewClient(a.URL(), a.Tokens.Admin)

	var cfg pipeline.Config
	if err := c.Do(ctx, http.MethodGet, "/api/pipeline", nil, &cfg); err != nil {
		return res, err
	}
	for i := range cfg.Steps {
		cfg.Steps[i].Enabled, cfg.Steps[i].RatePerMin, cfg.Steps[i].MaxAttempts = true, 0, 8
	}
	if err := c.Do(ctx, http.MethodPut, "/api/pipeline", cfg, nil); err != nil {
		return res, err
	}
	names := make([]string, n)
	tlds := sandbox.TLDs()
	for i := range names {
		if failures {
			names[i] = fmt.Sprintf("bench%d.%s", i, tlds[i%len(tlds)])
		} else {
			names[i] = passName(i)
		}
	}
	if _, err := postImport(ctx, c, []byte(strings.Join(names, "\n")+"\n")); err != nil {
		return res, err
	}
	fmt.Fprintf(progress, "running %d domains through %d steps (%s store, %s main DB)...\n", n, len(pipeline.Steps), res.Store, res.DB)
	start := time.Now()
	var st pipeline.ScanStats
	if err := c.Do(ctx, http.MethodPost, "/api/pipeline/scan", nil, &st); err != nil {
		return res, err
	}
	// Done when no domain task waits or runs and the ledger has every
	// domain in a final status.
	terminal := map[string]bool{"passed": true, "rejected": true, "blacklisted": true, "review": true, "failed": true}
	for {
		time.Sleep(100 * time.Millisecond)
		var f struct {
			Steps []struct {
				Reached int64 `json:"reached"`
			} `json:"steps"`
		}
		if err := c.Do(ctx, http.MethodGet, "/api/pipeline/funnel", nil, &f); err != nil {
			return res, err
		}
		busy := false
		qs, err := c.Queues(ctx)
		if err != nil {
			return res, err
		}
		for _, q := range qs {
			if strings.HasPrefix(q.Name, "domain.") && q.Ready+q.Running+q.Retry > 0 {
				busy = true
			}
		}
		if busy {
			continue
		}
		var page struct {
			Domains []pipeline.DomainView `json:"domains"`
		}
		if err := c.Do(ctx, http.MethodGet, "/api/domains?limit=1&status=running", nil, &page); err != nil {
			return res, err
		}
		if len(page.Domains) == 0 {
			if err := c.Do(ctx, http.MethodGet, "/api/domains?limit=1&status=pending", nil, &page); err != nil {
				return res, err
			}
			if len(page.Domains) == 0 {
				break
			}
		}
	}
	el := time.Since(start)
	// Per-domain latency and step runs from the ledger.
	var lat []float64
	var cursor string
	for {
		var page struct {
			Domains []pipeline.DomainView `json:"domains"`
			Next    string                `json:"next"`
		}
		if err := c.Do(ctx, http.MethodGet, "/api/domains?limit=5000&cursor="+cursor, nil, &page); err != nil {
			return res, err
		}
		for _, d := range page.Domains {
			if terminal[string(d.Status)] {
				lat = append(lat, float64(d.UpdatedAt.Sub(start).Milliseconds()))
			}
		}
		if page.Next == "" {
			break
		}
		cursor = page.Next
	}
	var f struct {
		Steps []struct {
			Reached int64 `json:"reached"`
		} `json:"steps"`
	}
	if err := c.Do(ctx, http.MethodGet, "/api/pipeline/funnel", nil, &f); err != nil {
		return res, err
	}
	for _, s := range f.Steps {
		res.StepRuns += s.Reached
	}
	sort.Float64s(lat)
	if len(lat) > 0 {
		res.P50Ms = lat[len(lat)/2]
		res.P99Ms = lat[min(len(lat)-1, len(lat)*99/100)]
	}
	res.ElapsedMs = el.Milliseconds()
	res.DomainsPerSec = float64(n) / el.Seconds()
	res.StepsPerSec = float64(res.StepRuns) / el.Seconds()
	return res, nil
}
