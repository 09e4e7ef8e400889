// Package worker is the pull loop every Baton worker runs, remote (baton
// worker, over HTTP) or in-process (baton serve --workers N): claim tasks in
// batches for the free slots, run the handler registered for each task's
// type, heartbeat well inside the lease, report results in batches, back
// off while the controller is unreachable, and on shutdown finish or hand
// back what it holds.
package worker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math"
	mrand "math/rand/v2"
	"os"
	"runtime"
	"sync"
	"time"

	baton "github.com/batonhq/baton"
)

// Config configures a Worker. Zero values take the documented defaults.
type Config struct {
	// API reaches the controller; required.
	API baton.WorkerAPI
	// Registry holds the handlers; required.
	Registry *Registry
	// ID identifies the worker to the controller; default host-pid-random.
	ID string
	// Name is a human label shown in the worker list; default the host name.
	Name string
	// Types are the queue globs claimed; default Registry.Queues().
	Types []string
	// Concurrency is the number of tasks run at once; default GOMAXPROCS.
	Concurrency int
	// MaxClaim bounds one claim; default min(Concurrency, 256).
	MaxClaim int
	// ClaimWait is the long-poll wait of a claim; default 30s.
	ClaimWait time.Duration
	// ResultBatch bounds one results request; default 256.
	ResultBatch int
	// ResultLinger is how long the reporter waits for more results to
	// join a request that is not full; default 2ms (0 keeps the default,
	// negative disables). A few milliseconds turn many one-result requests
	// — each a store transaction — into a few large ones.
	ResultLinger time.Duration
	// ShutdownGrace is how long running tasks may finish after shutdown
	// begins before they are cancelled and handed back; default 30s.
	ShutdownGrace time.Duration
	// Logger; default slog.Default().
	Logger *slog.Logger
}

// Worker runs tasks pulled from a controller.
type Worker struct {
	cfg Config
	log *slog.Logger

	results chan baton.ResultItem
	running sync.WaitGroup

	mu     sync.Mutex
	active map[string]*activeTask
}

type activeTask struct {
	task   *baton.Task
	cancel context.CancelFunc
	// lost is set when the lease was lost or handed back: no result is sent.
	lost bool
}

// New validates cfg and returns a worker.
func New(cfg Config) (*Worker, error) {
	if cfg.API == nil {
		return nil, errors.New("worker: Config.API is required")
	}
	if cfg.Registry == nil {
		return nil, errors.New("worker: Config.Registry is required")
	}
	if cfg.ID == "" {
		cfg.ID = DefaultID()
	}
	if cfg.Name == "" {
		cfg.Name, _ = os.Hostname()
	}
	if len(cfg.Types) == 0 {
		cfg.Types = cfg.Registry.Queues()
	}
	if len(cfg.Types) == 0 {
		return nil, errors.New("worker: no handlers registered (nothing to claim)")
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = runtime.GOMAXPROCS(0)
	}
	if cfg.MaxClaim <= 0 {
		cfg.MaxClaim = min(cfg.Concurrency, baton.MaxClaim)
	}
	cfg.MaxClaim = min(cfg.MaxClaim, baton.MaxClaim)
	if cfg.ClaimWait <= 0 {
		cfg.ClaimWait = 30 * time.Second
	}
	if cfg.ResultBatch <= 0 {
		cfg.ResultBatch = 256
	}
	if cfg.ResultLinger == 0 {
		cfg.ResultLinger = 2 * time.Millisecond
	}
	if cfg.ShutdownGrace <= 0 {
		cfg.ShutdownGrace = 30 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Worker{
		cfg:     cfg,
		log:     cfg.Logger.With("component", "worker", "worker", cfg.ID),
		results: make(chan baton.ResultItem, cfg.Concurrency+cfg.ResultBatch),
		active:  map[string]*activeTask{},
	}, nil
}

// DefaultID returns host-pid-random, unique per process.
func DefaultID() string {
	h, _ := os.Hostname()
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s-%d-%s", h, os.Getpid(), hex.EncodeToString(b[:]))
}

// ID returns the worker's ID.
func (w *Worker) ID() string { return w.cfg.ID }

// Run pulls and runs tasks until ctx is cancelled, then stops claiming,
// lets running tasks finish for up to ShutdownGrace, cancels and hands
// back the rest, delivers every pending result and returns.
func (w *Worker) Run(ctx context.Context) error {
	// hard ends the handlers: only after the grace period.
	hard, hardCancel := context.WithCancel(context.WithoutCancel(ctx))
	defer hardCancel()
	// The reporter outlives ctx: results of finishing tasks must still go out.
	repCtx, repCancel := context.WithCancel(context.WithoutCancel(ctx))
	repDone := make(chan struct{})
	go func() { defer close(repDone); w.report(repCtx) }()

	slots := make(chan struct{}, w.cfg.Concurrency)
	for i := 0; i < w.cfg.Concurrency; i++ {
		slots <- struct{}{}
	}
	failures := 0
	for ctx.Err() == nil {
		// Wait for one free slot, then take every other free one.
		select {
		case <-slots:
		case <-ctx.Done():
			continue
		}
		n := 1
	more:
		for n < w.cfg.MaxClaim {
			select {
			case <-slots:
				n++
			default:
				break more
			}
		}
		tasks, err := w.cfg.API.Claim(ctx, baton.ClaimRequest{
			WorkerID: w.cfg.ID, Name: w.cfg.Name, Types: w.cfg.Types, Max: n,
			WaitMs: int(w.cfg.ClaimWait / time.Millisecond),
		})
		if err != nil {
			for i := 0; i < n; i++ {
				slots <- struct{}{}
			}
			if ctx.Err() != nil {
				break
			}
			failures++
			d := backoff(failures)
			w.log.Warn("claim failed; backing off", "err", err, "retryIn", d)
			sleep(ctx, d)
			continue
		}
		failures = 0
		for i := len(tasks); i < n; i++ {
			slots <- struct{}{}
		}
		for _, g := range w.group(tasks) {
			w.running.Add(1)
			go func() {
				defer func() {
					for range g.tasks {
						slots <- struct{}{}
					}
					w.running.Done()
				}()
				if g.batch != nil {
					w.runBatch(hard, g.batch, g.tasks)
				} else {
					w.run(hard, g.tasks[0])
				}
			}()
		}
	}

	// Shutdown: give running tasks their grace period, then hand them back.
	done := make(chan struct{})
	go func() { w.running.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(w.cfg.ShutdownGrace):
		w.handBack()
		hardCancel()
		<-done
	}
	close(w.results)
	select {
	case <-repDone:
	case <-time.After(15 * time.Second):
		w.log.Error("controller unreachable at shutdown; undelivered results will be retried by the controller after their leases expire")
		repCancel()
		<-repDone
	}
	repCancel()
	return nil
}

// handBack releases every task still running so that another worker can
// run it at once, without spending an attempt.
func (w *Worker) handBack() {
	w.mu.Lock()
	var held []*activeTask
	for _, a := range w.active {
		a.lost = true
		held = append(held, a)
	}
	w.mu.Unlock()
	for _, a := range held {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := w.cfg.API.Release(ctx, a.task.ID, baton.ReleaseRequest{LeaseToken: a.task.LeaseToken})
		cancel()
		if err != nil {
			w.log.Warn("hand back failed; the lease will expire", "task", a.task.ID, "err", err)
		} else {
			w.log.Info("handed back", "task", a.task.ID)
		}
	}
}

// group is a unit of work: one task, or several of one type for a
// BatchHandler.
type group struct {
	batch BatchHandler
	tasks []*baton.Task
}

// group splits a claim into units: tasks whose handler is a BatchHandler
// are gathered by type, up to its MaxBatch; the rest run one by one.
func (w *Worker) group(tasks []baton.Task) []group {
	var out []group
	open := map[string]int{} // type -> index in out of its filling batch
	for i := range tasks {
		t := &tasks[i]
		bh, ok := w.cfg.Registry.Lookup(t.Type).(BatchHandler)
		if !ok || bh.MaxBatch() <= 1 {
			out = append(out, group{tasks: []*baton.Task{t}})
			continue
		}
		if k, ok := open[t.Type]; ok && len(out[k].tasks) < bh.MaxBatch() {
			out[k].tasks = append(out[k].tasks, t)
			continue
		}
		open[t.Type] = len(out)
		out = append(out, group{batch: bh, tasks: []*baton.Task{t}})
	}
	return out
}

// runBatch runs several tasks of one type through a BatchHandler, each
// under its own lease and heartbeat.
func (w *Worker) runBatch(parent context.Context, bh BatchHandler, ts []*baton.Task) {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	as := make([]*activeTask, len(ts))
	w.mu.Lock()
	for i, t := range ts {
		as[i] = &activeTask{task: t, cancel: func() {}}
		w.active[t.ID] = as[i]
	}
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		for _, t := range ts {
			delete(w.active, t.ID)
		}
		w.mu.Unlock()
	}()
	stops := make([]func(), len(ts))
	for i, a := range as {
		stops[i] = w.heartbeat(ctx, a)
	}
	results := w.callBatch(ctx, bh, ts)
	for _, stop := range stops {
		stop()
	}
	lost := make([]bool, len(ts))
	w.mu.Lock()
	for i := range as {
		lost[i] = as[i].lost
	}
	w.mu.Unlock()
	for i, t := range ts {
		if lost[i] {
			continue
		}
		r := results[i]
		r.LeaseToken = t.LeaseToken
		w.results <- baton.ResultItem{TaskID: t.ID, Result: r}
	}
}

func (w *Worker) callBatch(ctx context.Context, bh BatchHandler, ts []*baton.Task) (res []baton.Result) {
	defer func() {
		if v := recover(); v != nil {
			w.log.Error("batch handler panicked", "type", ts[0].Type, "panic", v)
			res = nil
		}
		if len(res) != len(ts) {
			reason := fmt.Sprintf("batch handler returned %d results for %d tasks", len(res), len(ts))
			res = make([]baton.Result, len(ts))
			for i := range res {
				res[i] = baton.Result{Outcome: baton.OutcomeRetry, Reason: reason}
			}
		}
	}()
	return bh.HandleBatch(ctx, ts)
}

func (w *Worker) run(parent context.Context, t *baton.Task) {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	a := &activeTask{task: t, cancel: cancel}
	w.mu.Lock()
	w.active[t.ID] = a
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		delete(w.active, t.ID)
		w.mu.Unlock()
	}()

	stopHB := w.heartbeat(ctx, a)
	res := w.call(ctx, t)
	stopHB()

	w.mu.Lock()
	lost := a.lost
	w.mu.Unlock()
	if lost {
		return
	}
	res.LeaseToken = t.LeaseToken
	w.results <- baton.ResultItem{TaskID: t.ID, Result: res}
}

// call runs the handler, turning a missing handler or a panic into a retry.
func (w *Worker) call(ctx context.Context, t *baton.Task) (res baton.Result) {
	h := w.cfg.Registry.Lookup(t.Type)
	if h == nil {
		return baton.Result{Outcome: baton.OutcomeRetry, Reason: fmt.Sprintf("worker %s has no handler for type %q", w.cfg.ID, t.Type)}
	}
	defer func() {
		if v := recover(); v != nil {
			w.log.Error("handler panicked", "task", t.ID, "type", t.Type, "panic", v)
			res = baton.Result{Outcome: baton.OutcomeRetry, Reason: fmt.Sprintf("handler panicked: %v", v)}
		}
	}()
	return h.Handle(ctx, t)
}

// heartbeat extends the lease every third of its length while the handler
// runs; a lost lease cancels the handler and suppresses its result.
func (w *Worker) heartbeat(ctx context.Context, a *activeTask) (stop func()) {
	ttl := time.Until(a.task.LeaseExpiresAt)
	if ttl < 3*time.Second/2 {
		ttl = 3 * time.Second / 2 // a skewed clock must not make us spin
	}
	every := ttl / 3
	hbCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTimer(every)
		defer t.Stop()
		for {
			select {
			case <-hbCtx.Done():
				return
			case <-t.C:
			}
			rctx, rcancel := context.WithTimeout(hbCtx, every)
			_, err := w.cfg.API.Heartbeat(rctx, a.task.ID, baton.HeartbeatRequest{LeaseToken: a.task.LeaseToken})
			rcancel()
			if code := baton.ErrorCode(err); code == baton.ELeaseLost || code == baton.ENotFound {
				w.log.Warn("lease lost; abandoning task", "task", a.task.ID)
				w.mu.Lock()
				a.lost = true
				w.mu.Unlock()
				a.cancel()
				return
			}
			if err != nil && hbCtx.Err() == nil {
				w.log.Warn("heartbeat failed", "task", a.task.ID, "err", err)
			}
			t.Reset(every)
		}
	}()
	return func() { cancel(); <-done }
}

// report sends results in batches: whatever is queued goes out in one
// request, so a busy worker sends few large requests and an idle one
// answers at once. Transport failures are retried until the controller
// answers; a refused result (lease lost) is logged and dropped.
func (w *Worker) report(ctx context.Context) {
	batch := make([]baton.ResultItem, 0, w.cfg.ResultBatch)
	for {
		it, ok := <-w.results
		if !ok {
			return
		}
		batch = append(batch[:0], it)
		var linger <-chan time.Time
		var timer *time.Timer
		if w.cfg.ResultLinger > 0 {
			timer = time.NewTimer(w.cfg.ResultLinger)
			linger = timer.C
		}
	fill:
		for len(batch) < w.cfg.ResultBatch {
			select {
			case it, ok := <-w.results:
				if !ok {
					break fill
				}
				batch = append(batch, it)
			default:
				if linger == nil {
					break fill
				}
				select {
				case it, ok := <-w.results:
					if !ok {
						break fill
					}
					batch = append(batch, it)
				case <-linger:
					break fill
				}
			}
		}
		if timer != nil {
			timer.Stop()
		}
		w.send(ctx, batch)
	}
}

func (w *Worker) send(ctx context.Context, batch []baton.ResultItem) {
	for failures := 0; ; failures++ {
		resp, err := w.cfg.API.Results(ctx, batch)
		if err == nil {
			for _, rj := range resp.Rejected {
				w.log.Warn("result refused", "task", rj.TaskID, "code", rj.Code, "message", rj.Message)
			}
			return
		}
		code := baton.ErrorCode(err)
		if code == baton.EInvalid || code == baton.EUnauthorized || code == baton.EForbidden || code == baton.ETooLarge {
			w.log.Error("results refused as a whole", "err", err, "count", len(batch))
			return
		}
		if ctx.Err() != nil {
			return
		}
		d := backoff(failures + 1)
		w.log.Warn("sending results failed; retrying", "err", err, "retryIn", d, "count", len(batch))
		sleep(ctx, d)
	}
}

// backoff is 100ms doubling to 10s, with ±25% jitter.
func backoff(failures int) time.Duration {
	d := float64(100*time.Millisecond) * math.Pow(2, float64(min(failures-1, 10)))
	d = math.Min(d, float64(10*time.Second))
	return time.Duration(d * (0.75 + mrand.Float64()/2))
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
