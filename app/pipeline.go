package app

import (
	"context"
	"fmt"
	"net/netip"
	"path/filepath"
	"time"

	"github.com/batonhq/baton/check"
	"github.com/batonhq/baton/check/register"
	"github.com/batonhq/baton/check/wayback"
	"github.com/batonhq/baton/check/wordlist"
	"github.com/batonhq/baton/controller"
	"github.com/batonhq/baton/egress"
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
	a.Pipeline, err = pipeline.NewService(ctx, db, a.Ctrl, a.Relay, pipeline.Options{
		Defaults:       defaults,
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
	var regCfg register.Config
	var wbCfg wayback.Config
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
		ep := sb.Endpoints()
		// The simulator listens on loopback: let the checks reach it.
		allow = append(allow, netip.MustParsePrefix("127.0.0.1/32"))
		regCfg.BootstrapURL = ep.RDAPBootstrap
		regCfg.WHOISServers = ep.WHOISServers
		wbCfg.BaseURL = ep.Wayback
		if timeout <= 0 {
			timeout = 2 * time.Second
		}
	}
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	policy, err := egress.NewPolicy(egress.Config{Allow: allow})
	if err != nil {
		return err
	}
	a.Egress = policy
	regCfg.Timeout, regCfg.WHOISTimeout, wbCfg.Timeout = timeout, timeout, timeout
	env := check.Env{HTTP: policy.HTTPClient(0), Dial: policy.DialContext, Logger: cfg.Logger}
	reg, err := register.New(regCfg, env)
	if err != nil {
		return fmt.Errorf("register check: %w", err)
	}
	wb, err := wayback.New(wbCfg, env, wordlist.NewStore(wordlist.Default()))
	if err != nil {
		return fmt.Errorf("wayback check: %w", err)
	}
	pipeline.RegisterChecks(a.cfg.Registry, reg, wb)
	return nil
}
