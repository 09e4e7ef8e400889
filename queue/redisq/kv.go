package redisq

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// PutIfAbsent stores val under key for ttl unless the key exists (one
// SET NX PX GET); it returns the value now stored and whether this call
// created it. ttl <= 0 stores the value without expiry.
func (s *Store) PutIfAbsent(ctx context.Context, key string, val []byte, ttl time.Duration) ([]byte, bool, error) {
	args := []any{"set", s.k.kv(key), val, "nx"}
	if ttl > 0 {
		args = append(args, "px", max(ttl.Milliseconds(), 1))
	}
	args = append(args, "get")
	old, err := s.client.Do(ctx, args...).Text()
	switch {
	case errors.Is(err, redis.Nil):
		return val, true, nil
	case err != nil:
		return nil, false, fmt.Errorf("redisq: put if absent: %w", err)
	}
	return []byte(old), false, nil
}
