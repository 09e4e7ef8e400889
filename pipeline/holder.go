package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"

	baton "github.com/batonhq/baton"
	"github.com/batonhq/baton/check/wordlist"
	"github.com/batonhq/baton/controller"
	"github.com/batonhq/baton/ledger"
	"github.com/batonhq/baton/queue"
)

// ConfigHolder keeps the live pipeline configuration, persisted in the
// main DB and applied to the step queues' rate limits.
type ConfigHolder struct {
	db       *ledger.DB
	ctrl     *controller.Controller
	defaults func() Config
	words    *wordlist.Store
	cur      atomic.Pointer[Config]
}

// store installs c as current and hands its word lists to the checks.
func (h *ConfigHolder) store(c *Config) {
	h.cur.Store(c)
	if h.words != nil {
		h.words.Set(c.Words())
	}
}

// NewConfigHolder loads the stored configuration (the defaults when none
// was ever saved) and applies its rate limits.
// defaults, when not nil, replaces DefaultConfig.
// words, when not nil, receives the configured word lists.
func NewConfigHolder(ctx context.Context, db *ledger.DB, ctrl *controller.Controller, defaults func() Config, words *wordlist.Store) (*ConfigHolder, error) {
	if defaults == nil {
		defaults = DefaultConfig
	}
	h := &ConfigHolder{db: db, ctrl: ctrl, defaults: defaults, words: words}
	if err := h.Reload(ctx); err != nil {
		return nil, err
	}
	return h, h.applyQueues(ctx, h.Get())
}

// Get returns the current configuration (do not modify it).
func (h *ConfigHolder) Get() *Config { return h.cur.Load() }

// Reload reads the configuration from the main DB (another controller may
// have saved a new one).
func (h *ConfigHolder) Reload(ctx context.Context) error {
	stored, err := h.db.PipelineConfig(ctx)
	if errors.Is(err, ledger.ErrNoPipelineConfig) {
		c := h.defaults()
		h.store(&c)
		return nil
	}
	if err != nil {
		return fmt.Errorf("load pipeline configuration: %w", err)
	}
	var c Config
	if err := json.Unmarshal(stored.Doc, &c); err != nil {
		return fmt.Errorf("stored pipeline configuration is not valid JSON: %w", err)
	}
	if err := c.Normalize(); err != nil {
		return fmt.Errorf("stored pipeline configuration: %w", err)
	}
	c.Version = stored.Version
	at := stored.UpdatedAt
	c.UpdatedAt = &at
	h.store(&c)
	return nil
}

// Put validates and saves a new configuration; it takes effect for the
// next step every domain takes. ifVersion > 0 makes the save conditional.
func (h *ConfigHolder) Put(ctx context.Context, c Config, ifVersion int64) (*Config, error) {
	if err := c.Normalize(); err != nil {
		return nil, err
	}
	doc, err := c.MarshalDoc()
	if err != nil {
		return nil, err
	}
	stored, err := h.db.PutPipelineConfig(ctx, doc, ifVersion)
	if err != nil {
		return nil, err
	}
	c.Version = stored.Version
	at := stored.UpdatedAt
	c.UpdatedAt = &at
	h.store(&c)
	return &c, h.applyQueues(ctx, &c)
}

// SetEnabled enables exactly the named steps (baton pipeline set).
func (h *ConfigHolder) SetEnabled(ctx context.Context, steps []string) (*Config, error) {
	want := map[string]bool{}
	for _, s := range steps {
		if _, ok := Labels[s]; !ok {
			return nil, baton.Errorf(baton.EInvalid, "%q is not a step (want some of %v)", s, Steps)
		}
		want[s] = true
	}
	c := *h.Get()
	c.Steps = append([]StepConfig(nil), c.Steps...)
	for i := range c.Steps {
		c.Steps[i].Enabled = want[c.Steps[i].Name]
	}
	return h.Put(ctx, c, 0)
}

// SetWordLists replaces the word lists (nil restores the shipped ones).
func (h *ConfigHolder) SetWordLists(ctx context.Context, lists json.RawMessage) (*Config, error) {
	c := *h.Get()
	c.WordLists = lists
	return h.Put(ctx, c, 0)
}

func (h *ConfigHolder) applyQueues(ctx context.Context, c *Config) error {
	for _, s := range c.Steps {
		q := TaskType(s.Name)
		cur, err := h.ctrl.Store().QueueConfig(ctx, q)
		if err != nil {
			return fmt.Errorf("read queue %s: %w", q, err)
		}
		if cur.RatePerMin == s.RatePerMin {
			continue
		}
		cur.RatePerMin = s.RatePerMin
		if err := h.ctrl.SetQueue(ctx, q, queue.QueueConfig{Paused: cur.Paused, RatePerMin: s.RatePerMin}); err != nil {
			return err
		}
	}
	return nil
}
