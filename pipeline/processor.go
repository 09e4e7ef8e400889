package pipeline

import (
	"context"
	"encoding/json"
	"time"

	baton "github.com/batonhq/baton"
	"github.com/batonhq/baton/controller"
	"github.com/batonhq/baton/queue"
)

// Processor is the stage processor: the controller's Advancer for
// domain.* tasks. For each result it decides, under the configuration
// current at that moment, what happens to the domain — and the controller
// applies that decision atomically with the result:
//
//   - pass: record the step; enqueue the next enabled step the domain has
//     not passed (same dedup key, so it is never in flight twice), or end
//     the run as passed;
//   - reject: record; end the run as rejected, or review per the step;
//   - black_hit: record; blacklist with reason and evidence; end the run —
//     no later step runs;
//   - retry: nothing here — the store waits out the backoff; when attempts
//     are spent it ends the task as failed and its task.final event ends
//     the run (see Syncer).
type Processor struct {
	cfg    *ConfigHolder
	alerts *Alerts
	clock  func() time.Time
	newID  func() string
}

var _ controller.Advancer = (*Processor)(nil)

// NewProcessor returns a stage processor reading the live configuration.
func NewProcessor(cfg *ConfigHolder, clock func() time.Time) *Processor {
	if clock == nil {
		clock = time.Now
	}
	return &Processor{cfg: cfg, clock: clock, newID: controller.NewID}
}

// Advance implements controller.Advancer.
func (p *Processor) Advance(_ context.Context, t baton.TaskInfo, res baton.Result) (controller.Plan, error) {
	var pl Payload
	if err := json.Unmarshal(t.Payload, &pl); err != nil || pl.Domain == "" {
		// Not one of ours (a hand-made domain.* task): treat generically.
		return controller.Plan{FinalState: controller.DefaultFinalState(res.Outcome)}, nil
	}
	cfg := p.cfg.Get()
	step, _ := cfg.Step(pl.Step)
	p.alerts.observe(pl.Step, pl.Domain, res.Data, p.clock())
	outcome, note, err := step.Rules.Apply(res, decodeData(res.Data))
	reason := res.Reason
	if err != nil {
		// A rule that fails at run time must not lose the result: keep the
		// worker's verdict and say why in the reason.
		reason = joinReason(reason, err.Error())
	} else if note != "" {
		reason = joinReason(reason, note)
	}
	if outcome == baton.OutcomeRetry {
		// A worker's retry, or a rule asking for one: the store waits out
		// the backoff (or fails the task when attempts are spent).
		return controller.Plan{Outcome: outcome, Reason: reason}, nil
	}
	now := p.clock()
	ev := Event{
		Payload: pl, TaskID: t.ID, State: baton.StateCompleted, Outcome: outcome, Reason: reason,
		Data: res.Data, Attempts: t.Attempts, At: now, RunStatus: RunRunning,
	}
	plan := controller.Plan{Outcome: outcome, Reason: reason, FinalState: baton.StateCompleted}
	switch outcome {
	case baton.OutcomePass:
		passed := map[string]bool{pl.Step: true}
		for _, s := range pl.Passed {
			passed[s] = true
		}
		next := cfg.Next(passed)
		if next == "" {
			ev.RunStatus = RunPassed
			break
		}
		ns, _ := cfg.Step(next)
		np := pl
		np.Step = next
		np.Passed = appendStep(pl.Passed, pl.Step)
		np.Params = ns.Rules.Params
		body, err := json.Marshal(np)
		if err != nil {
			return plan, err
		}
		plan.FollowUps = []queue.NewTask{{
			ID: p.newID(), Type: TaskType(next), Queue: TaskType(next), Payload: body,
			MaxAttempts: ns.MaxAttempts, LeaseTTL: time.Duration(ns.LeaseTTLMs) * time.Millisecond,
			DedupKey: DedupKey(pl.Domain), Notify: true,
		}}
	case baton.OutcomeReject:
		ev.RunStatus = RunRejected
		if step.OnReject == OnRejectReview {
			ev.RunStatus = RunReview
		}
	case baton.OutcomeBlackHit:
		ev.RunStatus = RunBlacklisted
		ev.Category = categoryOf(res.Data)
	}
	body, err := json.Marshal(ev)
	if err != nil {
		return plan, err
	}
	plan.Outbox = []queue.OutboxEntry{{Kind: OutboxKind, Body: body}}
	return plan, nil
}

func appendStep(passed []string, step string) []string {
	out := make([]string, 0, len(passed)+1)
	for _, s := range passed {
		if s != step {
			out = append(out, s)
		}
	}
	return append(out, step)
}

func joinReason(a, b string) string {
	if a == "" {
		return b
	}
	s := a + "; " + b
	if len(s) > baton.MaxReasonLen {
		s = s[:baton.MaxReasonLen]
	}
	return s
}

func decodeData(raw json.RawMessage) any {
	if len(raw) == 0 {
		return map[string]any{}
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return map[string]any{}
	}
	return v
}

// categoryOf finds the blacklist category in a check's evidence: a
// top-level "category", or the first of "hits"/"words" entries with one.
func categoryOf(raw json.RawMessage) string {
	var ev struct {
		Category string `json:"category"`
		Hits     []struct {
			Category string `json:"category"`
		} `json:"hits"`
	}
	if json.Unmarshal(raw, &ev) != nil {
		return ""
	}
	if ev.Category != "" {
		return ev.Category
	}
	for _, h := range ev.Hits {
		if h.Category != "" {
			return h.Category
		}
	}
	return ""
}
