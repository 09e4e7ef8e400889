package queuetest

import (
	"encoding/json"
	"testing"
	"time"

	baton "github.com/batonhq/baton"
	"github.com/batonhq/baton/queue"
)

func testCompleteOutcomes(t *testing.T, newStore func(t *testing.T) queue.Store) {
	for _, tc := range []struct {
		name    string
		outcome baton.Outcome
		final   baton.State
		want    baton.State
	}{
		{"pass", baton.OutcomePass, "", baton.StateCompleted},
		{"reject", baton.OutcomeReject, "", baton.StateCompleted},
		{"black_hit", baton.OutcomeBlackHit, "", baton.StateCompleted},
		{"reject as failed", baton.OutcomeReject, baton.StateFailed, baton.StateFailed},
		{"pass as timeout", baton.OutcomePass, baton.StateTimeout, baton.StateTimeout},
		{"reject as cancelled", baton.OutcomeReject, baton.StateCancelled, baton.StateCancelled},
		{"explicit completed", baton.OutcomeBlackHit, baton.StateCompleted, baton.StateCompleted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newH(t, newStore)
			h.enqueue(at(0), queue.NewTask{ID: "a", Type: "echo", Queue: "q", Payload: json.RawMessage(`{"p":1}`), DedupKey: "K", Notify: true})
			tk := h.claimOne("a", "w1", at(1000), "q")
			c := queue.Completion{
				TaskID: "a",
				Result: baton.Result{LeaseToken: tk.LeaseToken, Outcome: tc.outcome, Reason: "because", Data: json.RawMessage(`{"score":7}`)},
				Now:    at(3500), FinalState: tc.final,
				FollowUps: []queue.NewTask{{ID: "f", Type: "next", Queue: "q2", DedupKey: "K"}},
				Outbox: []queue.OutboxEntry{
					{Kind: "ledger.upsert", Body: json.RawMessage(`{"n":1}`)},
					{Kind: "ledger.upsert", Body: json.RawMessage(`{"n":2}`)},
				},
			}
			diff(t, "Ack", queue.Ack{State: tc.want}, h.completeOK(c))
			diff(t, "Get", baton.TaskInfo{ID: "a", Type: "echo", Queue: "q", Status: tc.want, Payload: json.RawMessage(`{"p":1}`),
				Attempts: 1, MaxAttempts: 5, Outcome: tc.outcome, Reason: "because", Data: json.RawMessage(`{"score":7}`),
				DedupKey: "K", WorkerID: "w1", LeaseTTL: 30 * time.Second, CreatedAt: at(0),
				StartedAt: tp(at(1000)), FinishedAt: tp(at(3500)), DurationMs: ip(2500)}, h.get("a"))
			if got := h.get("f"); got.Status != baton.StatePending || !got.CreatedAt.Equal(at(3500)) {
				t.Errorf("follow-up = %+v, want pending created at %v", got, at(3500))
			}
			ob := h.outbox()
			if len(ob) != 3 {
				t.Fatalf("outbox has %d entries, want 3: %+v", len(ob), ob)
			}
			diff(t, "outbox kinds", []string{"ledger.upsert", "ledger.upsert", queue.OutboxKindTaskFinal},
				[]string{ob[0].Kind, ob[1].Kind, ob[2].Kind})
			diff(t, "outbox bodies", []json.RawMessage{json.RawMessage(`{"n":1}`), json.RawMessage(`{"n":2}`)},
				[]json.RawMessage{ob[0].Body, ob[1].Body})
			diff(t, "task.final", []queue.TaskFinal{{TaskID: "a", Type: "echo", Queue: "q", State: tc.want, Outcome: tc.outcome,
				Reason: "because", Attempts: 1, Payload: json.RawMessage(`{"p":1}`), Data: json.RawMessage(`{"score":7}`),
				FinishedAt: at(3500)}}, h.events())
		})
	}
}

func testCompleteInvalid(t *testing.T, newStore func(t *testing.T) queue.Store) {
	h := newH(t, newStore)
	h.enqueue(at(0), queue.NewTask{ID: "a", Type: "echo", Queue: "q", Notify: true})
	tk := h.claimOne("a", "w", at(10), "q")
	before := h.get("a")
	for _, tc := range []struct {
		name string
		edit func(c *queue.Completion)
	}{
		{"no outcome", func(c *queue.Completion) { c.Result.Outcome = "" }},
		{"unknown outcome", func(c *queue.Completion) { c.Result.Outcome = "maybe" }},
		{"bad data", func(c *queue.Completion) { c.Result.Data = json.RawMessage(`{`) }},
		{"negative retryAfter", func(c *queue.Completion) { c.Result.RetryAfterMs = -1 }},
		{"final pending", func(c *queue.Completion) { c.FinalState = baton.StatePending }},
		{"final bogus", func(c *queue.Completion) { c.FinalState = "done" }},
		{"bad follow-up", func(c *queue.Completion) { c.FollowUps = []queue.NewTask{{ID: "f", Queue: "q"}} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := pass(tk, at(20))
			c.FollowUps = []queue.NewTask{{ID: "f0", Type: "x", Queue: "q"}}
			c.Outbox = []queue.OutboxEntry{{Kind: "k", Body: json.RawMessage(`{}`)}}
			tc.edit(&c)
			r := h.complete(c)[0]
			wantCode(t, "Complete", r.Err, baton.EInvalid)
			diff(t, "Get", before, h.get("a"))
			h.notFound("f0")
			h.notFound("f")
			if ob := h.outbox(); len(ob) != 0 {
				t.Errorf("outbox grew: %+v", ob)
			}
		})
	}
	// Still completable afterwards.
	diff(t, "Ack", queue.Ack{State: baton.StateCompleted}, h.completeOK(pass(tk, at(30))))
}

// driveTo claims task id (queue q) and answers retry until it is running
// attempt n, returning that claim.
func driveTo(h *h, id, q string, n int) (baton.Task, time.Time) {
	h.t.Helper()
	now := at(1000)
	for {
		tk := h.claimOne(id, "w", now, q)
		if tk.Attempt == n {
			return tk, now
		}
		c := retry(tk, now, "again")
		c.Backoff = baton.Backoff{Base: time.Second, Max: time.Minute}
		ack := h.completeOK(c)
		now = *ack.NextAttemptAt
	}
}

func testRetryBackoff(t *testing.T, newStore func(t *testing.T) queue.Store) {
	for _, tc := range []struct {
		name       string
		attempt    int
		backoff    baton.Backoff
		jitter     float64
		retryAfter int64
		want       time.Duration
	}{
		{"first, no jitter", 1, baton.Backoff{Base: time.Second, Max: time.Minute}, 0, 0, 500 * time.Millisecond},
		{"second, no jitter", 2, baton.Backoff{Base: time.Second, Max: time.Minute}, 0, 0, time.Second},
		{"third, no jitter", 3, baton.Backoff{Base: time.Second, Max: time.Minute}, 0, 0, 2 * time.Second},
		{"half jitter", 1, baton.Backoff{Base: time.Second, Max: time.Minute}, 0.5, 0, 750 * time.Millisecond},
		{"default backoff", 2, baton.Backoff{}, 0, 0, time.Second},
		{"capped", 4, baton.Backoff{Base: time.Second, Max: 3 * time.Second}, 0, 0, 1500 * time.Millisecond},
		{"retryAfter wins", 2, baton.Backoff{Base: time.Second, Max: time.Minute}, 0, 7000, 7 * time.Second},
		{"exponential wins", 3, baton.Backoff{Base: 10 * time.Second, Max: time.Hour}, 0, 7000, 20 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if d := tc.backoff.Delay(tc.attempt, time.Duration(tc.retryAfter)*time.Millisecond, tc.jitter); d != tc.want {
				t.Fatalf("suite bug: Backoff.Delay = %v, want %v", d, tc.want)
			}
			h := newH(t, newStore)
			h.enqueue(at(0), queue.NewTask{ID: "a", Type: "echo", Queue: "q", MaxAttempts: 10, Notify: true})
			tk, now := driveTo(h, "a", "q", tc.attempt)
			obBefore := h.outbox()
			now = now.Add(250 * time.Millisecond)
			c := queue.Completion{TaskID: "a", Now: now, Jitter: tc.jitter, Backoff: tc.backoff,
				Result:    baton.Result{LeaseToken: tk.LeaseToken, Outcome: baton.OutcomeRetry, Reason: "http 503", Data: json.RawMessage(`{"status":503}`), RetryAfterMs: tc.retryAfter},
				FollowUps: []queue.NewTask{{ID: "f", Type: "x", Queue: "q2"}},
				Outbox:    []queue.OutboxEntry{{Kind: "k", Body: json.RawMessage(`{}`)}},
			}
			next := now.Add(tc.want)
			diff(t, "Ack", queue.Ack{State: baton.StatePending, NextAttemptAt: tp(next)}, h.completeOK(c))
			diff(t, "Get", baton.TaskInfo{ID: "a", Type: "echo", Queue: "q", Status: baton.StatePending, Payload: json.RawMessage(`null`),
				Attempts: tc.attempt, MaxAttempts: 10, Outcome: baton.OutcomeRetry, Reason: "http 503", Data: json.RawMessage(`{"status":503}`),
				WorkerID: "w", LeaseTTL: 30 * time.Second, CreatedAt: at(0), StartedAt: tp(at(1000)), NextAttemptAt: tp(next)}, h.get("a"))
			// A retry applies neither follow-ups nor outbox entries.
			h.notFound("f")
			diff(t, "outbox", obBefore, h.outbox())

			st := h.stat(next.Add(-time.Millisecond), "q")
			if st.Retry != 1 || st.Ready != 0 || st.Running != 0 {
				t.Errorf("stat while waiting = %+v, want retry 1", st)
			}
			if got := h.claim("w", next.Add(-time.Millisecond), 1, "q"); len(got) != 0 {
				t.Errorf("claimed before NextAttemptAt: %v", ids(got))
			}
			st = h.stat(next, "q")
			if st.Retry != 0 || st.Ready != 1 {
				t.Errorf("stat when due = %+v, want ready 1", st)
			}
			tk2 := h.claimOne("a", "w2", next, "q")
			if tk2.Attempt != tc.attempt+1 {
				t.Errorf("next claim attempt = %d, want %d", tk2.Attempt, tc.attempt+1)
			}
			if got := h.get("a"); got.NextAttemptAt != nil || got.Status != baton.StateProcessing {
				t.Errorf("after claim: status %s nextAttemptAt %v, want processing and none", got.Status, got.NextAttemptAt)
			}
		})
	}
}

func testRetryExhausted(t *testing.T, newStore func(t *testing.T) queue.Store) {
	h := newH(t, newStore)
	h.enqueue(at(0), queue.NewTask{ID: "a", Type: "echo", Queue: "q", MaxAttempts: 2, DedupKey: "K", Notify: true})
	tk, now := driveTo(h, "a", "q", 2)
	now = now.Add(time.Second)
	c := queue.Completion{TaskID: "a", Now: now,
		Result:    baton.Result{LeaseToken: tk.LeaseToken, Outcome: baton.OutcomeRetry, Reason: "captcha", RetryAfterMs: 60000},
		FollowUps: []queue.NewTask{{ID: "f", Type: "x", Queue: "q2", DedupKey: "K"}},
		Outbox:    []queue.OutboxEntry{{Kind: "ledger.upsert", Body: json.RawMessage(`{"final":true}`)}},
	}
	diff(t, "Ack", queue.Ack{State: baton.StateFailed}, h.completeOK(c))
	diff(t, "Get", baton.TaskInfo{ID: "a", Type: "echo", Queue: "q", Status: baton.StateFailed, Payload: json.RawMessage(`null`),
		Attempts: 2, MaxAttempts: 2, Outcome: baton.OutcomeRetry, Reason: "captcha", Error: "attempts exhausted: captcha",
		DedupKey: "K", WorkerID: "w", LeaseTTL: 30 * time.Second, CreatedAt: at(0), StartedAt: tp(at(1000)),
		FinishedAt: tp(now), DurationMs: ip(now.Sub(at(1000)).Milliseconds())}, h.get("a"))
	if got := h.get("f"); got.Status != baton.StatePending || got.DedupKey != "K" {
		t.Errorf("follow-up = %+v, want pending with key K", got)
	}
	ob := h.outbox()
	if len(ob) != 2 || ob[0].Kind != "ledger.upsert" || ob[1].Kind != queue.OutboxKindTaskFinal {
		t.Fatalf("outbox = %+v, want ledger.upsert then task.final", ob)
	}
	diff(t, "task.final", []queue.TaskFinal{{TaskID: "a", Type: "echo", Queue: "q", State: baton.StateFailed, Outcome: baton.OutcomeRetry,
		Reason: "captcha", Error: "attempts exhausted: captcha", Attempts: 2, Payload: json.RawMessage(`null`), FinishedAt: now}}, h.events())
	if st := h.stat(now, "q"); st.Dead != 1 || st.Retry != 0 || st.Running != 0 {
		t.Errorf("stat = %+v, want dead 1", st)
	}
}

func testDuplicateResult(t *testing.T, newStore func(t *testing.T) queue.Store) {
	h := newH(t, newStore)
	h.enqueue(at(0),
		queue.NewTask{ID: "a", Type: "echo", Queue: "q", Notify: true},
		queue.NewTask{ID: "b", Type: "echo", Queue: "q", Notify: true},
	)
	tasks := h.claim("w", at(10), 2, "q")
	ta, tb := tasks[0], tasks[1]

	// Completed: a duplicate answers the same ack and changes nothing.
	c := pass(ta, at(20))
	c.FollowUps = []queue.NewTask{{ID: "f", Type: "x", Queue: "q2"}}
	c.Outbox = []queue.OutboxEntry{{Kind: "k", Body: json.RawMessage(`{"x":1}`)}}
	diff(t, "first Ack", queue.Ack{State: baton.StateCompleted}, h.completeOK(c))
	getA, getF, ob := h.get("a"), h.get("f"), h.outbox()
	for i, dup := range []queue.Completion{c, func() queue.Completion {
		d := c // same token, different content, later
		d.Result.Outcome, d.Now, d.FinalState = baton.OutcomeReject, at(99), baton.StateFailed
		d.FollowUps = []queue.NewTask{{ID: "g", Type: "x", Queue: "q2"}}
		return d
	}()} {
		diff(t, idf("duplicate %d Ack", i), queue.Ack{State: baton.StateCompleted, Duplicate: true}, h.completeOK(dup))
	}
	diff(t, "Get a", getA, h.get("a"))
	diff(t, "Get f", getF, h.get("f"))
	diff(t, "outbox", ob, h.outbox())
	h.notFound("g")

	// Retry: the duplicate repeats NextAttemptAt, also after the task was
	// claimed again, and in the same batch as the original.
	cb := retry(tb, at(30), "later")
	res := h.complete(cb, cb)
	next := at(530)
	diff(t, "batch with duplicate", []queue.CompleteResult{
		{Ack: queue.Ack{State: baton.StatePending, NextAttemptAt: tp(next)}},
		{Ack: queue.Ack{State: baton.StatePending, NextAttemptAt: tp(next), Duplicate: true}},
	}, res)
	tb2 := h.claimOne("b", "w", next, "q")
	getB := h.get("b")
	diff(t, "duplicate during the next attempt", queue.Ack{State: baton.StatePending, NextAttemptAt: tp(next), Duplicate: true}, h.completeOK(cb))
	diff(t, "Get b", getB, h.get("b"))
	// The current attempt is unaffected.
	diff(t, "Ack of the current attempt", queue.Ack{State: baton.StateCompleted}, h.completeOK(pass(tb2, at(600))))
	if n := len(h.events()); n != 2 {
		t.Errorf("%d task.final events, want 2", n)
	}
}

// testStaleToken checks that every stale or wrong token is refused with
// ErrLeaseLost and changes nothing at all.
func testStaleToken(t *testing.T, newStore func(t *testing.T) queue.Store) {
	const other = "ffeeddccbbaa99887766554433221100"
	for _, tc := range []struct {
		name string
		// setup returns the token to use on task "a".
		setup func(h *h) string
	}{
		{"wrong token", func(h *h) string { h.claimOne("a", "w", at(10), "q"); return other }},
		{"empty token", func(h *h) string { h.claimOne("a", "w", at(10), "q"); return "" }},
		{"never claimed", func(h *h) string { return other }},
		{"after reap", func(h *h) string {
			tk := h.claimOne("a", "w", at(10), "q")
			h.reap(at(60000), 10)
			return tk.LeaseToken
		}},
		{"after reap and reclaim", func(h *h) string {
			tk := h.claimOne("a", "w", at(10), "q")
			h.reap(at(60000), 10)
			tk2 := h.claimOne("a", "w2", at(60001), "q")
			if tk2.LeaseToken == tk.LeaseToken {
				h.t.Fatalf("reclaim reused the lease token")
			}
			return tk.LeaseToken
		}},
		{"after cancel", func(h *h) string {
			tk := h.claimOne("a", "w", at(10), "q")
			h.cancel("a", at(20))
			return tk.LeaseToken
		}},
		{"after release", func(h *h) string {
			tk := h.claimOne("a", "w", at(10), "q")
			if err := h.s.Release(h.ctx, "a", tk.LeaseToken, at(20)); err != nil {
				h.t.Fatalf("Release: %v", err)
			}
			return tk.LeaseToken
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newH(t, newStore)
			h.enqueue(at(0), queue.NewTask{ID: "a", Type: "echo", Queue: "q", DedupKey: "K", Notify: true, MaxAttempts: 3})
			tok := tc.setup(h)
			before, obBefore := h.get("a"), h.outbox()
			qBefore := h.queues(at(70000))
			for _, o := range []baton.Outcome{baton.OutcomePass, baton.OutcomeRetry, baton.OutcomeReject, "bogus"} {
				c := queue.Completion{TaskID: "a", Now: at(65000), Result: baton.Result{LeaseToken: tok, Outcome: o},
					FollowUps: []queue.NewTask{{ID: "f", Type: "x", Queue: "q2", DedupKey: "K2"}},
					Outbox:    []queue.OutboxEntry{{Kind: "k", Body: json.RawMessage(`{}`)}}}
				r := h.complete(c)[0]
				wantIs(t, "Complete("+string(o)+")", r.Err, baton.ErrLeaseLost)
			}
			_, err := h.s.Heartbeat(h.ctx, "a", tok, at(65000), 0)
			wantIs(t, "Heartbeat", err, baton.ErrLeaseLost)
			wantIs(t, "Release", h.s.Release(h.ctx, "a", tok, at(65000)), baton.ErrLeaseLost)
			diff(t, "Get", before, h.get("a"))
			diff(t, "outbox", obBefore, h.outbox())
			diff(t, "Queues", qBefore, h.queues(at(70000)))
			h.notFound("f")
		})
	}

	t.Run("unknown task", func(t *testing.T) {
		h := newH(t, newStore)
		r := h.complete(queue.Completion{TaskID: "nope", Now: at(0), Result: baton.Result{LeaseToken: other, Outcome: baton.OutcomePass}})[0]
		wantIs(t, "Complete", r.Err, baton.ErrNotFound)
		wantIs(t, "Release", h.s.Release(h.ctx, "nope", other, at(0)), baton.ErrNotFound)
	})
}

func testCompleteBatchIndependent(t *testing.T, newStore func(t *testing.T) queue.Store) {
	h := newH(t, newStore)
	h.add(at(0), "q", "a", "b", "c", "d")
	tasks := h.claim("w", at(10), 4, "q")
	bad := pass(tasks[1], at(20))
	bad.Result.LeaseToken = "00000000000000000000000000000000"
	invalid := pass(tasks[3], at(20))
	invalid.Result.Outcome = "nope"
	res := h.complete(
		pass(tasks[0], at(20)),
		bad,
		queue.Completion{TaskID: "nope", Now: at(20), Result: baton.Result{LeaseToken: tasks[2].LeaseToken, Outcome: baton.OutcomePass}},
		retry(tasks[2], at(20), "x"),
		invalid,
	)
	if res[0].Err != nil || res[0].Ack.State != baton.StateCompleted {
		t.Errorf("result 0 = %+v, want completed", res[0])
	}
	wantIs(t, "result 1", res[1].Err, baton.ErrLeaseLost)
	wantIs(t, "result 2", res[2].Err, baton.ErrNotFound)
	if res[3].Err != nil || res[3].Ack.State != baton.StatePending {
		t.Errorf("result 3 = %+v, want pending", res[3])
	}
	wantCode(t, "result 4", res[4].Err, baton.EInvalid)
	for id, want := range map[string]baton.State{"a": baton.StateCompleted, "b": baton.StateProcessing, "c": baton.StatePending, "d": baton.StateProcessing} {
		if got := h.get(id).Status; got != want {
			t.Errorf("%s is %s, want %s", id, got, want)
		}
	}
	if res, err := h.s.Complete(h.ctx, nil); err != nil || len(res) != 0 {
		t.Errorf("Complete(nil) = %v, %v", res, err)
	}
}
