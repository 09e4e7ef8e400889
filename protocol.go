package baton

import (
	"context"
	"time"
)

// Limits of the worker protocol (SPEC §4).
const (
	MaxClaim     = 256
	MaxClaimWait = 60 * time.Second
	// MaxResultsBatch bounds POST /api/worker/results.
	MaxResultsBatch = 1024
)

// ClaimRequest is the body of POST /api/worker/claim.
type ClaimRequest struct {
	WorkerID string `json:"workerId"`
	// Name is an optional human label for the worker.
	Name string `json:"name,omitempty"`
	// Types are globs (path.Match syntax, e.g. "domain.*") selecting the
	// queues the worker runs; empty means every queue.
	Types  []string `json:"types"`
	Max    int      `json:"max"`
	WaitMs int      `json:"waitMs"`
}

// Validate checks a claim request as received from the outside.
func (r *ClaimRequest) Validate() error {
	if r.WorkerID == "" || len(r.WorkerID) > 128 {
		return Errorf(EInvalid, "workerId is required (1-128 characters)")
	}
	if len(r.Name) > 128 {
		return Errorf(EInvalid, "name must be at most 128 characters")
	}
	if r.Max < 1 || r.Max > MaxClaim {
		return Errorf(EInvalid, "max must be between 1 and %d", MaxClaim)
	}
	if r.WaitMs < 0 || r.WaitMs > int(MaxClaimWait/time.Millisecond) {
		return Errorf(EInvalid, "waitMs must be between 0 and %d", MaxClaimWait/time.Millisecond)
	}
	if len(r.Types) > 64 {
		return Errorf(EInvalid, "at most 64 types")
	}
	for _, t := range r.Types {
		if t == "" || len(t) > 128 {
			return Errorf(EInvalid, "types must be non-empty globs of at most 128 characters")
		}
	}
	return nil
}

// ClaimResponse is the answer to a claim.
type ClaimResponse struct {
	Tasks []Task `json:"tasks"`
}

// HeartbeatRequest is the body of POST /api/worker/tasks/{id}/heartbeat.
type HeartbeatRequest struct {
	LeaseToken string `json:"leaseToken"`
	ExtendMs   int64  `json:"extendMs"`
}

// HeartbeatResponse is the answer to a heartbeat.
type HeartbeatResponse struct {
	LeaseExpiresAt time.Time `json:"leaseExpiresAt"`
}

// ReleaseRequest is the body of POST /api/worker/tasks/{id}/release: hand a
// claimed task back without spending its attempt (graceful shutdown).
type ReleaseRequest struct {
	LeaseToken string `json:"leaseToken"`
}

// ResultItem is one entry of POST /api/worker/results.
type ResultItem struct {
	TaskID string `json:"taskId"`
	Result
}

// ResultsRequest is the body of POST /api/worker/results.
type ResultsRequest struct {
	Results []ResultItem `json:"results"`
}

// Rejection says why one result of a batch was not accepted.
type Rejection struct {
	TaskID  string `json:"taskId"`
	Code    string `json:"code"`
	Message string `json:"message,omitempty"`
}

// ResultsResponse is the answer to a batch of results.
type ResultsResponse struct {
	Accepted []string    `json:"accepted"`
	Rejected []Rejection `json:"rejected"`
}

// WorkerAPI is what a worker needs from a controller: implemented over HTTP
// by httpapi.Client and in-process by controller.Local.
type WorkerAPI interface {
	Claim(ctx context.Context, req ClaimRequest) ([]Task, error)
	Heartbeat(ctx context.Context, id string, req HeartbeatRequest) (time.Time, error)
	Results(ctx context.Context, items []ResultItem) (ResultsResponse, error)
	Release(ctx context.Context, id string, req ReleaseRequest) error
}
