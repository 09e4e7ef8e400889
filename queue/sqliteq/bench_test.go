package sqliteq_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	baton "github.com/batonhq/baton"
	"github.com/batonhq/baton/queue"
	"github.com/batonhq/baton/queue/sqliteq"
)

// BenchmarkEnqueueClaimComplete pushes tasks through the store's whole
// cycle (enqueue, claim, complete with pass) in batches, and reports
// tasks/s. The table keeps growing, as finished tasks stay for retention.
func BenchmarkEnqueueClaimComplete(b *testing.B) {
	for _, batch := range []int{1, 256} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			ctx := context.Background()
			s, err := sqliteq.Open(ctx, filepath.Join(b.TempDir(), "queue.db"), sqliteq.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			tasks := make([]queue.NewTask, batch)
			cs := make([]queue.Completion, batch)
			n := 0
			for b.Loop() {
				for j := range tasks {
					tasks[j] = queue.NewTask{ID: fmt.Sprintf("t%d-%d", n, j), Type: "noop", Queue: "bench", Notify: true}
				}
				if _, err := s.Enqueue(ctx, now, tasks); err != nil {
					b.Fatal(err)
				}
				got, err := s.Claim(ctx, queue.ClaimRequest{WorkerID: "w", Queues: []string{"bench"}, Max: batch, Now: now})
				if err != nil || len(got) != batch {
					b.Fatalf("claimed %d of %d: %v", len(got), batch, err)
				}
				for j, tk := range got {
					cs[j] = queue.Completion{TaskID: tk.ID, Now: now, Result: baton.Result{LeaseToken: tk.LeaseToken, Outcome: baton.OutcomePass}}
				}
				res, err := s.Complete(ctx, cs)
				if err != nil {
					b.Fatal(err)
				}
				for _, r := range res {
					if r.Err != nil {
						b.Fatal(r.Err)
					}
				}
				n++
			}
			b.ReportMetric(float64(n*batch)/b.Elapsed().Seconds(), "tasks/s")
		})
	}
}
