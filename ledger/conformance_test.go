package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/domain"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// countHandler counts "migration applied" log records.
type countHandler struct {
	slog.Handler
	n *int
}

func (h countHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "migration applied" {
		*h.n++
	}
	return nil
}
func (h countHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h countHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }

func TestMigrations(t *testing.T) {
	ctx := context.Background()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			dsn := b.newDSN(t)
			for i, wantApplied := range []int{1, 0} {
				applied := 0
				db, err := Open(ctx, dsn, slog.New(countHandler{n: &applied}))
				if err != nil {
					t.Fatalf("Open #%d: %v", i+1, err)
				}
				v, err := db.SchemaVersion(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if v != 1 || applied != wantApplied {
					t.Errorf("Open #%d: version %d, %d migrations applied; want 1, %d", i+1, v, applied, wantApplied)
				}
				if i == 0 {
					if _, _, err := db.ImportDomains(ctx, []domain.Entry{{Name: "kept.com"}}); err != nil {
						t.Fatal(err)
					}
				} else if _, err := db.GetDomain(ctx, "kept.com"); err != nil {
					t.Errorf("data lost across a reopen: %v", err)
				}
				for _, tb := range tables {
					if _, err := db.r.ExecContext(ctx, "SELECT COUNT(*) FROM "+tb.name); err != nil {
						t.Errorf("table %s: %v", tb.name, err)
					}
				}
				if err := db.Close(); err != nil {
					t.Fatal(err)
				}
				if err := db.Close(); err != nil {
					t.Errorf("second Close: %v", err)
				}
			}
		})
	}
}

func TestImportDomains(t *testing.T) {
	ctx := context.Background()
	forEachBackend(t, func(t *testing.T, db *DB) {
		first := []domain.Entry{
			{Name: "a.com", DeleteAt: at(time.Hour), Source: "pool"},
			{Name: "b.com"},
			{Name: "a.com", Source: "repeat in batch"},
		}
		added, dups, err := db.ImportDomains(ctx, first)
		if err != nil {
			t.Fatal(err)
		}
		if added != 2 || dups != 1 {
			t.Errorf("first import: added %d dups %d, want 2 1", added, dups)
		}
		var second []domain.Entry
		for i := range 1203 { // over two chunks
			second = append(second, domain.Entry{Name: fmt.Sprintf("d%04d.com", i)})
		}
		second = append(second, domain.Entry{Name: "b.com", Source: "changed"}, domain.Entry{Name: "a.com"})
		added, dups, err = db.ImportDomains(ctx, second)
		if err != nil {
			t.Fatal(err)
		}
		if added != 1203 || dups != 2 {
			t.Errorf("second import: added %d dups %d, want 1203 2", added, dups)
		}
		got, err := db.GetDomain(ctx, "a.com")
		if err != nil {
			t.Fatal(err)
		}
		want := Domain{Name: "a.com", Source: "pool", DeleteAt: at(time.Hour), Status: StatusPending, Finished: true, Steps: map[string]StepResult{}}
		if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(Domain{}, "CreatedAt", "UpdatedAt")); diff != "" {
			t.Errorf("a.com (-want +got):\n%s", diff)
		}
		if got.CreatedAt.IsZero() || !got.CreatedAt.Equal(got.UpdatedAt) {
			t.Errorf("created %v updated %v", got.CreatedAt, got.UpdatedAt)
		}

		_, _, err = db.ImportDomains(ctx, []domain.Entry{{Name: "ok.com"}, {Name: "WWW.Example.com"}})
		if baton.ErrorCode(err) != baton.EInvalid || !strings.Contains(err.Error(), "entry 1") {
			t.Errorf("unnormalized name: err = %v, want invalid naming entry 1", err)
		}
		if _, err := db.GetDomain(ctx, "ok.com"); !errors.Is(err, ErrDomainNotFound) {
			t.Errorf("a rejected import wrote ok.com: %v", err)
		}
	})
}

// pipelineBatch is a realistic syncer batch: a run through register and
// baidu for a.com, a black hit for b.com, a rejection for c.com.
func pipelineBatch() Batch {
	return Batch{
		Runs: []Run{
			{ID: "run-a1", Domain: "a.com", StartedAt: at(0), FinishedAt: at(2 * time.Minute), Status: "passed", Steps: []string{"register", "baidu"}, Version: 13},
			{ID: "run-b1", Domain: "b.com", StartedAt: at(0), FinishedAt: at(time.Minute), Status: "blacklisted", Steps: []string{"register", "baidu"}, StoppedAtStep: "baidu", Version: 14},
			{ID: "run-c1", Domain: "c.com", StartedAt: at(0), Status: "running", Steps: []string{"register"}, Version: 15},
		},
		Results: []StepResult{
			{Domain: "a.com", Step: "register", State: baton.StateCompleted, Outcome: baton.OutcomePass, Reason: "available", Data: json.RawMessage(`{"rdap":404}`), Attempts: 1, FinishedAt: at(time.Minute), RunID: "run-a1", TaskID: "t1", Version: 10},
			{Domain: "a.com", Step: "baidu", State: baton.StateCompleted, Outcome: baton.OutcomePass, Reason: "收录 0 条", Data: json.RawMessage(`{"indexed":0,"词":"中文"}`), Attempts: 2, FinishedAt: at(2 * time.Minute), RunID: "run-a1", TaskID: "t2", Version: 11},
			{Domain: "b.com", Step: "baidu", State: baton.StateCompleted, Outcome: baton.OutcomeBlackHit, Reason: "gambling", Data: json.RawMessage(`{"words":["博彩"]}`), Attempts: 1, FinishedAt: at(time.Minute), RunID: "run-b1", TaskID: "t3", Version: 12},
			{Domain: "c.com", Step: "register", State: baton.StateFailed, Outcome: baton.OutcomeRetry, Reason: "rdap timeout", Attempts: 5, FinishedAt: at(3 * time.Minute), RunID: "run-c1", TaskID: "t4", Version: 16},
		},
		Domains: []DomainChange{
			{Name: "a.com", Status: StatusPassed, LastRunID: "run-a1", Finished: true, At: at(2 * time.Minute), Version: 17},
			{Name: "b.com", Status: StatusBlacklisted, LastRunID: "run-b1", Finished: true, At: at(time.Minute), Version: 18},
			{Name: "c.com", Status: StatusFailed, LastRunID: "run-c1", Finished: true, At: at(3 * time.Minute), Version: 19},
		},
		Blacklist: []BlacklistEntry{
			{Domain: "b.com", Reason: "gambling", Category: "content", Evidence: json.RawMessage(`{"hits":3}`), Step: "baidu", CreatedAt: at(time.Minute), Version: 12},
		},
	}
}

func importNames(t *testing.T, db *DB, names ...string) {
	t.Helper()
	var es []domain.Entry
	for _, n := range names {
		es = append(es, domain.Entry{Name: n})
	}
	if _, _, err := db.ImportDomains(context.Background(), es); err != nil {
		t.Fatal(err)
	}
}

func TestApplyBatchIdempotent(t *testing.T) {
	ctx := context.Background()
	forEachBackend(t, func(t *testing.T, db *DB) {
		importNames(t, db, "a.com", "b.com", "c.com")
		b := pipelineBatch()
		if err := db.ApplyBatch(ctx, b); err != nil {
			t.Fatal(err)
		}
		before := dump(t, db)
		for range 2 {
			if err := db.ApplyBatch(ctx, b); err != nil {
				t.Fatal(err)
			}
		}
		if diff := cmp.Diff(before, dump(t, db)); diff != "" {
			t.Errorf("replaying the batch changed the tables (-before +after):\n%s", diff)
		}
		// The same changes in reverse order, split into single-change
		// batches, also change nothing.
		var singles []Batch
		for _, r := range b.Results {
			singles = append(singles, Batch{Results: []StepResult{r}})
		}
		for _, r := range b.Runs {
			singles = append(singles, Batch{Runs: []Run{r}})
		}
		for _, d := range b.Domains {
			singles = append(singles, Batch{Domains: []DomainChange{d}})
		}
		singles = append(singles, Batch{Blacklist: b.Blacklist})
		for i := len(singles) - 1; i >= 0; i-- {
			if err := db.ApplyBatch(ctx, singles[i]); err != nil {
				t.Fatal(err)
			}
		}
		if diff := cmp.Diff(before, dump(t, db)); diff != "" {
			t.Errorf("replaying single changes changed the tables (-before +after):\n%s", diff)
		}

		got, err := db.GetDomain(ctx, "b.com")
		if err != nil {
			t.Fatal(err)
		}
		if !got.Blacklisted || got.BlackReason != "gambling" || got.Status != StatusBlacklisted {
			t.Errorf("b.com: blacklisted %v reason %q status %q", got.Blacklisted, got.BlackReason, got.Status)
		}
	})
}

func TestApplyBatchOutOfOrder(t *testing.T) {
	ctx := context.Background()
	forEachBackend(t, func(t *testing.T, db *DB) {
		importNames(t, db, "a.com")
		older := Batch{
			Results: []StepResult{{Domain: "a.com", Step: "register", State: baton.StatePending, Outcome: baton.OutcomeRetry, Reason: "timeout", Attempts: 1, FinishedAt: at(0), RunID: "r1", TaskID: "t1", Version: 1}},
			Runs:    []Run{{ID: "r1", Domain: "a.com", StartedAt: at(0), Status: "running", Steps: []string{"register"}, Version: 1}},
			Domains: []DomainChange{{Name: "a.com", Status: StatusRunning, LastRunID: "r1", At: at(0), Version: 1}},
			Blacklist: []BlacklistEntry{
				{Domain: "a.com", Reason: "old reason", CreatedAt: at(0), Version: 1},
			},
		}
		newer := Batch{
			Results: []StepResult{{Domain: "a.com", Step: "register", State: baton.StateCompleted, Outcome: baton.OutcomePass, Reason: "available", Attempts: 2, FinishedAt: at(time.Minute), RunID: "r1", TaskID: "t1", Version: 2}},
			// A finish that does not repeat StartedAt and Steps keeps them.
			Runs:    []Run{{ID: "r1", Domain: "a.com", FinishedAt: at(time.Minute), Status: "passed", Version: 2}},
			Domains: []DomainChange{{Name: "a.com", Status: StatusPassed, LastRunID: "r1", Finished: true, At: at(time.Minute), Version: 2}},
			Blacklist: []BlacklistEntry{
				{Domain: "a.com", Reason: "new reason", CreatedAt: at(time.Minute), Version: 2},
			},
		}
		if err := db.ApplyBatch(ctx, older); err != nil {
			t.Fatal(err)
		}
		if err := db.ApplyBatch(ctx, newer); err != nil {
			t.Fatal(err)
		}
		want := dump(t, db)
		if err := db.ApplyBatch(ctx, older); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, dump(t, db)); diff != "" {
			t.Errorf("an older batch replayed after a newer one changed rows (-want +got):\n%s", diff)
		}
		got, err := db.GetDomain(ctx, "a.com")
		if err != nil {
			t.Fatal(err)
		}
		wantRun := Run{ID: "r1", Domain: "a.com", StartedAt: at(0), FinishedAt: at(time.Minute), Status: "passed", Steps: []string{"register"}, Version: 2}
		if diff := cmp.Diff([]Run{wantRun}, got.Runs); diff != "" {
			t.Errorf("runs (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(newer.Results[0], got.Steps["register"]); diff != "" {
			t.Errorf("register (-want +got):\n%s", diff)
		}
		if got.Status != StatusPassed || got.BlackReason != "new reason" || !got.Finished {
			t.Errorf("domain: status %q reason %q finished %v", got.Status, got.BlackReason, got.Finished)
		}
	})
}

func TestApplyBatchRejects(t *testing.T) {
	ctx := context.Background()
	forEachBackend(t, func(t *testing.T, db *DB) {
		importNames(t, db, "a.com")
		ok := StepResult{Domain: "a.com", Step: "register", State: baton.StateCompleted, Outcome: baton.OutcomePass, Version: 1}
		tests := []struct {
			name string
			b    Batch
		}{
			{"zero version", Batch{Results: []StepResult{{Domain: "a.com", Step: "register", State: baton.StateCompleted}}}},
			{"bad outcome", Batch{Results: []StepResult{ok, {Domain: "a.com", Step: "baidu", State: baton.StateCompleted, Outcome: "maybe", Version: 1}}}},
			{"bad data", Batch{Results: []StepResult{{Domain: "a.com", Step: "register", State: baton.StateCompleted, Data: json.RawMessage("{"), Version: 1}}}},
			{"bad status", Batch{Domains: []DomainChange{{Name: "a.com", Status: "done", At: at(0), Version: 1}}}},
			{"upper-case name", Batch{Domains: []DomainChange{{Name: "A.com", Status: StatusPassed, At: at(0), Version: 1}}}},
			{"run without id", Batch{Runs: []Run{{Domain: "a.com", Status: "running", Version: 1}}}},
			{"blacklist without time", Batch{Blacklist: []BlacklistEntry{{Domain: "a.com", Version: 1}}}},
		}
		before := dump(t, db)
		for _, tt := range tests {
			if err := db.ApplyBatch(ctx, tt.b); baton.ErrorCode(err) != baton.EInvalid {
				t.Errorf("%s: err = %v, want invalid", tt.name, err)
			}
		}
		if diff := cmp.Diff(before, dump(t, db)); diff != "" {
			t.Errorf("rejected batches wrote (-before +after):\n%s", diff)
		}
		// A change for a domain that is not in the ledger is dropped; the
		// rest of its batch is applied.
		b := Batch{Results: []StepResult{ok, {Domain: "gone.com", Step: "register", State: baton.StateCompleted, Version: 1}}}
		if err := db.ApplyBatch(ctx, b); err != nil {
			t.Fatal(err)
		}
		got, err := db.GetDomain(ctx, "a.com")
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := got.Steps["register"]; !ok {
			t.Error("a.com register result not written")
		}
	})
}

func TestScanCandidates(t *testing.T) {
	ctx := context.Background()
	forEachBackend(t, func(t *testing.T, db *DB) {
		day := 24 * time.Hour
		entries := []domain.Entry{
			{Name: "nul-b.com"}, {Name: "nul-a.com"}, {Name: "nul-c.com"},
			{Name: "late.com", DeleteAt: at(3 * day)},
			{Name: "eq-c.com", DeleteAt: at(day)}, {Name: "eq-a.com", DeleteAt: at(day)}, {Name: "eq-b.com", DeleteAt: at(day)},
			{Name: "soon.com", DeleteAt: at(time.Hour)},
			{Name: "micro.com", DeleteAt: at(day + time.Microsecond)},
			{Name: "black.com", DeleteAt: at(0)}, {Name: "rejected.com", DeleteAt: at(0)},
			{Name: "review.com"}, {Name: "passed.com", DeleteAt: at(2 * day)}, {Name: "failed.com", DeleteAt: at(2 * day)},
		}
		if _, _, err := db.ImportDomains(ctx, entries); err != nil {
			t.Fatal(err)
		}
		pass := func(d, step string, v int64) StepResult {
			return StepResult{Domain: d, Step: step, State: baton.StateCompleted, Outcome: baton.OutcomePass, Version: v}
		}
		err := db.ApplyBatch(ctx, Batch{
			Domains: []DomainChange{
				{Name: "rejected.com", Status: StatusRejected, At: at(0), Version: 1},
				{Name: "review.com", Status: StatusReview, At: at(0), Version: 1},
				{Name: "passed.com", Status: StatusPassed, Finished: true, At: at(0), Version: 1},
				{Name: "failed.com", Status: StatusFailed, Finished: true, At: at(0), Version: 1},
			},
			Results: []StepResult{
				pass("passed.com", "wayback", 1), pass("passed.com", "register", 1),
				pass("eq-b.com", "register", 1),
				{Domain: "failed.com", Step: "register", State: baton.StateFailed, Outcome: baton.OutcomeRetry, Version: 1},
				{Domain: "rejected.com", Step: "register", State: baton.StateCompleted, Outcome: baton.OutcomeReject, Version: 1},
			},
			Blacklist: []BlacklistEntry{{Domain: "black.com", Reason: "spam", CreatedAt: at(0), Version: 1}},
		})
		if err != nil {
			t.Fatal(err)
		}
		want := []string{
			"soon.com", "eq-a.com", "eq-b.com", "eq-c.com", "micro.com", "failed.com", "passed.com", "late.com",
			"nul-a.com", "nul-b.com", "nul-c.com",
		}
		for _, limit := range []int{1, 2, 3, 4, 7, 8, 11, 12, 100} {
			t.Run(fmt.Sprint("limit", limit), func(t *testing.T) {
				var got []string
				var cur Cursor
				for pages := 0; ; pages++ {
					if pages > 20 {
						t.Fatal("scan does not end")
					}
					page, next, err := db.ScanCandidates(ctx, cur, limit)
					if err != nil {
						t.Fatal(err)
					}
					for _, c := range page {
						got = append(got, c.Name)
					}
					// Tokens survive a round trip, as the HTTP API needs.
					if cur, err = ParseCursor(next.String()); err != nil {
						t.Fatal(err)
					}
					if len(page) < limit {
						break
					}
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("scan order (-want +got):\n%s", diff)
				}
			})
		}
		page, _, err := db.ScanCandidates(ctx, Cursor{}, 100)
		if err != nil {
			t.Fatal(err)
		}
		passed := map[string][]string{}
		for _, c := range page {
			if c.Passed != nil {
				passed[c.Name] = c.Passed
			}
		}
		wantPassed := map[string][]string{"passed.com": {"register", "wayback"}, "eq-b.com": {"register"}}
		if diff := cmp.Diff(wantPassed, passed); diff != "" {
			t.Errorf("passed steps (-want +got):\n%s", diff)
		}
		if c := page[6]; c.Name != "passed.com" || !c.HasPassed("wayback") || c.HasPassed("baidu") || c.Status != StatusPassed || !c.DeleteAt.Equal(at(2*day)) {
			t.Errorf("candidate %+v", c)
		}
		if _, _, err := db.ScanCandidates(ctx, Cursor{}, 0); baton.ErrorCode(err) != baton.EInvalid {
			t.Errorf("limit 0: %v", err)
		}
	})
}

func TestListDomains(t *testing.T) {
	ctx := context.Background()
	forEachBackend(t, func(t *testing.T, db *DB) {
		importNames(t, db, "a.com", "b.com", "c.com", "b.net", "xn--fiq228c.com", "ba.org")
		if err := db.ApplyBatch(ctx, pipelineBatch()); err != nil {
			t.Fatal(err)
		}
		names := func(ds []Domain) []string {
			var out []string
			for _, d := range ds {
				out = append(out, d.Name)
			}
			return out
		}
		tests := []struct {
			name string
			f    Filter
			want []string
		}{
			{"all", Filter{}, []string{"a.com", "b.com", "b.net", "ba.org", "c.com", "xn--fiq228c.com"}},
			{"status", Filter{Status: StatusPending}, []string{"b.net", "ba.org", "xn--fiq228c.com"}},
			{"prefix", Filter{Query: "B"}, []string{"b.com", "b.net", "ba.org"}},
			{"prefix dot", Filter{Query: "b."}, []string{"b.com", "b.net"}},
			{"punycode prefix", Filter{Query: "xn--"}, []string{"xn--fiq228c.com"}},
			{"step", Filter{Step: "baidu"}, []string{"a.com", "b.com"}},
			{"step outcome", Filter{Step: "baidu", Outcome: baton.OutcomeBlackHit}, []string{"b.com"}},
			{"step and status", Filter{Step: "register", Status: StatusFailed}, []string{"c.com"}},
			{"nothing", Filter{Query: "zz"}, nil},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				page, next, err := db.ListDomains(ctx, tt.f)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(tt.want, names(page)); diff != "" || next != "" {
					t.Errorf("(-want +got):\n%s next %q", diff, next)
				}
			})
		}
		var got []string
		f := Filter{Limit: 2}
		for {
			page, next, err := db.ListDomains(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, names(page)...)
			if next == "" {
				break
			}
			f.Cursor = next
		}
		if diff := cmp.Diff(tests[0].want, got); diff != "" {
			t.Errorf("paged (-want +got):\n%s", diff)
		}
		if _, _, err := db.ListDomains(ctx, Filter{Status: "nope"}); baton.ErrorCode(err) != baton.EInvalid {
			t.Errorf("bad status: %v", err)
		}
	})
}

func TestGetDomain(t *testing.T) {
	ctx := context.Background()
	forEachBackend(t, func(t *testing.T, db *DB) {
		if _, _, err := db.ImportDomains(ctx, []domain.Entry{{Name: "a.com", DeleteAt: at(time.Hour), Source: "来源"}}); err != nil {
			t.Fatal(err)
		}
		importNames(t, db, "b.com", "c.com")
		b := pipelineBatch()
		if err := db.ApplyBatch(ctx, b); err != nil {
			t.Fatal(err)
		}
		got, err := db.GetDomain(ctx, "a.com")
		if err != nil {
			t.Fatal(err)
		}
		want := Domain{
			Name: "a.com", Source: "来源", DeleteAt: at(time.Hour), Status: StatusPassed, LastRunID: "run-a1", Finished: true,
			UpdatedAt: at(2 * time.Minute),
			Steps:     map[string]StepResult{"register": b.Results[0], "baidu": b.Results[1]},
			Runs:      []Run{b.Runs[0]},
		}
		if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(Domain{}, "CreatedAt")); diff != "" {
			t.Errorf("GetDomain (-want +got):\n%s", diff)
		}
		if _, err := db.GetDomain(ctx, "nope.com"); !errors.Is(err, ErrDomainNotFound) || baton.ErrorCode(err) != baton.ENotFound {
			t.Errorf("missing domain: %v", err)
		}
	})
}

func TestFunnel(t *testing.T) {
	ctx := context.Background()
	forEachBackend(t, func(t *testing.T, db *DB) {
		importNames(t, db, "a.com", "b.com", "c.com")
		if err := db.ApplyBatch(ctx, pipelineBatch()); err != nil {
			t.Fatal(err)
		}
		got, err := db.Funnel(ctx, []string{"register", "baidu", "juzi"})
		if err != nil {
			t.Fatal(err)
		}
		want := []FunnelStep{
			{Step: "register", Reached: 2, Passed: 1, Failed: 1},
			{Step: "baidu", Reached: 2, Passed: 1, BlackHit: 1},
			{Step: "juzi"},
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Funnel (-want +got):\n%s", diff)
		}
	})
}

func TestPipelineConfig(t *testing.T) {
	ctx := context.Background()
	forEachBackend(t, func(t *testing.T, db *DB) {
		if _, err := db.PipelineConfig(ctx); !errors.Is(err, ErrNoPipelineConfig) {
			t.Fatalf("empty: %v", err)
		}
		db.now = func() time.Time { return at(0) }
		doc := json.RawMessage(`{"steps":[{"name":"register","enabled":true,"label":"注册检测"}]}`)
		c1, err := db.PutPipelineConfig(ctx, doc, 0)
		if err != nil {
			t.Fatal(err)
		}
		got, err := db.PipelineConfig(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(PipelineConfig{Version: 1, Doc: doc, UpdatedAt: at(0)}, got); diff != "" || c1.Version != 1 {
			t.Errorf("(-want +got):\n%s", diff)
		}
		if _, err := db.PutPipelineConfig(ctx, doc, 7); baton.ErrorCode(err) != baton.EConflict {
			t.Errorf("stale ifVersion: %v", err)
		}
		if c2, err := db.PutPipelineConfig(ctx, json.RawMessage(`{"steps":[]}`), 1); err != nil || c2.Version != 2 {
			t.Errorf("put v2: %+v %v", c2, err)
		}
		if _, err := db.PutPipelineConfig(ctx, json.RawMessage(`{`), 0); baton.ErrorCode(err) != baton.EInvalid {
			t.Errorf("bad JSON: %v", err)
		}
	})
}

// TestConcurrentUse runs writers and readers at once: on SQLite the single
// writer connection must serialize the batches without SQLITE_BUSY while
// the readers scan.
func TestConcurrentUse(t *testing.T) {
	ctx := context.Background()
	forEachBackend(t, func(t *testing.T, db *DB) {
		const writers, rounds, per = 4, 10, 20
		var names []string
		for i := range writers * per {
			names = append(names, fmt.Sprintf("c%03d.com", i))
		}
		importNames(t, db, names...)
		errc := make(chan error, writers+2)
		for w := range writers {
			go func() {
				for r := range rounds {
					var b Batch
					for _, n := range names[w*per : (w+1)*per] {
						b.Results = append(b.Results, StepResult{Domain: n, Step: "register", State: baton.StateCompleted,
							Outcome: baton.OutcomePass, Attempts: r + 1, Version: int64(r + 1)})
						b.Domains = append(b.Domains, DomainChange{Name: n, Status: StatusRunning, At: at(time.Duration(r)), Version: int64(r + 1)})
					}
					if err := db.ApplyBatch(ctx, b); err != nil {
						errc <- err
						return
					}
				}
				errc <- nil
			}()
		}
		for range 2 {
			go func() {
				for range rounds {
					if _, _, err := db.ScanCandidates(ctx, Cursor{}, 50); err != nil {
						errc <- err
						return
					}
					if _, err := db.Funnel(ctx, []string{"register"}); err != nil {
						errc <- err
						return
					}
				}
				errc <- nil
			}()
		}
		for range writers + 2 {
			if err := <-errc; err != nil {
				t.Fatal(err)
			}
		}
		f, err := db.Funnel(ctx, []string{"register"})
		if err != nil {
			t.Fatal(err)
		}
		if f[0].Passed != writers*per {
			t.Errorf("passed %d, want %d", f[0].Passed, writers*per)
		}
	})
}
