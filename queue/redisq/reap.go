package redisq

import (
	"context"
	_ "embed"
	"fmt"
	"time"

	"github.com/batonhq/baton/queue"
)

//go:embed reap.lua
var reapLua string

var reapScript = newScript(reapLua)

// defaultReapLimit applies when Reap is called with limit <= 0; maxReapLimit
// bounds one call so that it cannot block Redis for long.
const (
	defaultReapLimit = 1000
	maxReapLimit     = 10000
)

// Reap sends tasks whose lease expired by now back to their queue as
// stalled (or to failed when attempts are spent), at most limit of them,
// and purges at most limit finished tasks past retention. One script call;
// safe to run concurrently from several controllers.
func (s *Store) Reap(ctx context.Context, now time.Time, limit int) (queue.ReapStats, error) {
	if limit <= 0 {
		limit = defaultReapLimit
	}
	limit = min(limit, maxReapLimit)
	v, err := reapScript.Run(ctx, s.client,
		[]string{s.k.leases, s.k.running, s.k.wrun, s.k.dedup, s.k.fin, s.k.outbox, s.k.queues, s.k.workers, s.k.done},
		s.k.prefix, ms(now), rfc3339(now), limit, s.retention.Milliseconds(), s.k.wake).Slice()
	if err != nil {
		return queue.ReapStats{}, scriptErr("reap", err)
	}
	if len(v) < 3 {
		return queue.ReapStats{}, fmt.Errorf("redisq: reap: script returned %d values", len(v))
	}
	st := queue.ReapStats{Stalled: int(num(v[0])), Failed: int(num(v[1])), Purged: int(num(v[2]))}
	for _, q := range v[3:] {
		st.Queues = append(st.Queues, str(q))
	}
	if st.Stalled > 0 {
		s.signal()
	}
	return st, nil
}
