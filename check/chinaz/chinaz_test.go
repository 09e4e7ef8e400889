package chinaz

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
	"github.com/batonhq/baton/sandbox"
)

var clock = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

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
	c, err := New(cfg, check.Env{Now: func() time.Time { return clock }})
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
	ep := sb.Endpoints()
	c := newChecker(t, Config{BaseURL: ep.Chinaz, API: "baiduweight", Key: check.Secret(ep.ChinazKey), Timeout: 300 * time.Millisecond})
	tests := []struct {
		domain   string
		attempts []attempt
	}{
		{"site-weight-1.com", []attempt{{baton.OutcomePass, RuleWeight, 0}}},
		{"site-noweight-1.com", []attempt{{baton.OutcomeReject, RuleBelow, 0}}},
		// The sandbox's "429" for chinaz is HTTP 531 (too frequent) without Retry-After.
		{"site-429-1.com", []attempt{{baton.OutcomeRetry, RuleRateLimited, time.Minute}, {baton.OutcomePass, RuleWeight, 0}}},
		{"site-5xx-1.com", []attempt{{baton.OutcomeRetry, RuleTransient, 3 * time.Second}, {baton.OutcomePass, RuleWeight, 0}}},
		{"site-timeout-1.com", []attempt{{baton.OutcomeRetry, RuleTransient, 0}, {baton.OutcomePass, RuleWeight, 0}}},
		{"site-5xx-noweight-2.com", []attempt{{baton.OutcomeRetry, RuleTransient, 3 * time.Second}, {baton.OutcomeReject, RuleBelow, 0}}},
	}
	for _, tt := range tests {
		t.Run(tt.domain, func(t *testing.T) {
			for i, a := range tt.attempts {
				v := c.Check(context.Background(), tt.domain)
				ev := evidence(t, v)
				if v.Outcome != a.outcome || ev.Rule != a.rule || v.RetryAfter != a.retryAfter {
					t.Fatalf("attempt %d: %s rule=%s retryAfter=%v (%s); want %s %s %v\n%s",
						i+1, v.Outcome, ev.Rule, v.RetryAfter, v.Reason, a.outcome, a.rule, a.retryAfter, v.Data)
				}
				if strings.Contains(string(v.Data)+v.Reason, ep.ChinazKey) {
					t.Fatalf("key leaked: %s", v.Data)
				}
				if ev.Request == "" || ev.Raw == "" && a.rule != RuleTransient {
					t.Errorf("evidence misses request/raw: %s", v.Data)
				}
			}
		})
	}
}

func TestWrongKeyAlerts(t *testing.T) {
	sb := startSandbox(t)
	ep := sb.Endpoints()
	c := newChecker(t, Config{BaseURL: ep.Chinaz, API: "baiduweight", Key: "wrong-key-123"})
	v := c.Check(context.Background(), "site-weight-1.com")
	ev := evidence(t, v)
	if v.Outcome != baton.OutcomeRetry || ev.Rule != RuleConfig || ev.HTTPStatus != 433 || v.RetryAfter != 5*time.Minute {
		t.Fatalf("%s %s retryAfter=%v", v.Outcome, v.Data, v.RetryAfter)
	}
	var data map[string]json.RawMessage
	json.Unmarshal(v.Data, &data)
	var alert map[string]string
	if err := json.Unmarshal(data["alert"], &alert); err != nil || alert["code"] != "chinaz_config" || !strings.Contains(alert["message"], "key") || len(alert) != 2 {
		t.Fatalf("alert %s", data["alert"])
	}
	if strings.Contains(string(v.Data), "wrong-key-123") || !strings.Contains(ev.Request, "REDACTED") {
		t.Fatalf("key not redacted: %s", v.Data)
	}
}

func TestDecisionTable(t *testing.T) {
	reply := func(status int, body string, hdr ...string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			for i := 0; i+1 < len(hdr); i += 2 {
				w.Header().Set(hdr[i], hdr[i+1])
			}
			w.WriteHeader(status)
			w.Write([]byte(body))
		}
	}
	ok := func(result string) http.HandlerFunc {
		return reply(200, `{"StateCode":1,"Reason":"成功","Result":`+result+`}`)
	}
	tests := []struct {
		name    string
		cfg     Config
		handler http.HandlerFunc
		want    baton.Outcome
		rule    string
		retry   time.Duration
		alert   bool
	}{
		{"431 key missing", Config{}, reply(431, `{"StateCode":431,"Reason":"缺少key"}`), baton.OutcomeRetry, RuleConfig, 5 * time.Minute, true},
		{"437 ip not whitelisted", Config{}, reply(437, `{"StateCode":437,"Reason":"IP不在白名单"}`), baton.OutcomeRetry, RuleConfig, 5 * time.Minute, true},
		{"433 in StateCode on HTTP 200", Config{}, reply(200, `{"StateCode":433,"Reason":"key错误"}`), baton.OutcomeRetry, RuleConfig, 5 * time.Minute, true},
		{"436 quota, default delay", Config{}, reply(436, `{"StateCode":436,"Reason":"次数用完"}`), baton.OutcomeRetry, RuleQuota, time.Hour, false},
		{"436 quota with Retry-After", Config{}, reply(436, `{}`, "Retry-After", "600"), baton.OutcomeRetry, RuleQuota, 10 * time.Minute, false},
		{"531 with Retry-After", Config{}, reply(531, `{"StateCode":531}`, "Retry-After", "7"), baton.OutcomeRetry, RuleRateLimited, 7 * time.Second, false},
		{"532 unknown", Config{}, reply(532, `{"StateCode":532}`), baton.OutcomeRetry, RuleTransient, 0, false},
		{"429", Config{}, reply(429, ``, "Retry-After", "30"), baton.OutcomeRetry, RuleRateLimited, 30 * time.Second, false},
		{"404 wrong api", Config{}, reply(404, `not found`), baton.OutcomeRetry, RuleConfig, 5 * time.Minute, true},
		{"StateCode 0", Config{}, reply(200, `{"StateCode":0,"Reason":"参数错误"}`), baton.OutcomeRetry, RuleState, 0, false},
		{"not JSON", Config{}, reply(200, `<html>`), baton.OutcomeRetry, RuleMalformed, 0, false},
		{"weight path finds nothing", Config{}, ok(`{"Other":1}`), baton.OutcomeRetry, RuleNoWeight, 5 * time.Minute, true},
		{"configured path", Config{WeightPaths: []string{"/Result/Data/0/Br"}}, ok(`{"Data":[{"Br":"4"}]}`), baton.OutcomePass, RuleWeight, 0, false},
		{"below custom MinWeight", Config{MinWeight: 5}, ok(`{"BaiduPcWeight":4,"BaiduMobileWeight":2}`), baton.OutcomeReject, RuleBelow, 0, false},
		{"mobile weight counts", Config{}, ok(`{"BaiduPcWeight":0,"BaiduMobileWeight":2}`), baton.OutcomePass, RuleWeight, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var gotPath string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				gotPath = r.URL.Path + "?" + r.URL.RawQuery
				tt.handler(w, r)
			}))
			defer srv.Close()
			cfg := tt.cfg
			cfg.BaseURL, cfg.API, cfg.Key = srv.URL, "weight", "k-secret"
			v := newChecker(t, cfg).Check(context.Background(), "example.com")
			ev := evidence(t, v)
			if v.Outcome != tt.want || ev.Rule != tt.rule || v.RetryAfter != tt.retry || (ev.Alert != nil) != tt.alert {
				t.Errorf("%s rule=%s retryAfter=%v alert=%v; want %s %s %v alert=%t\n%s", v.Outcome, ev.Rule, v.RetryAfter, ev.Alert, tt.want, tt.rule, tt.retry, tt.alert, v.Data)
			}
			if ev.Alert != nil && ev.Alert.Code != AlertCode {
				t.Errorf("alert code %q", ev.Alert.Code)
			}
			if gotPath != "/single/weight?domain=example.com&key=k-secret" {
				t.Errorf("request %s", gotPath)
			}
			if strings.Contains(string(v.Data)+v.Reason, "k-secret") {
				t.Errorf("key leaked: %s", v.Data)
			}
		})
	}
}

func TestNotConfigured(t *testing.T) {
	for _, cfg := range []Config{{API: "x"}, {Key: "k"}} {
		v := newChecker(t, cfg).Check(context.Background(), "example.com")
		if ev := evidence(t, v); v.Outcome != baton.OutcomeRetry || ev.Rule != RuleNotConfigured || ev.Alert == nil || ev.Alert.Code != AlertCode {
			t.Errorf("%+v: %s %s", cfg, v.Outcome, v.Data)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tt := range []struct {
		cfg  Config
		want string
	}{
		{Config{BaseURL: "nope"}, "baseUrl"},
		{Config{API: "a/b"}, "api"},
		{Config{WeightPaths: []string{"a..b"}}, "weightPaths"},
		{Config{WeightPaths: []string{}}, "weightPaths is empty"},
	} {
		if err := tt.cfg.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: Validate() = %v, want %q", tt.cfg, err, tt.want)
		}
	}
}

func TestSecretNotPrinted(t *testing.T) {
	cfg := Config{Key: "top-secret"}
	b, _ := json.Marshal(cfg)
	if strings.Contains(string(b), "top-secret") {
		t.Fatalf("config JSON shows the key: %s", b)
	}
}
