package worker_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	baton "github.com/batonhq/baton"
	"github.com/batonhq/baton/controller"
	"github.com/batonhq/baton/queue"
	"github.com/batonhq/baton/queue/sqliteq"
	"github.com/batonhq/baton/worker"
)

func newController(t *testing.T) *controller.Controller {
	t.Helper()
	st, err := sqliteq.Open(context.Background(), filepath.Join(t.TempDir(), "q.db"), sqliteq.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := controller.New(controller.Config{Store: st, ReapInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	c.Start(context.Background())
	t.Cleanup(func() { c.Stop(); _ = st.Close() })
	return c
}

func enqueue(t *testing.T, c *controller.Controller, typ string, n int, lease time.Duration) []string {
	t.Helper()
	nts := make([]queue.NewTask, n)
	for i := range nts {
		nts[i] = queue.NewTask{ID: controller.NewID(), Type: typ, Queue: typ, Payload: []byte(fmt.Sprintf(`{"i":%d}`, i)), LeaseTTL: lease, MaxAttempts: 3}
	}
	res, err := c.Enqueue(context.Background(), nts)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, n)
	for i, r := range res {
		ids[i] = r.TaskID
	}
	return ids
}

func waitState(t *testing.T, c *controller.Controller, ids []string, want baton.State) map[string]baton.TaskInfo {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		out := map[string]baton.TaskInfo{}
		for _, id := range ids {
			ti, err := c.Task(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			if ti.Status == want {
				out[id] = ti
			}
		}
		if len(out) == len(ids) {
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d tasks reached %s", len(out), len(ids), want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

type batcher struct {
	mu    sync.Mutex
	sizes []int
	max   int
}

func (b *batcher) Handle(ctx context.Context, t *baton.Task) baton.Result {
	return b.HandleBatch(ctx, []*baton.Task{t})[0]
}
func (b *batcher) MaxBatch() int { return b.max }
func (b *batcher) HandleBatch(_ context.Context, ts []*baton.Task) []baton.Result {
	b.mu.Lock()
	b.sizes = append(b.sizes, len(ts))
	b.mu.Unlock()
	out := make([]baton.Result, len(ts))
	for i, t := range ts {
		out[i] = baton.Result{Outcome: baton.OutcomePass, Data: t.Payload}
	}
	return out
}

func run(t *testing.T, c *controller.Controller, reg *worker.Registry, conc int) (stop func()) {
	t.Helper()
	w, err := worker.New(worker.Config{API: controller.Local{C: c}, Registry: reg, Concurrency: conc, ClaimWait: 200 * time.Millisecond, ShutdownGrace: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = w.Run(ctx); close(done) }()
	return func() { cancel(); <-done }
}

func TestBatchHandlerGetsGroupsOfOneType(t *testing.T) {
	c := newController(t)
	ids := enqueue(t, c, "batch.x", 120, 0)
	b := &batcher{max: 50}
	reg := worker.NewRegistry()
	reg.Register("batch.x", b)
	stop := run(t, c, reg, 128)
	defer stop()
	infos := waitState(t, c, ids, baton.StateCompleted)
	for id, ti := range infos {
		if string(ti.Data) == "" || ti.Outcome != baton.OutcomePass {
			t.Fatalf("task %s: %+v", id, ti)
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	total, batched := 0, false
	for _, n := range b.sizes {
		if n > 50 {
			t.Fatalf("batch of %d exceeds MaxBatch 50", n)
		}
		if n > 1 {
			batched = true
		}
		total += n
	}
	if total != 120 || !batched {
		t.Fatalf("batch sizes %v: want 120 tasks in total, some batched", b.sizes)
	}
}

func TestPanickingHandlerRetriesThenFails(t *testing.T) {
	c := newController(t)
	ids := enqueue(t, c, "boom.x", 1, 0)
	reg := worker.NewRegistry()
	reg.Register("boom.x", worker.HandlerFunc(func(context.Context, *baton.Task) baton.Result { panic("kaboom") }))
	stop := run(t, c, reg, 2)
	defer stop()
	// Three attempts, each a retry with a backoff; the default backoff
	// starts at 1s, so this takes a few seconds.
	infos := waitState(t, c, ids, baton.StateFailed)
	if ti := infos[ids[0]]; ti.Attempts != 3 || ti.Outcome != baton.OutcomeRetry {
		t.Fatalf("after panics: %+v", ti)
	}
}

func TestLostLeaseCancelsHandler(t *testing.T) {
	c := newController(t)
	ids := enqueue(t, c, "slow.x", 1, time.Second)
	started := make(chan struct{})
	cancelled := make(chan struct{})
	reg := worker.NewRegistry()
	reg.Register("slow.x", worker.HandlerFunc(func(ctx context.Context, _ *baton.Task) baton.Result {
		close(started)
		<-ctx.Done()
		close(cancelled)
		return baton.Result{Outcome: baton.OutcomePass}
	}))
	stop := run(t, c, reg, 1)
	defer stop()
	<-started
	if _, err := c.Cancel(context.Background(), ids[0]); err != nil {
		t.Fatal(err)
	}
	// The next heartbeat (a third of the 1s lease) answers lease_lost and
	// the runtime cancels the handler; its result is never sent.
	<-cancelled
	ti, _ := c.Task(context.Background(), ids[0])
	if ti.Status != baton.StateCancelled {
		t.Fatalf("state %s, want cancelled", ti.Status)
	}
}

func TestRegistryFilterAndLookup(t *testing.T) {
	reg := worker.NewRegistry()
	h := worker.HandlerFunc(func(context.Context, *baton.Task) baton.Result { return baton.Result{} })
	reg.Register("domain.*", h)
	reg.Register("pdf.render", h, "pdf.fast", "pdf.normal", "pdf.slow")
	reg.Register("baton.noop", h)
	if reg.Lookup("domain.register") == nil || reg.Lookup("pdf.render") == nil || reg.Lookup("other") != nil {
		t.Fatal("lookup")
	}
	f := reg.Filter([]string{"pdf.*"})
	if f.Lookup("pdf.render") == nil || f.Lookup("domain.register") != nil || f.Lookup("baton.noop") != nil {
		t.Fatal("filter handlers")
	}
	got := fmt.Sprint(f.Queues())
	if got != "[pdf.* pdf.fast pdf.normal pdf.slow]" {
		t.Fatalf("filtered queues %s", got)
	}
}
