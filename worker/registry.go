package worker

import (
	"context"
	"path"
	"sort"
	"sync"

	baton "github.com/batonhq/baton"
)

// Handler runs one task and returns its standardized result. The runtime
// fills in the lease token. ctx is cancelled when the lease is lost or the
// worker is forced to stop; a handler should return promptly then.
type Handler interface {
	Handle(ctx context.Context, t *baton.Task) baton.Result
}

// BatchHandler is a Handler that can also run several tasks of its type in
// one go (a provider that answers for 50 domains per request). The runtime
// hands it up to MaxBatch tasks of one type that arrived in the same claim;
// HandleBatch returns one result per task, in order.
type BatchHandler interface {
	Handler
	MaxBatch() int
	HandleBatch(ctx context.Context, ts []*baton.Task) []baton.Result
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, t *baton.Task) baton.Result

// Handle implements Handler.
func (f HandlerFunc) Handle(ctx context.Context, t *baton.Task) baton.Result { return f(ctx, t) }

// Registry maps task types (exact names or path.Match globs such as
// "domain.*") to handlers, and knows which queues to claim from for them.
type Registry struct {
	mu     sync.RWMutex
	exact  map[string]Handler
	globs  []globHandler
	queues map[string]bool
}

type globHandler struct {
	pattern string
	h       Handler
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{exact: map[string]Handler{}, queues: map[string]bool{}}
}

// Register binds a task type (or glob) to h. queues are the queue globs a
// worker claims from to get such tasks; default the type pattern itself
// (a task's queue is named after its type unless it says otherwise).
func (r *Registry) Register(typ string, h Handler, queues ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if hasMeta(typ) {
		r.globs = append(r.globs, globHandler{typ, h})
	} else {
		r.exact[typ] = h
	}
	if len(queues) == 0 {
		queues = []string{typ}
	}
	for _, q := range queues {
		r.queues[q] = true
	}
}

func hasMeta(s string) bool {
	for _, c := range s {
		switch c {
		case '*', '?', '[', '\\':
			return true
		}
	}
	return false
}

// Lookup returns the handler of a task type, or nil.
func (r *Registry) Lookup(typ string) Handler {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if h, ok := r.exact[typ]; ok {
		return h
	}
	for _, g := range r.globs {
		if ok, _ := path.Match(g.pattern, typ); ok {
			return g.h
		}
	}
	return nil
}

// Queues returns the queue globs to claim from, sorted.
func (r *Registry) Queues() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]string, 0, len(r.queues))
	for q := range r.queues {
		out = append(out, q)
	}
	sort.Strings(out)
	return out
}

// Filter returns a registry with only the handlers whose type pattern or
// queue matches one of globs (baton worker --types).
func (r *Registry) Filter(globs []string) *Registry {
	if len(globs) == 0 {
		return r
	}
	match := func(s string) bool {
		for _, g := range globs {
			if ok, _ := path.Match(g, s); ok || g == s {
				return true
			}
		}
		return false
	}
	out := NewRegistry()
	r.mu.RLock()
	defer r.mu.RUnlock()
	for t, h := range r.exact {
		if match(t) {
			out.exact[t] = h
		}
	}
	for _, g := range r.globs {
		if match(g.pattern) {
			out.globs = append(out.globs, g)
		}
	}
	for q := range r.queues {
		if match(q) {
			out.queues[q] = true
		}
	}
	for _, g := range globs {
		if hasMeta(g) {
			out.queues[g] = true
		}
	}
	return out
}
