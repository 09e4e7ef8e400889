package ledger

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/domain"
)

// cpuTime returns the CPU time this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchDomains is the ledger size of BenchmarkScanCandidates:
// BATON_BENCH_DOMAINS, default 1,000,000.
func benchDomains(b *testing.B) int {
	if s := os.Getenv("BATON_BENCH_DOMAINS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			b.Fatalf("BATON_BENCH_DOMAINS=%q: want a positive number", s)
		}
		return n
	}
	return 1_000_000
}

// fillLedger imports n domains in chunks — delete_at spread over 30 days
// in whole minutes (so many share one), one in ten without — with a passed
// register step for one in three, and every fiftieth blacklisted.
func fillLedger(b *testing.B, db *DB, n int) {
	ctx := context.Background()
	const chunk = 20000
	start := time.Now()
	for lo := 0; lo < n; lo += chunk {
		hi := min(lo+chunk, n)
		entries := make([]domain.Entry, 0, hi-lo)
		var batch Batch
		for i := lo; i < hi; i++ {
			e := domain.Entry{Name: fmt.Sprintf("d%07d.com", i)}
			if i%10 != 0 {
				e.DeleteAt = at(time.Duration((i*7919)%(30*24*60)) * time.Minute)
			}
			entries = append(entries, e)
			if i%3 == 0 {
				batch.Results = append(batch.Results, StepResult{Domain: e.Name, Step: "register", State: baton.StateCompleted, Outcome: baton.OutcomePass, Attempts: 1, FinishedAt: at(0), Version: 1})
			}
			if i%50 == 1 {
				batch.Blacklist = append(batch.Blacklist, BlacklistEntry{Domain: e.Name, Reason: "spam", CreatedAt: at(0), Version: 1})
			}
		}
		if _, _, err := db.ImportDomains(ctx, entries); err != nil {
			b.Fatal(err)
		}
		if err := db.ApplyBatch(ctx, batch); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("%s: filled %d domains in %v", db.dialect, n, time.Since(start).Round(time.Millisecond))
}

// BenchmarkScanCandidates scans the whole ledger in pages of 1000, as the
// dispatcher does, and reports candidates per second.
func BenchmarkScanCandidates(b *testing.B) {
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			n := benchDomains(b)
			db := openTest(b, be.newDSN(b))
			fillLedger(b, db, n)
			ctx := context.Background()
			want := n - (n+49-1)/50 // every fiftieth (i%50 == 1) is blacklisted
			if n < 2 {
				want = n
			}
			var total int
			cpu0 := cpuTime()
			for b.Loop() {
				total = 0
				var cur Cursor
				for {
					page, next, err := db.ScanCandidates(ctx, cur, 1000)
					if err != nil {
						b.Fatal(err)
					}
					total += len(page)
					cur = next
					if len(page) < 1000 {
						break
					}
				}
			}
			if total != want {
				b.Fatalf("scanned %d candidates, want %d", total, want)
			}
			b.ReportMetric(float64(total)*float64(b.N)/b.Elapsed().Seconds(), "candidates/s")
			// The machine is shared: CPU time of this process is the steadier
			// figure (for MySQL it leaves out the server's share).
			b.ReportMetric((cpuTime()-cpu0).Seconds()/float64(b.N), "cpu-s/op")
		})
	}
}
