package pdf

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	baton "github.com/batonhq/baton"
	"github.com/batonhq/baton/controller"
	"github.com/batonhq/baton/queue"
	"github.com/batonhq/baton/queue/sqliteq"
)

// A page that stalls the browser twice fails as poison through a real
// controller and store — whose Advance input may lack the previous result.
func TestPoisonThroughController(t *testing.T) {
	ctx := context.Background()
	st, err := sqliteq.Open(ctx, filepath.Join(t.TempDir(), "q.db"), sqliteq.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	c, _ := controller.New(controller.Config{Store: st, Backoff: baton.Backoff{Base: time.Millisecond, Max: time.Millisecond}})
	c.Handle("pdf.", NewAdvancer(nil, st))
	c.Enqueue(ctx, []queue.NewTask{{ID: "T1", Type: TypeRender, Queue: QueueFast, Payload: json.RawMessage(`{}`), MaxAttempts: 3}})
	for i := 0; i < 3; i++ {
		time.Sleep(20 * time.Millisecond)
		ts, err := c.Claim(ctx, baton.ClaimRequest{WorkerID: "w", Max: 1, WaitMs: 1000})
		if err != nil || len(ts) == 0 {
			t.Fatalf("claim %d: %v", i, err)
		}
		err = c.Result(ctx, "T1", baton.Result{LeaseToken: ts[0].LeaseToken, Outcome: baton.OutcomeRetry, Reason: "crash", Data: json.RawMessage(`{"kind":"crashed"}`)})
		if err != nil {
			t.Fatal(err)
		}
		ti, _ := st.Get(ctx, "T1")
		if ti.Status.Terminal() {
			if i != 1 || ti.Status != baton.StateFailed {
				t.Fatalf("ended %s after attempt %d, want failed after the second stall", ti.Status, i+1)
			}
			return
		}
	}
	t.Fatal("never ended")
}

// A long-polling result read is woken when the controller applied a
// render's result, and not by a result the store refused (a stale lease).
func TestAppliedWakesWaiters(t *testing.T) {
	ctx := context.Background()
	st, err := sqliteq.Open(ctx, filepath.Join(t.TempDir(), "q.db"), sqliteq.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	c, _ := controller.New(controller.Config{Store: st})
	adv := NewAdvancer(nil, st)
	c.Handle("pdf.", adv)
	c.Enqueue(ctx, []queue.NewTask{{ID: "T1", Type: TypeRender, Queue: QueueFast, Payload: json.RawMessage(`{}`), MaxAttempts: 3}})
	ts, err := c.Claim(ctx, baton.ClaimRequest{WorkerID: "w", Max: 1, WaitMs: 1000})
	if err != nil || len(ts) == 0 {
		t.Fatalf("claim: %v", err)
	}
	woke := adv.advisedCh()
	if err := c.Result(ctx, "T1", baton.Result{LeaseToken: "stale", Outcome: baton.OutcomePass}); err == nil {
		t.Fatal("a result with a stale lease token was accepted")
	}
	select {
	case <-woke:
		t.Fatal("a refused result woke the waiters")
	default:
	}
	if err := c.Result(ctx, "T1", baton.Result{LeaseToken: ts[0].LeaseToken, Outcome: baton.OutcomePass}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-woke:
	default:
		t.Fatal("the applied result did not wake the waiters")
	}
	if ti, _ := st.Get(ctx, "T1"); ti.Status != baton.StateCompleted {
		t.Fatalf("task is %s, want completed", ti.Status)
	}
}
