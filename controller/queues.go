package controller

import (
	"context"
	"path"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	baton "github.com/batonhq/baton"
	"github.com/batonhq/baton/queue"
)

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$`)

// ValidName reports whether s is a valid task type or queue name: 1-128
// characters of letters, digits and . _ : - starting with a letter or digit.
func ValidName(s string) bool { return nameRE.MatchString(s) }

// queueCache keeps the ordered list of known queues, refreshed from the
// store at most once per refresh interval, so that a claim does not list
// queues every time. A queue created by this controller is added at once.
type queueCache struct {
	store   queue.Store
	order   []string
	now     func() time.Time
	refresh time.Duration

	mu      sync.Mutex
	names   map[string]bool
	sorted  []string
	loaded  time.Time
	byGlobs map[string][]string
}

func newQueueCache(s queue.Store, order []string, now func() time.Time) *queueCache {
	return &queueCache{store: s, order: order, now: now, refresh: time.Second, names: map[string]bool{}, byGlobs: map[string][]string{}}
}

// add makes names known without a store round trip.
func (q *queueCache) add(names ...string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	changed := false
	for _, n := range names {
		if !q.names[n] {
			q.names[n] = true
			changed = true
		}
	}
	if changed {
		q.resort()
	}
}

func (q *queueCache) resort() {
	q.sorted = q.sorted[:0]
	for n := range q.names {
		q.sorted = append(q.sorted, n)
	}
	rank := func(n string) int {
		for i, o := range q.order {
			if o == n {
				return i
			}
			if ok, _ := path.Match(o, n); ok {
				return i
			}
		}
		return len(q.order)
	}
	sort.Slice(q.sorted, func(i, j int) bool {
		ri, rj := rank(q.sorted[i]), rank(q.sorted[j])
		if ri != rj {
			return ri < rj
		}
		return q.sorted[i] < q.sorted[j]
	})
	q.byGlobs = map[string][]string{}
}

func (q *queueCache) load(ctx context.Context) {
	q.mu.Lock()
	stale := q.now().Sub(q.loaded) >= q.refresh || q.loaded.IsZero()
	q.mu.Unlock()
	if !stale {
		return
	}
	stats, err := q.store.Queues(ctx, q.now())
	q.mu.Lock()
	defer q.mu.Unlock()
	q.loaded = q.now()
	if err != nil {
		return // keep what we know; the claim itself will report a store failure
	}
	changed := false
	for _, s := range stats {
		if !q.names[s.Name] {
			q.names[s.Name] = true
			changed = true
		}
	}
	if changed {
		q.resort()
	}
}

// match returns the known queues selected by globs, in drain order.
// A glob matches a queue name; an empty list selects every queue.
func (q *queueCache) match(ctx context.Context, globs []string) []string {
	q.load(ctx)
	key := strings.Join(globs, "\x00")
	q.mu.Lock()
	defer q.mu.Unlock()
	if r, ok := q.byGlobs[key]; ok {
		return r
	}
	var out []string
	for _, n := range q.sorted {
		if len(globs) == 0 {
			out = append(out, n)
			continue
		}
		for _, g := range globs {
			if ok, _ := path.Match(g, n); ok || g == n {
				out = append(out, n)
				break
			}
		}
	}
	q.byGlobs[key] = out
	return out
}

// Queues returns the store's queue snapshots in drain order.
func (c *Controller) Queues(ctx context.Context) ([]queue.QueueStat, error) {
	stats, err := c.store.Queues(ctx, c.now())
	if err != nil {
		return nil, storeErr("list queues", err)
	}
	names := make([]string, len(stats))
	for i, s := range stats {
		names[i] = s.Name
	}
	c.queues.add(names...)
	order := c.queues.match(ctx, nil)
	pos := make(map[string]int, len(order))
	for i, n := range order {
		pos[n] = i
	}
	sort.SliceStable(stats, func(i, j int) bool { return pos[stats[i].Name] < pos[stats[j].Name] })
	return stats, nil
}

// SetQueue changes a queue's pause flag and rate limit, shared by every
// controller on the store.
func (c *Controller) SetQueue(ctx context.Context, name string, cfg queue.QueueConfig) error {
	if !ValidName(name) {
		return baton.Errorf(baton.EInvalid, "invalid queue name %q", name)
	}
	if cfg.RatePerMin < 0 || cfg.RatePerMin > 1_000_000 {
		return baton.Errorf(baton.EInvalid, "ratePerMin must be between 0 and 1000000")
	}
	if err := c.store.SetQueueConfig(ctx, name, cfg); err != nil {
		return storeErr("set queue", err)
	}
	c.queues.add(name)
	if !cfg.Paused {
		c.wake.signal()
	}
	return nil
}

// PauseQueue pauses or resumes a queue, keeping its rate limit.
func (c *Controller) PauseQueue(ctx context.Context, name string, paused bool) (queue.QueueConfig, error) {
	if !ValidName(name) {
		return queue.QueueConfig{}, baton.Errorf(baton.EInvalid, "invalid queue name %q", name)
	}
	cfg, err := c.store.QueueConfig(ctx, name)
	if err != nil {
		return cfg, storeErr("read queue", err)
	}
	cfg.Paused = paused
	return cfg, c.SetQueue(ctx, name, cfg)
}
