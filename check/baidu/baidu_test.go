package baidu

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/check"
	"github.com/batonhq/baton/check/wordlist"
	"github.com/batonhq/baton/sandbox"
)

var clock = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func checkEnv() check.Env { return check.Env{Now: func() time.Time { return clock }} }

func startSandbox(t *testing.T) *sandbox.Sandbox {
	t.Helper()
	sb, err := sandbox.Start(context.Background(), sandbox.Config{Now: func() time.Time { return clock }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Close() })
	return sb
}

func newChecker(t *testing.T, cfg Config) *Checker {
	t.Helper()
	c, err := New(cfg, checkEnv(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func evidence(t *testing.T, v check.Verdict) Evidence {
	t.Helper()
	var ev Evidence
	if err := json.Unmarshal(v.Data, &ev); err != nil {
		t.Fatalf("evidence %s: %v", v.Data, err)
	}
	return ev
}

type attempt struct {
	outcome    baton.Outcome
	rule       string
	retryAfter time.Duration
}

func TestCheckAgainstSandbox(t *testing.T) {
	sb := startSandbox(t)
	// The sandbox holds "timeout" requests for 30s; the checker gives up first.
	c := newChecker(t, Config{BaseURL: sb.Endpoints().Baidu, Timeout: 300 * time.Millisecond})
	tests := []struct {
		domain   string
		attempts []attempt
		check    func(t *testing.T, ev Evidence)
	}{
		{"site-indexed-1.com", []attempt{{baton.OutcomePass, RuleIndexed, 0}}, func(t *testing.T, ev Evidence) {
			if ev.Count == nil || *ev.Count < 1 || ev.Marker != "site-indexed" || len(ev.Titles) != 3 || ev.Raw == "" {
				t.Errorf("evidence %+v", ev)
			}
		}},
		{"site-noindex-1.com", []attempt{{baton.OutcomeReject, RuleZero, 0}}, func(t *testing.T, ev Evidence) {
			if ev.Count == nil || *ev.Count != 0 || !strings.Contains(ev.Marker, "很抱歉") {
				t.Errorf("evidence %+v", ev)
			}
		}},
		{"site-black-1.com", []attempt{{baton.OutcomeBlackHit, RuleBlackWord, 0}}, func(t *testing.T, ev Evidence) {
			if b := ev.Black; b == nil || b.Category != wordlist.Gambling || !strings.Contains(b.Title, b.Word) {
				t.Errorf("black %+v", ev.Black)
			}
		}},
		{"site-captcha-1.com", []attempt{{baton.OutcomeRetry, RuleCaptcha, 0}, {baton.OutcomePass, RuleIndexed, 0}}, func(t *testing.T, ev Evidence) {}},
		{"site-429-1.com", []attempt{{baton.OutcomeRetry, RuleTransient, 2 * time.Second}, {baton.OutcomePass, RuleIndexed, 0}}, nil},
		{"site-5xx-1.com", []attempt{{baton.OutcomeRetry, RuleTransient, 3 * time.Second}, {baton.OutcomePass, RuleIndexed, 0}}, nil},
		{"site-timeout-1.com", []attempt{{baton.OutcomeRetry, RuleTransient, 0}, {baton.OutcomePass, RuleIndexed, 0}}, nil},
		{"site-captcha-noindex-2.com", []attempt{{baton.OutcomeRetry, RuleCaptcha, 0}, {baton.OutcomeReject, RuleZero, 0}}, nil},
		{"bad domain/x", []attempt{{baton.OutcomeReject, RuleInvalidDomain, 0}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.domain, func(t *testing.T) {
			var ev Evidence
			for i, a := range tt.attempts {
				v := c.Check(context.Background(), tt.domain)
				ev = evidence(t, v)
				if v.Outcome != a.outcome || ev.Rule != a.rule || v.RetryAfter != a.retryAfter {
					t.Fatalf("attempt %d: %s rule=%s retryAfter=%v (%s); want %s %s %v\n%s",
						i+1, v.Outcome, ev.Rule, v.RetryAfter, v.Reason, a.outcome, a.rule, a.retryAfter, v.Data)
				}
				if r := v.Result("lease"); r.Validate() != nil {
					t.Fatal(r.Validate())
				}
			}
			if tt.check != nil {
				tt.check(t, ev)
			}
		})
	}
}

func TestBrowserLikeRequest(t *testing.T) {
	var gotUA, gotLang, gotWD string
	var gotCookie []string
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n++
		gotUA, gotLang, gotWD = r.UserAgent(), r.Header.Get("Accept-Language"), r.URL.Query().Get("wd")
		if c, err := r.Cookie("BAIDUID"); err == nil {
			gotCookie = append(gotCookie, c.Value)
		}
		http.SetCookie(w, &http.Cookie{Name: "BAIDUID", Value: "abc:FG=1", Path: "/"})
		w.Write([]byte(`<p>该网站共有 <b>3</b> 个网页被百度收录</p>`))
	}))
	defer srv.Close()
	c := newChecker(t, Config{BaseURL: srv.URL})
	for range 2 {
		if v := c.Check(context.Background(), "Example.COM."); v.Outcome != baton.OutcomePass {
			t.Fatalf("%s %s", v.Outcome, v.Data)
		}
	}
	if !strings.Contains(gotUA, "Mozilla/5.0") || !strings.HasPrefix(gotLang, "zh-CN") || gotWD != "site:example.com" {
		t.Errorf("UA %q lang %q wd %q", gotUA, gotLang, gotWD)
	}
	if len(gotCookie) != 1 || gotCookie[0] != "abc:FG=1" {
		t.Errorf("cookie jar: second request carried %q", gotCookie)
	}
}

func TestDecisionTable(t *testing.T) {
	page := func(status int, body string, hdr ...string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			for i := 0; i+1 < len(hdr); i += 2 {
				w.Header().Set(hdr[i], hdr[i+1])
			}
			w.WriteHeader(status)
			w.Write([]byte(body))
		}
	}
	tests := []struct {
		name    string
		cfg     Config
		handler http.HandlerFunc
		want    baton.Outcome
		rule    string
		retry   time.Duration
	}{
		{"count below MinIndexed", Config{MinIndexed: 100}, page(200, `找到相关结果数约56个`), baton.OutcomeReject, RuleBelow, 0},
		{"count with 万 passes", Config{MinIndexed: 100}, page(200, `找到相关结果数约1.2万个`), baton.OutcomePass, RuleIndexed, 0},
		{"unrecognized page retries", Config{}, page(200, `<html><title>百度一下</title></html>`), baton.OutcomeRetry, RuleUnrecognized, 0},
		{"403 retries", Config{}, page(403, `forbidden`), baton.OutcomeRetry, RuleHTTPStatus, 0},
		{"429 honours Retry-After", Config{}, page(429, ``, "Retry-After", "120"), baton.OutcomeRetry, RuleTransient, 2 * time.Minute},
		{"captcha text on a 200", Config{}, page(200, `<p>请完成验证后继续访问</p>`), baton.OutcomeRetry, RuleCaptcha, 0},
		{"custom marker", Config{CountMarkers: []Marker{{Name: "custom", Pattern: `收录量[:：]\s*([0-9,]+)`}}}, page(200, `收录量：2,000`), baton.OutcomePass, RuleIndexed, 0},
		{"custom zero marker", Config{ZeroMarkers: []string{`抱歉，无结果`}}, page(200, `抱歉，无结果`), baton.OutcomeReject, RuleZero, 0},
		{"parked title is only a signal", Config{}, page(200, `找到相关结果数约5个<h3>this domain is parked</h3>`), baton.OutcomePass, RuleIndexed, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(tt.handler)
			defer srv.Close()
			cfg := tt.cfg
			cfg.BaseURL = srv.URL
			v := newChecker(t, cfg).Check(context.Background(), "example.com")
			ev := evidence(t, v)
			if v.Outcome != tt.want || ev.Rule != tt.rule || v.RetryAfter != tt.retry {
				t.Errorf("%s rule=%s retryAfter=%v; want %s %s %v\n%s", v.Outcome, ev.Rule, v.RetryAfter, tt.want, tt.rule, tt.retry, v.Data)
			}
		})
	}
}

func TestCaptchaHostRedirect(t *testing.T) {
	// A redirect to a host in CaptchaHosts is anti-bot whatever the page says.
	captcha := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
	defer captcha.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, captcha.URL+"/?from=baidu", http.StatusFound)
	}))
	defer srv.Close()
	c := newChecker(t, Config{BaseURL: srv.URL, CaptchaHosts: []string{"127.0.0.1"}})
	v := c.Check(context.Background(), "example.com")
	if ev := evidence(t, v); v.Outcome != baton.OutcomeRetry || ev.Rule != RuleCaptcha || !strings.HasPrefix(ev.Marker, "host:") {
		t.Fatalf("%s %s", v.Outcome, v.Data)
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"bad base", Config{BaseURL: "ftp://x"}, "baseUrl"},
		{"marker without group", Config{CountMarkers: []Marker{{Name: "x", Pattern: `共\d+个`}}}, "capture group"},
		{"bad regexp", Config{ZeroMarkers: []string{`(`}}, "zero marker"},
		{"bad selector", Config{TitleSelector: "h3 >"}, "titleSelector"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Validate() = %v, want an error about %q", err, tt.want)
			}
			if _, err := New(tt.cfg, check.Env{}, nil); err == nil {
				t.Error("New accepted an invalid config")
			}
		})
	}
	if err := (Config{}).Validate(); err != nil {
		t.Errorf("zero config: %v", err)
	}
}
