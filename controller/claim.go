package controller

import (
	"context"
	"time"

	baton "github.com/batonhq/baton"
	"github.com/batonhq/baton/queue"
)

// workerTouchEvery throttles the "worker seen" writes to the store.
const workerTouchEvery = time.Second

// Claim hands up to req.Max tasks to a worker, in queue order, each under a
// fresh lease. When nothing is claimable it waits up to req.WaitMs and
// returns as soon as a task arrives (a wake-up from the store), or empty
// when the wait runs out, the caller goes away or the controller stops.
func (c *Controller) Claim(ctx context.Context, req baton.ClaimRequest) ([]baton.Task, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	start := time.Now()
	c.touchWorker(ctx, req)
	deadline := start.Add(time.Duration(req.WaitMs) * time.Millisecond)
	for {
		woken := c.wake.wait()
		queues := c.queues.match(ctx, req.Types)
		if len(queues) > 0 {
			tasks, err := c.store.Claim(ctx, queue.ClaimRequest{
				WorkerID: req.WorkerID, Queues: queues, Max: req.Max, Now: c.now(),
			})
			if err != nil {
				return nil, storeErr("claim", err)
			}
			if len(tasks) > 0 {
				c.inflight.add(time.Now(), tasks)
				c.metrics.observeClaim(time.Since(start), tasks)
				return tasks, nil
			}
		}
		remaining := time.Until(deadline)
		if remaining <= 0 || c.wake.isClosed() {
			c.metrics.observeClaim(time.Since(start), nil)
			return []baton.Task{}, nil
		}
		sleep := c.cfg.PollInterval
		if remaining < sleep {
			sleep = remaining
		}
		t := time.NewTimer(sleep)
		select {
		case <-woken:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return []baton.Task{}, nil
		}
		t.Stop()
	}
}

func (c *Controller) touchWorker(ctx context.Context, req baton.ClaimRequest) {
	now := c.now()
	if v, ok := c.workerSeen.Load(req.WorkerID); ok && now.Sub(v.(time.Time)) < workerTouchEvery {
		return
	}
	c.workerSeen.Store(req.WorkerID, now)
	err := c.store.TouchWorker(ctx, queue.WorkerSeen{ID: req.WorkerID, Name: req.Name, Types: req.Types, Now: now})
	if err != nil {
		c.log.Warn("record worker", "worker", req.WorkerID, "err", err)
	}
}

// Heartbeat extends a lease. baton.ErrLeaseLost unless the token is current.
func (c *Controller) Heartbeat(ctx context.Context, id string, req baton.HeartbeatRequest) (time.Time, error) {
	if req.LeaseToken == "" {
		return time.Time{}, baton.Errorf(baton.EInvalid, "leaseToken is required")
	}
	if req.ExtendMs < 0 || req.ExtendMs > int64(queue.MaxLeaseTTL/time.Millisecond) {
		return time.Time{}, baton.Errorf(baton.EInvalid, "extendMs must be between 0 and %d", queue.MaxLeaseTTL/time.Millisecond)
	}
	exp, err := c.store.Heartbeat(ctx, id, req.LeaseToken, c.now(), time.Duration(req.ExtendMs)*time.Millisecond)
	return exp, storeErr("heartbeat", err)
}

// Release hands a task back to its queue without spending the attempt.
func (c *Controller) Release(ctx context.Context, id string, req baton.ReleaseRequest) error {
	if req.LeaseToken == "" {
		return baton.Errorf(baton.EInvalid, "leaseToken is required")
	}
	if err := c.store.Release(ctx, id, req.LeaseToken, c.now()); err != nil {
		return storeErr("release", err)
	}
	return nil
}

// Workers lists the workers seen in the last 24 hours.
func (c *Controller) Workers(ctx context.Context) ([]queue.WorkerInfo, error) {
	ws, err := c.store.Workers(ctx, c.now().Add(-24*time.Hour))
	return ws, storeErr("list workers", err)
}
