package controller

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/batonhq/baton/queue"
)

// OutboxHandler consumes outbox entries of the kinds it was registered for.
// It must be idempotent: after a crash the same entries are delivered again.
// An error leaves the whole batch in the outbox, to be retried.
type OutboxHandler func(ctx context.Context, entries []queue.OutboxEntry) error

// Relay drains the store's durable outbox in batches and hands each entry
// to the handlers of its kind (the pipeline's syncer, PDF callbacks). An
// entry is deleted only after every handler has taken its batch, so a
// crash mid-batch loses nothing; handlers' idempotency makes the replay
// harmless. Entries of kinds nobody handles are dropped.
type Relay struct {
	store    queue.Store
	log      *slog.Logger
	batch    int
	interval time.Duration

	mu       sync.Mutex
	handlers map[string][]OutboxHandler
	kick     chan struct{}
	stopOnce sync.Once
	cancel   context.CancelFunc
	done     chan struct{}
}

// NewRelay returns a relay reading batches of up to batch entries (default
// 500) and looking for new ones every interval (default 200ms).
func NewRelay(s queue.Store, batch int, interval time.Duration, log *slog.Logger) *Relay {
	if batch <= 0 {
		batch = 500
	}
	if interval <= 0 {
		interval = 200 * time.Millisecond
	}
	if log == nil {
		log = slog.Default()
	}
	return &Relay{store: s, log: log.With("component", "outbox"), batch: batch, interval: interval,
		handlers: map[string][]OutboxHandler{}, kick: make(chan struct{}, 1), done: make(chan struct{})}
}

// Handle registers h for entries of kind.
func (r *Relay) Handle(kind string, h OutboxHandler) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.handlers[kind] = append(r.handlers[kind], h)
}

// Kick asks for a drain now.
func (r *Relay) Kick() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// Start drains until Stop.
func (r *Relay) Start(ctx context.Context) {
	ctx, r.cancel = context.WithCancel(ctx)
	go func() {
		defer close(r.done)
		t := time.NewTicker(r.interval)
		defer t.Stop()
		for {
			for {
				n, err := r.DrainOnce(ctx)
				if err != nil {
					if ctx.Err() == nil {
						r.log.Warn("outbox drain failed; will retry", "err", err)
					}
					break
				}
				if n < r.batch {
					break
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			case <-r.kick:
			}
		}
	}()
}

// Stop ends the loop after the current batch; safe to call twice.
func (r *Relay) Stop() {
	r.stopOnce.Do(func() {
		if r.cancel != nil {
			r.cancel()
			<-r.done
		}
	})
}

// DrainOnce handles one batch and returns its size.
func (r *Relay) DrainOnce(ctx context.Context) (int, error) {
	entries, err := r.store.ReadOutbox(ctx, r.batch)
	if err != nil || len(entries) == 0 {
		return 0, err
	}
	byKind := map[string][]queue.OutboxEntry{}
	for _, e := range entries {
		byKind[e.Kind] = append(byKind[e.Kind], e)
	}
	r.mu.Lock()
	hs := make(map[string][]OutboxHandler, len(r.handlers))
	for k, v := range r.handlers {
		hs[k] = v
	}
	r.mu.Unlock()
	for kind, es := range byKind {
		for _, h := range hs[kind] {
			if err := h(ctx, es); err != nil {
				return 0, err
			}
		}
	}
	ids := make([]string, len(entries))
	for i, e := range entries {
		ids[i] = e.ID
	}
	if err := r.store.AckOutbox(ctx, ids); err != nil {
		return 0, err
	}
	return len(entries), nil
}
