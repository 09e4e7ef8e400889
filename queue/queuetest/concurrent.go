package queuetest

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	baton "github.com/batonhq/baton"
	"github.com/batonhq/baton/queue"
)

// concurrentTimeout bounds each concurrent test; it is a hang guard, not a
// performance assertion.
const concurrentTimeout = 3 * time.Minute

// testConcurrentClaimComplete has many workers claim and complete tasks from
// several queues at once, with leases that never expire: every task must be
// handed out exactly once, to one worker at a time, and completed once.
func testConcurrentClaimComplete(t *testing.T, newStore func(t *testing.T) queue.Store) {
	h := newH(t, newStore)
	const nTasks, nWorkers = 2000, 16
	queues := []string{"c0", "c1", "c2", "c3"}
	var all []string
	for b := 0; b < nTasks; b += 200 {
		batch := make([]queue.NewTask, 0, 200)
		for i := b; i < b+200; i++ {
			id := idf("t%04d", i)
			all = append(all, id)
			batch = append(batch, queue.NewTask{ID: id, Type: "test", Queue: queues[i%len(queues)], LeaseTTL: time.Hour, Notify: true})
		}
		h.enqueue(at(0), batch...)
	}

	ctx, cancel := context.WithTimeout(h.ctx, concurrentTimeout)
	defer cancel()
	var (
		mu      sync.Mutex
		holders = map[string]string{}
		claims  = map[string]int{}
		acks    = map[string]int{}
		done    atomic.Int64
		wg      sync.WaitGroup
	)
	for w := range nWorkers {
		worker := idf("w%02d", w)
		order := append(append([]string(nil), queues[w%len(queues):]...), queues[:w%len(queues)]...)
		wg.Go(func() {
			for done.Load() < nTasks {
				if ctx.Err() != nil {
					t.Errorf("%s: gave up: %v", worker, ctx.Err())
					return
				}
				tasks, err := h.s.Claim(ctx, queue.ClaimRequest{WorkerID: worker, Queues: order, Max: 1 + w%8, Now: at(1000)})
				if err != nil {
					t.Errorf("%s: Claim: %v", worker, err)
					return
				}
				if len(tasks) == 0 {
					time.Sleep(time.Millisecond)
					continue
				}
				cs := make([]queue.Completion, len(tasks))
				mu.Lock()
				for i, tk := range tasks {
					if other, ok := holders[tk.ID]; ok {
						t.Errorf("task %s handed to %s while %s holds it", tk.ID, worker, other)
					}
					holders[tk.ID] = worker
					claims[tk.ID]++
					cs[i] = pass(tk, at(2000))
				}
				mu.Unlock()
				res, err := h.s.Complete(ctx, cs)
				if err != nil {
					t.Errorf("%s: Complete: %v", worker, err)
					return
				}
				mu.Lock()
				for i, r := range res {
					id := cs[i].TaskID
					delete(holders, id)
					if r.Err != nil || r.Ack.Duplicate || r.Ack.State != baton.StateCompleted {
						t.Errorf("%s: Complete(%s) = %+v", worker, id, r)
						continue
					}
					acks[id]++
					done.Add(1)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	for _, id := range all {
		if claims[id] != 1 || acks[id] != 1 {
			t.Errorf("task %s claimed %d times, completed %d times; want 1 and 1", id, claims[id], acks[id])
		}
	}
	for _, id := range all {
		if ti := h.get(id); ti.Status != baton.StateCompleted || ti.Attempts != 1 {
			t.Errorf("task %s: status %s attempts %d, want completed after 1", id, ti.Status, ti.Attempts)
		}
	}
	for _, st := range h.queues(at(3000)) {
		if st.Ready != 0 || st.Running != 0 || st.Retry != 0 {
			t.Errorf("queue %s not drained: %+v", st.Name, st)
		}
	}
	var finals []string
	for _, e := range h.events() {
		finals = append(finals, e.TaskID)
	}
	slices.Sort(finals)
	diff(t, "task.final events", all, finals)
}

// testConcurrentReaper runs workers against reapers while leases really
// expire: a logical clock moves forward by one reaper, some workers abandon
// tasks and report late. The assertions do not depend on the interleaving:
// every task ends exactly once (one applied result or one lease-expired
// failure), every re-claim is explained by exactly one stall, attempts are
// 1..n without gaps or repeats, and lease tokens are never reused.
func testConcurrentReaper(t *testing.T, newStore func(t *testing.T) queue.Store) {
	h := newH(t, newStore)
	const nTasks, nWorkers = 400, 8
	const lease = time.Second
	queues := []string{"r0", "r1", "r2"}
	var all []string
	batch := make([]queue.NewTask, 0, nTasks)
	for i := range nTasks {
		id := idf("r%04d", i)
		all = append(all, id)
		batch = append(batch, queue.NewTask{ID: id, Type: "test", Queue: queues[i%len(queues)], LeaseTTL: lease, MaxAttempts: 20, Notify: true})
	}
	h.enqueue(at(0), batch...)
	// abandoned: every fourth task is dropped by its first holder, which
	// reports for it only after its lease has run out.
	abandoned := map[string]bool{}
	for i, id := range all {
		abandoned[id] = i%4 == 0
	}

	ctx, cancel := context.WithTimeout(h.ctx, concurrentTimeout)
	defer cancel()
	var (
		clock   atomic.Int64 // ms after base
		done    atomic.Int64 // tasks that reached their end
		stalled atomic.Int64
		failed  atomic.Int64
		mu      sync.Mutex
		tokens  = map[string]bool{}
		tries   = map[string][]int{} // attempts handed out per task
		attempt = map[string]int{}   // the attempt of each lease token handed out
		newest  = map[string]int{}   // the highest attempt handed out per task
		acks    = map[string]int{}
		wg      sync.WaitGroup
	)
	now := func() time.Time { return at(clock.Load()) }

	// Two reapers; the first one also moves the clock.
	for r := range 2 {
		wg.Go(func() {
			for done.Load() < nTasks && ctx.Err() == nil {
				if r == 0 {
					clock.Add(500)
				}
				st, err := h.s.Reap(ctx, now(), 50)
				if err != nil {
					if ctx.Err() == nil {
						t.Errorf("Reap: %v", err)
					}
					return
				}
				stalled.Add(int64(st.Stalled))
				failed.Add(int64(st.Failed))
				done.Add(int64(st.Failed))
				time.Sleep(time.Millisecond)
			}
		})
	}
	// report applies results and accounts for them.
	report := func(worker string, cs []queue.Completion) bool {
		res, err := h.s.Complete(ctx, cs)
		if err != nil {
			if ctx.Err() == nil {
				t.Errorf("%s: Complete: %v", worker, err)
			}
			return false
		}
		mu.Lock()
		defer mu.Unlock()
		for i, r := range res {
			id := cs[i].TaskID
			switch {
			case r.Err == nil && !r.Ack.Duplicate && r.Ack.State == baton.StateCompleted:
				// A newer claim means this lease was reaped before the
				// result was applied: the store took a stale result.
				// Attempts, not the order in which workers recorded their
				// claims, tell which claim is newer (a worker may record
				// its claim after a later one was handed out and applied).
				if tok := cs[i].Result.LeaseToken; attempt[tok] < newest[id] {
					t.Errorf("%s: result for %s applied with token %s of attempt %d, but attempt %d was handed out after it", worker, id, tok, attempt[tok], newest[id])
				}
				acks[id]++
				done.Add(1)
			case errors.Is(r.Err, baton.ErrLeaseLost):
				// The lease expired and was reaped before the result came.
			default:
				t.Errorf("%s: Complete(%s) = %+v", worker, id, r)
			}
		}
		return true
	}
	for w := range nWorkers {
		worker := idf("w%02d", w)
		order := append(append([]string(nil), queues[w%len(queues):]...), queues[:w%len(queues)]...)
		wg.Go(func() {
			var late []baton.Task
			defer func() {
				// Whatever is still held is stale by now: every task ended.
				if len(late) == 0 || ctx.Err() != nil {
					return
				}
				cs := make([]queue.Completion, len(late))
				for i, tk := range late {
					cs[i] = pass(tk, now())
				}
				res, err := h.s.Complete(ctx, cs)
				if err != nil {
					t.Errorf("%s: final Complete: %v", worker, err)
					return
				}
				for i, r := range res {
					if !errors.Is(r.Err, baton.ErrLeaseLost) {
						t.Errorf("%s: stale result for %s after the end = %+v, want ErrLeaseLost", worker, cs[i].TaskID, r)
					}
				}
			}()
			for done.Load() < nTasks {
				if ctx.Err() != nil {
					t.Errorf("%s: gave up after %d of %d tasks ended: %v", worker, done.Load(), nTasks, ctx.Err())
					return
				}
				// Report abandoned tasks whose lease has run out.
				var due []queue.Completion
				keep := late[:0]
				for _, tk := range late {
					if now().After(tk.LeaseExpiresAt.Add(time.Second)) {
						due = append(due, pass(tk, now()))
					} else {
						keep = append(keep, tk)
					}
				}
				late = keep
				if len(due) > 0 && !report(worker, due) {
					return
				}

				tasks, err := h.s.Claim(ctx, queue.ClaimRequest{WorkerID: worker, Queues: order, Max: 1 + w%4, Now: now()})
				if err != nil {
					if ctx.Err() == nil {
						t.Errorf("%s: Claim: %v", worker, err)
					}
					return
				}
				if len(tasks) == 0 {
					time.Sleep(time.Millisecond)
					continue
				}
				var cs []queue.Completion
				mu.Lock()
				for _, tk := range tasks {
					if tokens[tk.LeaseToken] {
						t.Errorf("lease token %s handed out twice", tk.LeaseToken)
					}
					tokens[tk.LeaseToken] = true
					tries[tk.ID] = append(tries[tk.ID], tk.Attempt)
					attempt[tk.LeaseToken] = tk.Attempt
					newest[tk.ID] = max(newest[tk.ID], tk.Attempt)
					if abandoned[tk.ID] && tk.Attempt == 1 {
						late = append(late, tk)
					} else {
						cs = append(cs, pass(tk, now()))
					}
				}
				mu.Unlock()
				if len(cs) > 0 && !report(worker, cs) {
					return
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}

	t.Logf("%d tasks: %d stalls, %d failed by the reaper, clock at +%dms", nTasks, stalled.Load(), failed.Load(), clock.Load())
	if stalled.Load() == 0 {
		t.Errorf("no lease was reaped; the test did not exercise the reaper")
	}
	var nClaims int64
	for _, id := range all {
		nClaims += int64(len(tries[id]))
	}
	if want := int64(nTasks) + stalled.Load(); nClaims != want {
		t.Errorf("%d claims, want %d (%d tasks + %d stalls): a task was handed out without a stall", nClaims, want, nTasks, stalled.Load())
	}
	finals := map[string][]baton.State{}
	for _, e := range h.events() {
		finals[e.TaskID] = append(finals[e.TaskID], e.State)
	}
	var nFailed int64
	for _, id := range all {
		ti := h.get(id)
		got := slices.Sorted(slices.Values(tries[id]))
		want := make([]int, len(got))
		for i := range want {
			want[i] = i + 1
		}
		if !slices.Equal(got, want) || ti.Attempts != len(got) {
			t.Errorf("task %s: attempts handed out %v, stored %d; want 1..n", id, tries[id], ti.Attempts)
		}
		switch ti.Status {
		case baton.StateCompleted:
			if acks[id] != 1 {
				t.Errorf("task %s completed with %d applied results, want 1", id, acks[id])
			}
		case baton.StateFailed:
			nFailed++
			if acks[id] != 0 || ti.Error != "lease expired" {
				t.Errorf("task %s failed (%q) with %d applied results", id, ti.Error, acks[id])
			}
		default:
			t.Errorf("task %s ended %s", id, ti.Status)
		}
		if !slices.Equal(finals[id], []baton.State{ti.Status}) {
			t.Errorf("task %s: task.final events %v, want exactly one %s", id, finals[id], ti.Status)
		}
	}
	if nFailed != failed.Load() {
		t.Errorf("%d tasks failed, reapers reported %d", nFailed, failed.Load())
	}
	for _, st := range h.queues(now()) {
		if st.Ready != 0 || st.Running != 0 || st.Retry != 0 {
			t.Errorf("queue %s not drained: %+v", st.Name, st)
		}
	}
}

// testConcurrentDedup enqueues tasks sharing a dedup key from many
// goroutines at once: exactly one task per key is created.
func testConcurrentDedup(t *testing.T, newStore func(t *testing.T) queue.Store) {
	h := newH(t, newStore)
	const nKeys, nGoroutines = 5, 16
	type answer struct {
		key, id string
		res     queue.EnqueueResult
	}
	answers := make(chan answer, nKeys*nGoroutines)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for k := range nKeys {
		for g := range nGoroutines {
			wg.Go(func() {
				<-start
				key, id := idf("key%d", k), idf("k%d-g%02d", k, g)
				res, err := h.s.Enqueue(h.ctx, at(0), []queue.NewTask{{ID: id, Type: "test", Queue: idf("q%d", g%3), DedupKey: key}})
				if err != nil || len(res) != 1 {
					t.Errorf("Enqueue(%s): %v, %v", id, res, err)
					return
				}
				answers <- answer{key, id, res[0]}
			})
		}
	}
	close(start)
	wg.Wait()
	close(answers)
	holder := map[string]string{}
	byKey := map[string][]answer{}
	for a := range answers {
		byKey[a.key] = append(byKey[a.key], a)
		if a.res.Created {
			if prev, ok := holder[a.key]; ok {
				t.Errorf("key %s: both %s and %s created", a.key, prev, a.id)
			}
			holder[a.key] = a.id
		}
	}
	if len(holder) != nKeys {
		t.Fatalf("%d keys got a task, want %d", len(holder), nKeys)
	}
	for key, as := range byKey {
		for _, a := range as {
			if a.res.ID != holder[key] || a.res.State != baton.StatePending {
				t.Errorf("Enqueue(%s) = %+v, want holder %s pending", a.id, a.res, holder[key])
			}
			if !a.res.Created {
				h.notFound(a.id)
			}
		}
	}
	var ready int64
	for _, st := range h.queues(at(0)) {
		ready += st.Ready
	}
	if ready != nKeys {
		t.Errorf("%d ready tasks, want %d", ready, nKeys)
	}
}
