package register

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	goldenfile "github.com/batonhq/baton/internal/golden"
)

func golden(t *testing.T, path string, got any) { goldenfile.JSON(t, path, got) }

func TestParseRDAPDomainGolden(t *testing.T) {
	files, _ := filepath.Glob("testdata/rdap/*.json")
	if len(files) == 0 {
		t.Fatal("no fixtures")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			body, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			d, err := ParseRDAPDomain(body)
			out := map[string]any{"domain": d}
			if err != nil {
				out["error"] = err.Error()
			} else {
				out["dropping"] = isDropping(d.Status)
			}
			golden(t, strings.TrimSuffix(f, ".json")+".golden", out)
		})
	}
}

func TestParseWHOISGolden(t *testing.T) {
	files, _ := filepath.Glob("testdata/whois/*.txt")
	if len(files) == 0 {
		t.Fatal("no fixtures")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			body, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			ans := ParseWHOIS(string(body), nil, nil)
			golden(t, strings.TrimSuffix(f, ".txt")+".golden", map[string]any{"answer": ans, "dropping": isDropping(ans.Status)})
		})
	}
}

func TestParseEventDate(t *testing.T) {
	tests := []struct {
		in string
		ok bool
	}{
		{"1999-01-01T00:00:00.000Z", true},
		{"2026-08-13T04:00:00Z", true},
		{"2026-08-13T04:00:00+08:00", true},
		{"2026-08-13", true},
		{"294247-01-10T04:00:54.775Z", false},
		{"0001-01-01T00:00:00Z", false},
		{"", false},
		{"yesterday", false},
	}
	for _, tt := range tests {
		if _, ok := ParseEventDate(tt.in); ok != tt.ok {
			t.Errorf("ParseEventDate(%q) ok = %t, want %t", tt.in, ok, tt.ok)
		}
	}
}

func TestNormStatus(t *testing.T) {
	for _, s := range []string{"pending delete", "pendingDelete", "PENDING_DELETE", "redemption period", "redemptionPeriod"} {
		if !isDropping([]string{"active", s}) {
			t.Errorf("isDropping(%q) = false", s)
		}
	}
	if isDropping([]string{"client hold", "pending transfer"}) {
		t.Error("isDropping(non-dropping) = true")
	}
}

func seedDir(f *testing.F, pattern string) {
	files, _ := filepath.Glob(pattern)
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

func FuzzParseRDAPDomain(f *testing.F) {
	seedDir(f, "testdata/rdap/*.json")
	f.Add([]byte(`{"objectClassName":"domain","events":[{"eventDate":null}],"status":[1,2]}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, body []byte) {
		d, err := ParseRDAPDomain(body)
		if err == nil && d == nil {
			t.Fatal("nil domain without error")
		}
		if d != nil {
			for _, e := range d.Events {
				if e.Time != nil && (e.Time.Year() < 1985 || e.Time.Year() > 9999) {
					t.Fatalf("absurd date accepted: %v", e.Time)
				}
			}
		}
	})
}

func FuzzParseWHOIS(f *testing.F) {
	seedDir(f, "testdata/whois/*.txt")
	f.Fuzz(func(t *testing.T, body []byte) {
		ans := ParseWHOIS(string(body), nil, nil)
		switch ans.State {
		case WHOISAvailable, WHOISRegistered, WHOISRateLimited, WHOISUnrecognized:
		default:
			t.Fatalf("state %q", ans.State)
		}
		if ans.State == WHOISAvailable && !strings.Contains(strings.ToLower(string(body)), strings.ToLower(ans.Line)) {
			t.Fatalf("line %q not in body", ans.Line)
		}
	})
}

func FuzzParseEventDate(f *testing.F) {
	for _, s := range []string{"1999-01-01T00:00:00.000Z", "294247-01-10T04:00:54.775Z", "2026-08-13", "9999-12-31T23:59:59Z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if tm, ok := ParseEventDate(s); ok && (tm.Year() < 1985 || tm.Year() > 9999) {
			t.Fatalf("ParseEventDate(%q) = %v", s, tm)
		}
	})
}
