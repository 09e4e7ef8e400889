package app

import (
	"context"
	"encoding/json"
	"time"

	baton "github.com/batonhq/baton"
	"github.com/batonhq/baton/worker"
)

// Built-in generic task types every Baton worker can run.
const (
	// TypeNoop passes at once (benchmarks, smoke tests).
	TypeNoop = "baton.noop"
	// TypeSleep waits payload {"ms":N} (at most 10 minutes) and passes; it
	// honours cancellation, so it shows leases, heartbeats and hand-backs.
	TypeSleep = "baton.sleep"
)

// Builtins returns a registry with the built-in generic handlers.
func Builtins() *worker.Registry {
	r := worker.NewRegistry()
	r.Register(TypeNoop, worker.HandlerFunc(func(context.Context, *baton.Task) baton.Result {
		return baton.Result{Outcome: baton.OutcomePass}
	}))
	r.Register(TypeSleep, worker.HandlerFunc(sleepHandler))
	return r
}

func sleepHandler(ctx context.Context, t *baton.Task) baton.Result {
	var p struct {
		Ms int64 `json:"ms"`
	}
	if len(t.Payload) > 0 && string(t.Payload) != "null" {
		if err := json.Unmarshal(t.Payload, &p); err != nil {
			return baton.Result{Outcome: baton.OutcomeReject, Reason: "payload must be {\"ms\":N}"}
		}
	}
	d := time.Duration(min(max(p.Ms, 0), 600_000)) * time.Millisecond
	select {
	case <-time.After(d):
		return baton.Result{Outcome: baton.OutcomePass, Reason: "slept " + d.String()}
	case <-ctx.Done():
		return baton.Result{Outcome: baton.OutcomeRetry, Reason: "interrupted"}
	}
}
