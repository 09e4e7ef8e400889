package controller

import (
	"context"
	"time"

	baton "github.com/batonhq/baton"
)

// Local is the in-process worker API: in-process workers (baton serve
// --workers N) call the controller directly through it, with exactly the
// semantics a remote worker gets over HTTP.
type Local struct{ C *Controller }

var _ baton.WorkerAPI = Local{}

// Claim implements baton.WorkerAPI.
func (l Local) Claim(ctx context.Context, req baton.ClaimRequest) ([]baton.Task, error) {
	return l.C.Claim(ctx, req)
}

// Heartbeat implements baton.WorkerAPI.
func (l Local) Heartbeat(ctx context.Context, id string, req baton.HeartbeatRequest) (time.Time, error) {
	return l.C.Heartbeat(ctx, id, req)
}

// Results implements baton.WorkerAPI.
func (l Local) Results(ctx context.Context, items []baton.ResultItem) (baton.ResultsResponse, error) {
	return l.C.Results(ctx, items)
}

// Release implements baton.WorkerAPI.
func (l Local) Release(ctx context.Context, id string, req baton.ReleaseRequest) error {
	return l.C.Release(ctx, id, req)
}
