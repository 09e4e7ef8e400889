package domain

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

func TestParseImportLine(t *testing.T) {
	d := func(s string) time.Time {
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			panic(err)
		}
		return t.UTC()
	}
	tests := []struct {
		name string
		line string
		want Entry
		err  string // reason, or "skip"
	}{
		{"name only", "example.com", Entry{Name: "example.com"}, ""},
		{"name with spaces and CR", "  Example.COM.\r", Entry{Name: "example.com"}, ""},
		{"idn", "中文.com", Entry{Name: "xn--fiq228c.com"}, ""},
		{"date only", "example.com,2026-12-01", Entry{Name: "example.com", DeleteAt: d("2026-12-01T00:00:00Z")}, ""},
		{"datetime", "example.com, 2026-12-01 08:30:00", Entry{Name: "example.com", DeleteAt: d("2026-12-01T08:30:00Z")}, ""},
		{"rfc3339 zone to utc", "example.com,2026-12-01T08:30:00+08:00", Entry{Name: "example.com", DeleteAt: d("2026-12-01T00:30:00Z")}, ""},
		{"rfc3339 fraction", "example.com,2026-12-01T08:30:00.25Z", Entry{Name: "example.com", DeleteAt: d("2026-12-01T08:30:00Z").Add(250 * time.Millisecond)}, ""},
		{"with source", "example.com,2026-12-01,dropcatch", Entry{Name: "example.com", DeleteAt: d("2026-12-01T00:00:00Z"), Source: "dropcatch"}, ""},
		{"empty date with source", "example.com,,namejet", Entry{Name: "example.com", Source: "namejet"}, ""},
		{"trailing comma", "example.com,", Entry{Name: "example.com"}, ""},
		{"quoted", `"example.com","2026-12-01","a, b"`, Entry{Name: "example.com", DeleteAt: d("2026-12-01T00:00:00Z"), Source: "a, b"}, ""},
		{"blank", "   ", Entry{}, "skip"},
		{"empty", "", Entry{}, "skip"},
		{"comment", "# exported 2026-11-29", Entry{}, "skip"},
		{"indented comment", "\u3000 # note", Entry{}, "skip"},
		{"header", "name,delete_at,source", Entry{}, "skip"},
		{"header domain", "Domain,DeleteAt", Entry{}, "skip"},
		{"bad name", "www.example.com,2026-12-01", Entry{}, "not a registrable domain (subdomain of example.com)"},
		{"bad date", "example.com,tomorrow", Entry{}, `bad delete_at "tomorrow" (want RFC 3339, 2006-01-02 15:04:05 or 2006-01-02)`},
		{"bad month", "example.com,2026-13-01", Entry{}, `bad delete_at "2026-13-01" (want RFC 3339, 2006-01-02 15:04:05 or 2006-01-02)`},
		{"too many fields", "example.com,2026-12-01,src,extra", Entry{}, "too many fields (4 > 3: name,delete_at,source)"},
		{"bad quote", `"example.com,2026-12-01`, Entry{}, "malformed CSV"},
		{"source too long", "example.com,," + strings.Repeat("s", 65), Entry{}, "source too long (65 > 64 bytes)"},
		{"control in source", "example.com,,a\x01b", Entry{}, "control character in source"},
		{"empty name", ",2026-12-01", Entry{}, "empty"},
		{"invalid utf8", "ex\xff.com", Entry{}, "not valid UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseImportLine(tt.line)
			gotErr := ""
			switch {
			case errors.Is(err, ErrSkip):
				gotErr = "skip"
			case err != nil:
				if code := baton.ErrorCode(err); code != baton.EInvalid {
					t.Errorf("code = %q, want invalid (%v)", code, err)
				}
				gotErr = Reason(err)
			}
			if diff := cmp.Diff(tt.err, gotErr); diff != "" {
				t.Errorf("ParseImportLine(%q) error (-want +got):\n%s", tt.line, diff)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseImportLine(%q) (-want +got):\n%s", tt.line, diff)
			}
		})
	}
}

// TestReaderGolden reads testdata/import.txt (CRLF, BOM, comments, a line
// over the limit, a last line without a newline) and compares the report
// with testdata/import.golden.
func TestReaderGolden(t *testing.T) {
	in, err := os.ReadFile(filepath.Join("testdata", "import.txt"))
	if err != nil {
		t.Fatal(err)
	}
	r := NewReaderSize(strings.NewReader(string(in)), 64)
	var b strings.Builder
	for r.Next() {
		l := r.Line()
		if l.Err != nil {
			fmt.Fprintf(&b, "line %d: %s (%q)\n", l.Num, Reason(l.Err), l.Raw)
			continue
		}
		fmt.Fprintf(&b, "line %d: ok %s %s %q\n", l.Num, l.Entry.Name, fmtTime(l.Entry.DeleteAt), l.Entry.Source)
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "import.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), b.String()); diff != "" {
		t.Errorf("report (-want +got):\n%s", diff)
	}
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Format(time.RFC3339Nano)
}

// TestReaderLarge streams 200,000 lines through a Reader whose buffer is
// bounded, including lines of several megabytes, and counts the outcome.
func TestReaderLarge(t *testing.T) {
	const n = 200000
	pr, pw := io.Pipe()
	go func() {
		var b strings.Builder
		for i := range n {
			switch {
			case i%50000 == 7:
				b.WriteString(strings.Repeat("x", 3<<20) + "\n")
			case i%10 == 3:
				b.WriteString("bad_name.com\n")
			default:
				fmt.Fprintf(&b, "d%d.com,2026-12-01\n", i)
			}
			if b.Len() > 1<<16 || i == n-1 {
				if _, err := pw.Write([]byte(b.String())); err != nil {
					return
				}
				b.Reset()
			}
		}
		pw.Close()
	}()
	r := NewReader(pr)
	var ok, bad, tooLong, last int
	for r.Next() {
		l := r.Line()
		if l.Num != last+1 {
			t.Fatalf("line number %d after %d", l.Num, last)
		}
		last = l.Num
		switch {
		case l.Err == nil:
			ok++
		case strings.HasPrefix(Reason(l.Err), "line too long"):
			tooLong++
			if len(l.Raw) > DefaultMaxLineLen {
				t.Fatalf("Raw of a long line has %d bytes", len(l.Raw))
			}
		default:
			bad++
		}
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	got := [4]int{ok, bad, tooLong, last}
	want := [4]int{n - n/10 - 4, n / 10, 4, n}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("[ok bad tooLong lines] (-want +got):\n%s", diff)
	}
}

type errReader struct{ n int }

func (r *errReader) Read(p []byte) (int, error) {
	if r.n == 0 {
		r.n++
		return copy(p, "a.com\nb.com\n"), nil
	}
	return 0, errors.New("disk on fire")
}

func TestReaderReadError(t *testing.T) {
	r := NewReader(&errReader{})
	var names []string
	for r.Next() {
		names = append(names, r.Line().Entry.Name)
	}
	if diff := cmp.Diff([]string{"a.com", "b.com"}, names); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
	if err := r.Err(); err == nil || !strings.Contains(err.Error(), "disk on fire") {
		t.Errorf("Err() = %v, want the read error", err)
	}
}

func FuzzParseImportLine(f *testing.F) {
	for _, s := range []string{
		"example.com", "example.com,2026-12-01", "example.com,2026-12-01 08:00:00,src",
		"example.com,2026-12-01T08:00:00+08:00", `"a.com","2026-01-01","x,y"`, "# c", "",
		"name,delete_at", "中文.com,,来源", "a.com,,,", `"`, "www.a.com,bad",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		e, err := ParseImportLine(line)
		if errors.Is(err, ErrSkip) {
			return
		}
		if err != nil {
			if baton.ErrorCode(err) != baton.EInvalid {
				t.Fatalf("ParseImportLine(%q): %v is not EInvalid", line, err)
			}
			return
		}
		if n, err := Normalize(e.Name); err != nil || n != e.Name {
			t.Fatalf("ParseImportLine(%q).Name = %q is not normalized", line, e.Name)
		}
		if !e.DeleteAt.IsZero() && e.DeleteAt.Location() != time.UTC {
			t.Fatalf("DeleteAt %v not UTC", e.DeleteAt)
		}
		if len(e.Source) > MaxSourceLen {
			t.Fatalf("source too long: %d", len(e.Source))
		}
	})
}

func FuzzReader(f *testing.F) {
	f.Add([]byte("a.com\nb.com,2026-01-01\r\n# c\n\n"), 16)
	f.Add([]byte("\xef\xbb\xbfx.com\n"+strings.Repeat("y", 100)+"\nz.com"), 20)
	f.Add([]byte("\n\n\r\n\r"), 64)
	f.Fuzz(func(t *testing.T, in []byte, maxLen int) {
		r := NewReaderSize(strings.NewReader(string(in)), maxLen%200)
		last := 0
		for r.Next() {
			l := r.Line()
			if l.Num <= last {
				t.Fatalf("line %d after %d", l.Num, last)
			}
			last = l.Num
			if len(l.Raw) > r.maxLen+len("…") {
				t.Fatalf("line %d: Raw of %d bytes > %d", l.Num, len(l.Raw), r.maxLen)
			}
			if (l.Err == nil) == (l.Entry.Name == "") {
				t.Fatalf("line %d: entry %+v with error %v", l.Num, l.Entry, l.Err)
			}
		}
		if err := r.Err(); err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(in), "\n") + 1; last > n {
			t.Fatalf("line %d of a %d-line input", last, n)
		}
	})
}
