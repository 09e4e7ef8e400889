// Package queuetest is the conformance suite every queue.Store backend must
// pass, in the manner of testing/slogtest and river's riverdrivertest: a
// backend's own tests call Run with a constructor, and the same rules are
// proven on Redis and on SQLite.
//
// Rules the suite fixes beyond the doc comments of package queue (and the
// store semantics note the backends were written from):
//
//   - Times are stored with millisecond precision; the suite only uses
//     millisecond-aligned times and compares them with time.Time.Equal.
//   - Enqueue validates the whole batch first (ID, Type and Queue required,
//     Payload valid JSON when set, MaxAttempts and LeaseTTL not negative):
//     an invalid task fails the call with an *baton.Error EInvalid and
//     nothing is created. Enqueueing an ID that already exists creates
//     nothing and answers Created=false with that task's state and queue.
//   - TaskInfo.NextAttemptAt is set only while a retry result makes the task
//     wait (not for a future RunAt) and is cleared by the next claim.
//     TaskInfo.WorkerID keeps the last worker that claimed the task.
//   - TaskFinal mirrors TaskInfo: Outcome, Reason and Data of the last result
//     (empty for a task cancelled before any result), Error, Attempts,
//     Payload, FinishedAt.
//   - FIFO is by ready time, then enqueue order: a task's ready time is its
//     RunAt (its creation time by default), its NextAttemptAt after a retry,
//     and the time of the Reap or Release that put it back. OldestAgeMs is
//     now minus the creation time of the task at the head of that order.
//   - The rate limiter is only consumed by a claim that hands out a task; its
//     emission interval is 60000/RatePerMin ms in integer division.
//   - Cancel clears NextAttemptAt. A queue stays listed by Queues after its
//     tasks are purged.
//   - A completion whose result fails baton.Result.Validate, whose FinalState
//     is not terminal, or whose follow-ups are invalid answers EInvalid and
//     changes nothing; the checks run after the lease checks.
//   - Stores built by newStore use queue.DefaultRetention.
//
// The suite has no backend-specific switches: both stores behave the same.
package queuetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	baton "github.com/batonhq/baton"
	"github.com/batonhq/baton/queue"
)

// base is the injected start of time for every test; tests move time
// explicitly from here.
var base = time.Date(2026, 1, 1, 8, 0, 0, 0, time.UTC)

// at returns base + ms milliseconds.
func at(ms int64) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }

// Run runs the conformance suite against stores made by newStore, one fresh
// store per subtest. newStore must return an empty store with the default
// retention and register its own cleanup (t.Cleanup) that closes it.
func Run(t *testing.T, newStore func(t *testing.T) queue.Store) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, newStore func(t *testing.T) queue.Store)
	}{
		{"EnqueueDefaults", testEnqueueDefaults},
		{"EnqueueInvalid", testEnqueueInvalid},
		{"EnqueueSameID", testEnqueueSameID},
		{"Dedup", testDedup},
		{"DedupRelease", testDedupRelease},
		{"FollowUpInheritsKey", testFollowUpInheritsKey},
		{"ClaimOrder", testClaimOrder},
		{"ClaimTask", testClaimTask},
		{"ClaimPaused", testClaimPaused},
		{"RateLimit", testRateLimit},
		{"RunAtDelayed", testRunAtDelayed},
		{"Heartbeat", testHeartbeat},
		{"CompleteOutcomes", testCompleteOutcomes},
		{"CompleteInvalid", testCompleteInvalid},
		{"RetryBackoff", testRetryBackoff},
		{"RetryExhausted", testRetryExhausted},
		{"DuplicateResult", testDuplicateResult},
		{"StaleToken", testStaleToken},
		{"CompleteBatchIndependent", testCompleteBatchIndependent},
		{"Reap", testReap},
		{"ReapAttemptsSpent", testReapAttemptsSpent},
		{"ReapLimit", testReapLimit},
		{"ReapConcurrent", testReapConcurrent},
		{"Release", testRelease},
		{"Cancel", testCancel},
		{"Retention", testRetention},
		{"QueueConfig", testQueueConfig},
		{"QueueStats", testQueueStats},
		{"Outbox", testOutbox},
		{"TaskFinal", testTaskFinal},
		{"Workers", testWorkers},
		{"PutIfAbsent", testPutIfAbsent},
		{"Wake", testWake},
		{"ContextCanceled", testContextCanceled},
		{"PingClose", testPingClose},
		{"ConcurrentClaimComplete", testConcurrentClaimComplete},
		{"ConcurrentReaper", testConcurrentReaper},
		{"ConcurrentDedup", testConcurrentDedup},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, newStore)
		})
	}
}

// cmpOpts compares JSON by meaning (a backend may re-encode it), treats nil
// and empty slices alike, and compares times with Equal (cmp's default for
// types with an Equal method).
var cmpOpts = []cmp.Option{
	cmp.Comparer(jsonEqual),
	cmp.FilterPath(func(p cmp.Path) bool { return p.Last().Type() != rawMessageType }, cmpopts.EquateEmpty()),
}

var rawMessageType = reflect.TypeFor[json.RawMessage]()

// jsonEqual compares two JSON documents by value; two empty ones are equal.
func jsonEqual(a, b json.RawMessage) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return string(a) == string(b)
	}
	return reflect.DeepEqual(va, vb)
}

// h wraps a store with fatal-on-error helpers.
type h struct {
	t   *testing.T
	s   queue.Store
	ctx context.Context
}

func newH(t *testing.T, newStore func(t *testing.T) queue.Store) *h {
	t.Helper()
	return &h{t: t, s: newStore(t), ctx: context.Background()}
}

func (h *h) enqueue(now time.Time, tasks ...queue.NewTask) []queue.EnqueueResult {
	h.t.Helper()
	res, err := h.s.Enqueue(h.ctx, now, tasks)
	if err != nil {
		h.t.Fatalf("Enqueue: %v", err)
	}
	if len(res) != len(tasks) {
		h.t.Fatalf("Enqueue returned %d results for %d tasks", len(res), len(tasks))
	}
	return res
}

// add enqueues simple tasks by id into queue q at now, checking each is created.
func (h *h) add(now time.Time, q string, ids ...string) {
	h.t.Helper()
	tasks := make([]queue.NewTask, len(ids))
	for i, id := range ids {
		tasks[i] = queue.NewTask{ID: id, Type: "test", Queue: q}
	}
	for i, r := range h.enqueue(now, tasks...) {
		if !r.Created {
			h.t.Fatalf("Enqueue %s: not created: %+v", ids[i], r)
		}
	}
}

func (h *h) claim(worker string, now time.Time, max int, queues ...string) []baton.Task {
	h.t.Helper()
	got, err := h.s.Claim(h.ctx, queue.ClaimRequest{WorkerID: worker, Queues: queues, Max: max, Now: now})
	if err != nil {
		h.t.Fatalf("Claim: %v", err)
	}
	return got
}

// claimOne claims and insists on exactly one task with the given id.
func (h *h) claimOne(id, worker string, now time.Time, q string) baton.Task {
	h.t.Helper()
	got := h.claim(worker, now, 1, q)
	if len(got) != 1 || got[0].ID != id {
		h.t.Fatalf("Claim(%s) = %v, want [%s]", q, ids(got), id)
	}
	return got[0]
}

func (h *h) complete(cs ...queue.Completion) []queue.CompleteResult {
	h.t.Helper()
	res, err := h.s.Complete(h.ctx, cs)
	if err != nil {
		h.t.Fatalf("Complete: %v", err)
	}
	if len(res) != len(cs) {
		h.t.Fatalf("Complete returned %d results for %d completions", len(res), len(cs))
	}
	return res
}

// completeOK applies one completion and fails unless it was applied.
func (h *h) completeOK(c queue.Completion) queue.Ack {
	h.t.Helper()
	r := h.complete(c)[0]
	if r.Err != nil {
		h.t.Fatalf("Complete(%s): %v", c.TaskID, r.Err)
	}
	return r.Ack
}

func (h *h) get(id string) baton.TaskInfo {
	h.t.Helper()
	ti, err := h.s.Get(h.ctx, id)
	if err != nil {
		h.t.Fatalf("Get(%s): %v", id, err)
	}
	return ti
}

func (h *h) notFound(id string) {
	h.t.Helper()
	if ti, err := h.s.Get(h.ctx, id); !errors.Is(err, baton.ErrNotFound) {
		h.t.Fatalf("Get(%s) = %+v, %v; want ErrNotFound", id, ti, err)
	}
}

func (h *h) reap(now time.Time, limit int) queue.ReapStats {
	h.t.Helper()
	st, err := h.s.Reap(h.ctx, now, limit)
	if err != nil {
		h.t.Fatalf("Reap: %v", err)
	}
	return st
}

func (h *h) outbox() []queue.OutboxEntry {
	h.t.Helper()
	got, err := h.s.ReadOutbox(h.ctx, 100000)
	if err != nil {
		h.t.Fatalf("ReadOutbox: %v", err)
	}
	return got
}

func (h *h) queues(now time.Time) []queue.QueueStat {
	h.t.Helper()
	got, err := h.s.Queues(h.ctx, now)
	if err != nil {
		h.t.Fatalf("Queues: %v", err)
	}
	return got
}

func (h *h) stat(now time.Time, name string) queue.QueueStat {
	h.t.Helper()
	for _, q := range h.queues(now) {
		if q.Name == name {
			return q
		}
	}
	h.t.Fatalf("Queues: no queue %q", name)
	return queue.QueueStat{}
}

func (h *h) setConfig(name string, cfg queue.QueueConfig) {
	h.t.Helper()
	if err := h.s.SetQueueConfig(h.ctx, name, cfg); err != nil {
		h.t.Fatalf("SetQueueConfig: %v", err)
	}
}

func (h *h) cancel(id string, now time.Time) {
	h.t.Helper()
	st, err := h.s.Cancel(h.ctx, id, now)
	if err != nil || st != baton.StateCancelled {
		h.t.Fatalf("Cancel(%s) = %q, %v; want cancelled", id, st, err)
	}
}

// events returns the task.final bodies in the outbox, decoded.
func (h *h) events() []queue.TaskFinal {
	h.t.Helper()
	var out []queue.TaskFinal
	for _, e := range h.outbox() {
		if e.Kind != queue.OutboxKindTaskFinal {
			continue
		}
		var f queue.TaskFinal
		if err := json.Unmarshal(e.Body, &f); err != nil {
			h.t.Fatalf("outbox %s: bad task.final body %s: %v", e.ID, e.Body, err)
		}
		out = append(out, f)
	}
	return out
}

// diff fails the test with a (-want +got) diff when want != got.
func diff(t *testing.T, what string, want, got any) {
	t.Helper()
	if d := cmp.Diff(want, got, cmpOpts...); d != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", what, d)
	}
}

// pass is a completion with outcome pass for a claimed task.
func pass(tk baton.Task, now time.Time) queue.Completion {
	return queue.Completion{TaskID: tk.ID, Result: baton.Result{LeaseToken: tk.LeaseToken, Outcome: baton.OutcomePass}, Now: now}
}

// retry is a completion with outcome retry for a claimed task.
func retry(tk baton.Task, now time.Time, reason string) queue.Completion {
	return queue.Completion{TaskID: tk.ID, Result: baton.Result{LeaseToken: tk.LeaseToken, Outcome: baton.OutcomeRetry, Reason: reason}, Now: now}
}

func ids(tasks []baton.Task) []string {
	out := make([]string, len(tasks))
	for i, tk := range tasks {
		out[i] = tk.ID
	}
	return out
}

func tp(t time.Time) *time.Time { return &t }
func ip(v int64) *int64         { return &v }

// wantCode fails unless err carries the application error code.
func wantCode(t *testing.T, what string, err error, code string) {
	t.Helper()
	if got := baton.ErrorCode(err); got != code {
		t.Errorf("%s: error %v (code %q), want code %q", what, err, got, code)
	}
}

// wantIs fails unless errors.Is(err, target).
func wantIs(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Errorf("%s: error %v, want %v", what, err, target)
	}
}

func sortedStrings(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}

func idf(format string, a ...any) string { return fmt.Sprintf(format, a...) }
