package aizhan

import (
	"context"
	"encoding/json"
	"fmt"
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
	c := newChecker(t, Config{BaseURL: ep.Aizhan, Key: check.Secret(ep.AizhanKey), Timeout: 300 * time.Millisecond})
	tests := []struct {
		domain   string
		attempts []attempt
	}{
		{"site-br-1.com", []attempt{{baton.OutcomePass, RuleRank, 0}}},
		{"site-nobr-1.com", []attempt{{baton.OutcomeReject, RuleBelow, 0}}},
		{"site-failed-1.com", []attempt{{baton.OutcomeRetry, RuleFailed, 0}, {baton.OutcomePass, RuleRank, 0}}},
		{"site-429-1.com", []attempt{{baton.OutcomeRetry, RuleTransient, 2 * time.Second}, {baton.OutcomePass, RuleRank, 0}}},
		{"site-5xx-1.com", []attempt{{baton.OutcomeRetry, RuleTransient, 3 * time.Second}, {baton.OutcomePass, RuleRank, 0}}},
		{"site-timeout-1.com", []attempt{{baton.OutcomeRetry, RuleTransient, 0}, {baton.OutcomePass, RuleRank, 0}}},
		{"site-failed-nobr-2.com", []attempt{{baton.OutcomeRetry, RuleFailed, 0}, {baton.OutcomeReject, RuleBelow, 0}}},
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
				if strings.Contains(string(v.Data)+v.Reason, ep.AizhanKey) {
					t.Fatalf("key leaked: %s", v.Data)
				}
				if a.rule == RuleRank && (len(ev.Row) == 0 || ev.Weight == nil || ev.IP == nil) {
					t.Errorf("evidence misses the row: %s", v.Data)
				}
			}
		})
	}
}

func TestBatchAgainstSandbox(t *testing.T) {
	sb := startSandbox(t)
	ep := sb.Endpoints()
	c := newChecker(t, Config{BaseURL: ep.Aizhan, Key: check.Secret(ep.AizhanKey)})
	if c.MaxBatch() != 50 {
		t.Fatalf("MaxBatch %d", c.MaxBatch())
	}
	var domains []string
	want := map[string]baton.Outcome{}
	for i := range 120 {
		d := fmt.Sprintf("batch%03d-br-.com", i)
		if i%3 == 1 {
			d = fmt.Sprintf("batch%03d-nobr-.com", i)
		}
		if i%10 == 7 {
			d = fmt.Sprintf("batch%03d-failed-br-.com", i)
		}
		domains = append(domains, d)
	}
	domains = append(domains, "bad domain", domains[0]) // invalid, repeated
	vs := c.CheckBatch(context.Background(), domains)
	if len(vs) != len(domains) {
		t.Fatalf("%d verdicts for %d domains", len(vs), len(domains))
	}
	for i, v := range vs {
		d := domains[i]
		ev := evidence(t, v)
		switch {
		case d == "bad domain":
			want[d] = baton.OutcomeReject
		case strings.Contains(d, "-failed-"):
			want[d] = baton.OutcomeRetry
		case strings.Contains(d, "-nobr-"):
			want[d] = baton.OutcomeReject
		default:
			want[d] = baton.OutcomePass
		}
		if v.Outcome != want[d] || ev.Domain != strings.ToLower(d) && d != "bad domain" {
			t.Errorf("%d %s: %s %s", i, d, v.Outcome, v.Data)
		}
	}
	// Second round: only the failed ones retry, and now pass.
	var again []string
	for i, v := range vs {
		if v.Outcome == baton.OutcomeRetry {
			again = append(again, domains[i])
		}
	}
	for i, v := range c.CheckBatch(context.Background(), again) {
		if v.Outcome != baton.OutcomePass {
			t.Errorf("retry of %s: %s %s", again[i], v.Outcome, v.Data)
		}
	}
}

func TestBatchFollowsMaxBatch(t *testing.T) {
	var calls []int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ds := strings.Split(r.URL.Query().Get("domains"), "|")
		calls = append(calls, len(ds))
		var rows []string
		for _, d := range ds {
			rows = append(rows, fmt.Sprintf(`{"domain":%q,"pc_br":"2","m_br":0}`, d))
		}
		fmt.Fprintf(w, `{"code":200000,"status":"success","data":{"success":[%s],"failed":[]},"msg":"ok"}`, strings.Join(rows, ","))
	}))
	defer srv.Close()
	c := newChecker(t, Config{BaseURL: srv.URL, Key: "k", MaxBatch: 4})
	var ds []string
	for i := range 10 {
		ds = append(ds, fmt.Sprintf("d%d.com", i))
	}
	for i, v := range c.CheckBatch(context.Background(), ds) {
		if v.Outcome != baton.OutcomePass || evidence(t, v).Domain != ds[i] {
			t.Errorf("%s: %s %s", ds[i], v.Outcome, v.Data)
		}
	}
	if fmt.Sprint(calls) != "[4 4 2]" {
		t.Errorf("calls %v, want [4 4 2]", calls)
	}
}

func TestWrongKeyAlerts(t *testing.T) {
	sb := startSandbox(t)
	c := newChecker(t, Config{BaseURL: sb.Endpoints().Aizhan, Key: "wrong-key-456"})
	vs := c.CheckBatch(context.Background(), []string{"a-br-.com", "b-nobr-.com"})
	for _, v := range vs {
		ev := evidence(t, v)
		if v.Outcome != baton.OutcomeRetry || ev.Rule != RuleKey || ev.Alert == nil || ev.Alert.Code != "aizhan_config" || v.RetryAfter != 5*time.Minute {
			t.Fatalf("%s %s", v.Outcome, v.Data)
		}
		var data map[string]json.RawMessage
		json.Unmarshal(v.Data, &data)
		var alert map[string]string
		if err := json.Unmarshal(data["alert"], &alert); err != nil || len(alert) != 2 || alert["message"] == "" {
			t.Fatalf("alert %s", data["alert"])
		}
		if strings.Contains(string(v.Data)+v.Reason, "wrong-key-456") || !strings.Contains(ev.Request, "[REDACTED]") {
			t.Fatalf("key not redacted: %s", v.Data)
		}
	}
	// No key at all: an alert without a request.
	v := newChecker(t, Config{BaseURL: sb.Endpoints().Aizhan}).Check(context.Background(), "a.com")
	if ev := evidence(t, v); ev.Rule != RuleNotConfigured || ev.Alert == nil {
		t.Fatalf("%s", v.Data)
	}
}

func TestHistoryAgainstSandbox(t *testing.T) {
	sb := startSandbox(t)
	ep := sb.Endpoints()
	plain := newChecker(t, Config{BaseURL: ep.Aizhan, Key: check.Secret(ep.AizhanKey)})
	hist := newChecker(t, Config{BaseURL: ep.Aizhan, Key: check.Secret(ep.AizhanKey), UseHistory: true})
	// Among rank-0 domains, the sandbox gives a third a historical max of 1.
	passedOnHistory := 0
	for i := range 30 {
		d := fmt.Sprintf("old%02d-nobr-.com", i)
		if v := plain.Check(context.Background(), d); v.Outcome != baton.OutcomeReject {
			t.Fatalf("%s without history: %s", d, v.Outcome)
		}
		v := hist.Check(context.Background(), d)
		ev := evidence(t, v)
		if len(ev.History) == 0 || ev.PCBRMax == nil || ev.PCMaxTime == "" {
			t.Fatalf("history evidence missing: %s", v.Data)
		}
		if v.Outcome == baton.OutcomePass {
			if ev.WeightFrom != "pc_br_max" {
				t.Errorf("passed on %s", ev.WeightFrom)
			}
			passedOnHistory++
		}
	}
	if passedOnHistory == 0 {
		t.Error("no rank-0 domain passed on its historical max")
	}
}

func TestDecisionTable(t *testing.T) {
	tests := []struct {
		name  string
		cfg   Config
		body  string
		code  int
		want  baton.Outcome
		rule  string
		alert bool
	}{
		{"missing from both lists", Config{}, `{"code":200000,"data":{"success":[],"failed":[]}}`, 200, baton.OutcomeRetry, RuleMissing, false},
		{"other code retries", Config{}, `{"code":100500,"status":"error","msg":"系统繁忙"}`, 200, baton.OutcomeRetry, RuleCode, false},
		{"custom key code", Config{KeyErrorCodes: []int64{100500}}, `{"code":100500,"msg":"x"}`, 200, baton.OutcomeRetry, RuleKey, true},
		{"403 is a key problem", Config{}, `forbidden`, 403, baton.OutcomeRetry, RuleKey, true},
		{"404 retries", Config{}, `nope`, 404, baton.OutcomeRetry, RuleHTTPStatus, false},
		{"malformed", Config{}, `<html>`, 200, baton.OutcomeRetry, RuleMalformed, false},
		{"unreadable ranks", Config{}, `{"code":200000,"data":{"success":[{"domain":"example.com","pc_br":"-","m_br":null}]}}`, 200, baton.OutcomeRetry, RuleNoRank, false},
		{"string ranks", Config{}, `{"code":"200000","data":{"success":[{"domain":"EXAMPLE.com","pc_br":"0","m_br":"3"}]}}`, 200, baton.OutcomePass, RuleRank, false},
		{"below MinWeight", Config{MinWeight: 4}, `{"code":200000,"data":{"success":[{"domain":"example.com","pc_br":3,"m_br":2}]}}`, 200, baton.OutcomeReject, RuleBelow, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tt.code)
				w.Write([]byte(tt.body))
			}))
			defer srv.Close()
			cfg := tt.cfg
			cfg.BaseURL, cfg.Key = srv.URL, "k"
			v := newChecker(t, cfg).Check(context.Background(), "example.com")
			ev := evidence(t, v)
			if v.Outcome != tt.want || ev.Rule != tt.rule || (ev.Alert != nil) != tt.alert {
				t.Errorf("%s rule=%s alert=%v; want %s %s alert=%t\n%s", v.Outcome, ev.Rule, ev.Alert, tt.want, tt.rule, tt.alert, v.Data)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tt := range []struct {
		cfg  Config
		want string
	}{
		{Config{BaseURL: "x"}, "baseUrl"},
		{Config{MaxBatch: 51}, "maxBatch"},
		{Config{Key: "a/b"}, "key"},
	} {
		if _, err := New(tt.cfg, check.Env{}); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: New = %v, want %q", tt.cfg, err, tt.want)
		}
	}
}
