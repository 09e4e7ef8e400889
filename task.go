// Package baton holds the domain types shared by every part of Baton: the
// standardized task and result envelopes, task states, outcomes and the
// application error type. It imports only the standard library; adapters
// (stores, HTTP, browsers, providers) talk to each other in these types.
package baton

import (
	"encoding/json"
	"time"
)

// State is the lifecycle state of a task (the PDF seed's words, used for every task).
type State string

// Task states. A task is created pending, becomes processing when a worker
// claims it, and ends in one of the terminal states. A processing task whose
// lease expires becomes stalled and is claimable again.
const (
	StatePending    State = "pending"
	StateProcessing State = "processing"
	StateCompleted  State = "completed"
	StateFailed     State = "failed"
	StateTimeout    State = "timeout"
	StateCancelled  State = "cancelled"
	StateStalled    State = "stalled"
)

// Terminal reports whether no further transition can happen from s.
func (s State) Terminal() bool {
	switch s {
	case StateCompleted, StateFailed, StateTimeout, StateCancelled:
		return true
	}
	return false
}

// Valid reports whether s is one of the known states.
func (s State) Valid() bool {
	switch s {
	case StatePending, StateProcessing, StateCompleted, StateFailed, StateTimeout, StateCancelled, StateStalled:
		return true
	}
	return false
}

// Outcome is a worker's verdict on a task.
type Outcome string

// Outcomes of a standardized result.
const (
	// OutcomePass: the check passed (or, for generic tasks, the work succeeded).
	OutcomePass Outcome = "pass"
	// OutcomeReject: a business verdict against the subject; no retry.
	OutcomeReject Outcome = "reject"
	// OutcomeBlackHit: the subject hit a blacklist; stop everything after it.
	OutcomeBlackHit Outcome = "black_hit"
	// OutcomeRetry: no verdict for an outside reason (timeout, 5xx, captcha,
	// rate limit); the task runs again after a backoff until attempts are spent.
	OutcomeRetry Outcome = "retry"
)

// Valid reports whether o is one of the four outcomes.
func (o Outcome) Valid() bool {
	switch o {
	case OutcomePass, OutcomeReject, OutcomeBlackHit, OutcomeRetry:
		return true
	}
	return false
}

// Task is the standardized task envelope a worker receives from a claim.
type Task struct {
	ID             string          `json:"id"`
	Type           string          `json:"type"`
	Queue          string          `json:"queue"`
	Payload        json.RawMessage `json:"payload"`
	Attempt        int             `json:"attempt"`
	MaxAttempts    int             `json:"maxAttempts"`
	LeaseToken     string          `json:"leaseToken"`
	LeaseExpiresAt time.Time       `json:"leaseExpiresAt"`
	CreatedAt      time.Time       `json:"createdAt"`
}

// Result is the standardized result a worker reports for a claimed task.
type Result struct {
	LeaseToken   string          `json:"leaseToken"`
	Outcome      Outcome         `json:"outcome"`
	Reason       string          `json:"reason,omitempty"`
	Data         json.RawMessage `json:"data,omitempty"`
	RetryAfterMs int64           `json:"retryAfterMs,omitempty"`
}

// MaxReasonLen bounds the reason text kept with a result.
const MaxReasonLen = 2048

// Validate checks a result as received from the outside.
func (r *Result) Validate() error {
	if r.LeaseToken == "" {
		return Errorf(EInvalid, "leaseToken is required")
	}
	if !r.Outcome.Valid() {
		return Errorf(EInvalid, "outcome must be one of pass, reject, black_hit, retry (got %q)", string(r.Outcome))
	}
	if r.RetryAfterMs < 0 || r.RetryAfterMs > int64(24*time.Hour/time.Millisecond) {
		return Errorf(EInvalid, "retryAfterMs must be between 0 and 86400000")
	}
	if len(r.Reason) > MaxReasonLen {
		r.Reason = r.Reason[:MaxReasonLen]
	}
	if len(r.Data) > 0 && !json.Valid(r.Data) {
		return Errorf(EInvalid, "data must be JSON")
	}
	return nil
}

// TaskInfo is the stored view of a task, as GET /api/tasks/{id} shows it.
type TaskInfo struct {
	ID            string          `json:"taskId"`
	Type          string          `json:"type"`
	Queue         string          `json:"queue"`
	Status        State           `json:"status"`
	Payload       json.RawMessage `json:"payload,omitempty"`
	Attempts      int             `json:"attempts"`
	MaxAttempts   int             `json:"maxAttempts"`
	Outcome       Outcome         `json:"outcome,omitempty"`
	Reason        string          `json:"reason,omitempty"`
	Data          json.RawMessage `json:"data,omitempty"`
	Error         string          `json:"error,omitempty"`
	DedupKey      string          `json:"dedupKey,omitempty"`
	WorkerID      string          `json:"workerId,omitempty"`
	LeaseTTL      time.Duration   `json:"-"`
	CreatedAt     time.Time       `json:"createdAt"`
	StartedAt     *time.Time      `json:"startedAt,omitempty"`
	FinishedAt    *time.Time      `json:"finishedAt,omitempty"`
	NextAttemptAt *time.Time      `json:"nextAttemptAt,omitempty"`
	DurationMs    *int64          `json:"durationMs,omitempty"`
}
