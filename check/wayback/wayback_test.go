package wayback

import (
	"context"
	"encoding/json"
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
	c, err := New(cfg, check.Env{Now: func() time.Time { return clock }}, nil)
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
	c := newChecker(t, Config{BaseURL: sb.Endpoints().Wayback, Timeout: 2 * time.Second})
	type attempt struct {
		outcome    baton.Outcome
		rule       string
		retryAfter time.Duration
	}
	tests := []struct {
		domain   string
		attempts []attempt
		check    func(t *testing.T, ev Evidence)
	}{
		{"site-clean-1.com", []attempt{{baton.OutcomePass, RuleEnoughHistory, 0}}, func(t *testing.T, ev Evidence) {
			if ev.Captures == 0 || len(ev.Years) < 5 || len(ev.Sampled) != 3 || ev.Sampled[0].Charset != "utf-8" {
				t.Errorf("evidence %+v", ev)
			}
		}},
		{"site-gbk-1.com", []attempt{{baton.OutcomePass, RuleEnoughHistory, 0}}, func(t *testing.T, ev Evidence) {
			if s := ev.Sampled[0]; s.Charset != "gbk" || s.CharsetFrom != FromMeta || !strings.Contains(s.Title, "某某科技") {
				t.Errorf("snapshot %+v", s)
			}
		}},
		{"site-black-1.com", []attempt{{baton.OutcomeBlackHit, RuleBlackWord, 0}}, func(t *testing.T, ev Evidence) {
			b := ev.Black
			if b == nil || b.Category != "gambling" || b.Word == "" || b.Timestamp != ev.Last || !strings.Contains(b.URL, "site-black-1.com") {
				t.Errorf("black evidence %+v (last %s)", b, ev.Last)
			}
			if ev.Sampled[0].Charset != "gbk" {
				t.Errorf("charset %q, want gbk", ev.Sampled[0].Charset)
			}
		}},
		{"site-porn-1.net", []attempt{{baton.OutcomeBlackHit, RuleBlackWord, 0}}, func(t *testing.T, ev Evidence) {
			if b := ev.Black; b == nil || b.Category != "porn" || b.Field != "keywords" {
				t.Errorf("black evidence %+v", b)
			}
		}},
		{"site-nohist-1.com", []attempt{{baton.OutcomeReject, RuleNoHistory, 0}}, nil},
		{"site-parked-1.com", []attempt{{baton.OutcomeReject, RuleSignal, 0}}, func(t *testing.T, ev Evidence) {
			if len(ev.Signals) == 0 || ev.Signals[0].Black {
				t.Errorf("signals %+v", ev.Signals)
			}
		}},
		{"site-many-1.com", []attempt{{baton.OutcomePass, RuleEnoughHistory, 0}}, func(t *testing.T, ev Evidence) {
			if ev.Pages < 3 || ev.Captures != 61 {
				t.Errorf("pages %d captures %d, want ≥3 pages and 61 monthly captures", ev.Pages, ev.Captures)
			}
		}},
		{"site-429-1.com", []attempt{{baton.OutcomeRetry, RuleTransient, 2 * time.Second}, {baton.OutcomePass, RuleEnoughHistory, 0}}, nil},
		{"site-5xx-1.com", []attempt{{baton.OutcomeRetry, RuleTransient, 3 * time.Second}, {baton.OutcomePass, RuleEnoughHistory, 0}}, nil},
		{"site-timeout-1.com", []attempt{{baton.OutcomeRetry, RuleTransient, 0}, {baton.OutcomePass, RuleEnoughHistory, 0}}, nil},
		{"site-empty-1.com", []attempt{{baton.OutcomeRetry, RuleSuspiciousCDX, 0}, {baton.OutcomePass, RuleEnoughHistory, 0}}, nil},
		{"site-429-black-2.com", []attempt{{baton.OutcomeRetry, RuleTransient, 2 * time.Second}, {baton.OutcomeBlackHit, RuleBlackWord, 0}}, nil},
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

func TestConfigurablePolicies(t *testing.T) {
	sb := startSandbox(t)
	base := sb.Endpoints().Wayback
	tests := []struct {
		name   string
		cfg    Config
		domain string
		want   baton.Outcome
		rule   string
	}{
		{"empty answer retries", Config{EmptyAnswer: EmptyRetry}, "x-nohist-1.com", baton.OutcomeRetry, RuleNoHistory},
		{"too few years", Config{MinYears: 10}, "x-clean-1.com", baton.OutcomeReject, RuleThin},
		{"too few captures", Config{MinCaptures: 1000}, "x-clean-1.com", baton.OutcomeReject, RuleThin},
		{"black beats thresholds", Config{MinYears: 10}, "x-black-1.com", baton.OutcomeBlackHit, RuleBlackWord},
		{"sampling off", Config{SampleSize: -1}, "x-black-1.com", baton.OutcomePass, RuleEnoughHistory},
		{"page cap", Config{MaxPages: 1}, "x-many-1.com", baton.OutcomePass, RuleEnoughHistory},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.BaseURL = base
			c := newChecker(t, tt.cfg)
			v := c.Check(context.Background(), tt.domain)
			if ev := evidence(t, v); v.Outcome != tt.want || ev.Rule != tt.rule {
				t.Fatalf("got %s %s, want %s %s\n%s", v.Outcome, ev.Rule, tt.want, tt.rule, v.Data)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	for _, cfg := range []Config{{BaseURL: "nope"}, {EmptyAnswer: "maybe"}, {Years: 99}, {SampleSize: 50}} {
		if err := cfg.Validate(); err == nil {
			t.Errorf("Validate(%+v) = nil", cfg)
		}
	}
	if err := (Config{}).Validate(); err != nil {
		t.Errorf("zero config: %v", err)
	}
}
