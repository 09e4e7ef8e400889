package juzi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	goldenfile "github.com/batonhq/baton/internal/golden"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/check"
	"github.com/batonhq/baton/check/httpcheck"
	"github.com/batonhq/baton/sandbox"
)

var clock = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func env() check.Env { return check.Env{Now: func() time.Time { return clock }} }

func newChecker(t testing.TB, cfg Config) *httpcheck.Checker {
	t.Helper()
	c, err := New(cfg, env(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func evidence(t *testing.T, v check.Verdict) httpcheck.Evidence {
	t.Helper()
	var ev httpcheck.Evidence
	if err := json.Unmarshal(v.Data, &ev); err != nil {
		t.Fatalf("evidence %s: %v", v.Data, err)
	}
	return ev
}

// TestExtractGolden runs the default (SIMULATED-page) selectors over
// fixtures in the sandbox's format.
func TestExtractGolden(t *testing.T) {
	c := newChecker(t, Config{Endpoint: "http://127.0.0.1:1/domain"})
	files, _ := filepath.Glob("testdata/*.html")
	if len(files) == 0 {
		t.Fatal("no fixtures")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			body, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			doc, err := httpcheck.ParseDocument(body, httpcheck.FormatHTML)
			if err != nil {
				t.Fatal(err)
			}
			goldenfile.JSON(t, strings.TrimSuffix(f, ".html")+".golden", c.Extract(doc, clock.Year()))
		})
	}
}

func FuzzExtract(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.html")
	for _, p := range files {
		b, _ := os.ReadFile(p)
		f.Add(b)
	}
	c := newChecker(f, Config{Endpoint: "http://127.0.0.1:1/domain"})
	f.Fuzz(func(t *testing.T, body []byte) {
		doc, err := httpcheck.ParseDocument(body, httpcheck.FormatHTML)
		if err != nil {
			return
		}
		x := c.Extract(doc, clock.Year())
		if len(x.Titles) > httpcheck.MaxTitles {
			t.Fatalf("%d titles", len(x.Titles))
		}
	})
}

type attempt struct {
	outcome    baton.Outcome
	rule       string
	retryAfter time.Duration
}

func startSandbox(t *testing.T) *sandbox.Sandbox {
	t.Helper()
	sb, err := sandbox.Start(context.Background(), sandbox.Config{Now: func() time.Time { return clock }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Close() })
	return sb
}

func TestCheckAgainstSandbox(t *testing.T) {
	sb := startSandbox(t)
	ep := sb.Endpoints()
	c := newChecker(t, Config{Endpoint: ep.Juzi + "/domain", Cookie: check.Secret("juzi_session=" + ep.JuziCookie), Timeout: 300 * time.Millisecond})
	tests := []struct {
		domain   string
		attempts []attempt
		check    func(t *testing.T, ev httpcheck.Evidence)
	}{
		{"site-ok-1.com", []attempt{{baton.OutcomePass, httpcheck.RuleOK, 0}}, func(t *testing.T, ev httpcheck.Evidence) {
			if len(ev.Titles) != 2 || ev.Years == nil || *ev.Years < 1 || ev.Flags["blocked"] != "否" {
				t.Errorf("evidence %+v", ev)
			}
		}},
		{"site-blocked-1.com", []attempt{{baton.OutcomeReject, httpcheck.RuleFlag, 0}}, func(t *testing.T, ev httpcheck.Evidence) {
			if len(ev.SetFlags) != 1 || ev.SetFlags[0] != "blocked" {
				t.Errorf("flags %+v", ev.SetFlags)
			}
		}},
		{"site-black-1.com", []attempt{{baton.OutcomeBlackHit, httpcheck.RuleBlackWord, 0}}, func(t *testing.T, ev httpcheck.Evidence) {
			if b := ev.Black; b == nil || b.Category != "gambling" {
				t.Errorf("black %+v", ev.Black)
			}
		}},
		{"site-captcha-1.com", []attempt{{baton.OutcomeRetry, httpcheck.RuleCaptcha, 0}, {baton.OutcomePass, httpcheck.RuleOK, 0}}, nil},
		{"site-429-1.com", []attempt{{baton.OutcomeRetry, httpcheck.RuleTransient, 2 * time.Second}, {baton.OutcomePass, httpcheck.RuleOK, 0}}, nil},
		{"site-5xx-1.com", []attempt{{baton.OutcomeRetry, httpcheck.RuleTransient, 3 * time.Second}, {baton.OutcomePass, httpcheck.RuleOK, 0}}, nil},
		{"site-timeout-1.com", []attempt{{baton.OutcomeRetry, httpcheck.RuleTransient, 0}, {baton.OutcomePass, httpcheck.RuleOK, 0}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.domain, func(t *testing.T) {
			var ev httpcheck.Evidence
			for i, a := range tt.attempts {
				v := c.Check(context.Background(), tt.domain)
				ev = evidence(t, v)
				if v.Outcome != a.outcome || ev.Rule != a.rule || v.RetryAfter != a.retryAfter {
					t.Fatalf("attempt %d: %s rule=%s retryAfter=%v (%s); want %s %s %v\n%s",
						i+1, v.Outcome, ev.Rule, v.RetryAfter, v.Reason, a.outcome, a.rule, a.retryAfter, v.Data)
				}
				if strings.Contains(string(v.Data)+v.Reason, ep.JuziCookie) {
					t.Fatalf("cookie leaked: %s", v.Data)
				}
			}
			if tt.check != nil {
				tt.check(t, ev)
			}
		})
	}
}

// TestWrongCookieAlerts: the sandbox redirects a session it does not know
// to its login page; the checker retries and raises juzi_auth.
func TestWrongCookieAlerts(t *testing.T) {
	sb := startSandbox(t)
	ep := sb.Endpoints()
	for _, cookie := range []check.Secret{"juzi_session=expired-777", ""} {
		c := newChecker(t, Config{Endpoint: ep.Juzi + "/domain", Cookie: cookie})
		v := c.Check(context.Background(), "site-ok-1.com")
		ev := evidence(t, v)
		if v.Outcome != baton.OutcomeRetry || ev.Rule != httpcheck.RuleLogin || v.RetryAfter != 5*time.Minute {
			t.Fatalf("%s %s", v.Outcome, v.Data)
		}
		var data map[string]json.RawMessage
		json.Unmarshal(v.Data, &data)
		var alert map[string]string
		if err := json.Unmarshal(data["alert"], &alert); err != nil || alert["code"] != "juzi_auth" || alert["message"] == "" || len(alert) != 2 {
			t.Fatalf("alert %s", data["alert"])
		}
		if strings.Contains(string(v.Data), "expired-777") {
			t.Fatalf("cookie leaked: %s", v.Data)
		}
	}
}

func TestLoginFormWithoutRedirect(t *testing.T) {
	body, _ := os.ReadFile("testdata/login.html")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(body) }))
	defer srv.Close()
	v := newChecker(t, Config{Endpoint: srv.URL + "/domain"}).Check(context.Background(), "a.com")
	if ev := evidence(t, v); ev.Rule != httpcheck.RuleLogin || ev.Alert == nil || ev.Alert.Code != "juzi_auth" {
		t.Fatalf("%s", v.Data)
	}
}

func TestMissingAgeAlerts(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`<html><body><ul class="jz-titles"><li>公司</li></ul></body></html>`))
	}))
	defer srv.Close()
	v := newChecker(t, Config{Endpoint: srv.URL}).Check(context.Background(), "a.com")
	if ev := evidence(t, v); v.Outcome != baton.OutcomeRetry || ev.Rule != httpcheck.RuleYearsMissing || ev.Alert == nil || ev.Alert.Code != "juzi_config" {
		t.Fatalf("%s", v.Data)
	}
	// With the age rule disabled the same page passes.
	v = newChecker(t, Config{Endpoint: srv.URL, MinYears: -1}).Check(context.Background(), "a.com")
	if v.Outcome != baton.OutcomePass {
		t.Fatalf("%s", v.Data)
	}
}
