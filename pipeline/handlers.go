package pipeline

import (
	"context"
	"encoding/json"

	baton "github.com/batonhq/baton"
	"github.com/batonhq/baton/check"
	"github.com/batonhq/baton/worker"
)

// RegisterChecks binds each checker to its step's task type, domain.<step>,
// in a worker registry. A check's verdict becomes the task's result: the
// controller's stage processor does the rest.
func RegisterChecks(reg *worker.Registry, checkers ...check.Checker) {
	for _, c := range checkers {
		c := c
		reg.Register(TaskType(c.Step()), worker.HandlerFunc(func(ctx context.Context, t *baton.Task) baton.Result {
			var p Payload
			if err := json.Unmarshal(t.Payload, &p); err != nil || p.Domain == "" {
				return baton.Result{Outcome: baton.OutcomeReject, Reason: "task payload has no domain"}
			}
			return c.Check(ctx, p.Domain).Result(t.LeaseToken)
		}))
	}
}
