// Package controller is the heart of Baton: it hands tasks to workers
// (claims with leases, long-polled), accepts their results and advances the
// work atomically through the queue store, reaps expired leases, and keeps
// the per-queue settings. It never runs a task itself.
package controller

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"

	baton "github.com/batonhq/baton"
	"github.com/batonhq/baton/queue"
)

// Config configures a Controller. Zero values take the documented defaults.
type Config struct {
	// Store is the queue backend; required.
	Store queue.Store
	// Clock returns the current time; default time.Now.
	Clock func() time.Time
	// Backoff is the retry policy; zero = baton.DefaultBackoff.
	Backoff baton.Backoff
	// QueueOrder lists queues (or globs) in the order workers drain them;
	// queues matching no entry come after, sorted by name. Default
	// DefaultQueueOrder.
	QueueOrder []string
	// ReapInterval is how often expired leases are looked for; default 500ms.
	ReapInterval time.Duration
	// ReapBatch bounds one reap; default 1000.
	ReapBatch int
	// PollInterval bounds how long a waiting claim sleeps between looks when
	// no wake-up arrives (delayed tasks becoming due, rate limits); default 100ms.
	PollInterval time.Duration
	// Metrics receives the engine's measurements; default a private registry.
	Metrics *Metrics
	// Logger; default slog.Default().
	Logger *slog.Logger
}

// DefaultQueueOrder drains PDF lanes fast first, then the domain pipeline
// in step order, then everything else.
var DefaultQueueOrder = []string{
	"pdf.fast", "pdf.normal", "pdf.slow",
	"domain.register", "domain.baidu", "domain.chinaz", "domain.aizhan",
	"domain.wayback", "domain.jucha", "domain.juzi",
}

// Controller coordinates workers over a queue.Store.
type Controller struct {
	store   queue.Store
	now     func() time.Time
	backoff baton.Backoff
	log     *slog.Logger
	metrics *Metrics
	cfg     Config

	wake     *broadcaster
	queues   *queueCache
	inflight inflight

	mu         sync.RWMutex
	advancers  []advancerEntry
	workerSeen sync.Map // workerID -> time.Time of last TouchWorker

	startOnce sync.Once
	stopOnce  sync.Once
	cancel    context.CancelFunc
	done      chan struct{}
}

// New builds a controller; Start runs its background loops.
func New(cfg Config) (*Controller, error) {
	if cfg.Store == nil {
		return nil, errors.New("controller: Config.Store is required")
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.QueueOrder == nil {
		cfg.QueueOrder = DefaultQueueOrder
	}
	if cfg.ReapInterval <= 0 {
		cfg.ReapInterval = 500 * time.Millisecond
	}
	if cfg.ReapBatch <= 0 {
		cfg.ReapBatch = 1000
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = 100 * time.Millisecond
	}
	if cfg.Metrics == nil {
		cfg.Metrics = NewMetrics(nil)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	c := &Controller{
		store:   cfg.Store,
		now:     cfg.Clock,
		backoff: cfg.Backoff,
		log:     cfg.Logger.With("component", "controller"),
		metrics: cfg.Metrics,
		cfg:     cfg,
		wake:    newBroadcaster(),
		done:    make(chan struct{}),
	}
	c.queues = newQueueCache(cfg.Store, cfg.QueueOrder, c.now)
	cfg.Metrics.attach(c)
	return c, nil
}

// Store returns the controller's queue store.
func (c *Controller) Store() queue.Store { return c.store }

// Metrics returns the controller's metrics.
func (c *Controller) Metrics() *Metrics { return c.metrics }

// Now returns the controller's clock reading.
func (c *Controller) Now() time.Time { return c.now() }

// Start runs the wake-up fan-out and the lease reaper until Stop.
func (c *Controller) Start(ctx context.Context) {
	c.startOnce.Do(func() {
		ctx, c.cancel = context.WithCancel(ctx)
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); c.fanOutWakes(ctx) }()
		go func() { defer wg.Done(); c.reapLoop(ctx) }()
		go func() { wg.Wait(); close(c.done) }()
	})
}

// Stop ends the background loops and wakes every waiting claim; safe to
// call twice and without Start.
func (c *Controller) Stop() {
	c.stopOnce.Do(func() {
		if c.cancel != nil {
			c.cancel()
			<-c.done
		}
		c.wake.close()
	})
}

func (c *Controller) fanOutWakes(ctx context.Context) {
	ch := c.store.Wake()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ch:
			c.wake.signal()
		}
	}
}

// NewID returns a new task ID (a ULID: sortable by creation time).
func NewID() string {
	return ulid.MustNew(ulid.Now(), rand.Reader).String()
}

// jitter returns a uniform float in [0,1).
func jitter() float64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return float64(binary.LittleEndian.Uint64(b[:])>>11) / (1 << 53)
}

// storeErr wraps an unexpected store failure as an unavailable error, keeping
// application errors (not found, lease lost, conflict) as they are.
func storeErr(op string, err error) error {
	if err == nil {
		return nil
	}
	var be *baton.Error
	if errors.As(err, &be) {
		return err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return &baton.Error{Code: baton.EUnavailable, Message: op + " interrupted", Err: err}
	}
	return &baton.Error{Code: baton.EUnavailable, Message: fmt.Sprintf("queue store unavailable (%s)", op), Err: err}
}
