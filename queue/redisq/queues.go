package redisq

import (
	"cmp"
	"context"
	_ "embed"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/batonhq/baton/queue"
)

//go:embed setqueue.lua
var setQueueLua string

//go:embed stats.lua
var statsLua string

// Neither script needs the shared helpers.
var (
	setQueueScript = redis.NewScript(setQueueLua)
	statsScript    = redis.NewScript(statsLua)
)

// statFields is the number of values stats.lua returns per queue.
const statFields = 8

// Queues lists every known queue's snapshot, sorted by name, from one
// read-only script. OldestAgeMs is the age of the oldest of the first 100
// ready tasks in line.
func (s *Store) Queues(ctx context.Context, now time.Time) ([]queue.QueueStat, error) {
	cutoff := ms(now) - s.retention.Milliseconds()
	v, err := statsScript.Run(ctx, s.client, []string{s.k.queues, s.k.running},
		s.k.prefix, ms(now), cutoff).Slice()
	if err != nil {
		return nil, scriptErr("queues", err)
	}
	if len(v)%statFields != 0 {
		return nil, fmt.Errorf("redisq: queues: script returned %d values", len(v))
	}
	out := make([]queue.QueueStat, 0, len(v)/statFields)
	for i := 0; i < len(v); i += statFields {
		f := v[i : i+statFields]
		st := queue.QueueStat{
			Name:       str(f[0]),
			Ready:      num(f[1]),
			Retry:      num(f[2]),
			Running:    num(f[3]),
			Dead:       num(f[4]),
			Paused:     num(f[5]) == 1,
			RatePerMin: int(num(f[6])),
		}
		if oldest := num(f[7]); oldest >= 0 && st.Ready > 0 {
			st.OldestAgeMs = max(ms(now)-oldest, 0)
		}
		out = append(out, st)
	}
	slices.SortFunc(out, func(a, b queue.QueueStat) int { return cmp.Compare(a.Name, b.Name) })
	return out, nil
}

// SetQueueConfig stores a queue's settings (and makes the queue known).
func (s *Store) SetQueueConfig(ctx context.Context, name string, cfg queue.QueueConfig) error {
	if name == "" {
		return invalidf("queue name is required")
	}
	if cfg.RatePerMin < 0 {
		return invalidf("queue %s: ratePerMin %d is negative", name, cfg.RatePerMin)
	}
	err := setQueueScript.Run(ctx, s.client, []string{s.k.qcfg(name), s.k.queues},
		name, boolArg(cfg.Paused), cfg.RatePerMin, s.k.wake).Err()
	if err != nil {
		return scriptErr("set queue config", err)
	}
	if !cfg.Paused {
		s.signal()
	}
	return nil
}

// QueueConfig reads a queue's settings (zero value when never set).
func (s *Store) QueueConfig(ctx context.Context, name string) (queue.QueueConfig, error) {
	v, err := s.client.HMGet(ctx, s.k.qcfg(name), "paused", "rate").Result()
	if err != nil {
		return queue.QueueConfig{}, fmt.Errorf("redisq: queue config %s: %w", name, err)
	}
	var cfg queue.QueueConfig
	if p, ok := v[0].(string); ok {
		cfg.Paused = p == "1"
	}
	if r, ok := v[1].(string); ok {
		n, err := strconv.Atoi(r)
		if err != nil {
			return queue.QueueConfig{}, fmt.Errorf("redisq: queue config %s: rate %q: %w", name, r, err)
		}
		cfg.RatePerMin = n
	}
	return cfg, nil
}
