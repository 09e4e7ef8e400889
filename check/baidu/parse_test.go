package baidu

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	goldenfile "github.com/batonhq/baton/internal/golden"
)

func golden(t *testing.T, path string, got any) { goldenfile.JSON(t, path, got) }

func defaultChecker(t testing.TB) *Checker {
	t.Helper()
	c, err := New(Config{}, checkEnv(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestParseGolden(t *testing.T) {
	c := defaultChecker(t)
	files, _ := filepath.Glob("testdata/pages/*.html")
	if len(files) == 0 {
		t.Fatal("no fixtures")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			body, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, strings.TrimSuffix(f, ".html")+".golden", c.Parse(body))
		})
	}
}

func TestParseCount(t *testing.T) {
	tests := []struct {
		in      string
		want    int64
		wantErr bool
	}{
		{"0", 0, false},
		{"1234", 1234, false},
		{"1,234", 1234, false},
		{"1,234,567", 1234567, false},
		{"１，２３４", 1234, false},
		{" 约 56 ", 56, false},
		{"12万", 120000, false},
		{"1.5万", 15000, false},
		{"1.23456万", 12345, false},
		{"3亿", 300000000, false},
		{"3亿2000万", 320000000, false},
		{"1亿2345万6789", 123456789, false},
		{"2万亿", 2000000000000, false},
		{"1万2", 10002, false},
		{"", 0, true},
		{"万", 0, true},
		{"abc", 0, true},
		{"12个", 0, true},
		{"2000万3亿", 0, true},
		{"1万1万", 0, true},
		{"1,", 0, true},
		{",1", 0, true},
		{"99999999999999999999", 0, true},
		{"1000000万亿", 0, true},
		{"-5", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseCount(tt.in)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("ParseCount(%q) = %d, %v; want %d, err=%t", tt.in, got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func FuzzParseCount(f *testing.F) {
	for _, s := range []string{"1234", "1,234", "12万", "1.5万", "3亿2000万", "1亿2345万6789", "约100个", "１２", "", "万亿", "9,999,999,999,999,999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseCount(s)
		if err != nil {
			if n != 0 {
				t.Fatalf("ParseCount(%q) = %d with error %v", s, n, err)
			}
			return
		}
		if n < 0 || n > MaxCount {
			t.Fatalf("ParseCount(%q) = %d out of range", s, n)
		}
		// Plain ASCII digits agree with strconv.
		if v, err := strconv.ParseInt(s, 10, 64); err == nil && v >= 0 && v <= MaxCount && !strings.HasPrefix(s, "+") {
			if v != n {
				t.Fatalf("ParseCount(%q) = %d, strconv says %d", s, n, v)
			}
		}
		// Re-printing with separators or 万 gives the same number.
		if n < 1e12 {
			if m, err := ParseCount(withCommas(n)); err != nil || m != n {
				t.Fatalf("ParseCount(%q) = %d, %v; want %d", withCommas(n), m, err, n)
			}
			if m, err := ParseCount(strconv.FormatInt(n/10000, 10) + "万" + strconv.FormatInt(n%10000, 10)); n >= 10000 && (err != nil || m != n) {
				t.Fatalf("万 form of %d = %d, %v", n, m, err)
			}
		}
	})
}

func withCommas(n int64) string {
	s := strconv.FormatInt(n, 10)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/pages/*.html")
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	c := defaultChecker(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		p := c.Parse(body)
		if p.Count != nil && (*p.Count < 0 || *p.Count > MaxCount) {
			t.Fatalf("count %d out of range", *p.Count)
		}
		if p.Captcha != "" && (p.Count != nil || len(p.Titles) > 0) {
			t.Fatalf("captcha page with results: %+v", p)
		}
		if len(p.Titles) > c.cfg.MaxTitles {
			t.Fatalf("%d titles > %d", len(p.Titles), c.cfg.MaxTitles)
		}
	})
}
