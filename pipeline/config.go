// Package pipeline is the domain vetting pipeline of SPEC §5 on the
// engine: the operator's step configuration, the stage processor that
// advances a domain atomically with each result, the dispatcher that scans
// the main DB for domains to run, and the syncer that drains the outbox
// into the main DB in batches.
package pipeline

import (
	"encoding/json"
	"fmt"
	"time"

	baton "github.com/batonhq/baton"
	"github.com/batonhq/baton/check/wordlist"
)

// Step names in canonical order (SPEC §5).
const (
	StepRegister = "register"
	StepBaidu    = "baidu"
	StepChinaz   = "chinaz"
	StepAizhan   = "aizhan"
	StepWayback  = "wayback"
	StepJucha    = "jucha"
	StepJuzi     = "juzi"
)

// Steps lists every step in canonical order.
var Steps = []string{StepRegister, StepBaidu, StepChinaz, StepAizhan, StepWayback, StepJucha, StepJuzi}

// Labels are each step's Chinese and English names.
var Labels = map[string][2]string{
	StepRegister: {"注册检测", "Registration"},
	StepBaidu:    {"百度检测", "Baidu inclusion"},
	StepChinaz:   {"站长检测", "Chinaz weight"},
	StepAizhan:   {"爱站检测", "Aizhan weight"},
	StepWayback:  {"时光机检测", "Wayback history"},
	StepJucha:    {"聚查检测", "Jucha history"},
	StepJuzi:     {"桔子检测", "Juzi history"},
}

// TaskType returns the task type (and queue) of a step: domain.<step>.
func TaskType(step string) string { return "domain." + step }

// StepOf returns the step of a domain task type, or "".
func StepOf(typ string) string {
	if len(typ) > 7 && typ[:7] == "domain." {
		return typ[7:]
	}
	return ""
}

// On-reject policies.
const (
	OnRejectStop   = "stop"
	OnRejectReview = "review"
)

// StepConfig is one step's operator settings.
type StepConfig struct {
	Name    string `json:"name"`
	Label   string `json:"label"`
	Enabled bool   `json:"enabled"`
	// MaxAttempts before a step fails (retry outcomes and lost leases).
	MaxAttempts int `json:"maxAttempts"`
	// LeaseTTLMs is the lease a worker gets for the step.
	LeaseTTLMs int64 `json:"leaseTtlMs"`
	// RatePerMin caps claims of the step across all workers (0 = none).
	RatePerMin int `json:"ratePerMin"`
	// OnReject: stop (the domain is rejected) or review (parked for a human).
	OnReject string `json:"onReject"`
	// Rules turn the provider's data into a verdict.
	Rules Rules `json:"rules"`
}

// Config is the whole pipeline: the steps in canonical order.
type Config struct {
	Steps []StepConfig `json:"steps"`
	// WordLists are the operator's word lists ({"lists":[{"category",
	// "black","words"}]}, see check/wordlist); empty means the shipped
	// defaults. Every check that scans text uses them.
	WordLists json.RawMessage `json:"wordLists,omitempty"`
	// Version is the main DB's version of this document (optimistic locking).
	Version int64 `json:"version,omitempty"`
	// UpdatedAt is when it was last saved.
	UpdatedAt *time.Time `json:"updatedAt,omitempty"`
}

// DefaultConfig enables registration and Wayback — the two checks that
// work without provider credentials — with conservative settings.
func DefaultConfig() Config {
	var c Config
	for _, s := range Steps {
		sc := StepConfig{
			Name: s, Label: Labels[s][0] + " " + Labels[s][1], MaxAttempts: 5, LeaseTTLMs: 60000,
			OnReject: OnRejectStop, Rules: DefaultRules(s),
		}
		switch s {
		case StepRegister:
			sc.Enabled = true
		case StepWayback:
			sc.Enabled = true
			sc.RatePerMin = 24 // Wayback CDX: ~24–60 requests a minute per IP
		}
		c.Steps = append(c.Steps, sc)
	}
	return c
}

// Step returns a step's settings.
func (c *Config) Step(name string) (StepConfig, bool) {
	for _, s := range c.Steps {
		if s.Name == name {
			return s, true
		}
	}
	return StepConfig{}, false
}

// Enabled returns the enabled steps in order.
func (c *Config) Enabled() []string {
	var out []string
	for _, s := range c.Steps {
		if s.Enabled {
			out = append(out, s.Name)
		}
	}
	return out
}

// Next returns the first enabled step, in canonical order, not in passed;
// "" when none is left.
func (c *Config) Next(passed map[string]bool) string {
	for _, s := range c.Steps {
		if s.Enabled && !passed[s.Name] {
			return s.Name
		}
	}
	return ""
}

// Normalize fills missing steps and defaults and puts steps in canonical
// order, then validates; a bad setting is refused with the field named.
func (c *Config) Normalize() error {
	byName := map[string]StepConfig{}
	for i, s := range c.Steps {
		if _, ok := Labels[s.Name]; !ok {
			return baton.Errorf(baton.EInvalid, "steps[%d].name %q is not a step (want one of %v)", i, s.Name, Steps)
		}
		if _, dup := byName[s.Name]; dup {
			return baton.Errorf(baton.EInvalid, "step %q appears twice", s.Name)
		}
		byName[s.Name] = s
	}
	def := DefaultConfig()
	out := make([]StepConfig, 0, len(Steps))
	for _, d := range def.Steps {
		s, ok := byName[d.Name]
		if !ok {
			d.Enabled = false
			out = append(out, d)
			continue
		}
		if s.Label == "" {
			s.Label = d.Label
		}
		if s.MaxAttempts == 0 {
			s.MaxAttempts = d.MaxAttempts
		}
		if s.LeaseTTLMs == 0 {
			s.LeaseTTLMs = d.LeaseTTLMs
		}
		if s.OnReject == "" {
			s.OnReject = OnRejectStop
		}
		if s.Rules.Params == nil {
			s.Rules.Params = d.Rules.Params
		}
		if err := s.validate(); err != nil {
			return err
		}
		out = append(out, s)
	}
	c.Steps = out
	if len(c.WordLists) > 0 && string(c.WordLists) != "null" {
		if _, err := wordlist.ParseJSON(c.WordLists); err != nil {
			return baton.Errorf(baton.EInvalid, "wordLists: %v", err)
		}
	} else {
		c.WordLists = nil
	}
	return nil
}

// Words returns the word lists the configuration names (the shipped
// defaults when it names none).
func (c *Config) Words() *wordlist.Lists {
	if len(c.WordLists) > 0 {
		if l, err := wordlist.ParseJSON(c.WordLists); err == nil {
			return l
		}
	}
	return wordlist.Default()
}

func (s *StepConfig) validate() error {
	f := func(field, format string, a ...any) error {
		return baton.Errorf(baton.EInvalid, "step %s: %s %s", s.Name, field, fmt.Sprintf(format, a...))
	}
	if s.MaxAttempts < 1 || s.MaxAttempts > 100 {
		return f("maxAttempts", "must be between 1 and 100")
	}
	if s.LeaseTTLMs < 1000 || s.LeaseTTLMs > 3_600_000 {
		return f("leaseTtlMs", "must be between 1000 and 3600000")
	}
	if s.RatePerMin < 0 || s.RatePerMin > 1_000_000 {
		return f("ratePerMin", "must be between 0 and 1000000")
	}
	if s.OnReject != OnRejectStop && s.OnReject != OnRejectReview {
		return f("onReject", "must be stop or review (got %q)", s.OnReject)
	}
	if len(s.Label) > 100 {
		return f("label", "must be at most 100 characters")
	}
	if err := s.Rules.Compile(); err != nil {
		return f("rules", "%v", err)
	}
	return nil
}

// MarshalDoc serializes the configuration for the main DB.
func (c *Config) MarshalDoc() (json.RawMessage, error) {
	return json.Marshal(struct {
		Steps     []StepConfig    `json:"steps"`
		WordLists json.RawMessage `json:"wordLists,omitempty"`
	}{c.Steps, c.WordLists})
}
