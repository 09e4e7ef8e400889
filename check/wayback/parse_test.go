package wayback

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	goldenfile "github.com/batonhq/baton/internal/golden"

	"github.com/batonhq/baton/check/wordlist"
	"github.com/google/go-cmp/cmp"
)

func golden(t *testing.T, path string, got any) { goldenfile.JSON(t, path, got) }

func TestParseCDXGolden(t *testing.T) {
	files, _ := filepath.Glob("testdata/cdx/*.json")
	if len(files) == 0 {
		t.Fatal("no fixtures")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			body, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			page, err := ParseCDX(body)
			out := map[string]any{"page": page}
			if err != nil {
				out["error"] = err.Error()
			}
			golden(t, strings.TrimSuffix(f, ".json")+".golden", out)
		})
	}
}

// contentTypes are the Content-Type headers the HTML fixtures are served with.
var contentTypes = map[string]string{
	"gbk-header-only.html": "text/html; charset=GBK",
}

func TestDecodeHTMLGolden(t *testing.T) {
	files, _ := filepath.Glob("testdata/html/*.html")
	if len(files) == 0 {
		t.Fatal("no fixtures")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			body, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			ct := contentTypes[filepath.Base(f)]
			if ct == "" {
				ct = "text/html"
			}
			text, name, from := DecodeHTML(body, ct)
			page := ExtractPage(text)
			golden(t, strings.TrimSuffix(f, ".html")+".golden", map[string]any{
				"contentType": ct, "charset": name, "from": from, "page": page, "body": page.Body,
				"hits": wordlist.Default().Match(page.Title + " " + page.Keywords + " " + page.Body),
			})
		})
	}
}

func TestSample(t *testing.T) {
	mk := func(ts ...string) []Capture {
		var out []Capture
		for _, s := range ts {
			out = append(out, Capture{Timestamp: s, Original: "http://x/"})
		}
		return out
	}
	ts := func(cs []Capture) []string {
		var out []string
		for _, c := range cs {
			out = append(out, c.Timestamp)
		}
		return out
	}
	caps := mk("20210101", "20210601", "20220301", "20230301", "20230901", "20240201", "20250101", "20251201", "20260101")
	tests := []struct {
		name string
		caps []Capture
		n    int
		want []string
	}{
		{"none", caps, 0, nil},
		{"one is the newest", caps, 1, []string{"20260101"}},
		{"three spread", caps, 3, []string{"20260101", "20240201", "20210601"}},
		{"one per year", caps, 6, []string{"20260101", "20251201", "20240201", "20230901", "20220301", "20210601"}},
		{"more than years", caps, 8, []string{"20260101", "20251201", "20240201", "20230901", "20220301", "20210601", "20250101", "20230301"}},
		{"all", caps[:2], 5, []string{"20210601", "20210101"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, ts(Sample(tt.caps, tt.n))); diff != "" {
				t.Errorf("Sample (-want +got):\n%s", diff)
			}
		})
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

func FuzzParseCDX(f *testing.F) {
	seedDir(f, "testdata/cdx/*.json")
	f.Fuzz(func(t *testing.T, body []byte) {
		page, err := ParseCDX(body)
		if err != nil {
			return
		}
		for _, c := range page.Captures {
			if !validTimestamp(c.Timestamp) || c.Original == "" {
				t.Fatalf("invalid capture accepted: %+v", c)
			}
		}
	})
}

func FuzzDecodeHTML(f *testing.F) {
	files, _ := filepath.Glob("testdata/html/*.html")
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, "text/html")
		f.Add(b, "text/html; charset=gbk")
	}
	f.Add([]byte("\xfe\xff\x00<"), "text/html; charset=\"utf-16\"")
	f.Fuzz(func(t *testing.T, body []byte, ct string) {
		text, name, from := DecodeHTML(body, ct)
		if !utf8.ValidString(text) {
			t.Fatalf("DecodeHTML produced invalid UTF-8 (%s via %s)", name, from)
		}
		p := ExtractPage(text)
		for _, s := range []string{p.Title, p.Keywords, p.Description, p.Body} {
			if !utf8.ValidString(s) {
				t.Fatalf("ExtractPage produced invalid UTF-8: %q", s)
			}
		}
		if len(p.Title) > maxTitle || len(p.Body) > maxBodyText {
			t.Fatalf("caps exceeded: title %d body %d", len(p.Title), len(p.Body))
		}
	})
}
