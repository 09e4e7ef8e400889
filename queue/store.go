// Package queue defines the task store: the interface every queue backend
// implements (Redis in redisq, embedded SQLite in sqliteq) and the types it
// speaks. The semantics are fixed by the conformance suite in queuetest; a
// backend is correct when it passes it.
//
// Time is always passed in by the caller (Now fields and arguments), so the
// controller's clock decides leases and backoffs and tests can drive time.
package queue

import (
	"context"
	"encoding/json"
	"time"

	baton "github.com/batonhq/baton"
)

// Defaults applied by stores when a NewTask leaves a field zero.
const (
	DefaultMaxAttempts = 5
	DefaultLeaseTTL    = 30 * time.Second
	// MinLeaseTTL is the shortest lease a task may ask for.
	MinLeaseTTL = time.Second
	// MaxLeaseTTL is the longest lease (and the longest heartbeat extension).
	MaxLeaseTTL = time.Hour
	// DefaultRetention is how long finished tasks stay readable.
	DefaultRetention = 24 * time.Hour
)

// OutboxKindTaskFinal is the kind of the outbox event a store appends by
// itself when a task created with Notify reaches a terminal state.
const OutboxKindTaskFinal = "task.final"

// NewTask describes a task to enqueue.
type NewTask struct {
	// ID is chosen by the caller (a ULID); required and unique.
	ID    string
	Type  string
	Queue string
	// Payload is opaque JSON handed to the worker; "null" when empty.
	Payload json.RawMessage
	// MaxAttempts; 0 means DefaultMaxAttempts.
	MaxAttempts int
	// LeaseTTL is the lease a claim grants; 0 means DefaultLeaseTTL.
	LeaseTTL time.Duration
	// DedupKey, when set, is held by at most one non-terminal task: enqueueing
	// a second task with the key while the first is active creates nothing and
	// returns the first task.
	DedupKey string
	// RunAt delays the first claim; zero means now.
	RunAt time.Time
	// Notify makes the store append an OutboxKindTaskFinal event whenever the
	// task reaches a terminal state (completed, failed, timeout, cancelled).
	Notify bool
}

// EnqueueResult tells what happened to one NewTask.
type EnqueueResult struct {
	// ID of the task now holding the dedup key: the new task's ID when
	// Created, else the existing task's.
	ID      string
	Created bool
	State   baton.State
	Queue   string
}

// ClaimRequest asks for up to Max tasks.
type ClaimRequest struct {
	WorkerID string
	// Queues in the order they are drained: all claimable tasks of Queues[0]
	// are handed out before any of Queues[1].
	Queues []string
	Max    int
	Now    time.Time
}

// Completion applies one worker result. It is one atomic step: the result
// is recorded, the task moves to its next state, follow-up tasks are
// enqueued and outbox entries appended — or, if the lease token is not the
// current one, nothing changes at all.
type Completion struct {
	TaskID string
	Result baton.Result
	Now    time.Time
	// Jitter in [0,1) spreads the retry backoff.
	Jitter  float64
	Backoff baton.Backoff
	// FinalState is the state a non-retry outcome ends the task in;
	// "" means completed. Must be terminal.
	FinalState baton.State
	// FollowUps are enqueued, and Outbox entries appended, when the result
	// ends the task; not when a retry puts it back in its queue.
	FollowUps []NewTask
	Outbox    []OutboxEntry
}

// Ack is the answer to an applied Completion.
type Ack struct {
	// State of the task after the result.
	State baton.State `json:"state"`
	// NextAttemptAt is set when a retry put the task back to wait.
	NextAttemptAt *time.Time `json:"nextAttemptAt,omitempty"`
	// Duplicate is true when this exact result (same lease token) had
	// already been applied; nothing changed this time.
	Duplicate bool `json:"duplicate,omitempty"`
}

// CompleteResult is one entry of a batch completion: Ack, or Err
// (baton.ErrLeaseLost, baton.ErrNotFound, or an *baton.Error with EInvalid).
type CompleteResult struct {
	Ack Ack
	Err error
}

// ReapStats counts what a reap did.
type ReapStats struct {
	// Stalled tasks went back to their queue.
	Stalled int
	// Failed tasks had no attempts left.
	Failed int
	// Purged finished tasks past retention were deleted.
	Purged int
	// Queues lists the queue of each expired lease (for metrics), may repeat.
	Queues []string
}

// QueueConfig is the operator's per-queue setting, shared by all controllers.
type QueueConfig struct {
	Paused bool `json:"paused"`
	// RatePerMin caps claims from the queue across all workers; 0 = no limit.
	RatePerMin int `json:"ratePerMin"`
}

// QueueStat is one queue's snapshot.
type QueueStat struct {
	Name string `json:"name"`
	// Ready tasks can be claimed now (pending or stalled, due).
	Ready int64 `json:"ready"`
	// Running tasks are processing under a lease.
	Running int64 `json:"running"`
	// Retry tasks wait for their next attempt (or for RunAt).
	Retry int64 `json:"retry"`
	// Dead tasks failed and are still within retention.
	Dead        int64 `json:"dead"`
	Paused      bool  `json:"paused"`
	OldestAgeMs int64 `json:"oldestAgeMs"`
	RatePerMin  int   `json:"ratePerMin"`
}

// OutboxEntry is one durable event for consumers outside the store (the
// ledger syncer, callbacks). ID is assigned by the store, increasing.
type OutboxEntry struct {
	ID   string          `json:"id"`
	Kind string          `json:"kind"`
	Body json.RawMessage `json:"body"`
}

// TaskFinal is the body of an OutboxKindTaskFinal event.
type TaskFinal struct {
	TaskID     string          `json:"taskId"`
	Type       string          `json:"type"`
	Queue      string          `json:"queue"`
	State      baton.State     `json:"state"`
	Outcome    baton.Outcome   `json:"outcome,omitempty"`
	Reason     string          `json:"reason,omitempty"`
	Error      string          `json:"error,omitempty"`
	Attempts   int             `json:"attempts"`
	Payload    json.RawMessage `json:"payload,omitempty"`
	Data       json.RawMessage `json:"data,omitempty"`
	FinishedAt time.Time       `json:"finishedAt"`
}

// WorkerSeen records a worker's claim.
type WorkerSeen struct {
	ID    string
	Name  string
	Types []string
	Now   time.Time
}

// WorkerInfo is a worker as GET /api/workers shows it.
type WorkerInfo struct {
	ID       string    `json:"workerId"`
	Name     string    `json:"name,omitempty"`
	Types    []string  `json:"types"`
	LastSeen time.Time `json:"lastSeen"`
	// Running is the number of tasks it holds a lease on.
	Running int64 `json:"running"`
}

// Store is a queue backend. Every method is safe for concurrent use, also
// from several controller processes sharing one backend.
type Store interface {
	// Enqueue adds tasks, honouring dedup keys, and returns one result per task.
	Enqueue(ctx context.Context, now time.Time, tasks []NewTask) ([]EnqueueResult, error)
	// Claim atomically takes up to req.Max claimable tasks from req.Queues in
	// order, skipping paused queues and honouring rate limits, marks each
	// processing with a fresh lease token and a deadline of Now+LeaseTTL,
	// and increments its attempt.
	Claim(ctx context.Context, req ClaimRequest) ([]baton.Task, error)
	// Heartbeat extends a lease to now+extend (extend 0 = the task's lease
	// TTL; capped at MaxLeaseTTL). baton.ErrLeaseLost unless token is current.
	Heartbeat(ctx context.Context, id, token string, now time.Time, extend time.Duration) (time.Time, error)
	// Complete applies results, each atomically and independently.
	Complete(ctx context.Context, cs []Completion) ([]CompleteResult, error)
	// Release hands a claimed task back to its queue without spending the
	// attempt (graceful worker shutdown). baton.ErrLeaseLost unless current.
	Release(ctx context.Context, id, token string, now time.Time) error
	// Reap sends tasks whose lease expired by now back to their queue as
	// stalled (or to failed when attempts are spent), at most limit of them,
	// and purges finished tasks past retention. Safe to run concurrently
	// from several controllers.
	Reap(ctx context.Context, now time.Time, limit int) (ReapStats, error)
	// Get returns a task; baton.ErrNotFound when unknown or purged.
	Get(ctx context.Context, id string) (baton.TaskInfo, error)
	// Cancel ends a non-terminal task as cancelled and returns the state it
	// is in afterwards; an *baton.Error EConflict if it had already ended.
	Cancel(ctx context.Context, id string, now time.Time) (baton.State, error)
	// Queues lists every known queue's snapshot, sorted by name.
	Queues(ctx context.Context, now time.Time) ([]QueueStat, error)
	// SetQueueConfig stores a queue's settings (and makes the queue known).
	SetQueueConfig(ctx context.Context, name string, cfg QueueConfig) error
	// QueueConfig reads a queue's settings (zero value when never set).
	QueueConfig(ctx context.Context, name string) (QueueConfig, error)
	// ReadOutbox returns up to limit oldest outbox entries.
	ReadOutbox(ctx context.Context, limit int) ([]OutboxEntry, error)
	// AckOutbox deletes consumed entries; unknown IDs are ignored.
	AckOutbox(ctx context.Context, ids []string) error
	// TouchWorker records that a worker was seen.
	TouchWorker(ctx context.Context, w WorkerSeen) error
	// Workers lists workers seen since the given time.
	Workers(ctx context.Context, since time.Time) ([]WorkerInfo, error)
	// PutIfAbsent stores val under key for ttl unless the key exists; it
	// returns the value now stored and whether this call created it.
	PutIfAbsent(ctx context.Context, key string, val []byte, ttl time.Duration) ([]byte, bool, error)
	// Wake returns a channel that receives (coalesced) after tasks become
	// claimable through this store — also when another controller process
	// enqueued them. Used by long-poll claims.
	Wake() <-chan struct{}
	// Ping checks the backend is reachable.
	Ping(ctx context.Context) error
	// Close releases resources; safe to call twice.
	Close() error
}
