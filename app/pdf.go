package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/batonhq/baton/admin"
	"github.com/batonhq/baton/callback"
	"github.com/batonhq/baton/egress"
	"github.com/batonhq/baton/httpapi"
	"github.com/batonhq/baton/ledger"
	"github.com/batonhq/baton/pdf"
	"github.com/batonhq/baton/pdf/chromium"
)

// PDFConfig tunes the HTML→PDF service inside serve. Zero values take the
// defaults named by each field's flag.
type PDFConfig struct {
	// Browsers is the number of Chromium processes of the in-process
	// workers (--pdf-browsers); default 1. They start on the first render.
	Browsers int
	// PagesPerBrowser is the renders one browser runs at once
	// (--pdf-pages-per-browser); default the CPU count / Browsers.
	PagesPerBrowser int
	// MaxTasksPerBrowser recycles a browser after this many renders
	// (--pdf-max-tasks-per-browser); default 100.
	MaxTasksPerBrowser int
	// RestartMemoryMB recycles a browser whose process tree exceeds it
	// (--pdf-restart-memory-mb); default 600.
	RestartMemoryMB int
	// HealthInterval of the browser probe (--pdf-health-interval); default 30s.
	HealthInterval time.Duration
	// NavigationTimeout bounds loading a page (--pdf-navigation-timeout); default 30s.
	NavigationTimeout time.Duration
	// SlowThreshold is the render budget on pdf.fast/pdf.normal; past it a
	// render moves to pdf.slow (--pdf-slow-threshold); default 20s.
	SlowThreshold time.Duration
	// IdempotencyTTL keeps Idempotency-Keys (--pdf-idempotency-ttl); default 24h.
	IdempotencyTTL time.Duration
	// MaxHTMLBytes bounds inline HTML (--pdf-max-html-bytes); default 10 MiB.
	MaxHTMLBytes int64
	// MaxAttempts of a conversion (--pdf-max-attempts); default 3.
	MaxAttempts int
	// PublicURL is the controller's external URL in resultUrl
	// (--public-url); default the listen address.
	PublicURL string
	// ChromiumPath (--chromium); default chromium.DefaultChromiumPath().
	ChromiumPath string
	// Mode is "isolated" (a new browser context and page per task, the
	// next one prepared while a render runs) or "warm" (pages reused and
	// cleaned between tasks; docs/pdf.md) (--pdf-mode); default isolated.
	Mode string
	// WarmMaxUses closes a warm page after this many tasks
	// (--pdf-warm-max-uses); default 50.
	WarmMaxUses int
	// CallbackAttempts per callback (--pdf-callback-attempts); default 5.
	CallbackAttempts int
	// CallbackBackoff is the first wait between attempts, doubling
	// (--pdf-callback-backoff); default 1s.
	CallbackBackoff time.Duration
}

// poolConfig is the browser pool's configuration.
func (c PDFConfig) poolConfig() chromium.Config {
	return chromium.Config{
		Instances: c.Browsers, PagesPerInstance: c.PagesPerBrowser,
		MaxTasksPerBrowser: c.MaxTasksPerBrowser, RestartMemoryMB: c.RestartMemoryMB,
		HealthInterval: c.HealthInterval, NavigationTimeout: c.NavigationTimeout,
		ChromiumPath: c.ChromiumPath, Mode: c.Mode, WarmMaxUses: c.WarmMaxUses,
	}
}

// RemotePDF builds the pdf.render handler of a remote worker (baton
// worker): its own egress proxy and policy (egressAllow as for serve), its
// own browsers (started on the first render), PDFs uploaded through the
// controller's artifact route under the task's lease token.
func RemotePDF(c PDFConfig, egressAllow string, api *httpapi.Client, log *slog.Logger) (*pdf.Renderer, error) {
	policy, err := pdfPolicy(egressAllow)
	if err != nil {
		return nil, err
	}
	return pdf.NewRenderer(pdf.RendererConfig{
		Pool: c.poolConfig(), Policy: policy, Upload: pdf.HTTPUploader{API: api},
		SlowThreshold: c.SlowThreshold, Logger: log,
	})
}

// pdfPolicy is the egress policy of clients' pages and callbacks: the
// default refusals, minus the --egress-allow list.
func pdfPolicy(egressAllow string) (*egress.Policy, error) {
	allow, err := egress.ParseAllowList(egressAllow)
	if err != nil {
		return nil, fmt.Errorf("--egress-allow: %w", err)
	}
	return egress.NewPolicy(egress.Config{Allow: allow})
}

// openPDF builds the PDF service: its Advancer, API routes and outbox
// consumer, and — when this controller runs in-process workers — the
// renderer (egress proxy now, browsers on the first render). It needs
// openPipeline's main DB and relay.
func (a *App) openPDF(ctx context.Context) error {
	cfg := a.cfg
	// Its own policy: --sandbox widens the checks' policy to loopback, but
	// never what a client's page or callback may reach.
	policy, err := pdfPolicy(cfg.EgressAllow)
	if err != nil {
		return err
	}
	arts := a.Artifacts
	m := pdf.NewMetrics(a.Registry, a.Ctrl.Metrics().StalledPDF)
	adv := pdf.NewAdvancer(m, a.Store)
	a.Ctrl.Handle("pdf.", adv)

	var stats func() []chromium.InstanceStats
	if cfg.Workers > 0 {
		r, err := pdf.NewRenderer(pdf.RendererConfig{
			Pool:   cfg.PDF.poolConfig(),
			Policy: policy, Upload: pdf.LocalUploader{Controller: a.Ctrl, Artifacts: arts},
			SlowThreshold: cfg.PDF.SlowThreshold, Metrics: m, Logger: cfg.Logger,
		})
		if err != nil {
			return err
		}
		a.closers = append(a.closers, r.Close)
		r.Register(cfg.Registry)
		stats = r.Stats
	}
	var svc *pdf.Service
	sender, err := callback.New(callback.Config{
		HTTP: policy.HTTPClient(0), Attempts: cfg.PDF.CallbackAttempts, Backoff: cfg.PDF.CallbackBackoff, Logger: cfg.Logger,
		Record: func(ctx context.Context, at callback.Attempt) error { return svc.RecordCallback(ctx, at) },
	})
	if err != nil {
		return err
	}
	svc, err = pdf.New(pdf.Config{
		Controller: a.Ctrl, DB: a.DB, Artifacts: arts, Policy: policy, Callbacks: sender, Metrics: m,
		BrowserStats: stats, IdempotencyTTL: cfg.PDF.IdempotencyTTL, MaxHTMLBytes: cfg.PDF.MaxHTMLBytes,
		MaxAttempts: cfg.PDF.MaxAttempts, Logger: cfg.Logger, Advancer: adv,
		PublicURL: func() string {
			if cfg.PDF.PublicURL != "" {
				return cfg.PDF.PublicURL
			}
			return a.URL()
		},
	})
	if err != nil {
		return err
	}
	a.closers = append(a.closers, svc.Close)
	svc.Mount(a.API)
	svc.Relay(a.Relay)
	a.PDF = svc
	return nil
}

// PDFAdmin adapts the PDF service to the admin UI (admin.Config.PDF).
func (a *App) PDFAdmin() admin.PDFBackend {
	if a.PDF == nil {
		return nil
	}
	return pdfAdmin{a.PDF}
}

type pdfAdmin struct{ s *pdf.Service }

var _ admin.PDFBackend = pdfAdmin{}

func adminTask(v pdf.TaskView, c ledger.ConversionTask, names map[string]string) admin.PDFTask {
	t := admin.PDFTask{ID: v.TaskID, Status: v.Status, Queue: v.Queue, KeyID: c.APIKeyID, KeyName: names[c.APIKeyID],
		SourceType: c.SourceType, Source: c.Source, Options: c.Options, CallbackURL: c.CallbackURL, Attempts: v.Attempts,
		Error: v.Error, ResultSize: v.Size, CreatedAt: v.CreatedAt}
	if v.StartedAt != nil {
		t.StartedAt = *v.StartedAt
	}
	if v.FinishedAt != nil {
		t.FinishedAt = *v.FinishedAt
	}
	if len(t.Source) > ledger.MaxListedSource {
		t.Source = t.Source[:ledger.MaxListedSource]
	}
	return t
}

func (p pdfAdmin) keyNames(ctx context.Context) map[string]string {
	names := map[string]string{}
	if ks, err := p.s.ListKeys(ctx); err == nil {
		for _, k := range ks {
			names[k.ID] = k.Name
		}
	}
	return names
}

func (p pdfAdmin) ListTasks(ctx context.Context, f admin.PDFTaskFilter) ([]admin.PDFTask, string, error) {
	page, next, err := p.s.ListTasks(ctx, ledger.ConversionFilter{KeyID: f.KeyID, Status: f.Status, Queue: f.Queue,
		IDPrefix: f.IDPrefix, Limit: f.Limit, Cursor: f.Cursor})
	if err != nil {
		return nil, "", err
	}
	names := p.keyNames(ctx)
	out := make([]admin.PDFTask, 0, len(page))
	for _, v := range page {
		c, _, err := p.s.Conversion(ctx, v.TaskID)
		if err != nil {
			return nil, "", err
		}
		out = append(out, adminTask(v, c, names))
	}
	return out, next, nil
}

func (p pdfAdmin) Task(ctx context.Context, id string) (admin.PDFTask, error) {
	c, v, err := p.s.Conversion(ctx, id)
	if err != nil {
		return admin.PDFTask{}, err
	}
	return adminTask(v, c, p.keyNames(ctx)), nil
}

func (p pdfAdmin) Result(ctx context.Context, id string) (io.ReadCloser, error) {
	return p.s.OpenResult(ctx, id)
}

func (p pdfAdmin) Callbacks(ctx context.Context, id string) ([]admin.CallbackAttempt, error) {
	ls, err := p.s.Callbacks(ctx, id)
	if err != nil {
		return nil, err
	}
	out := make([]admin.CallbackAttempt, 0, len(ls))
	for _, l := range ls {
		out = append(out, admin.CallbackAttempt{Attempt: l.Attempt, URL: l.URL, RequestBody: l.RequestBody, ResponseStatus: l.ResponseStatus,
			ResponseBody: l.ResponseBody, SentAt: l.SentAt, DurationMs: l.DurationMs, Error: l.Error, Replay: l.Replay})
	}
	return out, nil
}

func (p pdfAdmin) ReplayCallback(ctx context.Context, id string, req admin.ReplayRequest) (admin.ReplayOutcome, error) {
	c, _, err := p.s.Conversion(ctx, id)
	if err != nil {
		return admin.ReplayOutcome{}, err
	}
	out, err := p.s.Replay(ctx, c, pdf.ReplayRequest{Attempts: req.Attempts, BackoffMultiplier: req.BackoffMultiplier})
	if err != nil {
		return admin.ReplayOutcome{}, err
	}
	return admin.ReplayOutcome{Delivered: out.Delivered, Attempts: out.Attempts, ResponseStatus: out.ResponseStatus, Error: out.Error}, nil
}

func (p pdfAdmin) CreateKey(ctx context.Context, name string) (admin.NewAPIKey, error) {
	k, err := p.s.CreateKey(ctx, name)
	if err != nil {
		return admin.NewAPIKey{}, err
	}
	return admin.NewAPIKey{ID: k.ID, Name: k.Name, Key: k.Key, Secret: k.Secret, CreatedAt: k.CreatedAt}, nil
}

func (p pdfAdmin) ListKeys(ctx context.Context) ([]admin.APIKeyInfo, error) {
	ks, err := p.s.ListKeys(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]admin.APIKeyInfo, 0, len(ks))
	for _, k := range ks {
		ki := admin.APIKeyInfo{ID: k.ID, Name: k.Name, CreatedAt: k.CreatedAt}
		if k.RevokedAt != nil {
			ki.RevokedAt = *k.RevokedAt
		}
		out = append(out, ki)
	}
	return out, nil
}

func (p pdfAdmin) RevokeKey(ctx context.Context, id string) error { return p.s.RevokeKey(ctx, id) }
