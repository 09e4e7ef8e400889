package ledger

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

// TestUpsertSQLGolden pins the version-guarded upserts of both dialects in
// testdata/upserts.golden (refresh with -update), so a change to their
// guards shows up in review as SQL.
func TestUpsertSQLGolden(t *testing.T) {
	var b strings.Builder
	for _, d := range []string{DialectSQLite, DialectMySQL} {
		for _, u := range []upsert{upsertDomains, upsertRuns, upsertResults, upsertBlacklist} {
			fmt.Fprintf(&b, "-- %s %s (2 rows)\n%s;\n\n", d, u.table, u.sql(d, 2))
		}
	}
	path := filepath.Join("testdata", "upserts.golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), b.String()); diff != "" {
		t.Errorf("upsert SQL (-want +got):\n%s", diff)
	}
}
