package redisq

import (
	"cmp"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/batonhq/baton/queue"
)

//go:embed touchworker.lua
var touchWorkerLua string

var touchWorkerScript = redis.NewScript(touchWorkerLua)

// TouchWorker records that a worker was seen. Workers not seen within the
// retention are forgotten by Reap.
func (s *Store) TouchWorker(ctx context.Context, w queue.WorkerSeen) error {
	if w.ID == "" {
		return invalidf("worker id is required")
	}
	types := w.Types
	if types == nil {
		types = []string{}
	}
	tj, err := json.Marshal(types)
	if err != nil {
		return fmt.Errorf("redisq: touch worker: %w", err)
	}
	err = touchWorkerScript.Run(ctx, s.client, []string{s.k.workers, s.k.worker(w.ID)},
		w.ID, ms(w.Now), w.Name, tj, s.hashTTLms()).Err()
	if err != nil {
		return scriptErr("touch worker", err)
	}
	return nil
}

// Workers lists workers seen since the given time, by id, with the number
// of tasks each holds a lease on.
func (s *Store) Workers(ctx context.Context, since time.Time) ([]queue.WorkerInfo, error) {
	zs, err := s.client.ZRangeByScoreWithScores(ctx, s.k.workers, &redis.ZRangeBy{
		Min: strconv.FormatInt(ms(since), 10), Max: "+inf",
	}).Result()
	if err != nil {
		return nil, fmt.Errorf("redisq: workers: %w", err)
	}
	if len(zs) == 0 {
		return []queue.WorkerInfo{}, nil
	}
	ids := make([]string, len(zs))
	for i, z := range zs {
		ids[i], _ = z.Member.(string)
	}
	pipe := s.client.Pipeline()
	hs := make([]*redis.SliceCmd, len(ids))
	for i, id := range ids {
		hs[i] = pipe.HMGet(ctx, s.k.worker(id), "name", "types")
	}
	run := pipe.HMGet(ctx, s.k.wrun, ids...)
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("redisq: workers: %w", err)
	}
	runs := run.Val()
	out := make([]queue.WorkerInfo, len(ids))
	for i, id := range ids {
		w := queue.WorkerInfo{ID: id, LastSeen: fromMs(int64(zs[i].Score)), Types: []string{}}
		v := hs[i].Val()
		if name, ok := v[0].(string); ok {
			w.Name = name
		}
		if tj, ok := v[1].(string); ok {
			if err := json.Unmarshal([]byte(tj), &w.Types); err != nil {
				return nil, fmt.Errorf("redisq: workers: types of %s: %w", id, err)
			}
		}
		if r, ok := runs[i].(string); ok {
			w.Running, _ = strconv.ParseInt(r, 10, 64)
		}
		out[i] = w
	}
	slices.SortFunc(out, func(a, b queue.WorkerInfo) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}
