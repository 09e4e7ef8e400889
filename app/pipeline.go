package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"time"

	"github.com/batonhq/baton/check"
	"github.com/batonhq/baton/check/all"
	"github.com/batonhq/baton/check/wordlist"
	"github.com/batonhq/baton/controller"
	"github.com/batonhq/baton/egress"
	"github.com/batonhq/baton/httpapi"
	"github.com/batonhq/baton/ledger"
	"github.com/batonhq/baton/pipeline"
	"github.com/batonhq/baton/sandbox"
)

// PipelineConfig tunes the domain pipeline inside serve.
type PipelineConfig struct {
	// ScanInterval between dispatcher scans (--scan-interval); default 30s.
	ScanInterval time.Duration
	// MaxInFlight domain tasks queued at once; default 20000.
	MaxInFlight int64
	// NoDispatchLoop runs scans only on POST /api/pipeline/scan.
	NoDispatchLoop bool
	// SandboxHang is how long the sandbox holds a simulated timeout; default 5s.
	SandboxHang time.Duration
	// CheckTimeout bounds one provider request; default 10s (2s with --sandbox).
	CheckTimeout time.Duration
}

// openPipeline opens the main DB, starts the outbox relay, the pipeline
// service and (with --sandbox) the provider simulator, and registers the
// domain checks for the in-process workers.
func (a *App) openPipeline(ctx context.Context) error {
	cfg := a.cfg
	dsn := cfg.DB
	if dsn == "" {
		dsn = "sqlite:" + filepath.Join(cfg.DataDir, "baton.db")
	}
	db, err := ledger.Open(ctx, dsn, cfg.Logger)
	if err != nil {
		return fmt.Errorf("open main DB (--db): %w", err)
	}
	a.DB = db
	a.closers = append(a.closers, db.Close)

	a.Relay = controller.NewRelay(a.Store, 500, 200*time.Millisecond, cfg.Logger)
	var defaults func() pipeline.Config
	if cfg.Sandbox {
		// The simulator has no rate limit to respect: run at full speed
		// until the operator saves settings of their own.
		defaults = func() pipeline.Config {
			c := pipeline.DefaultConfig()
			for i := range c.Steps {
				c.Steps[i].RatePerMin = 0
			}
			return c
		}
	}
	words := wordlist.NewStore(wordlist.Default())
	a.Pipeline, err = pipeline.NewService(ctx, db, a.Ctrl, a.Relay, pipeline.Options{
		Defaults:       defaults,
		Words:          words,
		Dispatcher:     pipeline.DispatcherConfig{Interval: cfg.Pipeline.ScanInterval, MaxInFlight: cfg.Pipeline.MaxInFlight},
		NoDispatchLoop: cfg.Pipeline.NoDispatchLoop,
		Logger:         cfg.Logger,
	})
	if err != nil {
		return err
	}
	a.Pipeline.Mount(a.API)

	allow, err := egress.ParseAllowList(cfg.EgressAllow)
	if err != nil {
		return err
	}
	timeout := cfg.Pipeline.CheckTimeout
	provCfg, err := LoadProviders(cfg.Providers)
	if err != nil {
		return err
	}
	if cfg.Sandbox {
		hang := cfg.Pipeline.SandboxHang
		if hang <= 0 {
			hang = 5 * time.Second
		}
		sb, err := sandbox.Start(ctx, sandbox.Config{Hang: hang, Logger: cfg.Logger})
		if err != nil {
			return fmt.Errorf("start sandbox (--sandbox): %w", err)
		}
		a.Sandbox = sb
		a.closers = append(a.closers, sb.Close)
		// The simulator listens on loopback: let the checks reach it.
		allow = append(allow, netip.MustParsePrefix("127.0.0.1/32"))
		provCfg = all.SandboxConfig(sb.Endpoints())
		if timeout <= 0 {
			timeout = 2 * time.Second
		}
	}
	if timeout > 0 {
		provCfg = provCfg.WithTimeout(timeout)
	}
	policy, err := egress.NewPolicy(egress.Config{Allow: allow})
	if err != nil {
		return err
	}
	a.Egress = policy
	env := check.Env{HTTP: policy.HTTPClient(0), Dial: policy.DialContext, Logger: cfg.Logger}
	checkers, err := all.New(provCfg, env, words)
	if err != nil {
		return fmt.Errorf("domain checks (--providers): %w", err)
	}
	pipeline.RegisterChecks(a.cfg.Registry, checkers...)
	return nil
}

// LoadProviders reads the provider configuration (endpoints, keys,
// thresholds of every check: check/all.Config as JSON) from path; an
// empty path gives the defaults (the real providers' public endpoints,
// no keys: steps that need a key answer retry with an operator alert).
func LoadProviders(path string) (all.Config, error) {
	var c all.Config
	if path == "" {
		return c, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return c, fmt.Errorf("read provider configuration (--providers): %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return c, fmt.Errorf("provider configuration %s (--providers): %w", path, err)
	}
	return c, nil
}

// RemoteChecks builds the domain checks for a remote worker (baton worker):
// provider configuration from providersPath, outbound traffic through the
// egress guard with egressAllow, word lists from words (keep it in step
// with the controller with FollowWordLists).
func RemoteChecks(providersPath, egressAllow string, timeout time.Duration, words *wordlist.Store, log *slog.Logger) ([]check.Checker, error) {
	provCfg, err := LoadProviders(providersPath)
	if err != nil {
		return nil, err
	}
	if timeout > 0 {
		provCfg = provCfg.WithTimeout(timeout)
	}
	allow, err := egress.ParseAllowList(egressAllow)
	if err != nil {
		return nil, err
	}
	policy, err := egress.NewPolicy(egress.Config{Allow: allow})
	if err != nil {
		return nil, err
	}
	env := check.Env{HTTP: policy.HTTPClient(0), Dial: policy.DialContext, Logger: log}
	return all.New(provCfg, env, words)
}

// FollowWordLists keeps a remote worker's word lists equal to the
// controller's operator-edited ones: it fetches them now and then every
// interval until ctx ends. A failed fetch keeps the lists it has.
func FollowWordLists(ctx context.Context, c *httpapi.Client, words *wordlist.Store, every time.Duration, log *slog.Logger) {
	fetch := func() {
		var raw json.RawMessage
		if err := c.Do(ctx, "GET", "/api/worker/wordlists", nil, &raw); err != nil {
			if ctx.Err() == nil {
				log.Warn("fetch word lists", "err", err)
			}
			return
		}
		l, err := wordlist.ParseJSON(raw)
		if err != nil {
			log.Warn("controller sent invalid word lists", "err", err)
			return
		}
		words.Set(l)
	}
	fetch()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			fetch()
		}
	}
}
