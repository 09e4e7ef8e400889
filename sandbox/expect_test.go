package sandbox_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/check"
	"github.com/batonhq/baton/check/register"
	"github.com/batonhq/baton/check/wayback"
	"github.com/batonhq/baton/sandbox"
)

// TestExpectAgreesWithCheckers runs the real register and wayback checkers
// against the sandbox for generated names and asserts that, after retrying
// the "once" failures, each ends where Expect says. The sandbox answers a
// "timeout" with 504 after 50ms here (Config.Hang) so that no outcome depends
// on machine speed; real client timeouts are exercised in the checkers' tests.
func TestExpectAgreesWithCheckers(t *testing.T) {
	clock := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	now := func() time.Time { return clock }
	sb, err := sandbox.Start(context.Background(), sandbox.Config{Now: now, Hang: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	ep := sb.Endpoints()
	env := check.Env{Now: now}
	reg, err := register.New(register.Config{BootstrapURL: ep.RDAPBootstrap, WHOISServers: ep.WHOISServers,
		Timeout: 10 * time.Second, WHOISTimeout: 10 * time.Second}, env)
	if err != nil {
		t.Fatal(err)
	}
	wb, err := wayback.New(wayback.Config{BaseURL: ep.Wayback, Timeout: 10 * time.Second}, env, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkers := []check.Checker{reg, wb}

	n := 300
	if testing.Short() {
		n = 60
	}
	tlds := sandbox.TLDs()
	var names []string
	for i := range n {
		names = append(names, fmt.Sprintf("gen%04d.%s", i, tlds[i%len(tlds)]))
	}
	names = append(names, "unknown-tld.dev")

	seen := map[string]map[baton.Outcome]int{}
	var mu sync.Mutex
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for _, name := range names {
		for _, c := range checkers {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				// Retry like a worker would, at most three attempts.
				v := c.Check(context.Background(), name)
				firstRetry, firstReason := v.Outcome == baton.OutcomeRetry, v.Reason
				for i := 0; i < 2 && v.Outcome == baton.OutcomeRetry; i++ {
					v = c.Check(context.Background(), name)
				}
				planned := sandbox.Transient(name, c.Step()) != ""
				if firstRetry != planned && sandbox.Expect(name, c.Step()) != baton.OutcomeRetry {
					t.Errorf("%s %s: first attempt retry=%t, sandbox planned a once-failure=%t (%s)", c.Step(), name, firstRetry, planned, firstReason)
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
		// The generated set must exercise every outcome each step can give.
		for step, outs := range map[string][]baton.Outcome{
			"register": {baton.OutcomePass, baton.OutcomeReject, baton.OutcomeRetry},
			"wayback":  {baton.OutcomePass, baton.OutcomeReject, baton.OutcomeBlackHit},
		} {
			for _, o := range outs {
				if seen[step][o] == 0 {
					t.Errorf("%s: no generated name ended in %s", step, o)
				}
			}
		}
	}
}
