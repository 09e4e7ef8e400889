package ledger

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/google/go-cmp/cmp"
)

func TestListConversionTasks(t *testing.T) {
	ctx := context.Background()
	forEachBackend(t, func(t *testing.T, db *DB) {
		if err := db.CreateAPIKey(ctx, APIKey{ID: "k1", Name: "a", KeyHash: strings.Repeat("cd", 32), Secret: "s", CreatedAt: at(0)}); err != nil {
			t.Fatal(err)
		}
		// ids sort by creation, as ULIDs do.
		for i := range 7 {
			tk := ConversionTask{ID: fmt.Sprintf("01T%02d", i), Status: baton.StatePending, SourceType: "html",
				Source: strings.Repeat("x", 1000), Queue: "pdf.fast", CreatedAt: at(time.Duration(i) * time.Second)}
			if i%2 == 1 {
				tk.APIKeyID, tk.Queue = "k1", "pdf.slow"
			}
			if i == 6 {
				tk.Status = baton.StateCompleted
			}
			if _, _, err := db.CreateConversionTask(ctx, tk); err != nil {
				t.Fatal(err)
			}
		}
		ids := func(ts []ConversionTask) []string {
			var out []string
			for _, t := range ts {
				out = append(out, t.ID)
			}
			return out
		}
		tests := []struct {
			name string
			f    ConversionFilter
			want []string
			next string
		}{
			{"all newest first", ConversionFilter{}, []string{"01T06", "01T05", "01T04", "01T03", "01T02", "01T01", "01T00"}, ""},
			{"page", ConversionFilter{Limit: 2}, []string{"01T06", "01T05"}, "01T05"},
			{"next page", ConversionFilter{Limit: 2, Cursor: "01T05"}, []string{"01T04", "01T03"}, "01T03"},
			{"one key", ConversionFilter{KeyID: "k1"}, []string{"01T05", "01T03", "01T01"}, ""},
			{"admin only", ConversionFilter{AdminOnly: true, Limit: 10}, []string{"01T06", "01T04", "01T02", "01T00"}, ""},
			{"status", ConversionFilter{Status: baton.StateCompleted}, []string{"01T06"}, ""},
			{"queue", ConversionFilter{Queue: "pdf.slow", Limit: 3}, []string{"01T05", "01T03", "01T01"}, ""},
			{"prefix", ConversionFilter{IDPrefix: "01t0"}, []string{"01T06", "01T05", "01T04", "01T03", "01T02", "01T01", "01T00"}, ""},
			{"prefix none", ConversionFilter{IDPrefix: "02"}, nil, ""},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				got, next, err := db.ListConversionTasks(ctx, tc.f)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(tc.want, ids(got)); diff != "" || next != tc.next {
					t.Fatalf("ids (-want +got):\n%s\nnext %q, want %q", diff, next, tc.next)
				}
				for _, c := range got {
					if len(c.Source) != MaxListedSource {
						t.Fatalf("source of %s is %d bytes, want %d", c.ID, len(c.Source), MaxListedSource)
					}
				}
			})
		}
		if _, _, err := db.ListConversionTasks(ctx, ConversionFilter{IDPrefix: "01%"}); baton.ErrorCode(err) != baton.EInvalid {
			t.Errorf("prefix with a wildcard: %v, want invalid", err)
		}
	})
}

func TestLastCallbackLogAndKeyByID(t *testing.T) {
	ctx := context.Background()
	forEachBackend(t, func(t *testing.T, db *DB) {
		if _, _, err := db.CreateConversionTask(ctx, ConversionTask{ID: "t1", Status: baton.StateCompleted, SourceType: "url", Source: "https://a.example", CreatedAt: at(0)}); err != nil {
			t.Fatal(err)
		}
		if _, err := db.LastCallbackLog(ctx, "t1"); !errors.Is(err, ErrNoCallback) {
			t.Fatalf("no logs yet: %v", err)
		}
		for i := 1; i <= 3; i++ {
			if _, err := db.AppendCallbackLog(ctx, CallbackLog{TaskID: "t1", Attempt: i, URL: "https://cb.example", RequestBody: fmt.Sprintf(`{"n":%d}`, i),
				ResponseStatus: 500 + i, SentAt: at(time.Duration(i) * time.Second), Replay: i == 3}); err != nil {
				t.Fatal(err)
			}
		}
		l, err := db.LastCallbackLog(ctx, "t1")
		if err != nil || l.Attempt != 3 || l.RequestBody != `{"n":3}` || l.ResponseStatus != 503 || !l.Replay {
			t.Fatalf("last log %+v %v", l, err)
		}
		k := APIKey{ID: "k9", Name: "n", KeyHash: strings.Repeat("ef", 32), Secret: "s", CreatedAt: at(0)}
		if err := db.CreateAPIKey(ctx, k); err != nil {
			t.Fatal(err)
		}
		if err := db.RevokeAPIKey(ctx, "k9", at(time.Hour)); err != nil {
			t.Fatal(err)
		}
		got, err := db.APIKeyByID(ctx, "k9")
		k.RevokedAt = at(time.Hour)
		if err != nil || !cmp.Equal(k, got) {
			t.Fatalf("by id: %+v %v", got, err)
		}
		if _, err := db.APIKeyByID(ctx, "nope"); !errors.Is(err, ErrAPIKeyNotFound) {
			t.Fatalf("unknown id: %v", err)
		}
	})
}
