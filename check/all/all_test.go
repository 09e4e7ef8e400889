package all_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/check"
	"github.com/batonhq/baton/check/all"
	"github.com/batonhq/baton/sandbox"
)

var clock = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func start(t *testing.T) (*sandbox.Sandbox, []check.Checker) {
	t.Helper()
	now := func() time.Time { return clock }
	// A "timeout" once-failure answers 504 after 50ms so no outcome depends
	// on machine speed; the checkers' own timeouts are tested in their packages.
	sb, err := sandbox.Start(context.Background(), sandbox.Config{Now: now, Hang: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Close() })
	cs, err := all.New(all.SandboxConfig(sb.Endpoints()).WithTimeout(10*time.Second), check.Env{Now: now}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return sb, cs
}

func TestNewOrderAndSteps(t *testing.T) {
	_, cs := start(t)
	var steps []string
	for _, c := range cs {
		steps = append(steps, c.Step())
	}
	if got, want := strings.Join(steps, ","), "register,baidu,chinaz,aizhan,wayback,jucha,juzi"; got != want {
		t.Fatalf("steps %s, want %s", got, want)
	}
	if _, ok := cs[3].(check.BatchChecker); !ok {
		t.Error("aizhan is not a BatchChecker")
	}
	if _, err := check.NewRegistry(cs...); err != nil {
		t.Fatal(err)
	}
}

func TestNewZeroConfig(t *testing.T) {
	// The program must start with unconfigured steps; they alert per check.
	cs, err := all.New(all.Config{}, check.Env{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs[1:] {
		switch c.Step() {
		case "chinaz", "aizhan", "jucha", "juzi":
			v := c.Check(context.Background(), "example.com")
			var ev struct {
				Alert *check.Alert `json:"alert"`
			}
			json.Unmarshal(v.Data, &ev)
			if v.Outcome != baton.OutcomeRetry || ev.Alert == nil || ev.Alert.Code != c.Step()+"_config" {
				t.Errorf("%s unconfigured: %s %s", c.Step(), v.Outcome, v.Data)
			}
		}
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	cfg := all.Config{}
	cfg.Juzi.Method = "DELETE"
	if _, err := all.New(cfg, check.Env{}, nil); err == nil || !strings.Contains(err.Error(), "juzi") {
		t.Fatalf("err = %v, want a juzi config error", err)
	}
}

// TestExpectAgreesWithCheckers extends the sandbox's agreement test to the
// five newer steps: for generated names, each checker (with SandboxConfig
// and default thresholds) ends, after retrying the once-failures, where
// sandbox.Expect says; the first attempt retries exactly when the sandbox
// planned a once-failure. aizhan is also run through CheckBatch.
func TestExpectAgreesWithCheckers(t *testing.T) {
	sb, cs := start(t)
	n := 300
	if testing.Short() {
		n = 60
	}
	tlds := []string{"com", "net", "org", "cn", "xyz"}
	var names []string
	for i := range n {
		names = append(names, fmt.Sprintf("gen%04d.%s", i, tlds[i%len(tlds)]))
	}
	steps := map[string]bool{"baidu": true, "chinaz": true, "aizhan": true, "jucha": true, "juzi": true}
	seen := map[string]map[baton.Outcome]int{}
	var mu sync.Mutex
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for _, name := range names {
		for _, c := range cs {
			if !steps[c.Step()] {
				continue
			}
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				v := c.Check(context.Background(), name)
				firstRetry, firstReason := v.Outcome == baton.OutcomeRetry, v.Reason
				for i := 0; i < 2 && v.Outcome == baton.OutcomeRetry; i++ {
					v = c.Check(context.Background(), name)
				}
				if planned := sandbox.Transient(name, c.Step()) != ""; firstRetry != planned {
					t.Errorf("%s %s: first attempt retry=%t, sandbox planned a once-failure=%t (%s)", c.Step(), name, firstRetry, planned, firstReason)
				}
				if r := v.Result("lease"); r.Validate() != nil {
					t.Errorf("%s %s: invalid result: %v", c.Step(), name, r.Validate())
				}
				mu.Lock()
				if seen[c.Step()] == nil {
					seen[c.Step()] = map[baton.Outcome]int{}
				}
				seen[c.Step()][v.Outcome]++
				mu.Unlock()
				if want := sandbox.Expect(name, c.Step()); v.Outcome != want {
					t.Errorf("%s %s: got %s (%s), Expect says %s\n%s", c.Step(), name, v.Outcome, v.Reason, want, v.Data)
				}
			}()
		}
	}
	wg.Wait()
	t.Logf("outcomes: %v", seen)
	if !testing.Short() {
		for step, outs := range map[string][]baton.Outcome{
			"baidu":  {baton.OutcomePass, baton.OutcomeReject, baton.OutcomeBlackHit},
			"chinaz": {baton.OutcomePass, baton.OutcomeReject},
			"aizhan": {baton.OutcomePass, baton.OutcomeReject},
			"jucha":  {baton.OutcomePass, baton.OutcomeReject, baton.OutcomeBlackHit},
			"juzi":   {baton.OutcomePass, baton.OutcomeReject, baton.OutcomeBlackHit},
		} {
			for _, o := range outs {
				if seen[step][o] == 0 {
					t.Errorf("%s: no generated name ended in %s", step, o)
				}
			}
		}
	}

	// aizhan in batches of up to 50: after up to three rounds (retrying
	// only the domains that retried) every domain ends where Expect says.
	sb.Reset()
	az := cs[3].(check.BatchChecker)
	final := map[string]baton.Outcome{}
	pending := names
	for round := 0; round < 3 && len(pending) > 0; round++ {
		var next []string
		for i := 0; i < len(pending); i += az.MaxBatch() {
			batch := pending[i:min(i+az.MaxBatch(), len(pending))]
			vs := az.CheckBatch(context.Background(), batch)
			if len(vs) != len(batch) {
				t.Fatalf("CheckBatch returned %d verdicts for %d domains", len(vs), len(batch))
			}
			for j, v := range vs {
				var ev struct {
					Domain string `json:"domain"`
				}
				json.Unmarshal(v.Data, &ev)
				if ev.Domain != batch[j] {
					t.Fatalf("verdict %d is for %q, want %q (order)", j, ev.Domain, batch[j])
				}
				final[batch[j]] = v.Outcome
				if v.Outcome == baton.OutcomeRetry {
					next = append(next, batch[j])
				}
			}
		}
		pending = next
	}
	for _, name := range names {
		if want := sandbox.Expect(name, "aizhan"); final[name] != want {
			t.Errorf("aizhan batch %s: got %s, Expect says %s", name, final[name], want)
		}
	}
}
