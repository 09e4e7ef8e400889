package pipeline

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	baton "github.com/batonhq/baton"
)

func TestNextFollowsCurrentConfiguration(t *testing.T) {
	c := DefaultConfig()
	for i := range c.Steps {
		c.Steps[i].Enabled = c.Steps[i].Name == StepRegister || c.Steps[i].Name == StepWayback || c.Steps[i].Name == StepJuzi
	}
	tests := []struct {
		passed []string
		want   string
	}{
		{nil, StepRegister},
		{[]string{StepRegister}, StepWayback},
		{[]string{StepRegister, StepWayback}, StepJuzi},
		// A domain that passed register and wayback earlier runs only juzi.
		{[]string{StepWayback, StepRegister, StepBaidu}, StepJuzi},
		{[]string{StepRegister, StepWayback, StepJuzi}, ""},
		// Passed steps that are no longer enabled do not matter.
		{[]string{StepBaidu, StepChinaz}, StepRegister},
	}
	for _, tc := range tests {
		passed := map[string]bool{}
		for _, s := range tc.passed {
			passed[s] = true
		}
		if got := c.Next(passed); got != tc.want {
			t.Errorf("Next(%v) = %q, want %q", tc.passed, got, tc.want)
		}
	}
}

func TestNormalizeRefusesBadSettings(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want string
	}{
		{"unknown step", `{"steps":[{"name":"bogus","enabled":true}]}`, `steps[0].name "bogus" is not a step`},
		{"duplicate", `{"steps":[{"name":"register"},{"name":"register"}]}`, `step "register" appears twice`},
		{"attempts", `{"steps":[{"name":"register","maxAttempts":1000}]}`, "step register: maxAttempts must be between 1 and 100"},
		{"lease", `{"steps":[{"name":"wayback","leaseTtlMs":5}]}`, "step wayback: leaseTtlMs must be between 1000 and 3600000"},
		{"on reject", `{"steps":[{"name":"baidu","onReject":"later"}]}`, `step baidu: onReject must be stop or review (got "later")`},
		{"rule syntax", `{"steps":[{"name":"wayback","rules":{"decide":"data.captures <"}}]}`, "step wayback: rules decide does not compile"},
		{"rule type", `{"steps":[{"name":"wayback","rules":{"decide":"1 + 2"}}]}`, "step wayback: rules decide does not compile"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var c Config
			if err := json.Unmarshal([]byte(tc.doc), &c); err != nil {
				t.Fatal(err)
			}
			err := c.Normalize()
			if baton.ErrorCode(err) != baton.EInvalid {
				t.Fatalf("Normalize = %v, want an invalid error", err)
			}
			if msg := baton.ErrorMessage(err); len(msg) < len(tc.want) || msg[:len(tc.want)] != tc.want {
				t.Fatalf("message %q, want prefix %q", msg, tc.want)
			}
		})
	}
}

func TestNormalizeFillsAndOrders(t *testing.T) {
	var c Config
	_ = json.Unmarshal([]byte(`{"steps":[{"name":"juzi","enabled":true},{"name":"register","enabled":true,"ratePerMin":10}]}`), &c)
	if err := c.Normalize(); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range c.Steps {
		names = append(names, s.Name)
	}
	if diff := cmp.Diff(Steps, names); diff != "" {
		t.Fatalf("order (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{StepRegister, StepJuzi}, c.Enabled()); diff != "" {
		t.Fatalf("enabled (-want +got):\n%s", diff)
	}
	r, _ := c.Step(StepRegister)
	if r.RatePerMin != 10 || r.MaxAttempts != 5 || r.OnReject != OnRejectStop || r.Label == "" {
		t.Fatalf("register defaults not filled: %+v", r)
	}
}

func TestRulesDecide(t *testing.T) {
	r := Rules{Params: map[string]float64{"minCaptures": 5}, Decide: `data.captures < params.minCaptures ? "reject" : ""`}
	if err := r.Compile(); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		data    string
		in      baton.Outcome
		want    baton.Outcome
		changed bool
	}{
		{`{"captures":2}`, baton.OutcomePass, baton.OutcomeReject, true},
		{`{"captures":9}`, baton.OutcomePass, baton.OutcomePass, false},
		{`{"captures":2}`, baton.OutcomeReject, baton.OutcomeReject, false},
	}
	for _, tc := range tests {
		got, note, err := r.Apply(baton.Result{Outcome: tc.in}, decodeData(json.RawMessage(tc.data)))
		if err != nil || got != tc.want || (note != "") != tc.changed {
			t.Errorf("Apply(%s, %s) = %s %q %v; want %s changed=%v", tc.data, tc.in, got, note, err, tc.want, tc.changed)
		}
	}
	// A rule that fails at run time keeps the worker's verdict and says why.
	bad := Rules{Decide: `data.x.y == 1 ? "reject" : ""`}
	got, _, err := bad.Apply(baton.Result{Outcome: baton.OutcomePass}, decodeData(json.RawMessage(`{"x":3}`)))
	if err == nil || got != baton.OutcomePass {
		t.Fatalf("failing rule: %s %v", got, err)
	}
}

func TestProcessorPlans(t *testing.T) {
	cfg := DefaultConfig()
	for i := range cfg.Steps {
		cfg.Steps[i].Enabled = cfg.Steps[i].Name == StepRegister || cfg.Steps[i].Name == StepWayback
		if cfg.Steps[i].Name == StepWayback {
			cfg.Steps[i].OnReject = OnRejectReview
		}
	}
	h := &ConfigHolder{}
	h.cur.Store(&cfg)
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	p := NewProcessor(h, func() time.Time { return now })
	task := func(step string, passed ...string) baton.TaskInfo {
		b, _ := json.Marshal(Payload{Domain: "example.com", Step: step, RunID: "run1", Passed: passed})
		return baton.TaskInfo{ID: "t1", Type: TaskType(step), Payload: b, Attempts: 1, Status: baton.StateProcessing}
	}
	event := func(t *testing.T, pl []byte) Event {
		var ev Event
		if err := json.Unmarshal(pl, &ev); err != nil {
			t.Fatal(err)
		}
		return ev
	}

	// pass at register → wayback follows, with the same dedup key.
	plan, err := p.Advance(context.Background(), task(StepRegister), baton.Result{Outcome: baton.OutcomePass})
	if err != nil || len(plan.FollowUps) != 1 || plan.FollowUps[0].Type != "domain.wayback" || plan.FollowUps[0].DedupKey != "domain:example.com" || !plan.FollowUps[0].Notify {
		t.Fatalf("pass at register: %+v %v", plan, err)
	}
	var np Payload
	_ = json.Unmarshal(plan.FollowUps[0].Payload, &np)
	if diff := cmp.Diff([]string{StepRegister}, np.Passed); diff != "" || np.RunID != "run1" {
		t.Fatalf("follow-up payload %+v (-want +got passed):\n%s", np, diff)
	}
	if ev := event(t, plan.Outbox[0].Body); ev.RunStatus != RunRunning || ev.Outcome != baton.OutcomePass {
		t.Fatalf("event %+v", ev)
	}
	// pass at the last enabled step ends the run as passed.
	plan, _ = p.Advance(context.Background(), task(StepWayback, StepRegister), baton.Result{Outcome: baton.OutcomePass})
	if len(plan.FollowUps) != 0 || event(t, plan.Outbox[0].Body).RunStatus != RunPassed {
		t.Fatalf("pass at wayback: %+v", plan)
	}
	// reject at wayback parks for review (its setting); at register stops.
	plan, _ = p.Advance(context.Background(), task(StepWayback, StepRegister), baton.Result{Outcome: baton.OutcomeReject})
	if event(t, plan.Outbox[0].Body).RunStatus != RunReview || len(plan.FollowUps) != 0 {
		t.Fatalf("reject at wayback: %+v", plan)
	}
	plan, _ = p.Advance(context.Background(), task(StepRegister), baton.Result{Outcome: baton.OutcomeReject})
	if event(t, plan.Outbox[0].Body).RunStatus != RunRejected {
		t.Fatalf("reject at register: %+v", plan)
	}
	// black_hit blacklists with the category from the evidence; nothing follows.
	plan, _ = p.Advance(context.Background(), task(StepRegister), baton.Result{Outcome: baton.OutcomeBlackHit, Data: json.RawMessage(`{"hits":[{"category":"gambling","word":"快三"}]}`)})
	if ev := event(t, plan.Outbox[0].Body); ev.RunStatus != RunBlacklisted || ev.Category != "gambling" || len(plan.FollowUps) != 0 {
		t.Fatalf("black_hit: %+v", plan)
	}
	// retry: no follow-up, no event — the store waits out the backoff.
	plan, _ = p.Advance(context.Background(), task(StepRegister), baton.Result{Outcome: baton.OutcomeRetry})
	if len(plan.FollowUps)+len(plan.Outbox) != 0 || plan.Outcome != baton.OutcomeRetry {
		t.Fatalf("retry: %+v", plan)
	}
}

func TestEntryVersionGrows(t *testing.T) {
	ids := []string{"1", "2", "10", "1732870000000-0", "1732870000000-1", "1732870000001-0"}
	for i := 1; i < len(ids); i++ {
		if entryVersion(ids[i]) <= entryVersion(ids[i-1]) {
			t.Fatalf("version(%s) <= version(%s)", ids[i], ids[i-1])
		}
	}
}
