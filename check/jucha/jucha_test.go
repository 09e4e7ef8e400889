package jucha

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

// TestExtractGolden runs the default (SIMULATED-shape) extractors over
// fixtures in the sandbox's format.
func TestExtractGolden(t *testing.T) {
	c := newChecker(t, Config{Endpoint: "http://127.0.0.1:1/item/search"})
	files, _ := filepath.Glob("testdata/*.json")
	if len(files) == 0 {
		t.Fatal("no fixtures")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			body, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			doc, err := httpcheck.ParseDocument(body, httpcheck.FormatJSON)
			if err != nil {
				t.Fatal(err)
			}
			goldenfile.JSON(t, strings.TrimSuffix(f, ".json")+".golden", c.Extract(doc, clock.Year()))
		})
	}
}

func FuzzExtract(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.json")
	for _, p := range files {
		b, _ := os.ReadFile(p)
		f.Add(b)
	}
	c := newChecker(f, Config{Endpoint: "http://127.0.0.1:1/item/search"})
	f.Fuzz(func(t *testing.T, body []byte) {
		doc, err := httpcheck.ParseDocument(body, httpcheck.FormatJSON)
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

func TestCheckAgainstSandbox(t *testing.T) {
	sb, err := sandbox.Start(context.Background(), sandbox.Config{Now: func() time.Time { return clock }})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	c := newChecker(t, Config{Endpoint: sb.Endpoints().Jucha + "/item/search", Timeout: 300 * time.Millisecond})
	tests := []struct {
		domain   string
		attempts []attempt
		check    func(t *testing.T, ev httpcheck.Evidence)
	}{
		{"site-history-1.com", []attempt{{baton.OutcomePass, httpcheck.RuleOK, 0}}, func(t *testing.T, ev httpcheck.Evidence) {
			if len(ev.Titles) != 4 || ev.Years == nil || *ev.Years != 4 || !ev.Simulated || ev.Titles[0].Timestamp != "20260615" {
				t.Errorf("evidence %+v", ev)
			}
		}},
		{"site-nohist-1.com", []attempt{{baton.OutcomeReject, httpcheck.RuleYoung, 0}}, nil},
		{"site-black-1.com", []attempt{{baton.OutcomeBlackHit, httpcheck.RuleBlackWord, 0}}, func(t *testing.T, ev httpcheck.Evidence) {
			if b := ev.Black; b == nil || b.Category != "gambling" || b.Timestamp != "20260615" || b.Field != "title" || !strings.Contains(b.Text, "皇冠体育") {
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

// TestOperatorWiring configures a different, made-up provider entirely from
// Config (JSON body, token header, other paths, flags, not-found marker,
// login detection) — what an operator with access would do.
func TestOperatorWiring(t *testing.T) {
	var gotAuth, gotBody, gotCT string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth, gotCT = r.Header.Get("Authorization"), r.Header.Get("Content-Type")
		b := make([]byte, 512)
		n, _ := r.Body.Read(b)
		gotBody = string(b[:n])
		switch {
		case strings.Contains(gotBody, "expired"):
			w.WriteHeader(401)
			w.Write([]byte(`{"err":"token expired"}`))
		case strings.Contains(gotBody, "unknown"):
			w.Write([]byte(`{"status":"ok","result":null,"note":"未收录"}`))
		case strings.Contains(gotBody, "walled"):
			w.Write([]byte(`{"status":"ok","result":{"items":[{"title":"ok"}],"first":2015,"gfw":"1"}}`))
		case strings.Contains(gotBody, "parked"):
			w.Write([]byte(`{"status":"ok","result":{"items":[{"title":"This domain is parked"}],"first":2015,"gfw":"0"}}`))
		default:
			w.Write([]byte(`{"status":"ok","result":{"items":[{"title":"公司官网"}],"first":2024,"gfw":"0"}}`))
		}
	}))
	defer srv.Close()
	cfg := Config{
		Endpoint: srv.URL + "/api/v2/lookup", Body: `{"name":"{{domain}}"}`, BodyType: httpcheck.BodyJSON,
		Headers: map[string]string{"Authorization": "Bearer {{secret}}"}, Secret: "tok-999",
		OK: httpcheck.Extractor{JSON: "status"}, OKValues: []string{"ok"}, Message: httpcheck.Extractor{JSON: "note"},
		Titles: httpcheck.Extractor{JSON: "result.items[*].title"}, FirstYear: httpcheck.Extractor{JSON: "/result/first"},
		Years:    httpcheck.Extractor{JSON: "result.none"},
		Flags:    map[string]httpcheck.Extractor{"blocked": {JSON: "result.gfw"}},
		NotFound: []string{`未收录`}, MinYears: 2,
	}
	c := newChecker(t, cfg)
	for _, tt := range []struct {
		domain string
		want   baton.Outcome
		rule   string
	}{
		{"fine.com", baton.OutcomePass, httpcheck.RuleOK}, // first seen 2024: age 3 ≥ MinYears 2
		{"walled.com", baton.OutcomeReject, httpcheck.RuleFlag},
		{"parked.com", baton.OutcomeReject, httpcheck.RuleSignal},
		{"unknown.com", baton.OutcomeReject, httpcheck.RuleNotFound},
		{"expired.com", baton.OutcomeRetry, httpcheck.RuleLogin},
	} {
		t.Run(tt.domain, func(t *testing.T) {
			v := c.Check(context.Background(), tt.domain)
			ev := evidence(t, v)
			if v.Outcome != tt.want || ev.Rule != tt.rule {
				t.Fatalf("%s rule=%s; want %s %s\n%s", v.Outcome, ev.Rule, tt.want, tt.rule, v.Data)
			}
			if tt.rule == httpcheck.RuleLogin && (ev.Alert == nil || ev.Alert.Code != "jucha_auth") {
				t.Fatalf("no jucha_auth alert: %s", v.Data)
			}
			if strings.Contains(string(v.Data)+v.Reason, "tok-999") {
				t.Fatalf("secret leaked: %s", v.Data)
			}
		})
	}
	if gotAuth != "Bearer tok-999" || gotCT != "application/json" || !strings.HasPrefix(gotBody, `{"name":"`) {
		t.Errorf("request: auth %q ct %q body %q", gotAuth, gotCT, gotBody)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, tt := range []struct {
		cfg  Config
		want string
	}{
		{Config{Method: "PUT"}, "method"},
		{Config{Endpoint: "file:///etc/passwd"}, "endpoint"},
		{Config{Titles: httpcheck.Extractor{CSS: "li"}}, "needs format"},
		{Config{Years: httpcheck.Extractor{JSON: "a..b"}}, "years"},
		{Config{Captcha: []string{"("}}, "captcha"},
		{Config{Method: "GET"}, "body needs method POST"},
		{Config{Flags: map[string]httpcheck.Extractor{"x": {JSON: "x"}}}, "rejectFlags"},
	} {
		if err := Validate(tt.cfg); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: %v, want %q", tt.cfg, err, tt.want)
		}
		if _, err := New(tt.cfg, env(), nil); err == nil {
			t.Errorf("New accepted %+v", tt.cfg)
		}
	}
	v := newChecker(t, Config{}).Check(context.Background(), "a.com")
	if ev := evidence(t, v); v.Outcome != baton.OutcomeRetry || ev.Alert == nil || ev.Alert.Code != "jucha_config" {
		t.Fatalf("unconfigured: %s", v.Data)
	}
}
