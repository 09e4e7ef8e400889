package pdf

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"sync"
	"time"

	baton "github.com/batonhq/baton"
	"github.com/batonhq/baton/artifact"
	"github.com/batonhq/baton/controller"
	"github.com/batonhq/baton/egress"
	"github.com/batonhq/baton/httpapi"
	"github.com/batonhq/baton/pdf/chromium"
	"github.com/batonhq/baton/worker"
)

// Uploader stores a rendered PDF as the artifact of a task whose lease the
// caller holds (fencing: a stale lease uploads nothing).
type Uploader interface {
	Upload(ctx context.Context, taskID, leaseToken string, pdf []byte) (artifact.Info, error)
}

// LocalUploader uploads for in-process workers: the lease is checked (and
// extended) by a heartbeat, then the file is stored, as the HTTP route does.
type LocalUploader struct {
	Controller *controller.Controller
	Artifacts  artifact.Store
}

// Upload implements Uploader.
func (u LocalUploader) Upload(ctx context.Context, taskID, leaseToken string, pdf []byte) (artifact.Info, error) {
	if _, err := u.Controller.Heartbeat(ctx, taskID, baton.HeartbeatRequest{LeaseToken: leaseToken}); err != nil {
		return artifact.Info{}, err
	}
	return u.Artifacts.Put(ctx, taskID, bytes.NewReader(pdf))
}

// HTTPUploader uploads for remote workers (baton worker): PUT
// /api/worker/tasks/{id}/artifact with the lease token, which the
// controller checks (and extends) before storing the file.
type HTTPUploader struct {
	API *httpapi.Client
}

// Upload implements Uploader.
func (u HTTPUploader) Upload(ctx context.Context, taskID, leaseToken string, pdf []byte) (artifact.Info, error) {
	info, err := u.API.Upload(ctx, taskID, leaseToken, bytes.NewReader(pdf))
	if err != nil {
		return artifact.Info{}, err
	}
	if info.SHA256 == "" {
		return artifact.Info{}, errors.New("artifact upload: the controller answered no sha256")
	}
	return info, nil
}

// RendererConfig configures a Renderer.
type RendererConfig struct {
	// Pool is the browser pool configuration; the pool starts on the first
	// render. ProxyURL and Hooks are set by NewRenderer.
	Pool chromium.Config
	// Policy judges every connection the browser makes (through the proxy).
	Policy *egress.Policy
	// Upload stores the PDFs; required.
	Upload Uploader
	// SlowThreshold is the render budget on pdf.fast and pdf.normal; a
	// render past it moves to pdf.slow. Default 20s; negative disables.
	SlowThreshold time.Duration
	Metrics       *Metrics
	Logger        *slog.Logger
}

// Renderer is the worker handler of pdf.render: it renders with a lazily
// started Chromium pool behind an egress proxy of its own.
type Renderer struct {
	cfg   RendererConfig
	log   *slog.Logger
	proxy *egress.Proxy

	mu     sync.Mutex
	pool   *chromium.Pool
	closed bool
}

var _ worker.Handler = (*Renderer)(nil)

// NewRenderer starts the egress proxy on loopback; the browsers start on the
// first render.
func NewRenderer(cfg RendererConfig) (*Renderer, error) {
	if cfg.Policy == nil || cfg.Upload == nil {
		return nil, errors.New("pdf renderer: Policy and Upload are required")
	}
	if cfg.SlowThreshold == 0 {
		cfg.SlowThreshold = 20 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	r := &Renderer{cfg: cfg, log: cfg.Logger.With("component", "pdf-render")}
	r.proxy = egress.NewProxy(cfg.Policy, cfg.Logger)
	if err := r.proxy.Start("127.0.0.1:0"); err != nil {
		return nil, fmt.Errorf("pdf renderer: %w", err)
	}
	r.cfg.Pool.ProxyURL = "http://" + r.proxy.Addr()
	if cfg.Metrics != nil {
		r.cfg.Pool.Hooks = cfg.Metrics.PoolHooks()
	}
	if r.cfg.Pool.Logger == nil {
		r.cfg.Pool.Logger = cfg.Logger
	}
	return r, nil
}

// Register binds the renderer to pdf.render on the three lanes.
func (r *Renderer) Register(reg *worker.Registry) {
	reg.Register(TypeRender, r, QueueFast, QueueNormal, QueueSlow)
}

// getPool starts the pool on first use; a failed start is retried by the
// next render.
func (r *Renderer) getPool(ctx context.Context) (*chromium.Pool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, chromium.ErrClosed
	}
	if r.pool != nil {
		return r.pool, nil
	}
	p, err := chromium.New(ctx, r.cfg.Pool)
	if err != nil {
		return nil, err
	}
	r.pool = p
	return p, nil
}

// Stats returns the browsers' stats (nil before the first render).
func (r *Renderer) Stats() []chromium.InstanceStats {
	r.mu.Lock()
	p := r.pool
	r.mu.Unlock()
	if p == nil {
		return []chromium.InstanceStats{}
	}
	return p.Stats()
}

// Close stops the browsers and the proxy; safe to call twice.
func (r *Renderer) Close() error {
	r.mu.Lock()
	p := r.pool
	r.closed = true
	r.mu.Unlock()
	if p != nil {
		_ = p.Close()
	}
	return r.proxy.Close()
}

var pageRE = regexp.MustCompile(`/Type\s*/Page[^s]`)

// Handle implements worker.Handler.
func (r *Renderer) Handle(ctx context.Context, t *baton.Task) baton.Result {
	var p payload
	if err := json.Unmarshal(t.Payload, &p); err != nil {
		return reject(RenderData{Kind: string(chromium.KindInvalid)}, "the task payload is not a PDF job")
	}
	job := chromium.Job{Options: p.Options, SessionID: t.ID}
	switch p.Source.Type {
	case "url":
		// A clear error before the browser starts: the guard proper is the
		// proxy, at connect time.
		u, err := r.cfg.Policy.CheckURL(p.Source.Content)
		if err != nil {
			return reject(RenderData{Kind: string(chromium.KindRefused)}, "the page URL is refused: "+baton.ErrorMessage(err))
		}
		job.URL = u.String()
	default:
		job.HTML, job.BaseURL = p.Source.Content, p.Source.BaseURL
	}
	laneCapped := false
	if th := r.cfg.SlowThreshold; th > 0 && t.Queue != QueueSlow {
		ms := int(th / time.Millisecond)
		if (job.Options.TimeoutMs == 0 || job.Options.TimeoutMs > ms) && job.Options.WaitDelayMs < ms {
			job.Options.TimeoutMs, laneCapped = ms, true
		}
	}
	pool, err := r.getPool(ctx)
	if err != nil {
		r.log.Error("start browsers", "err", err)
		return baton.Result{Outcome: baton.OutcomeRetry, Reason: "the renderer could not start a browser", RetryAfterMs: 5000}
	}
	sess := r.proxy.Session(t.ID)
	if sess == nil {
		return reject(RenderData{Kind: string(chromium.KindInvalid)}, "invalid task id")
	}
	out, rerr := pool.Render(ctx, job)
	refused := r.proxy.EndSession(t.ID)
	d := RenderData{DurationMs: out.Duration.Milliseconds(), FailedResources: out.FailedResources, FinalURL: out.FinalURL}
	for _, f := range refused {
		d.Refused = append(d.Refused, Refusal{Target: f.Target, Reason: f.Reason, Count: f.Count})
	}
	if rerr != nil {
		return r.failure(t, d, rerr, laneCapped)
	}
	info, err := r.cfg.Upload.Upload(ctx, t.ID, t.LeaseToken, out.PDF)
	if err != nil {
		if code := baton.ErrorCode(err); code == baton.ELeaseLost || code == baton.ENotFound {
			return baton.Result{Outcome: baton.OutcomeRetry, Reason: "lease lost before the upload"}
		}
		r.log.Error("upload pdf", "task", t.ID, "err", err)
		return baton.Result{Outcome: baton.OutcomeRetry, Reason: "storing the PDF failed"}
	}
	d.Kind, d.SHA256, d.Size = kindOK, info.SHA256, info.Size
	d.Pages = len(pageRE.FindAll(out.PDF, -1))
	b, _ := json.Marshal(d)
	return baton.Result{Outcome: baton.OutcomePass, Reason: fmt.Sprintf("rendered %d bytes", info.Size), Data: b}
}

func (r *Renderer) failure(t *baton.Task, d RenderData, err error, laneCapped bool) baton.Result {
	kind := chromium.ErrorKind(err)
	msg := chromium.ClientMessage(err)
	d.Kind = string(kind)
	switch {
	case errors.Is(err, chromium.ErrTimeout) && laneCapped:
		d.Kind = kindSlow
		return reject(d, fmt.Sprintf("the render ran past the %s budget of %s; moved to %s", r.cfg.SlowThreshold, t.Queue, QueueSlow))
	case errors.Is(err, chromium.ErrTimeout):
		d.Kind = kindTimeout
		return reject(d, msg)
	case errors.Is(err, chromium.ErrStalled):
		r.log.Warn("render stalled; retrying", "task", t.ID, "kind", kind, "err", err)
		b, _ := json.Marshal(d)
		return baton.Result{Outcome: baton.OutcomeRetry, Reason: msg, Data: b}
	case errors.Is(err, chromium.ErrInvalid), errors.Is(err, chromium.ErrNavigation):
		return reject(d, msg)
	}
	r.log.Warn("render interrupted; retrying", "task", t.ID, "kind", kind, "err", err)
	return baton.Result{Outcome: baton.OutcomeRetry, Reason: "render interrupted (" + string(kind) + ")"}
}

func reject(d RenderData, reason string) baton.Result {
	b, _ := json.Marshal(d)
	return baton.Result{Outcome: baton.OutcomeReject, Reason: reason, Data: b}
}
