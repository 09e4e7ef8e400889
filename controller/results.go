package controller

import (
	"context"
	"errors"
	"strings"
	"time"

	baton "github.com/batonhq/baton"
	"github.com/batonhq/baton/queue"
)

// Plan is what an Advancer decides for a result: the state a non-retry
// outcome ends the task in, the follow-up tasks to enqueue and the outbox
// entries to append — all applied atomically with the result, or not at all.
type Plan struct {
	// Outcome and Reason, when set, replace the worker's (an operator rule
	// may turn a verdict into another, or into a retry).
	Outcome    baton.Outcome
	Reason     string
	FinalState baton.State
	FollowUps  []queue.NewTask
	Outbox     []queue.OutboxEntry
}

// Advancer turns a worker's result for a task into a Plan. The domain
// pipeline's stage processor is one. Advance must be a pure decision: it
// may read configuration but must not write anything, since the plan is
// discarded when the lease turns out to be lost.
type Advancer interface {
	Advance(ctx context.Context, task baton.TaskInfo, res baton.Result) (Plan, error)
}

// AppliedNotifier is implemented by an Advancer that wants to know when a
// result it planned has been applied by the store (Advance runs before the
// store decides; a lost lease discards the plan). Applied is called once
// per applied result, after the store call returned; it must not block.
type AppliedNotifier interface {
	Applied(taskID string)
}

type advancerEntry struct {
	prefix string
	adv    Advancer
}

// Handle registers an Advancer for every task type starting with prefix
// (e.g. "domain."). The longest matching prefix wins.
func (c *Controller) Handle(prefix string, a Advancer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.advancers = append(c.advancers, advancerEntry{prefix: prefix, adv: a})
}

func (c *Controller) advancerFor(typ string) Advancer {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var best Advancer
	n := -1
	for _, e := range c.advancers {
		if strings.HasPrefix(typ, e.prefix) && len(e.prefix) > n {
			best, n = e.adv, len(e.prefix)
		}
	}
	return best
}

// DefaultFinalState maps an outcome of a task without an Advancer to its
// terminal state: pass and black_hit complete it, reject fails it.
func DefaultFinalState(o baton.Outcome) baton.State {
	if o == baton.OutcomeReject {
		return baton.StateFailed
	}
	return baton.StateCompleted
}

// Results applies a batch of worker results. Each is validated and applied
// independently and atomically; the answer lists which were accepted and
// why the others were not (lease_lost, not_found, invalid).
func (c *Controller) Results(ctx context.Context, items []baton.ResultItem) (baton.ResultsResponse, error) {
	resp := baton.ResultsResponse{Accepted: []string{}, Rejected: []baton.Rejection{}}
	if len(items) > baton.MaxResultsBatch {
		return resp, baton.Errorf(baton.EInvalid, "at most %d results per batch", baton.MaxResultsBatch)
	}
	now := c.now()
	// errs[i] is item i's refusal; nil once accepted. Answers keep input order.
	errs := make([]error, len(items))
	comps := make([]queue.Completion, 0, len(items))
	planned := make([]Advancer, 0, len(items)) // the Advancer that planned comps[k], if any
	idx := make([]int, 0, len(items))
	for i := range items {
		it := &items[i]
		if it.TaskID == "" {
			errs[i] = baton.Errorf(baton.EInvalid, "taskId is required")
			continue
		}
		if err := it.Result.Validate(); err != nil {
			errs[i] = err
			continue
		}
		comp := queue.Completion{
			TaskID: it.TaskID, Result: it.Result, Now: now, Jitter: jitter(), Backoff: c.backoff,
		}
		adv, err := c.plan(ctx, &comp)
		if err != nil {
			errs[i] = err
			continue
		}
		comps = append(comps, comp)
		planned = append(planned, adv)
		idx = append(idx, i)
	}
	if len(comps) > 0 {
		res, err := c.store.Complete(ctx, comps)
		if err != nil {
			return resp, storeErr("complete", err)
		}
		woke := false
		for k, r := range res {
			comp := &comps[k]
			if cl, ok := c.inflight.get(comp.TaskID, comp.Result.LeaseToken); ok {
				if r.Err == nil && !r.Ack.Duplicate {
					c.metrics.observeResult(cl, comp.Result.Outcome)
				}
				c.inflight.forget(comp.TaskID, comp.Result.LeaseToken)
			}
			if r.Err != nil {
				if errors.Is(r.Err, baton.ErrLeaseLost) {
					c.metrics.leaseLost.Inc()
				}
				errs[idx[k]] = storeErr("complete", r.Err)
				continue
			}
			if !r.Ack.Duplicate && (r.Ack.State == baton.StatePending || len(comp.FollowUps) > 0) {
				woke = true
			}
			if n, ok := planned[k].(AppliedNotifier); ok && !r.Ack.Duplicate {
				n.Applied(comp.TaskID)
			}
		}
		if woke {
			c.wake.signal()
		}
	}
	for i, err := range errs {
		if err != nil {
			resp.Rejected = append(resp.Rejected, baton.Rejection{TaskID: items[i].TaskID, Code: baton.ErrorCode(err), Message: baton.ErrorMessage(err)})
		} else {
			resp.Accepted = append(resp.Accepted, items[i].TaskID)
		}
	}
	return resp, nil
}

// plan fills the completion's final state, follow-ups and outbox from the
// task type's Advancer, if any, and returns the Advancer whose Advance ran
// (nil if none did). A result names only the task ID: its type and payload
// come from the claim this controller made (no store read), or, for a task
// claimed through another controller, from one store read.
func (c *Controller) plan(ctx context.Context, comp *queue.Completion) (Advancer, error) {
	if !c.hasAdvancers() {
		comp.FinalState = DefaultFinalState(comp.Result.Outcome)
		return nil, nil
	}
	var info baton.TaskInfo
	if cl, ok := c.inflight.get(comp.TaskID, comp.Result.LeaseToken); ok {
		// Claimed here under this very lease: type and payload are known.
		if c.advancerFor(cl.task.Type) == nil {
			comp.FinalState = DefaultFinalState(comp.Result.Outcome)
			return nil, nil
		}
		info = cl.info()
	} else {
		var err error
		if info, err = c.store.Get(ctx, comp.TaskID); err != nil {
			return nil, storeErr("read task", err)
		}
	}
	adv := c.advancerFor(info.Type)
	if adv == nil {
		comp.FinalState = DefaultFinalState(comp.Result.Outcome)
		return nil, nil
	}
	if info.Status != baton.StateProcessing {
		// Either a duplicate (the store answers it from the ack) or a lost
		// lease (the store refuses it): no plan is needed either way.
		comp.FinalState = DefaultFinalState(comp.Result.Outcome)
		return nil, nil
	}
	p, err := adv.Advance(ctx, info, comp.Result)
	if err != nil {
		return nil, err
	}
	if p.Outcome != "" {
		if !p.Outcome.Valid() {
			return nil, baton.Errorf(baton.EInternal, "advancer returned outcome %q", p.Outcome)
		}
		comp.Result.Outcome = p.Outcome
	}
	if p.Reason != "" {
		comp.Result.Reason = p.Reason
	}
	comp.FinalState = p.FinalState
	if comp.FinalState == "" {
		comp.FinalState = baton.StateCompleted
	}
	comp.FollowUps = p.FollowUps
	comp.Outbox = p.Outbox
	return adv, nil
}

func (c *Controller) hasAdvancers() bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.advancers) > 0
}

// Result applies one worker result (POST /api/worker/tasks/{id}/result).
func (c *Controller) Result(ctx context.Context, id string, r baton.Result) error {
	resp, err := c.Results(ctx, []baton.ResultItem{{TaskID: id, Result: r}})
	if err != nil {
		return err
	}
	if len(resp.Rejected) > 0 {
		rj := resp.Rejected[0]
		return &baton.Error{Code: rj.Code, Message: rj.Message}
	}
	return nil
}

func (c *Controller) reapLoop(ctx context.Context) {
	t := time.NewTicker(c.cfg.ReapInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for {
			st, err := c.store.Reap(ctx, c.now(), c.cfg.ReapBatch)
			if err != nil {
				if ctx.Err() == nil {
					c.log.Warn("reap", "err", err)
				}
				break
			}
			c.metrics.observeReap(st)
			if st.Stalled > 0 {
				c.wake.signal()
			}
			if st.Stalled+st.Failed < c.cfg.ReapBatch {
				break
			}
		}
	}
}
