package pipeline

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/batonhq/baton/controller"
	"github.com/batonhq/baton/ledger"
	"github.com/batonhq/baton/queue"
)

// DispatcherConfig tunes the dispatcher. Zero values take the defaults.
type DispatcherConfig struct {
	// Interval between scans; default 30s.
	Interval time.Duration
	// PageSize is the keyset page read from the main DB; default 1000.
	PageSize int
	// MaxInFlight stops a scan once this many domain tasks wait or run, so
	// a million-row table is fed in step with the workers; default 20000.
	MaxInFlight int64
}

// ScanStats reports one scan.
type ScanStats struct {
	Scanned  int   `json:"scanned"`
	Enqueued int   `json:"enqueued"`
	InFlight int   `json:"inFlight"`
	Done     int   `json:"done"`
	Pages    int   `json:"pages"`
	Complete bool  `json:"complete"`
	Millis   int64 `json:"durationMs"`
}

// Dispatcher scans the main DB in keyset-paged batches, soonest deleteAt
// first, and enqueues every domain that still has an enabled step it has
// not passed, at its first such step. The dedup key makes "never in flight
// twice" the store's guarantee, so several controllers may scan at once.
type Dispatcher struct {
	db   *ledger.DB
	ctrl *controller.Controller
	cfg  *ConfigHolder
	dc   DispatcherConfig
	log  *slog.Logger

	mu     sync.Mutex // one scan at a time in this process
	cursor ledger.Cursor
	kick   chan struct{}
}

// NewDispatcher returns a dispatcher.
func NewDispatcher(db *ledger.DB, ctrl *controller.Controller, cfg *ConfigHolder, dc DispatcherConfig, log *slog.Logger) *Dispatcher {
	if dc.Interval <= 0 {
		dc.Interval = 30 * time.Second
	}
	if dc.PageSize <= 0 {
		dc.PageSize = 1000
	}
	if dc.MaxInFlight <= 0 {
		dc.MaxInFlight = 20000
	}
	if log == nil {
		log = slog.Default()
	}
	return &Dispatcher{db: db, ctrl: ctrl, cfg: cfg, dc: dc, log: log.With("component", "dispatcher"), kick: make(chan struct{}, 1)}
}

// Run scans on the interval until ctx ends.
func (d *Dispatcher) Run(ctx context.Context) {
	t := time.NewTicker(d.dc.Interval)
	defer t.Stop()
	for {
		if st, err := d.Scan(ctx); err != nil {
			if ctx.Err() == nil {
				d.log.Warn("scan failed", "err", err)
			}
		} else if st.Enqueued > 0 {
			d.log.Info("scan", "scanned", st.Scanned, "enqueued", st.Enqueued, "inFlight", st.InFlight, "complete", st.Complete)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-d.kick:
		}
	}
}

// inFlight counts domain tasks waiting or running.
func (d *Dispatcher) inFlight(ctx context.Context) (int64, error) {
	qs, err := d.ctrl.Queues(ctx)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, q := range qs {
		if strings.HasPrefix(q.Name, "domain.") {
			n += q.Ready + q.Running + q.Retry
		}
	}
	return n, nil
}

// Scan runs one scan: from where the last one stopped, page by page, until
// the end of the table (then the next scan starts over) or until
// MaxInFlight domain tasks are queued.
func (d *Dispatcher) Scan(ctx context.Context) (ScanStats, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	start := time.Now()
	var st ScanStats
	defer func() { st.Millis = time.Since(start).Milliseconds() }()
	cfg := d.cfg.Get()
	if len(cfg.Enabled()) == 0 {
		st.Complete = true
		return st, nil
	}
	budget, err := d.inFlight(ctx)
	if err != nil {
		return st, err
	}
	budget = d.dc.MaxInFlight - budget
	for budget > 0 {
		page, next, err := d.db.ScanCandidates(ctx, d.cursor, d.dc.PageSize)
		if err != nil {
			return st, err
		}
		st.Pages++
		st.Scanned += len(page)
		tasks := make([]queue.NewTask, 0, len(page))
		now := d.ctrl.Now()
		runSteps := cfg.Enabled()
		for _, c := range page {
			passed := map[string]bool{}
			for _, s := range c.Passed {
				passed[s] = true
			}
			step := cfg.Next(passed)
			if step == "" {
				st.Done++
				continue
			}
			sc, _ := cfg.Step(step)
			body, err := json.Marshal(Payload{
				Domain: c.Name, Step: step, RunID: controller.NewID(), RunStartedAt: now, RunSteps: runSteps,
				Passed: c.Passed, Params: sc.Rules.Params,
			})
			if err != nil {
				return st, err
			}
			tasks = append(tasks, queue.NewTask{
				ID: controller.NewID(), Type: TaskType(step), Queue: TaskType(step), Payload: body,
				MaxAttempts: sc.MaxAttempts, LeaseTTL: time.Duration(sc.LeaseTTLMs) * time.Millisecond,
				DedupKey: DedupKey(c.Name), Notify: true,
			})
		}
		if len(tasks) > 0 {
			res, err := d.ctrl.Enqueue(ctx, tasks)
			if err != nil {
				return st, err
			}
			for _, r := range res {
				if r.Created {
					st.Enqueued++
					budget--
				} else {
					st.InFlight++
				}
			}
		}
		if len(page) < d.dc.PageSize {
			d.cursor = ledger.Cursor{}
			st.Complete = true
			return st, nil
		}
		d.cursor = next
	}
	return st, nil
}

// kickSoon asks the running loop for a scan now (after an import or a
// configuration change).
func (d *Dispatcher) kickSoon() {
	select {
	case d.kick <- struct{}{}:
	default:
	}
}
