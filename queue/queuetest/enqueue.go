package queuetest

import (
	"encoding/json"
	"testing"
	"time"

	baton "github.com/batonhq/baton"
	"github.com/batonhq/baton/queue"
)

func testEnqueueDefaults(t *testing.T, newStore func(t *testing.T) queue.Store) {
	h := newH(t, newStore)
	now := at(0)
	res := h.enqueue(now,
		queue.NewTask{ID: "t1", Type: "echo", Queue: "q"},
		queue.NewTask{ID: "t2", Type: "echo", Queue: "q", Payload: json.RawMessage(`{"a":1,"b":"x"}`),
			MaxAttempts: 3, LeaseTTL: 10 * time.Second, DedupKey: "k2", RunAt: at(5000), Notify: true},
		queue.NewTask{ID: "t3", Type: "echo", Queue: "q", LeaseTTL: 100 * time.Millisecond},
		queue.NewTask{ID: "t4", Type: "echo", Queue: "q", LeaseTTL: 2 * time.Hour},
		queue.NewTask{ID: "t5", Type: "echo", Queue: "q", Payload: json.RawMessage{}},
		queue.NewTask{ID: "t6", Type: "other", Queue: "q2", Payload: json.RawMessage(`[1,2]`), RunAt: at(-1000)},
	)
	want := []queue.EnqueueResult{
		{ID: "t1", Created: true, State: baton.StatePending, Queue: "q"},
		{ID: "t2", Created: true, State: baton.StatePending, Queue: "q"},
		{ID: "t3", Created: true, State: baton.StatePending, Queue: "q"},
		{ID: "t4", Created: true, State: baton.StatePending, Queue: "q"},
		{ID: "t5", Created: true, State: baton.StatePending, Queue: "q"},
		{ID: "t6", Created: true, State: baton.StatePending, Queue: "q2"},
	}
	diff(t, "EnqueueResults", want, res)

	null := json.RawMessage("null")
	infos := []baton.TaskInfo{
		{ID: "t1", Type: "echo", Queue: "q", Status: baton.StatePending, Payload: null, MaxAttempts: 5, LeaseTTL: 30 * time.Second, CreatedAt: now},
		{ID: "t2", Type: "echo", Queue: "q", Status: baton.StatePending, Payload: json.RawMessage(`{"a":1,"b":"x"}`), MaxAttempts: 3, LeaseTTL: 10 * time.Second, DedupKey: "k2", CreatedAt: now},
		{ID: "t3", Type: "echo", Queue: "q", Status: baton.StatePending, Payload: null, MaxAttempts: 5, LeaseTTL: queue.MinLeaseTTL, CreatedAt: now},
		{ID: "t4", Type: "echo", Queue: "q", Status: baton.StatePending, Payload: null, MaxAttempts: 5, LeaseTTL: queue.MaxLeaseTTL, CreatedAt: now},
		{ID: "t5", Type: "echo", Queue: "q", Status: baton.StatePending, Payload: null, MaxAttempts: 5, LeaseTTL: 30 * time.Second, CreatedAt: now},
		{ID: "t6", Type: "other", Queue: "q2", Status: baton.StatePending, Payload: json.RawMessage(`[1,2]`), MaxAttempts: 5, LeaseTTL: 30 * time.Second, CreatedAt: now},
	}
	for _, w := range infos {
		diff(t, "Get("+w.ID+")", w, h.get(w.ID))
	}
	h.notFound("nope")

	// t2 waits for its RunAt; the others are claimable in insertion order,
	// each leased for its own (clamped) TTL.
	got := h.claim("w1", at(1000), 10, "q", "q2")
	wantTasks := []baton.Task{
		{ID: "t1", Type: "echo", Queue: "q", Payload: null, Attempt: 1, MaxAttempts: 5, LeaseExpiresAt: at(31000), CreatedAt: now},
		{ID: "t3", Type: "echo", Queue: "q", Payload: null, Attempt: 1, MaxAttempts: 5, LeaseExpiresAt: at(2000), CreatedAt: now},
		{ID: "t4", Type: "echo", Queue: "q", Payload: null, Attempt: 1, MaxAttempts: 5, LeaseExpiresAt: at(1000).Add(time.Hour), CreatedAt: now},
		{ID: "t5", Type: "echo", Queue: "q", Payload: null, Attempt: 1, MaxAttempts: 5, LeaseExpiresAt: at(31000), CreatedAt: now},
		{ID: "t6", Type: "other", Queue: "q2", Payload: json.RawMessage(`[1,2]`), Attempt: 1, MaxAttempts: 5, LeaseExpiresAt: at(31000), CreatedAt: now},
	}
	diff(t, "Claim", wantTasks, clearTokens(got))
	checkTokens(t, got)
}

func testEnqueueInvalid(t *testing.T, newStore func(t *testing.T) queue.Store) {
	h := newH(t, newStore)
	ok := queue.NewTask{ID: "ok", Type: "echo", Queue: "q"}
	for _, tc := range []struct {
		name string
		task queue.NewTask
	}{
		{"no id", queue.NewTask{Type: "echo", Queue: "q"}},
		{"no type", queue.NewTask{ID: "x", Queue: "q"}},
		{"no queue", queue.NewTask{ID: "x", Type: "echo"}},
		{"bad payload", queue.NewTask{ID: "x", Type: "echo", Queue: "q", Payload: json.RawMessage(`{"a":`)}},
		{"negative max attempts", queue.NewTask{ID: "x", Type: "echo", Queue: "q", MaxAttempts: -1}},
		{"negative lease", queue.NewTask{ID: "x", Type: "echo", Queue: "q", LeaseTTL: -time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := h.s.Enqueue(h.ctx, at(0), []queue.NewTask{ok, tc.task})
			wantCode(t, "Enqueue", err, baton.EInvalid)
			h.notFound("ok")
		})
	}
	// An empty batch is fine.
	if res, err := h.s.Enqueue(h.ctx, at(0), nil); err != nil || len(res) != 0 {
		t.Errorf("Enqueue(nil) = %v, %v; want no results", res, err)
	}
}

func testEnqueueSameID(t *testing.T, newStore func(t *testing.T) queue.Store) {
	h := newH(t, newStore)
	h.add(at(0), "q", "a")
	res := h.enqueue(at(10), queue.NewTask{ID: "a", Type: "other", Queue: "q2", Payload: json.RawMessage(`{"x":1}`)})
	diff(t, "re-enqueue", []queue.EnqueueResult{{ID: "a", Created: false, State: baton.StatePending, Queue: "q"}}, res)
	h.claimOne("a", "w", at(20), "q")
	res = h.enqueue(at(30), queue.NewTask{ID: "a", Type: "test", Queue: "q"})
	diff(t, "re-enqueue while processing", []queue.EnqueueResult{{ID: "a", Created: false, State: baton.StateProcessing, Queue: "q"}}, res)
	if got := h.claim("w", at(40), 10, "q", "q2"); len(got) != 0 {
		t.Errorf("Claim after re-enqueue = %v, want nothing", ids(got))
	}
	// Twice in one batch.
	res = h.enqueue(at(50), queue.NewTask{ID: "b", Type: "test", Queue: "q"}, queue.NewTask{ID: "b", Type: "test", Queue: "q"})
	diff(t, "same id in one batch", []queue.EnqueueResult{
		{ID: "b", Created: true, State: baton.StatePending, Queue: "q"},
		{ID: "b", Created: false, State: baton.StatePending, Queue: "q"},
	}, res)
}

func testDedup(t *testing.T, newStore func(t *testing.T) queue.Store) {
	h := newH(t, newStore)
	res := h.enqueue(at(0), queue.NewTask{ID: "a", Type: "test", Queue: "q1", DedupKey: "K"})
	diff(t, "first", []queue.EnqueueResult{{ID: "a", Created: true, State: baton.StatePending, Queue: "q1"}}, res)

	// A second task with the key, in another queue, is answered with the holder.
	res = h.enqueue(at(10), queue.NewTask{ID: "b", Type: "test", Queue: "q2", DedupKey: "K"})
	diff(t, "held", []queue.EnqueueResult{{ID: "a", Created: false, State: baton.StatePending, Queue: "q1"}}, res)
	h.notFound("b")

	// Within one batch, the first task takes the key.
	res = h.enqueue(at(20),
		queue.NewTask{ID: "c1", Type: "test", Queue: "q2", DedupKey: "K2"},
		queue.NewTask{ID: "c2", Type: "test", Queue: "q2", DedupKey: "K2"},
		queue.NewTask{ID: "c3", Type: "test", Queue: "q2"},
	)
	diff(t, "batch", []queue.EnqueueResult{
		{ID: "c1", Created: true, State: baton.StatePending, Queue: "q2"},
		{ID: "c1", Created: false, State: baton.StatePending, Queue: "q2"},
		{ID: "c3", Created: true, State: baton.StatePending, Queue: "q2"},
	}, res)
	h.notFound("c2")

	// The holder's current state is reported.
	h.claimOne("a", "w", at(30), "q1")
	res = h.enqueue(at(40), queue.NewTask{ID: "d", Type: "test", Queue: "q1", DedupKey: "K"})
	diff(t, "held while processing", []queue.EnqueueResult{{ID: "a", Created: false, State: baton.StateProcessing, Queue: "q1"}}, res)
}

// testDedupRelease drives a key holder down every path and checks whether the
// key is free afterwards: released on every terminal state, held otherwise.
func testDedupRelease(t *testing.T, newStore func(t *testing.T) queue.Store) {
	type path struct {
		name      string
		attempts  int
		drive     func(h *h) // moves task "a" (queue q, key K) to its state
		wantState baton.State
	}
	claimA := func(h *h) baton.Task { return h.claimOne("a", "w", at(100), "q") }
	finish := func(o baton.Outcome, final baton.State) func(h *h) {
		return func(h *h) {
			tk := claimA(h)
			c := pass(tk, at(200))
			c.Result.Outcome, c.FinalState = o, final
			h.completeOK(c)
		}
	}
	paths := []path{
		{"pass", 5, finish(baton.OutcomePass, ""), baton.StateCompleted},
		{"reject", 5, finish(baton.OutcomeReject, ""), baton.StateCompleted},
		{"black_hit", 5, finish(baton.OutcomeBlackHit, ""), baton.StateCompleted},
		{"final failed", 5, finish(baton.OutcomeReject, baton.StateFailed), baton.StateFailed},
		{"final timeout", 5, finish(baton.OutcomePass, baton.StateTimeout), baton.StateTimeout},
		{"final cancelled", 5, finish(baton.OutcomeReject, baton.StateCancelled), baton.StateCancelled},
		{"retry exhausted", 1, func(h *h) { h.completeOK(retry(claimA(h), at(200), "x")) }, baton.StateFailed},
		{"lease expired attempts spent", 1, func(h *h) {
			claimA(h)
			if st := h.reap(at(100).Add(time.Minute), 100); st.Failed != 1 {
				h.t.Fatalf("Reap = %+v, want 1 failed", st)
			}
		}, baton.StateFailed},
		{"cancel pending", 5, func(h *h) { h.cancel("a", at(200)) }, baton.StateCancelled},
		{"cancel processing", 5, func(h *h) { claimA(h); h.cancel("a", at(200)) }, baton.StateCancelled},
		{"cancel stalled", 5, func(h *h) {
			claimA(h)
			h.reap(at(100).Add(time.Minute), 100)
			h.cancel("a", at(100).Add(2*time.Minute))
		}, baton.StateCancelled},
		{"cancel retry wait", 5, func(h *h) {
			h.completeOK(retry(claimA(h), at(200), "x"))
			h.cancel("a", at(300))
		}, baton.StateCancelled},
		// Non-terminal: the key stays held.
		{"held pending", 5, func(h *h) {}, baton.StatePending},
		{"held processing", 5, func(h *h) { claimA(h) }, baton.StateProcessing},
		{"held stalled", 5, func(h *h) { claimA(h); h.reap(at(100).Add(time.Minute), 100) }, baton.StateStalled},
		{"held retry wait", 5, func(h *h) { h.completeOK(retry(claimA(h), at(200), "x")) }, baton.StatePending},
	}
	for _, p := range paths {
		t.Run(p.name, func(t *testing.T) {
			h := newH(t, newStore)
			h.enqueue(at(0), queue.NewTask{ID: "a", Type: "test", Queue: "q", DedupKey: "K", MaxAttempts: p.attempts})
			p.drive(h)
			if got := h.get("a").Status; got != p.wantState {
				t.Fatalf("a is %s, want %s", got, p.wantState)
			}
			res := h.enqueue(at(100).Add(time.Hour), queue.NewTask{ID: "b", Type: "test", Queue: "q2", DedupKey: "K"})
			want := queue.EnqueueResult{ID: "b", Created: true, State: baton.StatePending, Queue: "q2"}
			if !p.wantState.Terminal() {
				want = queue.EnqueueResult{ID: "a", Created: false, State: p.wantState, Queue: "q"}
			}
			diff(t, "Enqueue with the key", []queue.EnqueueResult{want}, res)
			if p.wantState.Terminal() {
				// The released key is held again by b; a cannot take it back.
				res = h.enqueue(at(100).Add(time.Hour), queue.NewTask{ID: "c", Type: "test", Queue: "q2", DedupKey: "K"})
				diff(t, "Enqueue with the key again", []queue.EnqueueResult{{ID: "b", Created: false, State: baton.StatePending, Queue: "q2"}}, res)
			}
		})
	}
}

func testFollowUpInheritsKey(t *testing.T, newStore func(t *testing.T) queue.Store) {
	h := newH(t, newStore)
	h.enqueue(at(0),
		queue.NewTask{ID: "a", Type: "step1", Queue: "s1", DedupKey: "example.com"},
		queue.NewTask{ID: "other", Type: "step1", Queue: "s1", DedupKey: "other.com"},
	)
	tk := h.claimOne("a", "w", at(10), "s1")
	c := pass(tk, at(20))
	c.FollowUps = []queue.NewTask{
		{ID: "a2", Type: "step2", Queue: "s2", DedupKey: "example.com", Payload: json.RawMessage(`{"d":"example.com"}`)},
		{ID: "o2", Type: "step2", Queue: "s2", DedupKey: "other.com"},           // held by "other": not created
		{ID: "z2", Type: "step2", Queue: "s2", RunAt: at(5000), MaxAttempts: 2}, // delayed follow-up
	}
	diff(t, "Ack", queue.Ack{State: baton.StateCompleted}, h.completeOK(c))

	diff(t, "follow-up", baton.TaskInfo{ID: "a2", Type: "step2", Queue: "s2", Status: baton.StatePending,
		Payload: json.RawMessage(`{"d":"example.com"}`), MaxAttempts: 5, LeaseTTL: 30 * time.Second,
		DedupKey: "example.com", CreatedAt: at(20)}, h.get("a2"))
	h.notFound("o2")
	diff(t, "delayed follow-up", baton.TaskInfo{ID: "z2", Type: "step2", Queue: "s2", Status: baton.StatePending,
		Payload: json.RawMessage(`null`), MaxAttempts: 2, LeaseTTL: 30 * time.Second, CreatedAt: at(20)}, h.get("z2"))

	// The follow-up now holds the key.
	res := h.enqueue(at(30), queue.NewTask{ID: "x", Type: "step1", Queue: "s1", DedupKey: "example.com"})
	diff(t, "key holder", []queue.EnqueueResult{{ID: "a2", Created: false, State: baton.StatePending, Queue: "s2"}}, res)

	if got := ids(h.claim("w", at(40), 10, "s2")); !cmpEqual(got, []string{"a2"}) {
		t.Errorf("Claim(s2) = %v, want [a2]", got)
	}
	if got := ids(h.claim("w", at(5000), 10, "s2")); !cmpEqual(got, []string{"z2"}) {
		t.Errorf("Claim(s2) at RunAt = %v, want [z2]", got)
	}
}

func cmpEqual(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
