// Package redisns deletes every key of a Baton Redis namespace; the
// benchmarks and end-to-end tests use it to leave a shared Redis as they
// found it.
package redisns

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// Drop unlinks every key under baton:{ns}: and returns how many it removed.
func Drop(ctx context.Context, url, ns string) (int, error) {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return 0, fmt.Errorf("redis url: %w", err)
	}
	c := redis.NewClient(opt)
	defer c.Close()
	n := 0
	iter := c.Scan(ctx, 0, "baton:{"+ns+"}:*", 1000).Iterator()
	batch := make([]string, 0, 1000)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		if err := c.Unlink(ctx, batch...).Err(); err != nil {
			return err
		}
		n += len(batch)
		batch = batch[:0]
		return nil
	}
	for iter.Next(ctx) {
		batch = append(batch, iter.Val())
		if len(batch) == cap(batch) {
			if err := flush(); err != nil {
				return n, err
			}
		}
	}
	if err := iter.Err(); err != nil {
		return n, err
	}
	return n, flush()
}
