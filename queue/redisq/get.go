package redisq

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	baton "github.com/batonhq/baton"
)

// Get returns a task; baton.ErrNotFound when unknown or purged.
func (s *Store) Get(ctx context.Context, id string) (baton.TaskInfo, error) {
	h, err := s.client.HGetAll(ctx, s.k.task(id)).Result()
	if err != nil {
		return baton.TaskInfo{}, fmt.Errorf("redisq: get %s: %w", id, err)
	}
	if len(h) == 0 || h["state"] == "" {
		return baton.TaskInfo{}, baton.ErrNotFound
	}
	return taskInfo(h), nil
}

// taskInfo converts a task hash to the stored view of the task.
func taskInfo(h map[string]string) baton.TaskInfo {
	atoi := func(f string) int64 {
		n, _ := strconv.ParseInt(h[f], 10, 64)
		return n
	}
	tp := func(f string) *time.Time {
		if h[f] == "" {
			return nil
		}
		t := fromMs(atoi(f))
		return &t
	}
	ti := baton.TaskInfo{
		ID:            h["id"],
		Type:          h["type"],
		Queue:         h["queue"],
		Status:        baton.State(h["state"]),
		Payload:       json.RawMessage(h["payload"]),
		Attempts:      int(atoi("attempt")),
		MaxAttempts:   int(atoi("max")),
		Outcome:       baton.Outcome(h["outcome"]),
		Reason:        h["reason"],
		Error:         h["error"],
		DedupKey:      h["dedup"],
		WorkerID:      h["worker"],
		LeaseTTL:      time.Duration(atoi("ttl")) * time.Millisecond,
		CreatedAt:     fromMs(atoi("created")),
		StartedAt:     tp("started"),
		FinishedAt:    tp("finished"),
		NextAttemptAt: tp("next"),
	}
	if d := h["data"]; d != "" {
		ti.Data = json.RawMessage(d)
	}
	if ti.FinishedAt != nil && ti.StartedAt != nil {
		d := max(ti.FinishedAt.Sub(*ti.StartedAt).Milliseconds(), 0)
		ti.DurationMs = &d
	}
	return ti
}
