package controller

import (
	"context"
	"encoding/json"
	"strconv"
	"time"

	baton "github.com/batonhq/baton"
	"github.com/batonhq/baton/queue"
)

// Limits on generic tasks.
const (
	// MaxPayloadBytes bounds one task's payload.
	MaxPayloadBytes = 1 << 20
	// MaxAttemptsLimit bounds maxAttempts.
	MaxAttemptsLimit = 100
	// MaxCreateBatch bounds POST /api/tasks/batch.
	MaxCreateBatch = 1000
)

// TaskSpec is the body of POST /api/tasks: a generic task.
type TaskSpec struct {
	Type        string          `json:"type"`
	Payload     json.RawMessage `json:"payload,omitempty"`
	Queue       string          `json:"queue,omitempty"`
	MaxAttempts int             `json:"maxAttempts,omitempty"`
	LeaseTTLMs  int64           `json:"leaseTtlMs,omitempty"`
	DedupKey    string          `json:"dedupKey,omitempty"`
	RunAt       *time.Time      `json:"runAt,omitempty"`
}

// Created is the answer to a task creation.
type Created struct {
	TaskID string      `json:"taskId"`
	Status baton.State `json:"status"`
	Queue  string      `json:"queue"`
	// Created is false when an active task already held the dedup key; its
	// ID and status are returned instead.
	Created bool `json:"created"`
}

// toNewTask validates a spec and returns the queue.NewTask it describes.
func (s *TaskSpec) toNewTask() (queue.NewTask, error) {
	if !ValidName(s.Type) {
		return queue.NewTask{}, baton.Errorf(baton.EInvalid, "type must be 1-128 characters of letters, digits and . _ : - (got %q)", truncate(s.Type, 140))
	}
	q := s.Queue
	if q == "" {
		q = s.Type
	}
	if !ValidName(q) {
		return queue.NewTask{}, baton.Errorf(baton.EInvalid, "queue must be 1-128 characters of letters, digits and . _ : - (got %q)", truncate(q, 140))
	}
	if s.MaxAttempts < 0 || s.MaxAttempts > MaxAttemptsLimit {
		return queue.NewTask{}, baton.Errorf(baton.EInvalid, "maxAttempts must be between 1 and %d", MaxAttemptsLimit)
	}
	ttl := time.Duration(s.LeaseTTLMs) * time.Millisecond
	if s.LeaseTTLMs != 0 && (ttl < queue.MinLeaseTTL || ttl > queue.MaxLeaseTTL) {
		return queue.NewTask{}, baton.Errorf(baton.EInvalid, "leaseTtlMs must be between %d and %d", queue.MinLeaseTTL/time.Millisecond, queue.MaxLeaseTTL/time.Millisecond)
	}
	if len(s.DedupKey) > 256 {
		return queue.NewTask{}, baton.Errorf(baton.EInvalid, "dedupKey must be at most 256 characters")
	}
	if len(s.Payload) > MaxPayloadBytes {
		return queue.NewTask{}, baton.Errorf(baton.ETooLarge, "payload must be at most %d bytes", MaxPayloadBytes)
	}
	if len(s.Payload) > 0 && !json.Valid(s.Payload) {
		return queue.NewTask{}, baton.Errorf(baton.EInvalid, "payload must be JSON")
	}
	nt := queue.NewTask{
		ID: NewID(), Type: s.Type, Queue: q, Payload: s.Payload,
		MaxAttempts: s.MaxAttempts, LeaseTTL: ttl, DedupKey: s.DedupKey,
	}
	if s.RunAt != nil {
		nt.RunAt = *s.RunAt
	}
	return nt, nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// CreateTasks validates and enqueues generic tasks; all are checked before
// any is enqueued, so a bad entry changes nothing.
func (c *Controller) CreateTasks(ctx context.Context, specs []TaskSpec) ([]Created, error) {
	if len(specs) == 0 || len(specs) > MaxCreateBatch {
		return nil, baton.Errorf(baton.EInvalid, "between 1 and %d tasks per request", MaxCreateBatch)
	}
	nts := make([]queue.NewTask, len(specs))
	for i := range specs {
		nt, err := specs[i].toNewTask()
		if err != nil {
			if e, ok := err.(*baton.Error); ok && len(specs) > 1 {
				return nil, &baton.Error{Code: e.Code, Message: "tasks[" + strconv.Itoa(i) + "]: " + e.Message}
			}
			return nil, err
		}
		nts[i] = nt
	}
	return c.Enqueue(ctx, nts)
}

// Enqueue adds prepared tasks (used by the pipeline and the PDF service).
func (c *Controller) Enqueue(ctx context.Context, nts []queue.NewTask) ([]Created, error) {
	res, err := c.store.Enqueue(ctx, c.now(), nts)
	if err != nil {
		return nil, storeErr("enqueue", err)
	}
	out := make([]Created, len(res))
	var names []string
	for i, r := range res {
		out[i] = Created{TaskID: r.ID, Status: r.State, Queue: r.Queue, Created: r.Created}
		if r.Created {
			names = append(names, r.Queue)
		}
	}
	if len(names) > 0 {
		c.queues.add(names...)
		c.metrics.created.Add(float64(len(names)))
		c.wake.signal()
	}
	return out, nil
}

// Task reads a task.
func (c *Controller) Task(ctx context.Context, id string) (baton.TaskInfo, error) {
	if id == "" || len(id) > 128 {
		return baton.TaskInfo{}, baton.ErrNotFound
	}
	t, err := c.store.Get(ctx, id)
	return t, storeErr("read task", err)
}

// Cancel ends a task that has not finished; the state after is returned.
func (c *Controller) Cancel(ctx context.Context, id string) (baton.State, error) {
	if id == "" || len(id) > 128 {
		return "", baton.ErrNotFound
	}
	st, err := c.store.Cancel(ctx, id, c.now())
	return st, storeErr("cancel", err)
}
