package queuetest

import (
	"context"
	"encoding/json"
	"errors"
	"sort"
	"sync"
	"testing"
	"time"

	baton "github.com/batonhq/baton"
	"github.com/batonhq/baton/queue"
)

func testReap(t *testing.T, newStore func(t *testing.T) queue.Store) {
	h := newH(t, newStore)
	h.enqueue(at(0),
		queue.NewTask{ID: "a", Type: "test", Queue: "q", LeaseTTL: 10 * time.Second, MaxAttempts: 3},
		queue.NewTask{ID: "b", Type: "test", Queue: "q2", LeaseTTL: 10 * time.Second, MaxAttempts: 3},
		queue.NewTask{ID: "c", Type: "test", Queue: "q", LeaseTTL: 10 * time.Second, MaxAttempts: 3},
	)
	old := h.claim("w1", at(1000), 3, "q", "q2")
	if len(old) != 3 {
		t.Fatalf("claimed %v", ids(old))
	}
	// c is kept alive.
	if _, err := h.s.Heartbeat(h.ctx, "c", old[1].LeaseToken, at(5000), 20*time.Second); err != nil {
		t.Fatalf("Heartbeat: %v", err)
	}
	if st := h.reap(at(10999), 10); st.Stalled != 0 || st.Failed != 0 {
		t.Errorf("Reap before expiry = %+v", st)
	}
	st := h.reap(at(11000), 10)
	st.Queues = sortedStrings(st.Queues)
	diff(t, "ReapStats", queue.ReapStats{Stalled: 2, Queues: []string{"q", "q2"}}, st)
	diff(t, "second reap", queue.ReapStats{}, h.reap(at(11000), 10))

	want := baton.TaskInfo{ID: "a", Type: "test", Queue: "q", Status: baton.StateStalled, Payload: json.RawMessage(`null`),
		Attempts: 1, MaxAttempts: 3, WorkerID: "w1", LeaseTTL: 10 * time.Second, CreatedAt: at(0), StartedAt: tp(at(1000))}
	diff(t, "Get stalled", want, h.get("a"))
	if s := h.stat(at(11000), "q"); s.Ready != 1 || s.Running != 1 || s.OldestAgeMs != 11000 {
		t.Errorf("stat q = %+v, want ready 1 (the stalled task) running 1 oldest 11000", s)
	}

	// Another worker reclaims with a new token; the old token is dead.
	got := h.claim("w2", at(12000), 10, "q2", "q")
	if d := ids(got); !cmpEqual(d, []string{"b", "a"}) {
		t.Fatalf("reclaim = %v, want [b a]", d)
	}
	for i, tk := range got {
		if tk.Attempt != 2 || tk.LeaseToken == old[0].LeaseToken || tk.LeaseToken == old[2].LeaseToken {
			t.Errorf("reclaim %d = %+v, want attempt 2 and a new token", i, tk)
		}
	}
	before := h.get("a")
	r := h.complete(pass(old[0], at(12500)))[0]
	wantIs(t, "old token result", r.Err, baton.ErrLeaseLost)
	diff(t, "Get after stale result", before, h.get("a"))
	diff(t, "new token result", queue.Ack{State: baton.StateCompleted}, h.completeOK(pass(got[1], at(13000))))
}

func testReapAttemptsSpent(t *testing.T, newStore func(t *testing.T) queue.Store) {
	h := newH(t, newStore)
	h.enqueue(at(0), queue.NewTask{ID: "a", Type: "test", Queue: "q", LeaseTTL: 10 * time.Second, MaxAttempts: 2, DedupKey: "K", Notify: true})
	// First attempt answers retry, second attempt's lease expires.
	tk := h.claimOne("a", "w", at(0), "q")
	ack := h.completeOK(retry(tk, at(1000), "slow"))
	h.enqueue(*ack.NextAttemptAt, queue.NewTask{ID: "b", Type: "test", Queue: "q", LeaseTTL: 10 * time.Second, MaxAttempts: 2})
	h.claimOne("a", "w", *ack.NextAttemptAt, "q")
	h.claimOne("b", "w", *ack.NextAttemptAt, "q")
	h.reap(ack.NextAttemptAt.Add(10*time.Second), 10) // b stalls (attempt 1 of 2); a fails
	now := ack.NextAttemptAt.Add(10 * time.Second)
	diff(t, "Get", baton.TaskInfo{ID: "a", Type: "test", Queue: "q", Status: baton.StateFailed, Payload: json.RawMessage(`null`),
		Attempts: 2, MaxAttempts: 2, Outcome: baton.OutcomeRetry, Reason: "slow", Error: "lease expired", DedupKey: "K",
		WorkerID: "w", LeaseTTL: 10 * time.Second, CreatedAt: at(0), StartedAt: tp(at(0)), FinishedAt: tp(now),
		DurationMs: ip(now.Sub(at(0)).Milliseconds())}, h.get("a"))
	if got := h.get("b").Status; got != baton.StateStalled {
		t.Errorf("b is %s, want stalled", got)
	}
	diff(t, "task.final", []queue.TaskFinal{{TaskID: "a", Type: "test", Queue: "q", State: baton.StateFailed, Outcome: baton.OutcomeRetry,
		Reason: "slow", Error: "lease expired", Attempts: 2, Payload: json.RawMessage(`null`), FinishedAt: now}}, h.events())
	if s := h.stat(now, "q"); s.Dead != 1 || s.Running != 0 || s.Ready != 1 {
		t.Errorf("stat = %+v, want dead 1 ready 1", s)
	}
	// b's second lease expires too.
	h.claimOne("b", "w", now, "q")
	diff(t, "ReapStats", queue.ReapStats{Failed: 1, Queues: []string{"q"}}, h.reap(now.Add(10*time.Second), 10))
}

func testReapLimit(t *testing.T, newStore func(t *testing.T) queue.Store) {
	h := newH(t, newStore)
	h.add(at(0), "q", "a", "b", "c", "d", "e")
	h.claim("w", at(0), 5, "q")
	var total int
	for _, want := range []int{2, 2, 1, 0} {
		st := h.reap(at(60000), 2)
		if st.Stalled != want || len(st.Queues) != want {
			t.Errorf("Reap(limit 2) = %+v, want %d stalled", st, want)
		}
		total += st.Stalled
	}
	if total != 5 {
		t.Errorf("stalled %d in all, want 5", total)
	}
}

func testReapConcurrent(t *testing.T, newStore func(t *testing.T) queue.Store) {
	h := newH(t, newStore)
	const n = 60
	for i := range n {
		h.add(at(0), "q", idf("t%02d", i))
	}
	if got := h.claim("w", at(0), n, "q"); len(got) != n {
		t.Fatalf("claimed %d of %d", len(got), n)
	}
	var mu sync.Mutex
	var stalled int
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 10 {
				st, err := h.s.Reap(h.ctx, at(60000), 7)
				if err != nil {
					t.Errorf("Reap: %v", err)
					return
				}
				mu.Lock()
				stalled += st.Stalled
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if stalled != n {
		t.Errorf("concurrent reapers stalled %d, want exactly %d", stalled, n)
	}
	if s := h.stat(at(60000), "q"); s.Ready != n || s.Running != 0 {
		t.Errorf("stat = %+v, want %d ready", s, n)
	}
}

func testRelease(t *testing.T, newStore func(t *testing.T) queue.Store) {
	h := newH(t, newStore)
	h.add(at(0), "q", "a", "b")
	touch(h, "w", at(0))
	tk := h.claimOne("a", "w", at(10), "q")
	if got := running(h, "w"); got != 1 {
		t.Errorf("running = %d, want 1", got)
	}
	if err := h.s.Release(h.ctx, "a", tk.LeaseToken, at(20)); err != nil {
		t.Fatalf("Release: %v", err)
	}
	got := h.get("a")
	if got.Status != baton.StatePending || got.Attempts != 0 {
		t.Errorf("after release: %+v, want pending with 0 attempts", got)
	}
	if got := running(h, "w"); got != 0 {
		t.Errorf("running after release = %d, want 0", got)
	}
	if s := h.stat(at(20), "q"); s.Ready != 2 || s.Running != 0 {
		t.Errorf("stat = %+v, want 2 ready", s)
	}
	// b was ready first; the released a follows it.
	tk2 := h.claim("w2", at(30), 2, "q")
	if len(tk2) != 2 || tk2[1].ID != "a" || tk2[1].Attempt != 1 || tk2[1].LeaseToken == tk.LeaseToken {
		t.Errorf("claim after release = %+v, want b, then a at attempt 1 with a new token", tk2)
	}
	wantIs(t, "Release again", h.s.Release(h.ctx, "a", tk.LeaseToken, at(40)), baton.ErrLeaseLost)
	wantIs(t, "Release of another task", h.s.Release(h.ctx, "b", tk.LeaseToken, at(40)), baton.ErrLeaseLost)
}

func testCancel(t *testing.T, newStore func(t *testing.T) queue.Store) {
	h := newH(t, newStore)
	mk := func(id string) queue.NewTask {
		return queue.NewTask{ID: id, Type: "test", Queue: "q-" + id, Notify: true, DedupKey: "k-" + id, LeaseTTL: 10 * time.Second}
	}
	delayed := mk("delayed")
	delayed.RunAt = at(1000000)
	h.enqueue(at(0), mk("pending"), mk("processing"), mk("stalled"), mk("retrywait"), delayed, mk("completed"))
	touch(h, "w", at(0))
	h.claimOne("stalled", "w", at(100), "q-stalled")
	h.reap(at(10100), 10)
	h.completeOK(retry(h.claimOne("retrywait", "w", at(10100), "q-retrywait"), at(10200), "x"))
	h.completeOK(pass(h.claimOne("completed", "w", at(10100), "q-completed"), at(10200)))
	tkProc := h.claimOne("processing", "w", at(10300), "q-processing")
	if got := running(h, "w"); got != 1 {
		t.Errorf("running = %d, want 1", got)
	}

	now := at(20000)
	for _, id := range []string{"pending", "processing", "stalled", "retrywait"} {
		before := h.get(id)
		h.cancel(id, now)
		want := before
		want.Status, want.FinishedAt, want.NextAttemptAt = baton.StateCancelled, tp(now), nil
		if want.StartedAt != nil {
			want.DurationMs = ip(now.Sub(*want.StartedAt).Milliseconds())
		}
		diff(t, "Get "+id, want, h.get(id))
		// The key is free.
		res := h.enqueue(now, queue.NewTask{ID: id + "-2", Type: "test", Queue: "other", DedupKey: "k-" + id})
		if !res[0].Created {
			t.Errorf("key of cancelled %s still held: %+v", id, res[0])
		}
	}
	if got := running(h, "w"); got != 0 {
		t.Errorf("running after cancel = %d, want 0", got)
	}
	// The cancelled processing task's lease is dead.
	_, err := h.s.Heartbeat(h.ctx, "processing", tkProc.LeaseToken, now, 0)
	wantIs(t, "Heartbeat", err, baton.ErrLeaseLost)
	wantIs(t, "Result", h.complete(pass(tkProc, now))[0].Err, baton.ErrLeaseLost)
	if got := h.claim("w", now.Add(time.Hour), 10, "q-pending", "q-processing", "q-stalled", "q-retrywait"); len(got) != 0 {
		t.Errorf("claimed cancelled tasks: %v", ids(got))
	}

	// A delayed task (future RunAt) can be cancelled too.
	h.cancel("delayed", now)

	for _, id := range []string{"completed", "pending"} {
		st, err := h.s.Cancel(h.ctx, id, now)
		wantCode(t, "Cancel "+id, err, baton.EConflict)
		want := "task already " + h.get(id).Status
		if msg := baton.ErrorMessage(err); msg != string(want) {
			t.Errorf("Cancel %s message = %q, want %q (state %q)", id, msg, want, st)
		}
	}
	_, err = h.s.Cancel(h.ctx, "nope", now)
	wantIs(t, "Cancel unknown", err, baton.ErrNotFound)

	ev := h.events()
	var states []string
	for _, e := range ev {
		states = append(states, e.TaskID+":"+string(e.State))
	}
	diff(t, "task.final events", []string{
		"completed:completed", "pending:cancelled", "processing:cancelled", "stalled:cancelled", "retrywait:cancelled", "delayed:cancelled",
	}, states)
	// A cancel before any result carries no outcome.
	for _, e := range ev {
		if e.TaskID == "pending" {
			diff(t, "task.final of a pending cancel", queue.TaskFinal{TaskID: "pending", Type: "test", Queue: "q-pending",
				State: baton.StateCancelled, Payload: json.RawMessage(`null`), FinishedAt: now}, e)
		}
	}
}

func testRetention(t *testing.T, newStore func(t *testing.T) queue.Store) {
	h := newH(t, newStore)
	h.enqueue(at(0),
		queue.NewTask{ID: "done", Type: "test", Queue: "q", DedupKey: "K"},
		queue.NewTask{ID: "dead", Type: "test", Queue: "q", MaxAttempts: 1},
		queue.NewTask{ID: "old", Type: "test", Queue: "q2"},
	)
	h.completeOK(pass(h.claimOne("done", "w", at(0), "q"), at(1000)))
	h.completeOK(retry(h.claimOne("dead", "w", at(0), "q"), at(2000), "x"))
	tok := h.get("done")

	ret := queue.DefaultRetention
	if s := h.stat(at(2000).Add(ret-time.Millisecond), "q"); s.Dead != 1 {
		t.Errorf("stat within retention = %+v, want dead 1", s)
	}
	if st := h.reap(at(1000).Add(ret-time.Millisecond), 100); st.Purged != 0 {
		t.Errorf("Reap within retention purged %d", st.Purged)
	}
	diff(t, "Get within retention", tok, h.get("done"))
	if st := h.reap(at(1000).Add(ret+time.Millisecond), 100); st.Purged != 1 {
		t.Errorf("Reap after retention of done = %+v, want 1 purged", st)
	}
	h.notFound("done")
	h.get("dead")
	if st := h.reap(at(2000).Add(ret+time.Millisecond), 100); st.Purged != 1 {
		t.Errorf("Reap after retention of dead = %+v, want 1 purged", st)
	}
	h.notFound("dead")
	// Not-finished tasks are never purged, however old.
	h.reap(at(0).Add(10*ret), 100)
	if got := h.get("old").Status; got != baton.StatePending {
		t.Errorf("old pending task is %s", got)
	}
	// The queue stays known, with nothing dead.
	diff(t, "stat after purge", queue.QueueStat{Name: "q"}, h.stat(at(0).Add(10*ret), "q"))
	// A purged task's lease token is unknown now.
	r := h.complete(queue.Completion{TaskID: "done", Now: at(0).Add(10 * ret), Result: baton.Result{LeaseToken: "00", Outcome: baton.OutcomePass}})[0]
	wantIs(t, "Complete purged", r.Err, baton.ErrNotFound)
}

func testQueueConfig(t *testing.T, newStore func(t *testing.T) queue.Store) {
	h := newH(t, newStore)
	cfg, err := h.s.QueueConfig(h.ctx, "never")
	if err != nil || cfg != (queue.QueueConfig{}) {
		t.Errorf("QueueConfig(never) = %+v, %v; want zero", cfg, err)
	}
	h.setConfig("q", queue.QueueConfig{Paused: true, RatePerMin: 30})
	cfg, err = h.s.QueueConfig(h.ctx, "q")
	if err != nil || cfg != (queue.QueueConfig{Paused: true, RatePerMin: 30}) {
		t.Errorf("QueueConfig(q) = %+v, %v", cfg, err)
	}
	h.setConfig("q", queue.QueueConfig{RatePerMin: 5})
	cfg, _ = h.s.QueueConfig(h.ctx, "q")
	if cfg != (queue.QueueConfig{RatePerMin: 5}) {
		t.Errorf("QueueConfig(q) after update = %+v", cfg)
	}
	diff(t, "Queues", []queue.QueueStat{{Name: "q", RatePerMin: 5}}, h.queues(at(0)))
}

func testQueueStats(t *testing.T, newStore func(t *testing.T) queue.Store) {
	h := newH(t, newStore)
	if got := h.queues(at(0)); len(got) != 0 {
		t.Errorf("Queues of an empty store = %+v", got)
	}
	mk := func(id string, lease time.Duration, max int) queue.NewTask {
		return queue.NewTask{ID: id, Type: "test", Queue: "main", LeaseTTL: lease, MaxAttempts: max}
	}
	h.enqueue(at(0), mk("stalled", time.Second, 2))
	h.enqueue(at(1000), mk("ready1", 10*time.Second, 2))
	h.enqueue(at(2000), mk("ready2", 10*time.Second, 2), mk("running", 10*time.Second, 2),
		mk("retry", 10*time.Second, 2), mk("dead", 10*time.Second, 1), mk("done", 10*time.Second, 2))
	dl := mk("delayed", 10*time.Second, 2)
	dl.RunAt = at(100000)
	h.enqueue(at(2000), dl)
	got := h.claim("w", at(3000), 10, "main")
	diff(t, "claim order", []string{"stalled", "ready1", "ready2", "running", "retry", "dead", "done"}, ids(got))
	byID := map[string]baton.Task{}
	for _, tk := range got {
		byID[tk.ID] = tk
	}
	if st := h.reap(at(4000), 10); st.Stalled != 1 {
		t.Fatalf("Reap = %+v, want 1 stalled", st)
	}
	h.completeOK(retry(byID["retry"], at(5000), "x")) // next attempt at 5500
	h.completeOK(retry(byID["dead"], at(5000), "x"))  // attempts spent: failed
	h.completeOK(pass(byID["done"], at(5000)))
	for _, id := range []string{"ready1", "ready2"} {
		if err := h.s.Release(h.ctx, id, byID[id].LeaseToken, at(5000)); err != nil {
			t.Fatalf("Release: %v", err)
		}
	}
	h.setConfig("main", queue.QueueConfig{Paused: true, RatePerMin: 6})
	h.setConfig("cfgonly", queue.QueueConfig{RatePerMin: 1})
	h.add(at(0), "a-first", "x")

	// Ready: stalled, ready1, ready2 (the stalled task, created first, heads
	// the queue); running: running; retry: retry (not due) and delayed.
	want := []queue.QueueStat{
		{Name: "a-first", Ready: 1, OldestAgeMs: 5400},
		{Name: "cfgonly", RatePerMin: 1},
		{Name: "main", Ready: 3, Running: 1, Retry: 2, Dead: 1, Paused: true, RatePerMin: 6, OldestAgeMs: 5400},
	}
	diff(t, "Queues", want, h.queues(at(5400)))
	// When the retry is due, it counts as ready.
	want[0].OldestAgeMs, want[2].OldestAgeMs = 5500, 5500
	want[2].Ready, want[2].Retry = 4, 1
	diff(t, "Queues when the retry is due", want, h.queues(at(5500)))
	// Draining the head moves OldestAgeMs to the next ready task (ready1,
	// created at +1000).
	h.setConfig("main", queue.QueueConfig{})
	h.claimOne("stalled", "w", at(5500), "main")
	if s := h.stat(at(6000), "main"); s.Ready != 3 || s.Running != 2 || s.OldestAgeMs != 5000 {
		t.Errorf("stat after claiming the head = %+v, want ready 3 running 2 oldest 5000", s)
	}
}

func testOutbox(t *testing.T, newStore func(t *testing.T) queue.Store) {
	h := newH(t, newStore)
	h.add(at(0), "q", "a", "b")
	tasks := h.claim("w", at(0), 2, "q")
	e := func(kind, body string) queue.OutboxEntry {
		return queue.OutboxEntry{Kind: kind, Body: json.RawMessage(body)}
	}
	ca := pass(tasks[0], at(10))
	ca.Outbox = []queue.OutboxEntry{e("k1", `{"n":1}`), e("k2", `{"n":2}`)}
	cb := pass(tasks[1], at(20))
	cb.Outbox = []queue.OutboxEntry{e("k3", `{"n":3}`)}
	h.completeOK(ca)
	h.completeOK(cb)

	strip := func(es []queue.OutboxEntry) []queue.OutboxEntry {
		out := make([]queue.OutboxEntry, len(es))
		for i, x := range es {
			out[i] = queue.OutboxEntry{Kind: x.Kind, Body: x.Body}
		}
		return out
	}
	all := h.outbox()
	diff(t, "ReadOutbox", []queue.OutboxEntry{e("k1", `{"n":1}`), e("k2", `{"n":2}`), e("k3", `{"n":3}`)}, strip(all))
	seen := map[string]bool{}
	for _, x := range all {
		if x.ID == "" || seen[x.ID] {
			t.Errorf("outbox ID %q empty or repeated", x.ID)
		}
		seen[x.ID] = true
	}
	two, err := h.s.ReadOutbox(h.ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	diff(t, "ReadOutbox(2)", all[:2], two)
	if err := h.s.AckOutbox(h.ctx, []string{all[0].ID, "nope", "123456789", all[1].ID}); err != nil {
		t.Fatalf("AckOutbox: %v", err)
	}
	diff(t, "after ack", all[2:], h.outbox())
	if err := h.s.AckOutbox(h.ctx, []string{all[0].ID}); err != nil {
		t.Errorf("AckOutbox again: %v", err)
	}
	if err := h.s.AckOutbox(h.ctx, nil); err != nil {
		t.Errorf("AckOutbox(nil): %v", err)
	}
	// New entries come after the remaining one.
	h.add(at(30), "q", "c")
	cc := pass(h.claimOne("c", "w", at(30), "q"), at(40))
	cc.Outbox = []queue.OutboxEntry{e("k4", `{"n":4}`)}
	h.completeOK(cc)
	diff(t, "ReadOutbox after more", []queue.OutboxEntry{e("k3", `{"n":3}`), e("k4", `{"n":4}`)}, strip(h.outbox()))
}

func testTaskFinal(t *testing.T, newStore func(t *testing.T) queue.Store) {
	h := newH(t, newStore)
	mk := func(id string, notify bool, max int) queue.NewTask {
		return queue.NewTask{ID: id, Type: "ty", Queue: "q", Notify: notify, MaxAttempts: max, LeaseTTL: 10 * time.Second,
			Payload: json.RawMessage(`{"id":"` + id + `"}`)}
	}
	h.enqueue(at(0), mk("pass", true, 3), mk("quiet", false, 3), mk("rejected", true, 3), mk("exhausted", true, 1), mk("expired", true, 1))
	got := h.claim("w", at(0), 5, "q")
	byID := map[string]baton.Task{}
	for _, tk := range got {
		byID[tk.ID] = tk
	}
	c := pass(byID["pass"], at(100))
	c.Result.Data = json.RawMessage(`{"ok":true}`)
	h.completeOK(c)
	h.completeOK(pass(byID["quiet"], at(200)))
	c = pass(byID["rejected"], at(300))
	c.Result.Outcome, c.Result.Reason, c.FinalState = baton.OutcomeReject, "no", baton.StateFailed
	h.completeOK(c)
	h.completeOK(retry(byID["exhausted"], at(400), "busy"))
	h.reap(at(10000), 10)

	payload := func(id string) json.RawMessage { return json.RawMessage(`{"id":"` + id + `"}`) }
	diff(t, "task.final events", []queue.TaskFinal{
		{TaskID: "pass", Type: "ty", Queue: "q", State: baton.StateCompleted, Outcome: baton.OutcomePass, Attempts: 1, Payload: payload("pass"), Data: json.RawMessage(`{"ok":true}`), FinishedAt: at(100)},
		{TaskID: "rejected", Type: "ty", Queue: "q", State: baton.StateFailed, Outcome: baton.OutcomeReject, Reason: "no", Attempts: 1, Payload: payload("rejected"), FinishedAt: at(300)},
		{TaskID: "exhausted", Type: "ty", Queue: "q", State: baton.StateFailed, Outcome: baton.OutcomeRetry, Reason: "busy", Error: "attempts exhausted: busy", Attempts: 1, Payload: payload("exhausted"), FinishedAt: at(400)},
		{TaskID: "expired", Type: "ty", Queue: "q", State: baton.StateFailed, Error: "lease expired", Attempts: 1, Payload: payload("expired"), FinishedAt: at(10000)},
	}, h.events())
}

// touch records a worker as seen.
func touch(h *h, id string, now time.Time) {
	h.t.Helper()
	if err := h.s.TouchWorker(h.ctx, queue.WorkerSeen{ID: id, Name: "name-" + id, Types: []string{"test"}, Now: now}); err != nil {
		h.t.Fatalf("TouchWorker: %v", err)
	}
}

// running returns the Running count of worker id (seen since the epoch).
func running(h *h, id string) int64 {
	h.t.Helper()
	ws, err := h.s.Workers(h.ctx, time.Unix(0, 0))
	if err != nil {
		h.t.Fatalf("Workers: %v", err)
	}
	for _, w := range ws {
		if w.ID == id {
			return w.Running
		}
	}
	h.t.Fatalf("Workers: no worker %q in %+v", id, ws)
	return 0
}

func testWorkers(t *testing.T, newStore func(t *testing.T) queue.Store) {
	h := newH(t, newStore)
	if err := h.s.TouchWorker(h.ctx, queue.WorkerSeen{ID: "w1", Name: "alpha", Types: []string{"a", "b"}, Now: at(0)}); err != nil {
		t.Fatal(err)
	}
	if err := h.s.TouchWorker(h.ctx, queue.WorkerSeen{ID: "w2", Name: "beta", Types: []string{"c"}, Now: at(5000)}); err != nil {
		t.Fatal(err)
	}
	h.enqueue(at(0),
		queue.NewTask{ID: "t1", Type: "a", Queue: "q", LeaseTTL: 10 * time.Second},
		queue.NewTask{ID: "t2", Type: "a", Queue: "q", LeaseTTL: 10 * time.Second},
		queue.NewTask{ID: "t3", Type: "a", Queue: "q", LeaseTTL: 20 * time.Second},
		queue.NewTask{ID: "t4", Type: "a", Queue: "q", LeaseTTL: 20 * time.Second},
		queue.NewTask{ID: "t5", Type: "a", Queue: "q", LeaseTTL: 20 * time.Second},
	)
	tasks := h.claim("w1", at(0), 4, "q")
	h.claim("w2", at(0), 1, "q")
	list := func(since time.Time) []queue.WorkerInfo {
		ws, err := h.s.Workers(h.ctx, since)
		if err != nil {
			t.Fatalf("Workers: %v", err)
		}
		sort.Slice(ws, func(i, j int) bool { return ws[i].ID < ws[j].ID })
		return ws
	}
	diff(t, "Workers", []queue.WorkerInfo{
		{ID: "w1", Name: "alpha", Types: []string{"a", "b"}, LastSeen: at(0), Running: 4},
		{ID: "w2", Name: "beta", Types: []string{"c"}, LastSeen: at(5000), Running: 1},
	}, list(at(0)))
	diff(t, "Workers since", []queue.WorkerInfo{{ID: "w2", Name: "beta", Types: []string{"c"}, LastSeen: at(5000), Running: 1}}, list(at(1000)))

	// complete, reap, cancel and release each lower the count.
	h.completeOK(pass(tasks[0], at(100)))
	h.reap(at(10000), 10) // t2 stalls
	h.cancel("t3", at(10000))
	if err := h.s.Release(h.ctx, "t4", tasks[3].LeaseToken, at(10000)); err != nil {
		t.Fatal(err)
	}
	if err := h.s.TouchWorker(h.ctx, queue.WorkerSeen{ID: "w1", Name: "alpha2", Types: []string{"z"}, Now: at(11000)}); err != nil {
		t.Fatal(err)
	}
	diff(t, "Workers after", []queue.WorkerInfo{
		{ID: "w1", Name: "alpha2", Types: []string{"z"}, LastSeen: at(11000), Running: 0},
		{ID: "w2", Name: "beta", Types: []string{"c"}, LastSeen: at(5000), Running: 1},
	}, list(at(0)))
	diff(t, "Workers since", []queue.WorkerInfo(nil), list(at(20000)))
}

func testPutIfAbsent(t *testing.T, newStore func(t *testing.T) queue.Store) {
	h := newH(t, newStore)
	val, created, err := h.s.PutIfAbsent(h.ctx, "idem:1", []byte("first"), time.Hour)
	if err != nil || !created || string(val) != "first" {
		t.Errorf("first PutIfAbsent = %q, %v, %v", val, created, err)
	}
	val, created, err = h.s.PutIfAbsent(h.ctx, "idem:1", []byte("second"), time.Hour)
	if err != nil || created || string(val) != "first" {
		t.Errorf("second PutIfAbsent = %q, %v, %v; want first, false", val, created, err)
	}
	val, created, err = h.s.PutIfAbsent(h.ctx, "idem:2", []byte("other"), time.Hour)
	if err != nil || !created || string(val) != "other" {
		t.Errorf("other key PutIfAbsent = %q, %v, %v", val, created, err)
	}
	// The TTL runs on the wall clock: an expired key can be set again.
	if _, _, err := h.s.PutIfAbsent(h.ctx, "idem:short", []byte("a"), 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	time.Sleep(150 * time.Millisecond)
	val, created, err = h.s.PutIfAbsent(h.ctx, "idem:short", []byte("b"), time.Hour)
	if err != nil || !created || string(val) != "b" {
		t.Errorf("PutIfAbsent after expiry = %q, %v, %v; want b, true", val, created, err)
	}
}

func testWake(t *testing.T, newStore func(t *testing.T) queue.Store) {
	h := newH(t, newStore)
	wake := h.s.Wake()
	drain := func() {
		for {
			select {
			case <-wake:
			default:
				return
			}
		}
	}
	expect := func(what string) {
		t.Helper()
		select {
		case <-wake:
		case <-time.After(10 * time.Second):
			t.Errorf("no wake after %s", what)
		}
	}
	drain()
	h.add(at(0), "q", "a", "b", "c")
	expect("Enqueue")

	tasks := h.claim("w", at(0), 3, "q")
	drain()
	h.completeOK(retry(tasks[0], at(10), "x"))
	expect("a retry")

	drain()
	c := pass(tasks[1], at(20))
	c.FollowUps = []queue.NewTask{{ID: "f", Type: "test", Queue: "q2"}}
	h.completeOK(c)
	expect("follow-ups")

	drain()
	if err := h.s.Release(h.ctx, "c", tasks[2].LeaseToken, at(30)); err != nil {
		t.Fatal(err)
	}
	expect("Release")

	h.claim("w", at(40), 1, "q")
	drain()
	if st := h.reap(at(60000), 10); st.Stalled != 1 {
		t.Fatalf("Reap = %+v", st)
	}
	expect("Reap")
}

func testContextCanceled(t *testing.T, newStore func(t *testing.T) queue.Store) {
	h := newH(t, newStore)
	h.add(at(0), "q", "a")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := h.s.Enqueue(ctx, at(0), []queue.NewTask{{ID: "b", Type: "test", Queue: "q"}}); !errors.Is(err, context.Canceled) {
		t.Errorf("Enqueue with a cancelled context: %v, want context.Canceled", err)
	}
	if _, err := h.s.Claim(ctx, queue.ClaimRequest{WorkerID: "w", Queues: []string{"q"}, Max: 1, Now: at(0)}); !errors.Is(err, context.Canceled) {
		t.Errorf("Claim with a cancelled context: %v, want context.Canceled", err)
	}
	if _, err := h.s.Get(ctx, "a"); !errors.Is(err, context.Canceled) {
		t.Errorf("Get with a cancelled context: %v, want context.Canceled", err)
	}
	h.notFound("b")
	if got := h.get("a").Status; got != baton.StatePending {
		t.Errorf("a is %s after a cancelled claim", got)
	}
}

func testPingClose(t *testing.T, newStore func(t *testing.T) queue.Store) {
	h := newH(t, newStore)
	if err := h.s.Ping(h.ctx); err != nil {
		t.Errorf("Ping: %v", err)
	}
	if err := h.s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	_ = h.s.Close() // safe to call twice; the result is not specified
}
