package controller

import (
	"sync"
	"time"

	baton "github.com/batonhq/baton"
	"github.com/batonhq/baton/queue"
)

// inflight remembers the tasks this controller handed out, until their
// result comes back: the claim already carried each task's type and
// payload, so applying a result needs no store read, and the claim time
// gives the task duration. A result reaching another controller, or a
// task that is reaped, simply misses here; such entries are forgotten
// after twice the longest lease.
type inflight struct {
	m      sync.Map // task ID -> *claimed
	mu     sync.Mutex
	lastGC time.Time
}

type claimed struct {
	at   time.Time
	task baton.Task
}

func (f *inflight) add(now time.Time, tasks []baton.Task) {
	for i := range tasks {
		f.m.Store(tasks[i].ID, &claimed{at: now, task: tasks[i]})
	}
	f.mu.Lock()
	gc := now.Sub(f.lastGC) >= time.Minute
	if gc {
		f.lastGC = now
	}
	f.mu.Unlock()
	if gc {
		f.m.Range(func(k, v any) bool {
			if now.Sub(v.(*claimed).at) > 2*queue.MaxLeaseTTL {
				f.m.Delete(k)
			}
			return true
		})
	}
}

// get returns the claim of task id under lease token, if it was made here.
func (f *inflight) get(id, token string) (*claimed, bool) {
	v, ok := f.m.Load(id)
	if !ok {
		return nil, false
	}
	c := v.(*claimed)
	if c.task.LeaseToken != token {
		return nil, false
	}
	return c, true
}

// forget drops the claim of task id if it is still the one under token.
func (f *inflight) forget(id, token string) {
	if v, ok := f.m.Load(id); ok && v.(*claimed).task.LeaseToken == token {
		f.m.CompareAndDelete(id, v)
	}
}

// info rebuilds the task as the store would show it while processing.
func (c *claimed) info() baton.TaskInfo {
	t := c.task
	return baton.TaskInfo{
		ID: t.ID, Type: t.Type, Queue: t.Queue, Status: baton.StateProcessing, Payload: t.Payload,
		Attempts: t.Attempt, MaxAttempts: t.MaxAttempts, CreatedAt: t.CreatedAt,
	}
}
