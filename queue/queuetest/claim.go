package queuetest

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"testing"
	"time"

	baton "github.com/batonhq/baton"
	"github.com/batonhq/baton/queue"
)

// clearTokens returns a copy of tasks with LeaseToken blanked, for diffs.
func clearTokens(tasks []baton.Task) []baton.Task {
	out := append([]baton.Task(nil), tasks...)
	for i := range out {
		out[i].LeaseToken = ""
	}
	return out
}

// checkTokens fails unless every token is hex of at least 128 bits and all
// are distinct.
func checkTokens(t *testing.T, tasks []baton.Task) {
	t.Helper()
	seen := map[string]bool{}
	for _, tk := range tasks {
		b, err := hex.DecodeString(tk.LeaseToken)
		if err != nil || len(b) < 16 {
			t.Errorf("task %s: lease token %q is not hex of >= 128 bits", tk.ID, tk.LeaseToken)
		}
		if seen[tk.LeaseToken] {
			t.Errorf("task %s: lease token %q handed out twice", tk.ID, tk.LeaseToken)
		}
		seen[tk.LeaseToken] = true
	}
}

func testClaimOrder(t *testing.T, newStore func(t *testing.T) queue.Store) {
	h := newH(t, newStore)
	h.add(at(0), "b", "b1")
	h.add(at(1), "a", "a1")
	h.add(at(2), "b", "b2")
	h.add(at(3), "a", "a2")
	h.add(at(4), "b", "b3")
	h.add(at(5), "c", "c1")

	// Queues are drained in the order asked, FIFO within each.
	if got := ids(h.claim("w", at(10), 3, "a", "b")); !cmpEqual(got, []string{"a1", "a2", "b1"}) {
		t.Errorf("Claim(a,b max 3) = %v, want [a1 a2 b1]", got)
	}
	if got := ids(h.claim("w", at(10), 10, "b", "a")); !cmpEqual(got, []string{"b2", "b3"}) {
		t.Errorf("Claim(b,a) = %v, want [b2 b3]", got)
	}
	if got := h.claim("w", at(10), 10, "a", "b", "nosuch"); len(got) != 0 {
		t.Errorf("Claim of drained queues = %v, want nothing", ids(got))
	}
	if got := h.claim("w", at(10), 0, "c"); len(got) != 0 {
		t.Errorf("Claim(max 0) = %v, want nothing", ids(got))
	}

	// Insertion order breaks ties within one batch.
	var batch []string
	for i := range 12 {
		batch = append(batch, idf("x%02d", 11-i))
	}
	h.add(at(20), "x", batch...)
	got := append(ids(h.claim("w", at(30), 5, "x")), ids(h.claim("w", at(30), 10, "x"))...)
	diff(t, "FIFO in one batch", batch, got)

	// Ready time (RunAt) orders before insertion.
	h.enqueue(at(40),
		queue.NewTask{ID: "y1", Type: "test", Queue: "y", RunAt: at(43)},
		queue.NewTask{ID: "y2", Type: "test", Queue: "y", RunAt: at(41)},
		queue.NewTask{ID: "y3", Type: "test", Queue: "y"},
		queue.NewTask{ID: "y4", Type: "test", Queue: "y", RunAt: at(42)},
	)
	if got := ids(h.claim("w", at(50), 10, "y")); !cmpEqual(got, []string{"y3", "y2", "y4", "y1"}) {
		t.Errorf("Claim(y) = %v, want [y3 y2 y4 y1]", got)
	}
}

func testClaimTask(t *testing.T, newStore func(t *testing.T) queue.Store) {
	h := newH(t, newStore)
	h.enqueue(at(0), queue.NewTask{ID: "a", Type: "echo", Queue: "q", Payload: json.RawMessage(`{"n":1}`), MaxAttempts: 2, LeaseTTL: 5 * time.Second, DedupKey: "k"})
	before := h.get("a")
	tk := h.claimOne("a", "worker-1", at(1000), "q")
	diff(t, "Task", baton.Task{ID: "a", Type: "echo", Queue: "q", Payload: json.RawMessage(`{"n":1}`), Attempt: 1, MaxAttempts: 2,
		LeaseExpiresAt: at(6000), CreatedAt: at(0)}, clearTokens([]baton.Task{tk})[0])
	checkTokens(t, []baton.Task{tk})

	want := before
	want.Status, want.Attempts, want.WorkerID, want.StartedAt = baton.StateProcessing, 1, "worker-1", tp(at(1000))
	diff(t, "Get after claim", want, h.get("a"))

	// A stalled task is claimed again by another worker: attempt 2, a new
	// token, StartedAt kept from the first claim.
	h.reap(at(6000), 10)
	tk2 := h.claimOne("a", "worker-2", at(7000), "q")
	if tk2.Attempt != 2 || tk2.LeaseToken == tk.LeaseToken || !tk2.LeaseExpiresAt.Equal(at(12000)) {
		t.Errorf("second claim = %+v, want attempt 2, a new token, lease until %v", tk2, at(12000))
	}
	checkTokens(t, []baton.Task{tk, tk2})
	want.Attempts, want.WorkerID = 2, "worker-2"
	diff(t, "Get after second claim", want, h.get("a"))

	// Many claims: all tokens distinct.
	var all []baton.Task
	for i := range 50 {
		h.add(at(8000), "many", idf("m%d", i))
	}
	for range 5 {
		all = append(all, h.claim("w", at(9000), 10, "many")...)
	}
	if len(all) != 50 {
		t.Fatalf("claimed %d of 50", len(all))
	}
	checkTokens(t, all)
}

func testClaimPaused(t *testing.T, newStore func(t *testing.T) queue.Store) {
	h := newH(t, newStore)
	h.add(at(0), "p", "p1", "p2")
	h.add(at(0), "o", "o1")
	h.setConfig("p", queue.QueueConfig{Paused: true})
	if got := ids(h.claim("w", at(10), 10, "p", "o")); !cmpEqual(got, []string{"o1"}) {
		t.Errorf("Claim with p paused = %v, want [o1]", got)
	}
	if st := h.stat(at(10), "p"); !st.Paused || st.Ready != 2 {
		t.Errorf("paused queue stat = %+v, want paused with 2 ready", st)
	}
	h.setConfig("p", queue.QueueConfig{Paused: false})
	if got := ids(h.claim("w", at(20), 10, "p", "o")); !cmpEqual(got, []string{"p1", "p2"}) {
		t.Errorf("Claim after resume = %v, want [p1 p2]", got)
	}
}

func testRateLimit(t *testing.T, newStore func(t *testing.T) queue.Store) {
	h := newH(t, newStore)
	h.setConfig("r", queue.QueueConfig{RatePerMin: 60}) // one claim per 1000 ms
	h.add(at(0), "r", "r1", "r2", "r3", "r4", "r5")
	h.add(at(0), "o", "o1", "o2", "o3", "o4", "o5")
	steps := []struct {
		ms     int64
		queues []string
		want   []string
	}{
		{0, []string{"r", "o"}, []string{"r1", "o1", "o2"}}, // max 3: one from r, then o
		{999, []string{"r"}, nil},
		{1000, []string{"r"}, []string{"r2"}},
		{1000, []string{"r"}, nil}, // another caller in the same interval
		{1500, []string{"r"}, nil},
		{5000, []string{"r"}, []string{"r3"}}, // burst 1: idle time does not bank claims
		{5000, []string{"r", "o"}, []string{"o3", "o4", "o5"}},
		{6000, []string{"r"}, []string{"r4"}},
		{7000, []string{"r"}, []string{"r5"}},
		{8000, []string{"r"}, nil}, // empty: the limiter is not consumed
	}
	for _, s := range steps {
		got := ids(h.claim("w", at(s.ms), 3, s.queues...))
		if !cmpEqual(got, s.want) && !(len(got) == 0 && len(s.want) == 0) {
			t.Errorf("Claim(%v) at +%dms = %v, want %v", s.queues, s.ms, got, s.want)
		}
	}
	h.add(at(8500), "r", "r6")
	if got := ids(h.claim("w", at(8500), 3, "r")); !cmpEqual(got, []string{"r6"}) {
		t.Errorf("Claim at +8500ms after an empty claim = %v, want [r6]", got)
	}
	if st := h.stat(at(8500), "r"); st.RatePerMin != 60 {
		t.Errorf("RatePerMin = %d, want 60", st.RatePerMin)
	}

	// Changing the rate applies to the next interval; 0 lifts the limit.
	h.setConfig("r", queue.QueueConfig{RatePerMin: 0})
	h.add(at(9000), "r", "r7", "r8")
	if got := ids(h.claim("w", at(9000), 3, "r")); !cmpEqual(got, []string{"r7", "r8"}) {
		t.Errorf("Claim unlimited = %v, want [r7 r8]", got)
	}
	h.setConfig("r2", queue.QueueConfig{RatePerMin: 120}) // one per 500 ms
	h.add(at(10000), "r2", "s1", "s2", "s3")
	for _, s := range []struct {
		ms   int64
		want int
	}{{10000, 1}, {10499, 0}, {10500, 1}, {10900, 0}, {11000, 1}} {
		if got := h.claim("w", at(s.ms), 3, "r2"); len(got) != s.want {
			t.Errorf("Claim(r2) at +%dms = %v, want %d task(s)", s.ms, ids(got), s.want)
		}
	}
}

func testRunAtDelayed(t *testing.T, newStore func(t *testing.T) queue.Store) {
	h := newH(t, newStore)
	h.enqueue(at(0), queue.NewTask{ID: "d", Type: "test", Queue: "q", RunAt: at(60000)})
	if got := h.claim("w", at(59999), 10, "q"); len(got) != 0 {
		t.Errorf("Claim before RunAt = %v", ids(got))
	}
	st := h.stat(at(59999), "q")
	if st.Ready != 0 || st.Retry != 1 {
		t.Errorf("stat before RunAt = %+v, want ready 0 retry 1", st)
	}
	st = h.stat(at(60000), "q")
	if st.Ready != 1 || st.Retry != 0 || st.OldestAgeMs != 60000 {
		t.Errorf("stat at RunAt = %+v, want ready 1 retry 0 oldest 60000", st)
	}
	h.claimOne("d", "w", at(60000), "q")
}

func testHeartbeat(t *testing.T, newStore func(t *testing.T) queue.Store) {
	h := newH(t, newStore)
	h.enqueue(at(0), queue.NewTask{ID: "a", Type: "test", Queue: "q", LeaseTTL: 10 * time.Second})
	tk := h.claimOne("a", "w", at(0), "q")
	for _, tc := range []struct {
		now    int64
		extend time.Duration
		want   time.Time
	}{
		{5000, 0, at(15000)},
		{6000, 2 * time.Minute, at(126000)},
		{7000, 3 * time.Hour, at(7000).Add(queue.MaxLeaseTTL)},
		{8000, 0, at(18000)}, // may also shorten
	} {
		got, err := h.s.Heartbeat(h.ctx, "a", tk.LeaseToken, at(tc.now), tc.extend)
		if err != nil || !got.Equal(tc.want) {
			t.Errorf("Heartbeat(now +%dms, extend %v) = %v, %v; want %v", tc.now, tc.extend, got, err, tc.want)
		}
	}
	_, err := h.s.Heartbeat(h.ctx, "a", "00112233445566778899aabbccddeeff", at(9000), 0)
	wantIs(t, "Heartbeat wrong token", err, baton.ErrLeaseLost)
	_, err = h.s.Heartbeat(h.ctx, "nope", tk.LeaseToken, at(9000), 0)
	wantIs(t, "Heartbeat unknown", err, baton.ErrNotFound)

	// The extended lease decides the reap.
	if st := h.reap(at(17999), 10); st.Stalled != 0 {
		t.Errorf("Reap before the extended deadline stalled %d", st.Stalled)
	}
	if st := h.reap(at(18000), 10); st.Stalled != 1 {
		t.Errorf("Reap at the extended deadline = %+v, want 1 stalled", st)
	}
	// The stalled task's token is dead.
	_, err = h.s.Heartbeat(h.ctx, "a", tk.LeaseToken, at(18001), 0)
	wantIs(t, "Heartbeat after stall", err, baton.ErrLeaseLost)

	// And after completion.
	tk2 := h.claimOne("a", "w", at(20000), "q")
	h.completeOK(pass(tk2, at(21000)))
	_, err = h.s.Heartbeat(h.ctx, "a", tk2.LeaseToken, at(22000), 0)
	wantIs(t, "Heartbeat after completion", err, baton.ErrLeaseLost)
	if errors.Is(err, baton.ErrNotFound) {
		t.Errorf("Heartbeat after completion: ErrNotFound, want ErrLeaseLost")
	}
}
