package pipeline

import (
	"fmt"
	"reflect"
	"sync"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/vm"

	baton "github.com/batonhq/baton"
)

// Rules turn a step's evidence into a verdict. Params are thresholds the
// check itself applies (they travel to the worker in the task payload, so
// a remote worker uses the operator's current values). Decide is an
// optional expression (expr-lang), evaluated by the controller on every
// result, that may override the worker's outcome:
//
//	data.captures < params.minCaptures ? "reject" : ""
//
// Its environment: outcome and reason (the worker's), data (the evidence
// as JSON values), params. It returns "pass", "reject", "black_hit",
// "retry", or "" to keep the worker's outcome. Expressions are compiled
// (and so validated) when the configuration is saved; a bad one is
// refused with the compiler's reason.
type Rules struct {
	Params map[string]float64 `json:"params,omitempty"`
	Decide string             `json:"decide,omitempty"`
}

// programs caches compiled Decide expressions by source.
var programs sync.Map // string -> *vm.Program

// DefaultRules are each step's default thresholds.
func DefaultRules(step string) Rules {
	switch step {
	case StepBaidu:
		return Rules{Params: map[string]float64{"minIndexed": 1}}
	case StepChinaz, StepAizhan:
		return Rules{Params: map[string]float64{"minWeight": 1}}
	case StepWayback:
		return Rules{Params: map[string]float64{"minCaptures": 1, "minYears": 1, "sampleSnapshots": 3}}
	case StepJucha, StepJuzi:
		return Rules{Params: map[string]float64{"minYears": 1}}
	}
	return Rules{Params: map[string]float64{"dropPass": 1}}
}

func decideEnv() map[string]any {
	return map[string]any{"outcome": "", "reason": "", "data": map[string]any{}, "params": map[string]float64{}}
}

// MaxDecideLen bounds a Decide expression.
const MaxDecideLen = 4096

func (r Rules) program() (*vm.Program, error) {
	if r.Decide == "" {
		return nil, nil
	}
	if p, ok := programs.Load(r.Decide); ok {
		return p.(*vm.Program), nil
	}
	if len(r.Decide) > MaxDecideLen {
		return nil, fmt.Errorf("decide must be at most %d characters", MaxDecideLen)
	}
	p, err := expr.Compile(r.Decide, expr.Env(decideEnv()), expr.AsKind(reflect.String))
	if err != nil {
		return nil, fmt.Errorf("decide does not compile: %v", err)
	}
	programs.Store(r.Decide, p)
	return p, nil
}

// Compile validates Decide; it is called on save.
func (r Rules) Compile() error {
	_, err := r.program()
	return err
}

// Apply evaluates Decide for a result; it returns the outcome to record
// and, when the rule changed it, a note saying so.
func (r Rules) Apply(res baton.Result, data any) (baton.Outcome, string, error) {
	p, err := r.program()
	if err != nil || p == nil {
		return res.Outcome, "", err
	}
	params := r.Params
	if params == nil {
		params = map[string]float64{}
	}
	if data == nil {
		data = map[string]any{}
	}
	out, err := expr.Run(p, map[string]any{"outcome": string(res.Outcome), "reason": res.Reason, "data": data, "params": params})
	if err != nil {
		return res.Outcome, "", fmt.Errorf("decide rule failed: %v", err)
	}
	s, _ := out.(string)
	if s == "" || baton.Outcome(s) == res.Outcome {
		return res.Outcome, "", nil
	}
	o := baton.Outcome(s)
	if !o.Valid() {
		return res.Outcome, "", fmt.Errorf("decide rule returned %q, want pass, reject, black_hit, retry or \"\"", s)
	}
	return o, fmt.Sprintf("rule %q turned %s into %s", r.Decide, res.Outcome, o), nil
}
