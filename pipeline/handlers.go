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
// A check.BatchChecker (aizhan answers for 50 domains per request) gets
// the domain.<step> tasks of one claim together.
func RegisterChecks(reg *worker.Registry, checkers ...check.Checker) {
	for _, c := range checkers {
		h := checkHandler{c}
		if bc, ok := c.(check.BatchChecker); ok {
			reg.Register(TaskType(c.Step()), batchHandler{checkHandler: h, bc: bc})
			continue
		}
		reg.Register(TaskType(c.Step()), h)
	}
}

var errNoDomain = baton.Result{Outcome: baton.OutcomeReject, Reason: "task payload has no domain"}

func domainOf(t *baton.Task) string {
	var p Payload
	if err := json.Unmarshal(t.Payload, &p); err != nil {
		return ""
	}
	return p.Domain
}

type checkHandler struct{ c check.Checker }

func (h checkHandler) Handle(ctx context.Context, t *baton.Task) baton.Result {
	d := domainOf(t)
	if d == "" {
		return errNoDomain
	}
	return h.c.Check(ctx, d).Result(t.LeaseToken)
}

type batchHandler struct {
	checkHandler
	bc check.BatchChecker
}

func (h batchHandler) MaxBatch() int { return h.bc.MaxBatch() }

func (h batchHandler) HandleBatch(ctx context.Context, ts []*baton.Task) []baton.Result {
	out := make([]baton.Result, len(ts))
	var domains []string
	var idx []int
	for i, t := range ts {
		d := domainOf(t)
		if d == "" {
			out[i] = errNoDomain
			continue
		}
		domains = append(domains, d)
		idx = append(idx, i)
	}
	if len(domains) == 0 {
		return out
	}
	vs := h.bc.CheckBatch(ctx, domains)
	for k, i := range idx {
		if k < len(vs) {
			out[i] = vs[k].Result(ts[i].LeaseToken)
		} else {
			out[i] = baton.Result{Outcome: baton.OutcomeRetry, Reason: "batch check returned too few verdicts"}
		}
	}
	return out
}
