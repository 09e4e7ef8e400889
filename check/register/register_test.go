package register

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
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

// sandboxConfig points the checker at the sandbox with short timeouts.
func sandboxConfig(ep sandbox.Endpoints) Config {
	return Config{
		BootstrapURL: ep.RDAPBootstrap,
		WHOISServers: ep.WHOISServers,
		Timeout:      2 * time.Second,
		WHOISTimeout: 2 * time.Second,
	}
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

func TestCheckAgainstSandbox(t *testing.T) {
	sb := startSandbox(t)
	c := newChecker(t, sandboxConfig(sb.Endpoints()))
	type step struct {
		outcome    baton.Outcome
		rule       string
		retryAfter time.Duration
	}
	tests := []struct {
		domain   string
		steps    []step // successive attempts
		source   string // of the final attempt
		dropping bool
		notEvid  bool
	}{
		{"shop-free-1.com", []step{{baton.OutcomePass, RuleRDAP404, 0}}, "rdap", false, false},
		{"shop-free-1.org", []step{{baton.OutcomePass, RuleRDAP404, 0}}, "rdap", false, false},
		{"shop-taken-1.com", []step{{baton.OutcomeReject, RuleRDAPRegistered, 0}}, "rdap", false, false},
		{"shop-reserved-1.xyz", []step{{baton.OutcomeReject, RuleRDAPRegistered, 0}}, "rdap", false, false},
		{"shop-drop-1.top", []step{{baton.OutcomePass, RuleRDAPDropping, 0}}, "rdap", true, false},
		{"shop-free-1.cn", []step{{baton.OutcomePass, RuleWHOISNotFound, 0}}, "whois", false, false},
		{"shop-taken-1.cn", []step{{baton.OutcomeReject, RuleWHOISRegistered, 0}}, "whois", false, false},
		{"shop-drop-1.io", []step{{baton.OutcomePass, RuleWHOISDropping, 0}}, "whois", true, false},
		{"shop-free-1.info", []step{{baton.OutcomePass, RuleWHOISNotFound, 0}}, "whois", false, true},
		{"shop-taken-1.info", []step{{baton.OutcomeReject, RuleWHOISRegistered, 0}}, "whois", false, true},
		{"shop-429-1.com", []step{{baton.OutcomeRetry, RuleRDAPTransient, 2 * time.Second}, {baton.OutcomePass, RuleRDAP404, 0}}, "rdap", false, false},
		{"shop-5xx-1.net", []step{{baton.OutcomeRetry, RuleRDAPTransient, 3 * time.Second}, {baton.OutcomePass, RuleRDAP404, 0}}, "rdap", false, false},
		{"shop-timeout-1.com", []step{{baton.OutcomeRetry, RuleRDAPTransient, 0}, {baton.OutcomePass, RuleRDAP404, 0}}, "rdap", false, false},
		{"shop-429-1.cn", []step{{baton.OutcomeRetry, RuleWHOISRateLimit, time.Minute}, {baton.OutcomePass, RuleWHOISNotFound, 0}}, "whois", false, false},
		{"shop-5xx-1.io", []step{{baton.OutcomeRetry, RuleWHOISUnknown, 0}, {baton.OutcomePass, RuleWHOISNotFound, 0}}, "whois", false, false},
		{"shop-timeout-taken-1.co", []step{{baton.OutcomeRetry, RuleWHOISTransient, 0}, {baton.OutcomeReject, RuleWHOISRegistered, 0}}, "whois", false, false},
		{"nowhere.dev", []step{{baton.OutcomeRetry, RuleNoSource, 0}}, "", false, false},
		{"not a domain", []step{{baton.OutcomeReject, RuleInvalidDomain, 0}}, "", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.domain, func(t *testing.T) {
			var ev Evidence
			for i, st := range tt.steps {
				v := c.Check(context.Background(), tt.domain)
				ev = evidence(t, v)
				if v.Outcome != st.outcome || ev.Rule != st.rule || v.RetryAfter != st.retryAfter {
					t.Fatalf("attempt %d: %s rule=%s retryAfter=%v (%s); want %s rule=%s retryAfter=%v\n%s",
						i+1, v.Outcome, ev.Rule, v.RetryAfter, v.Reason, st.outcome, st.rule, st.retryAfter, v.Data)
				}
				if r := v.Result("lease"); r.Validate() != nil {
					t.Fatalf("result does not validate: %v", r.Validate())
				}
			}
			if ev.Source != tt.source || ev.Dropping != tt.dropping || (ev.NotEvid != nil) != tt.notEvid {
				t.Errorf("evidence source=%q dropping=%t notEvidence=%v; want %q %t %t", ev.Source, ev.Dropping, ev.NotEvid, tt.source, tt.dropping, tt.notEvid)
			}
			if tt.dropping && ev.Source == "rdap" {
				var sawAbsurd bool
				for _, e := range ev.Events {
					if e.Date == "294247-01-10T04:00:54.775Z" && e.Time == nil {
						sawAbsurd = true
					}
				}
				if !sawAbsurd {
					t.Errorf("absurd expiry not kept raw: %+v", ev.Events)
				}
			}
		})
	}
}

func TestDroppingOutcomeReject(t *testing.T) {
	sb := startSandbox(t)
	cfg := sandboxConfig(sb.Endpoints())
	cfg.DroppingOutcome = baton.OutcomeReject
	c := newChecker(t, cfg)
	v := c.Check(context.Background(), "x-drop-2.com")
	if ev := evidence(t, v); v.Outcome != baton.OutcomeReject || !ev.Dropping {
		t.Fatalf("got %s dropping=%t", v.Outcome, ev.Dropping)
	}
}

// A 404 that arrives from another host after a redirect is a relay's, not
// the listed server's: not evidence.
func TestRelay404IsNotEvidence(t *testing.T) {
	relay := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(404) }))
	defer relay.Close()
	listed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, relay.URL+r.URL.Path, http.StatusFound)
	}))
	defer listed.Close()
	c := newChecker(t, Config{RDAPServers: map[string]string{"test": listed.URL}, WHOISServers: map[string]string{}})
	v := c.Check(context.Background(), "example.test")
	ev := evidence(t, v)
	if v.Outcome != baton.OutcomeRetry || ev.NotEvid == nil {
		t.Fatalf("got %s %s", v.Outcome, v.Data)
	}
}

// When the bootstrap file cannot be fetched, WHOIS still answers.
func TestBootstrapDownFallsBackToWHOIS(t *testing.T) {
	sb := startSandbox(t)
	ep := sb.Endpoints()
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(503) }))
	defer down.Close()
	cfg := sandboxConfig(ep)
	cfg.BootstrapURL = down.URL + "/dns.json"
	c := newChecker(t, cfg)
	v := c.Check(context.Background(), "a-free-9.com")
	if ev := evidence(t, v); v.Outcome != baton.OutcomePass || ev.Source != "whois" {
		t.Fatalf("got %s %s", v.Outcome, v.Data)
	}
	// Without WHOIS either, it is a retry.
	cfg.WHOISServers = map[string]string{}
	c = newChecker(t, cfg)
	if v := c.Check(context.Background(), "a-free-9.com"); v.Outcome != baton.OutcomeRetry {
		t.Fatalf("got %s %s", v.Outcome, v.Data)
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{"zero", Config{}, true},
		{"bad bootstrap", Config{BootstrapURL: "ftp://x"}, false},
		{"bad override", Config{RDAPServers: map[string]string{"io": "nope"}}, false},
		{"bad whois", Config{WHOISServers: map[string]string{"io": "a b"}}, false},
		{"bad dropping", Config{DroppingOutcome: baton.OutcomeBlackHit}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.cfg.Validate(); (err == nil) != tt.ok {
				t.Errorf("Validate = %v, want ok=%t", err, tt.ok)
			}
		})
	}
}
