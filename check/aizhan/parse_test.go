package aizhan

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	goldenfile "github.com/batonhq/baton/internal/golden"
)

func golden(t *testing.T, path string, got any) { goldenfile.JSON(t, path, got) }

// TestParseAnswerGolden covers the real hisinfos body of providers.md and
// siteinfos bodies with the documented quirks (string numbers, ranges).
func TestParseAnswerGolden(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.json")
	more, _ := filepath.Glob("testdata/*.html")
	files = append(files, more...)
	if len(files) < 5 {
		t.Fatal("no fixtures")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			body, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			a, err := ParseAnswer(body)
			out := map[string]any{"answer": a}
			if err != nil {
				out["error"] = err.Error()
			}
			golden(t, strings.TrimSuffix(f, filepath.Ext(f))+".golden", out)
		})
	}
}

func TestParseRange(t *testing.T) {
	tests := []struct {
		in      string
		want    Range
		wantErr bool
	}{
		{"3", Range{3, 3}, false},
		{" 3 ", Range{3, 3}, false},
		{"1,234", Range{1234, 1234}, false},
		{"3.0", Range{3, 3}, false},
		{"4928466 ~ 7671300", Range{4928466, 7671300}, false},
		{"4928466 ~ 76713...", Range{76713, 4928466}, false},
		{"100-200", Range{100, 200}, false},
		{"100 - 200", Range{100, 200}, false},
		{"1000+", Range{1000, 1000}, false},
		{"5 至 9", Range{5, 9}, false},
		{"5～9", Range{5, 9}, false},
		{"", Range{}, true},
		{"-", Range{}, true},
		{"--", Range{}, true},
		{"n/a", Range{}, true},
		{"-5", Range{}, true},
		{"1,2,", Range{}, true},
		{"3 ~", Range{}, true},
		{"12345678901234567", Range{}, true},
		{"1.5e3", Range{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseRange(tt.in)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("ParseRange(%q) = %+v, %v; want %+v, err=%t", tt.in, got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestNumberJSON(t *testing.T) {
	tests := []struct {
		in    string
		valid bool
		lo    int64
	}{
		{`3`, true, 3}, {`"3"`, true, 3}, {`3.7`, true, 3}, {`1e2`, true, 100}, {`null`, false, 0},
		{`""`, false, 0}, {`"-"`, false, 0}, {`-1`, false, 0}, {`true`, false, 0}, {`{}`, false, 0},
		{`"4928466 ~ 76713..."`, true, 76713},
	}
	for _, tt := range tests {
		var n Number
		if err := json.Unmarshal([]byte(tt.in), &n); err != nil {
			t.Errorf("%s: %v", tt.in, err)
		}
		if n.Valid != tt.valid || n.Lo != tt.lo {
			t.Errorf("%s: %+v, want valid=%t lo=%d", tt.in, n, tt.valid, tt.lo)
		}
	}
}

func FuzzParseRange(f *testing.F) {
	for _, s := range []string{"3", "1,234", "4928466 ~ 76713...", "100-200", "1000+", "5 至 9", "", "-", "3.0", "n/a"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRange(s)
		if err != nil {
			if r != (Range{}) {
				t.Fatalf("ParseRange(%q) = %+v with error", s, r)
			}
			return
		}
		if r.Lo < 0 || r.Lo > r.Hi || r.Hi > MaxNumber {
			t.Fatalf("ParseRange(%q) = %+v", s, r)
		}
		// A value printed back parses to itself.
		back := fmt.Sprint(r.Lo)
		if r.Lo != r.Hi {
			back = fmt.Sprintf("%d ~ %d", r.Lo, r.Hi)
		}
		if r2, err := ParseRange(back); err != nil || r2 != r {
			t.Fatalf("ParseRange(%q) = %+v, %v; want %+v", back, r2, err, r)
		}
	})
}

func FuzzParseAnswer(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.json")
	for _, p := range files {
		b, _ := os.ReadFile(p)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		a, err := ParseAnswer(body)
		if err != nil {
			return
		}
		if !a.Code.Valid {
			t.Fatal("no error without a code")
		}
		for _, r := range a.Success {
			if r.Domain == "" || r.Domain != strings.ToLower(r.Domain) {
				t.Fatalf("bad row domain %q", r.Domain)
			}
			for _, n := range []Number{r.PCBR, r.MBR, r.IP, r.PCIP, r.MIP, r.PCBRMax, r.MBRMax} {
				if n.Valid && (n.Lo < 0 || n.Lo > n.Hi) {
					t.Fatalf("bad number %+v", n)
				}
			}
		}
	})
}
