package redisq

import (
	"context"
	_ "embed"
	"time"

	baton "github.com/batonhq/baton"
)

//go:embed release.lua
var releaseLua string

var releaseScript = newScript(releaseLua)

// Release hands a claimed task back to its queue, ready from now, without
// spending the attempt (graceful worker shutdown). It returns
// baton.ErrLeaseLost unless token is current, baton.ErrNotFound for an
// unknown task.
func (s *Store) Release(ctx context.Context, id, token string, now time.Time) error {
	v, err := releaseScript.Run(ctx, s.client,
		[]string{s.k.task(id), s.k.leases, s.k.running, s.k.wrun},
		s.k.prefix, token, id, s.k.wake, ms(now)).Int64()
	if err != nil {
		return scriptErr("release", err)
	}
	switch v {
	case 1:
		return baton.ErrNotFound
	case 2:
		return baton.ErrLeaseLost
	}
	s.signal()
	return nil
}
