package redisq

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"time"

	baton "github.com/batonhq/baton"
	"github.com/batonhq/baton/queue"
)

//go:embed enqueue.lua
var enqueueLua string

var enqueueScript = newScript(enqueueLua)

// Enqueue adds tasks, honouring dedup keys, and returns one result per task.
// A batch of up to maxBatch tasks is one script call. Invalid tasks fail the
// whole call before anything is written.
func (s *Store) Enqueue(ctx context.Context, now time.Time, tasks []queue.NewTask) ([]queue.EnqueueResult, error) {
	norm := make([]queue.NewTask, len(tasks))
	for i, t := range tasks {
		n, err := normalize(t, now)
		if err != nil {
			return nil, fmt.Errorf("redisq: enqueue task %d: %w", i, err)
		}
		norm[i] = n
	}
	out := make([]queue.EnqueueResult, 0, len(tasks))
	for start := 0; start < len(norm); start += maxBatch {
		end := min(start+maxBatch, len(norm))
		res, err := s.enqueueBatch(ctx, now, norm[start:end])
		if err != nil {
			return nil, err
		}
		out = append(out, res...)
	}
	if len(out) > 0 {
		// The script publishes for other Stores; this one need not wait for
		// the round trip through the server.
		for i, r := range out {
			if r.Created && !norm[i].RunAt.After(now) {
				s.signal()
				break
			}
		}
	}
	return out, nil
}

func (s *Store) enqueueBatch(ctx context.Context, now time.Time, tasks []queue.NewTask) ([]queue.EnqueueResult, error) {
	keys := []string{s.k.dedup, s.k.queues, s.k.seq}
	// Header fields are sent once per distinct combination (see enqueue.lua).
	type header struct {
		typ, queue, dedup string
		max               int
		ttl, runAt        int64
		notify            bool
	}
	idx := make(map[header]int, 1)
	hdrs := make([]header, 0, 1)
	ref := make([]int, len(tasks))
	for i, t := range tasks {
		h := header{t.Type, t.Queue, t.DedupKey, t.MaxAttempts, t.LeaseTTL.Milliseconds(), ms(t.RunAt), t.Notify}
		n, ok := idx[h]
		if !ok {
			hdrs = append(hdrs, h)
			n = len(hdrs)
			idx[h] = n
		}
		ref[i] = n
	}
	args := make([]any, 0, 4+7*len(hdrs)+3*len(tasks))
	args = append(args, s.k.prefix, ms(now), s.k.wake, len(hdrs))
	for _, h := range hdrs {
		args = append(args, h.typ, h.queue, h.max, h.ttl, h.dedup, h.runAt, boolArg(h.notify))
	}
	for i, t := range tasks {
		args = append(args, t.ID, []byte(t.Payload), ref[i])
	}
	v, err := enqueueScript.Run(ctx, s.client, keys, args...).Slice()
	if err != nil {
		return nil, scriptErr("enqueue", err)
	}
	if len(v) != len(tasks) {
		return nil, fmt.Errorf("redisq: enqueue: script returned %d values for %d tasks", len(v), len(tasks))
	}
	out := make([]queue.EnqueueResult, len(tasks))
	for i, t := range tasks {
		if a, ok := v[i].([]any); ok && len(a) == 3 {
			out[i] = queue.EnqueueResult{ID: str(a[0]), State: baton.State(str(a[1])), Queue: str(a[2])}
			continue
		}
		out[i] = queue.EnqueueResult{Created: true, ID: t.ID, State: baton.StatePending, Queue: t.Queue}
	}
	return out, nil
}

// appendTaskArgs appends the 9 script arguments describing a normalized task.
func appendTaskArgs(args []any, t queue.NewTask) []any {
	return append(args, t.ID, t.Type, t.Queue, []byte(t.Payload), t.MaxAttempts,
		t.LeaseTTL.Milliseconds(), t.DedupKey, ms(t.RunAt), boolArg(t.Notify))
}

// normalize validates t and applies the defaults of queue.NewTask.
func normalize(t queue.NewTask, now time.Time) (queue.NewTask, error) {
	if t.ID == "" {
		return t, invalidf("task id is required")
	}
	if t.Type == "" {
		return t, invalidf("task %s: type is required", t.ID)
	}
	if t.Queue == "" {
		return t, invalidf("task %s: queue is required", t.ID)
	}
	if len(t.Payload) == 0 {
		t.Payload = json.RawMessage("null")
	} else if !json.Valid(t.Payload) {
		return t, invalidf("task %s: payload is not valid JSON", t.ID)
	}
	switch {
	case t.MaxAttempts < 0:
		return t, invalidf("task %s: maxAttempts %d is negative", t.ID, t.MaxAttempts)
	case t.MaxAttempts == 0:
		t.MaxAttempts = queue.DefaultMaxAttempts
	}
	switch {
	case t.LeaseTTL < 0:
		return t, invalidf("task %s: lease TTL %v is negative", t.ID, t.LeaseTTL)
	case t.LeaseTTL == 0:
		t.LeaseTTL = queue.DefaultLeaseTTL
	}
	t.LeaseTTL = min(max(t.LeaseTTL, queue.MinLeaseTTL), queue.MaxLeaseTTL)
	if t.RunAt.IsZero() {
		t.RunAt = now
	}
	return t, nil
}
