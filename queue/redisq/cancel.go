package redisq

import (
	"context"
	_ "embed"
	"fmt"
	"time"

	baton "github.com/batonhq/baton"
)

//go:embed cancel.lua
var cancelLua string

var cancelScript = newScript(cancelLua)

// Cancel ends a pending, stalled or processing task as cancelled and returns
// baton.StateCancelled. A task that had already ended gets an *baton.Error
// EConflict; an unknown one baton.ErrNotFound.
func (s *Store) Cancel(ctx context.Context, id string, now time.Time) (baton.State, error) {
	v, err := cancelScript.Run(ctx, s.client,
		[]string{s.k.task(id), s.k.leases, s.k.running, s.k.wrun, s.k.dedup, s.k.fin, s.k.outbox},
		s.k.prefix, id, ms(now), rfc3339(now)).Slice()
	if err != nil {
		return "", scriptErr("cancel", err)
	}
	if len(v) != 2 {
		return "", fmt.Errorf("redisq: cancel: script returned %d values", len(v))
	}
	state := baton.State(str(v[1]))
	switch num(v[0]) {
	case 1:
		return "", baton.ErrNotFound
	case 2:
		return state, baton.Errorf(baton.EConflict, "task already %s", state)
	}
	return state, nil
}
