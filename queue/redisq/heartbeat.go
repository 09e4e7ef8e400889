package redisq

import (
	"context"
	_ "embed"
	"time"

	baton "github.com/batonhq/baton"
	"github.com/batonhq/baton/queue"
)

//go:embed heartbeat.lua
var heartbeatLua string

var heartbeatScript = newScript(heartbeatLua)

// Heartbeat extends a lease to now+extend (extend 0 = the task's lease TTL;
// capped at queue.MaxLeaseTTL). It returns baton.ErrLeaseLost unless token
// is the task's current lease token, baton.ErrNotFound for an unknown task.
func (s *Store) Heartbeat(ctx context.Context, id, token string, now time.Time, extend time.Duration) (time.Time, error) {
	if extend < 0 {
		extend = 0
	}
	extend = min(extend, queue.MaxLeaseTTL)
	v, err := heartbeatScript.Run(ctx, s.client, []string{s.k.task(id), s.k.leases},
		token, ms(now), extend.Milliseconds(), id).Int64()
	if err != nil {
		return time.Time{}, scriptErr("heartbeat", err)
	}
	switch v {
	case -1:
		return time.Time{}, baton.ErrNotFound
	case -2:
		return time.Time{}, baton.ErrLeaseLost
	}
	return fromMs(v), nil
}
