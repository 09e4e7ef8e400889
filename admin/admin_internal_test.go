package admin

import (
	"io/fs"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/ledger"
	"github.com/batonhq/baton/pipeline"
)

// Every key a template or the Go code translates is in the catalogue, in
// both languages.
func TestCatalogueCoversTemplates(t *testing.T) {
	for k, v := range catalogue {
		if v[0] == "" || v[1] == "" {
			t.Errorf("catalogue[%q] lacks a language: %q", k, v)
		}
	}
	used := map[string]bool{}
	re := regexp.MustCompile(`\bTf? "([A-Za-z_]+)"`)
	names, _ := fs.Glob(templateFS, "templates/*.html")
	for _, n := range names {
		b, _ := fs.ReadFile(templateFS, n)
		for _, m := range re.FindAllStringSubmatch(string(b), -1) {
			used[m[1]] = true
		}
	}
	goKeys := []string{"flashSaved", "flashScanned", "flashPaused", "flashResumed", "flashReplayOK", "flashReplayFailed",
		"flashRevoked", "loginWrong", "loginExpired", "configConflict", "signIn", "dashboard", "pipeline", "domains", "domain",
		"pdfTasks", "pdfTask", "apiKeys", "error", "passed", "rejected", "blackHit", "failed", "inProgress"}
	for _, k := range goKeys {
		used[k] = true
	}
	for _, s := range []ledger.Status{ledger.StatusPending, ledger.StatusRunning, ledger.StatusPassed, ledger.StatusRejected,
		ledger.StatusReview, ledger.StatusBlacklisted, ledger.StatusFailed} {
		used["st_"+string(s)] = true
	}
	for _, o := range []string{"pass", "reject", "black_hit", "retry"} {
		used["oc_"+o] = true
	}
	for k := range used {
		if _, ok := catalogue[k]; !ok {
			t.Errorf("key %q is used but not in the catalogue", k)
		}
	}
	for _, s := range pipeline.Steps {
		if stepLabel("zh", s) == s || stepLabel("en", s) == s {
			t.Errorf("step %s has no label", s)
		}
	}
}

func TestPickLang(t *testing.T) {
	for _, tc := range []struct{ header, cookie, want string }{
		{"", "", "en"},
		{"zh-CN,zh;q=0.9,en;q=0.8", "", "zh"},
		{"en-US,en;q=0.9,zh;q=0.8", "", "en"},
		{"fr-FR, zh-TW;q=0.5, en;q=0.4", "", "zh"},
		{"de", "", "en"},
		{"zh-CN", "en", "en"},
		{"en", "zh", "zh"},
		{"en", "xx", "en"},
	} {
		r := httptest.NewRequest("GET", "/ui/", nil)
		if tc.header != "" {
			r.Header.Set("Accept-Language", tc.header)
		}
		if tc.cookie != "" {
			r.Header.Set("Cookie", langCookie+"="+tc.cookie)
		}
		if got := pickLang(r); got != tc.want {
			t.Errorf("pickLang(%q, cookie %q) = %q, want %q", tc.header, tc.cookie, got, tc.want)
		}
	}
}

func TestHighlightEscapes(t *testing.T) {
	for _, tc := range []struct {
		text  string
		words []string
		want  string
	}{
		{"Best Casino <b>", []string{"casino"}, "Best <mark>Casino</mark> &lt;b&gt;"},
		{"澳门赌场 在线", []string{"赌场"}, "澳门<mark>赌场</mark> 在线"},
		{"<script>x</script>", []string{"<script>"}, "<mark>&lt;script&gt;</mark>x&lt;/script&gt;"},
		{"plain", nil, "plain"},
	} {
		if got := string(highlight(tc.text, tc.words)); got != tc.want {
			t.Errorf("highlight(%q, %q) = %q, want %q", tc.text, tc.words, got, tc.want)
		}
	}
}

func TestThroughputRing(t *testing.T) {
	tp := newThroughput(60)
	t0 := time.Date(2026, 5, 1, 10, 0, 10, 0, time.UTC)
	tp.observe(t0, 100) // baseline
	tp.observe(t0.Add(20*time.Second), 130)
	tp.observe(t0.Add(70*time.Second), 140)
	tp.observe(t0.Add(130*time.Second), 5) // counter reset: counts from zero
	s := tp.series(t0.Add(130 * time.Second))
	if len(s) != 60 {
		t.Fatalf("series has %d points, want 60", len(s))
	}
	got := []int64{s[57].Count, s[58].Count, s[59].Count}
	if want := []int64{30, 10, 5}; got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("last three minutes = %v, want %v", got, want)
	}
	// An hour later the old minutes are gone.
	s = tp.series(t0.Add(2 * time.Hour))
	for _, p := range s {
		if p.Count != 0 {
			t.Fatalf("stale minute %v still counts %d", p.Minute, p.Count)
		}
	}
}

func TestParseParams(t *testing.T) {
	p, err := parseParams("wayback", "minCaptures = 3\n# note\n\nminYears: 2\n")
	if err != nil || p["minCaptures"] != 3 || p["minYears"] != 2 || len(p) != 2 {
		t.Fatalf("parseParams = %v, %v", p, err)
	}
	for _, bad := range []string{"x", "a = b", "a b = 1", "x = NaN"} {
		if _, err := parseParams("wayback", bad); err == nil || !strings.Contains(err.Error(), "step wayback") {
			t.Errorf("parseParams(%q) error = %v, want one naming the step", bad, err)
		}
	}
}

func TestLocalPath(t *testing.T) {
	for in, want := range map[string]string{
		"/ui/domains?q=a": "/ui/domains?q=a", "//evil.example/": "/ui/", "https://evil.example/": "/ui/",
		"/api/queues": "/ui/", "": "/ui/", "/ui/\r\nX: y": "/ui/",
	} {
		if got := localPath(in); got != want {
			t.Errorf("localPath(%q) = %q, want %q", in, got, want)
		}
	}
}
