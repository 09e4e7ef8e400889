// Package app assembles a running Baton controller from its configuration:
// the queue store, the controller, the HTTP server and the in-process
// workers, with an orderly start and shutdown. cmd/baton, the end-to-end
// tests and the benchmarks all start Baton through it.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/batonhq/baton/admin"
	"github.com/batonhq/baton/artifact"
	"github.com/batonhq/baton/controller"
	"github.com/batonhq/baton/egress"
	"github.com/batonhq/baton/httpapi"
	"github.com/batonhq/baton/ledger"
	"github.com/batonhq/baton/pdf"
	"github.com/batonhq/baton/pipeline"
	"github.com/batonhq/baton/queue"
	"github.com/batonhq/baton/queue/redisq"
	"github.com/batonhq/baton/queue/sqliteq"
	"github.com/batonhq/baton/sandbox"
	"github.com/batonhq/baton/worker"
)

// Config is what baton serve is started with. Each field documents its
// flag; zero values take the flag defaults.
type Config struct {
	// Addr to listen on (--addr); default 127.0.0.1:8080; ":0" picks a port.
	Addr string
	// DataDir holds the embedded databases, tokens and artifacts (--data-dir); default ./data.
	DataDir string
	// Redis URL of the queue store (--redis); empty = the embedded store.
	Redis string
	// RedisNamespace separates several Batons on one Redis; default "baton".
	RedisNamespace string
	// Workers is the number of in-process worker slots (--workers); -1 =
	// the number of CPUs, 0 = none.
	Workers int
	// Tokens (--admin-token, --worker-token); generated in DataDir when empty.
	Tokens httpapi.Tokens
	// Registry holds the in-process workers' handlers; default Builtins().
	Registry *worker.Registry
	// DB is the main DB DSN (--db): sqlite:PATH or mysql://...; default
	// sqlite:<DataDir>/baton.db.
	DB string
	// Sandbox starts the provider simulator and points the checks at it (--sandbox).
	Sandbox bool
	// Providers is a JSON file with every check's endpoints, keys and
	// thresholds (--providers; check/all.Config). Ignored with Sandbox.
	Providers string
	// EgressAllow lists private CIDRs outbound fetches may reach (--egress-allow).
	EgressAllow string
	// Pipeline tunes the domain pipeline.
	Pipeline PipelineConfig
	// PDF tunes the HTML→PDF service (app/pdf.go).
	PDF PDFConfig
	// S3 keeps the artifacts (rendered PDFs) in a bucket of an
	// S3-compatible service instead of <DataDir>/artifacts when S3.Bucket
	// is set (--s3-endpoint, --s3-bucket, --s3-prefix, --s3-region;
	// credentials from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY).
	S3 artifact.S3Config
	// NoUI leaves the admin web UI unmounted (a caller mounts its own).
	NoUI bool
	// ReapInterval overrides the controller's lease reaper interval.
	ReapInterval time.Duration
	// ShutdownGrace bounds how long running tasks may finish at shutdown; default 30s.
	ShutdownGrace time.Duration
	// Logger; default slog.Default().
	Logger *slog.Logger
}

// App is a running Baton controller.
type App struct {
	cfg      Config
	log      *slog.Logger
	Store    queue.Store
	Ctrl     *controller.Controller
	API      *httpapi.Server
	Registry *prometheus.Registry
	Tokens   httpapi.Tokens
	// NewTokens names the tokens generated at this start (to print them).
	NewTokens []string
	DB        *ledger.DB
	Relay     *controller.Relay
	Pipeline  *pipeline.Service
	Sandbox   *sandbox.Sandbox
	Egress    *egress.Policy
	// Artifacts holds the files workers upload (rendered PDFs).
	Artifacts artifact.Store
	UI        *admin.UI
	// PDF is the HTML→PDF service (app/pdf.go).
	PDF *pdf.Service

	closers   []func() error
	stopSweep context.CancelFunc // ends sweepArtifacts

	ln       net.Listener
	srv      *http.Server
	workers  []*worker.Worker
	wcancel  context.CancelFunc
	wg       sync.WaitGroup
	stopOnce sync.Once
	stopErr  error
}

// New opens the stores and builds every part, without serving yet.
func New(ctx context.Context, cfg Config) (*App, error) {
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:8080"
	}
	if cfg.DataDir == "" {
		cfg.DataDir = "./data"
	}
	if cfg.Workers < 0 {
		cfg.Workers = runtime.NumCPU()
	}
	if cfg.ShutdownGrace <= 0 {
		cfg.ShutdownGrace = 30 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Registry == nil {
		cfg.Registry = Builtins()
	}
	a := &App{cfg: cfg, log: cfg.Logger, stopSweep: func() {}}
	if err := os.MkdirAll(cfg.DataDir, 0o750); err != nil {
		return nil, fmt.Errorf("create data dir %s (--data-dir): %w", cfg.DataDir, err)
	}
	tokens, created, err := httpapi.LoadOrCreateTokens(cfg.DataDir, cfg.Tokens)
	if err != nil {
		return nil, err
	}
	a.Tokens, a.NewTokens = tokens, created

	if cfg.Redis != "" {
		a.Store, err = redisq.Open(ctx, redisq.Options{URL: cfg.Redis, Namespace: cfg.RedisNamespace, Logger: cfg.Logger})
		if err != nil {
			return nil, fmt.Errorf("open Redis queue store (--redis %s): %w", redactURL(cfg.Redis), err)
		}
	} else {
		p := filepath.Join(cfg.DataDir, "queue.db")
		a.Store, err = sqliteq.Open(ctx, p, sqliteq.Options{Logger: cfg.Logger})
		if err != nil {
			return nil, fmt.Errorf("open embedded queue store %s (--data-dir): %w", p, err)
		}
	}

	a.Registry = prometheus.NewRegistry()
	a.Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	a.Ctrl, err = controller.New(controller.Config{
		Store: a.Store, Metrics: controller.NewMetrics(a.Registry), Logger: cfg.Logger, ReapInterval: cfg.ReapInterval,
	})
	if err != nil {
		_ = a.Store.Close()
		return nil, err
	}
	arts, err := openArtifacts(ctx, cfg)
	if err != nil {
		_ = a.Store.Close()
		return nil, err
	}
	a.Artifacts = arts
	a.API = httpapi.New(httpapi.Config{
		Controller: a.Ctrl, Tokens: tokens, Artifacts: arts, Gatherer: a.Registry, Logger: cfg.Logger,
		Ready: func(ctx context.Context) error {
			if a.DB == nil {
				return nil
			}
			if err := a.DB.Ping(ctx); err != nil {
				return fmt.Errorf("main DB: %w", err)
			}
			return nil
		},
	})
	if err := a.openPipeline(ctx); err != nil {
		a.closeAll()
		return nil, err
	}
	if err := a.openPDF(ctx); err != nil {
		a.closeAll()
		return nil, err
	}
	if !cfg.NoUI {
		if err := a.openUI(); err != nil {
			a.closeAll()
			return nil, err
		}
	}
	return a, nil
}

// Start listens, serves and starts the in-process workers.
func (a *App) Start(ctx context.Context) error {
	ln, err := net.Listen("tcp", a.cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s (--addr): %w", a.cfg.Addr, err)
	}
	a.ln = ln
	a.Ctrl.Start(context.WithoutCancel(ctx))
	a.Relay.Start(context.WithoutCancel(ctx))
	sweepCtx, stopSweep := context.WithCancel(context.WithoutCancel(ctx))
	a.stopSweep = stopSweep
	a.wg.Add(1)
	go func() { defer a.wg.Done(); a.sweepArtifacts(sweepCtx) }()
	a.srv = &http.Server{
		Handler:           a.API,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
		ErrorLog:          slog.NewLogLogger(a.log.Handler(), slog.LevelWarn),
	}
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		if err := a.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.log.Error("http server", "err", err)
		}
	}()
	if a.cfg.Workers > 0 {
		wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		a.wcancel = cancel
		w, err := worker.New(worker.Config{
			API: controller.Local{C: a.Ctrl}, Registry: a.cfg.Registry, Concurrency: a.cfg.Workers,
			Name: "in-process", ShutdownGrace: a.cfg.ShutdownGrace, Logger: a.log,
		})
		if err != nil {
			return err
		}
		a.workers = append(a.workers, w)
		a.wg.Add(1)
		go func() { defer a.wg.Done(); _ = w.Run(wctx) }()
	}
	a.log.Info("baton serving", "addr", a.Addr(), "store", a.storeName(), "workers", a.cfg.Workers)
	return nil
}

func (a *App) storeName() string {
	if a.cfg.Redis != "" {
		return "redis"
	}
	return "sqlite"
}

// Addr is the address the server listens on.
func (a *App) Addr() string {
	if a.ln == nil {
		return a.cfg.Addr
	}
	return a.ln.Addr().String()
}

// URL is the server's base URL.
func (a *App) URL() string { return "http://" + a.Addr() }

// Shutdown stops in order: in-process workers finish (or hand back) their
// tasks while the controller still serves; waiting claims are woken; the
// HTTP server drains; the store closes. Safe to call twice.
func (a *App) Shutdown(ctx context.Context) error {
	a.stopOnce.Do(func() {
		if a.wcancel != nil {
			a.wcancel()
		}
		if a.UI != nil {
			_ = a.UI.Close()
		}
		a.stopSweep()
		if a.Pipeline != nil {
			a.Pipeline.Stop()
		}
		a.Ctrl.Stop()
		if a.srv != nil {
			sctx, cancel := context.WithTimeout(ctx, 15*time.Second)
			if err := a.srv.Shutdown(sctx); err != nil {
				a.stopErr = fmt.Errorf("http shutdown: %w", err)
			}
			cancel()
		}
		a.wg.Wait()
		if a.Relay != nil {
			// One last drain so that the ledger has every transition.
			a.Relay.Stop()
			dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			for {
				n, err := a.Relay.DrainOnce(dctx)
				if err != nil || n == 0 {
					break
				}
			}
			cancel()
		}
		if err := a.closeAll(); err != nil && a.stopErr == nil {
			a.stopErr = err
		}
	})
	return a.stopErr
}

// closeAll closes the store, then the other resources in reverse order.
func (a *App) closeAll() error {
	var first error
	if a.Store != nil {
		if err := a.Store.Close(); err != nil {
			first = fmt.Errorf("close store: %w", err)
		}
	}
	for i := len(a.closers) - 1; i >= 0; i-- {
		if err := a.closers[i](); err != nil && first == nil {
			first = err
		}
	}
	a.closers = nil
	return first
}

func redactURL(u string) string {
	if i := strings.Index(u, "@"); i > 0 {
		if j := strings.Index(u, "://"); j > 0 && j < i {
			return u[:j+3] + "***" + u[i:]
		}
	}
	return u
}

// ArtifactRetention is how long uploaded files (rendered PDFs) are kept.
const ArtifactRetention = 7 * 24 * time.Hour

// openArtifacts opens the S3 artifact store when a bucket is configured,
// else the filesystem store under the data directory.
func openArtifacts(ctx context.Context, cfg Config) (artifact.Store, error) {
	if cfg.S3.Bucket == "" {
		return artifact.NewFS(filepath.Join(cfg.DataDir, "artifacts"), 0)
	}
	s3 := cfg.S3
	if s3.SpoolDir == "" {
		s3.SpoolDir = filepath.Join(cfg.DataDir, "spool")
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	st, err := artifact.NewS3(ctx, s3)
	if err != nil {
		return nil, fmt.Errorf("open S3 artifact store (--s3-bucket %s): %w", s3.Bucket, err)
	}
	return st, nil
}

// sweepArtifacts deletes uploads older than ArtifactRetention, hourly,
// until ctx ends at shutdown, so the artifact store does not grow forever.
func (a *App) sweepArtifacts(ctx context.Context) {
	t := time.NewTicker(time.Hour)
	defer t.Stop()
	for {
		if n, err := a.Artifacts.Sweep(ctx, time.Now().Add(-ArtifactRetention)); err != nil && ctx.Err() == nil {
			a.log.Warn("sweep artifacts", "err", err)
		} else if n > 0 {
			a.log.Info("swept artifacts", "tasks", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
