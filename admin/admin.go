package admin

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	baton "github.com/batonhq/baton"
	"github.com/batonhq/baton/controller"
	"github.com/batonhq/baton/httpapi"
	"github.com/batonhq/baton/ledger"
	"github.com/batonhq/baton/pipeline"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Body limits of the UI's forms.
const (
	// FormBodyLimit bounds an ordinary form post.
	FormBodyLimit = 1 << 20
	// ImportBodyLimit bounds a domain import (pasted or uploaded); bigger
	// files go through baton domains import, which sends them in parts.
	ImportBodyLimit = 8 << 20
)

// Config is what the UI is built from. Controller, Pipeline and DB are
// required; the others are optional.
type Config struct {
	// AdminToken is the token operators sign in with; default the API
	// server's Tokens().Admin (Mount fills it).
	AdminToken string
	// Controller gives queues, workers, pause/resume.
	Controller *controller.Controller
	// Pipeline gives the step configuration and the dispatcher.
	Pipeline *pipeline.Service
	// DB is the main DB (domains, funnel, import).
	DB *ledger.DB
	// Metrics is gathered for the throughput chart (the sum of
	// baton_task_outcomes_total); nil leaves the chart empty.
	Metrics prometheus.Gatherer
	// PDF is the PDF service; nil shows the PDF pages as not connected.
	PDF PDFBackend
	// SessionIdle ends a session unused this long; default 8h.
	SessionIdle time.Duration
	// SessionMax ends any session this old; default 7 days.
	SessionMax time.Duration
	// SecureCookies marks cookies Secure also on plain-HTTP requests (set it
	// behind a TLS-terminating proxy); TLS requests always get Secure.
	SecureCookies bool
	// RefreshEvery is the dashboard's refresh period; default 5s.
	RefreshEvery time.Duration
	// SampleEvery is how often the throughput counter is sampled; default 10s.
	SampleEvery time.Duration
	// Clock; default time.Now.
	Clock func() time.Time
	// Logger; default slog.Default().
	Logger *slog.Logger
}

// UI is the admin web UI, an http.Handler for GET / and /ui/.
type UI struct {
	cfg    Config
	log    *slog.Logger
	sess   *sessions
	pages  map[string]*template.Template
	mux    *http.ServeMux
	static http.Handler
	tp     *throughput

	startOnce sync.Once
	stopOnce  sync.Once
	cancel    context.CancelFunc
	runCtx    context.Context
	wg        sync.WaitGroup
}

// New builds the UI; Start runs its background sampler.
func New(cfg Config) (*UI, error) {
	if cfg.Controller == nil || cfg.Pipeline == nil || cfg.DB == nil {
		return nil, errors.New("admin: Config.Controller, Pipeline and DB are required")
	}
	if cfg.AdminToken == "" {
		return nil, errors.New("admin: Config.AdminToken is required (--admin-token)")
	}
	if cfg.SessionIdle <= 0 {
		cfg.SessionIdle = 8 * time.Hour
	}
	if cfg.SessionMax <= 0 {
		cfg.SessionMax = 7 * 24 * time.Hour
	}
	if cfg.RefreshEvery <= 0 {
		cfg.RefreshEvery = 5 * time.Second
	}
	if cfg.SampleEvery <= 0 {
		cfg.SampleEvery = 10 * time.Second
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	u := &UI{cfg: cfg, log: cfg.Logger.With("component", "admin"), sess: newSessions(cfg.SessionIdle, cfg.SessionMax, cfg.Clock),
		tp: newThroughput(60)}
	u.runCtx, u.cancel = context.WithCancel(context.Background())
	if err := u.parseTemplates(); err != nil {
		return nil, err
	}
	sub, err := fs.Sub(staticFS, "static")
	if err != nil {
		return nil, err
	}
	u.static = http.StripPrefix("/ui/static/", http.FileServerFS(sub))
	u.routes()
	return u, nil
}

// Mount builds the UI from cfg (AdminToken defaults to the server's admin
// token), mounts it on srv and starts its sampler. Call Close at shutdown.
func Mount(srv *httpapi.Server, cfg Config) (*UI, error) {
	if cfg.AdminToken == "" {
		cfg.AdminToken = srv.Tokens().Admin
	}
	if cfg.Logger == nil {
		cfg.Logger = srv.Log()
	}
	u, err := New(cfg)
	if err != nil {
		return nil, err
	}
	srv.HandleRaw("GET /{$}", u)
	srv.HandleRaw("/ui/", u)
	u.Start()
	return u, nil
}

// Start runs the throughput sampler until Close; safe to call twice.
func (u *UI) Start() {
	u.startOnce.Do(func() {
		u.wg.Add(1)
		go func() { defer u.wg.Done(); u.sampleLoop(u.runCtx) }()
	})
}

// Close stops the sampler and any background scan; safe to call twice.
func (u *UI) Close() error {
	u.stopOnce.Do(func() {
		u.cancel()
		u.wg.Wait()
	})
	return nil
}

// handlerFunc is a UI handler: it returns an error to be shown as a page.
type handlerFunc func(w http.ResponseWriter, r *http.Request, ss *session) error

func (u *UI) routes() {
	m := http.NewServeMux()
	m.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/ui/", http.StatusSeeOther) })
	m.Handle("GET /ui/static/", u.static)
	m.HandleFunc("GET /ui/login", u.loginPage)
	m.HandleFunc("POST /ui/login", u.login)
	m.HandleFunc("GET /ui/lang", u.setLang)
	m.Handle("POST /ui/logout", u.post(FormBodyLimit, u.logout))

	m.Handle("GET /ui/{$}", u.get(u.dashboard))
	m.Handle("GET /ui/live", u.getPartial(u.live))
	m.Handle("POST /ui/queues/{name}/{action}", u.post(FormBodyLimit, u.queueAction))

	m.Handle("GET /ui/pipeline", u.get(u.pipelinePage))
	m.Handle("POST /ui/pipeline", u.post(FormBodyLimit, u.savePipeline))
	m.Handle("POST /ui/pipeline/scan", u.post(FormBodyLimit, u.scan))

	m.Handle("GET /ui/domains", u.get(u.domainsPage))
	m.Handle("POST /ui/domains/import", u.post(ImportBodyLimit, u.importDomains))
	m.Handle("GET /ui/domains/{name}", u.get(u.domainPage))

	m.Handle("GET /ui/pdf", u.get(u.pdfTasksPage))
	m.Handle("GET /ui/pdf/{id}", u.get(u.pdfTaskPage))
	m.Handle("GET /ui/pdf/{id}/result", u.get(u.pdfResult))
	m.Handle("POST /ui/pdf/{id}/replay", u.post(FormBodyLimit, u.replay))
	m.Handle("GET /ui/keys", u.get(u.keysPage))
	m.Handle("POST /ui/keys", u.post(FormBodyLimit, u.createKey))
	m.Handle("POST /ui/keys/{id}/revoke", u.post(FormBodyLimit, u.revokeKey))

	m.Handle("/ui/", u.get(func(w http.ResponseWriter, r *http.Request, ss *session) error {
		return baton.Errorf(baton.ENotFound, "no page %s", r.URL.Path)
	}))
	u.mux = m
}

// ServeHTTP implements http.Handler: security headers, panics turned into a
// plain error page (the stack goes to the log only), then the routes.
func (u *UI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "+
		"object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			u.log.Error("panic in admin handler", "path", r.URL.Path, "panic", v, "stack", string(debug.Stack()))
			http.Error(w, "internal error", http.StatusInternalServerError)
		}
	}()
	u.mux.ServeHTTP(w, r)
}

// get wraps a page that needs a session; without one the browser is sent to
// the sign-in page and comes back afterwards.
func (u *UI) get(h handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ss := u.session(r)
		if ss == nil {
			http.Redirect(w, r, "/ui/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		if err := h(w, r, ss); err != nil {
			u.fail(w, r, ss, err)
		}
	})
}

// getPartial wraps a fragment fetched by script: 401 instead of a redirect.
func (u *UI) getPartial(h handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ss := u.session(r)
		if ss == nil {
			http.Error(w, "sign in", http.StatusUnauthorized)
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		if err := h(w, r, ss); err != nil {
			u.log.Warn("partial failed", "path", r.URL.Path, "err", err)
			http.Error(w, baton.ErrorMessage(err), httpapi.StatusOf(baton.ErrorCode(err)))
		}
	})
}

// post wraps a form handler: a session, a body of at most limit bytes, a
// same-origin request and the session's CSRF token are all required.
func (u *UI) post(limit int64, h handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ss := u.session(r)
		if ss == nil {
			u.forbidden(w, r, "sign in first")
			return
		}
		if !sameOrigin(r) {
			u.forbidden(w, r, "cross-origin form refused")
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, limit)
		if err := parseForm(r); err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				u.fail(w, r, ss, baton.Errorf(baton.ETooLarge, "the form is larger than %d bytes", limit))
				return
			}
			u.fail(w, r, ss, baton.Errorf(baton.EInvalid, "cannot read the form"))
			return
		}
		if !equal(r.PostFormValue("csrf"), ss.csrf) {
			u.forbidden(w, r, "missing or wrong CSRF token: reload the page and try again")
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		if err := h(w, r, ss); err != nil {
			u.fail(w, r, ss, err)
		}
	})
}

// parseForm reads a urlencoded or multipart body.
func parseForm(r *http.Request) error {
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mt == "multipart/form-data" {
		return r.ParseMultipartForm(ImportBodyLimit)
	}
	return r.ParseForm()
}

// sameOrigin refuses a request whose Origin (sent by browsers with every
// POST) names another host. Requests without Origin (old browsers, tools)
// are left to the CSRF token.
func sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	if o == "null" {
		return false
	}
	ou, err := url.Parse(o)
	return err == nil && strings.EqualFold(ou.Host, r.Host)
}

func (u *UI) forbidden(w http.ResponseWriter, r *http.Request, msg string) {
	u.errorPage(w, r, nil, http.StatusForbidden, msg)
}

// fail shows err as a page: its safe message, never its cause.
func (u *UI) fail(w http.ResponseWriter, r *http.Request, ss *session, err error) {
	code := baton.ErrorCode(err)
	status := httpapi.StatusOf(code)
	if status >= 500 {
		u.log.Error("admin page failed", "method", r.Method, "path", r.URL.Path, "code", code, "err", err)
	}
	u.errorPage(w, r, ss, status, baton.ErrorMessage(err))
}

type errorData struct {
	*base
	Status  int
	Message string
}

func (u *UI) errorPage(w http.ResponseWriter, r *http.Request, ss *session, status int, msg string) {
	b := u.base(r, ss, "", "error")
	u.render(w, r, status, "error", &errorData{base: b, Status: status, Message: msg})
}

// render executes a page into a buffer first, so that a template error never
// leaves half a page.
func (u *UI) render(w http.ResponseWriter, r *http.Request, status int, name string, data any) {
	u.renderTemplate(w, r, status, name, "layout", data)
}

func (u *UI) renderTemplate(w http.ResponseWriter, r *http.Request, status int, page, tmpl string, data any) {
	t, ok := u.pages[page]
	if !ok {
		u.log.Error("no template", "page", page)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, tmpl, data); err != nil {
		u.log.Error("render page", "page", page, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// redirect answers a successful POST (post/redirect/get) with a flash
// message for the next page.
func (u *UI) redirect(w http.ResponseWriter, r *http.Request, ss *session, to, flashKey, flashArg string) {
	if flashKey != "" {
		u.sess.setFlash(ss, flashKey, flashArg)
	}
	http.Redirect(w, r, to, http.StatusSeeOther)
}

// base is what every page's layout needs.
type base struct {
	Lang      string
	Other     string // the language the switch offers
	CSRF      string
	Nav       string
	TitleKey  string
	Path      string
	Flash     string
	SignedIn  bool
	RefreshMs int64
}

// T translates a catalogue key.
func (b *base) T(key string) string { return tr(b.Lang, key) }

// Tf translates a catalogue key and formats it with args.
func (b *base) Tf(key string, args ...any) string { return fmt.Sprintf(tr(b.Lang, key), args...) }

func (u *UI) base(r *http.Request, ss *session, nav, title string) *base {
	b := u.partialBase(r, ss, nav, title)
	if ss != nil {
		if k, a := u.sess.takeFlash(ss); k != "" {
			b.Flash = tr(b.Lang, k)
			if a != "" {
				b.Flash = fmt.Sprintf(b.Flash, a)
			}
		}
	}
	return b
}

// partialBase is base without taking the session's flash message (for the
// fragments a page fetches, which do not show it).
func (u *UI) partialBase(r *http.Request, ss *session, nav, title string) *base {
	lang := pickLang(r)
	b := &base{Lang: lang, Other: otherLang(lang), Nav: nav, TitleKey: title, Path: r.URL.RequestURI(),
		RefreshMs: u.cfg.RefreshEvery.Milliseconds()}
	if ss != nil {
		b.SignedIn, b.CSRF = true, ss.csrf
	}
	return b
}

// setLang stores the chosen language in a cookie and goes back.
func (u *UI) setLang(w http.ResponseWriter, r *http.Request) {
	l := r.URL.Query().Get("to")
	if l != "zh" && l != "en" {
		l = "en"
	}
	c := u.cookie(r, langCookie, l, 365*24*3600)
	http.SetCookie(w, c)
	http.Redirect(w, r, localPath(r.URL.Query().Get("back")), http.StatusSeeOther)
}

// localPath keeps a redirect target inside the UI (no open redirect).
func localPath(p string) string {
	if !strings.HasPrefix(p, "/ui/") || strings.HasPrefix(p, "//") || strings.ContainsAny(p, "\\\r\n") {
		return "/ui/"
	}
	return p
}

type loginData struct {
	*base
	Token string
	Next  string
	Error string
}

func (u *UI) loginPage(w http.ResponseWriter, r *http.Request) {
	if u.session(r) != nil {
		http.Redirect(w, r, localPath(r.URL.Query().Get("next")), http.StatusSeeOther)
		return
	}
	u.showLogin(w, r, http.StatusOK, "")
}

func (u *UI) showLogin(w http.ResponseWriter, r *http.Request, status int, errKey string) {
	tok := randomToken()
	http.SetCookie(w, u.cookie(r, loginCookie, tok, 3600))
	w.Header().Set("Cache-Control", "no-store")
	b := u.base(r, nil, "", "signIn")
	d := &loginData{base: b, Token: tok, Next: localPath(r.FormValue("next"))}
	if errKey != "" {
		d.Error = b.T(errKey)
	}
	u.render(w, r, status, "login", d)
}

// login checks the admin token and starts a session. The form carries the
// pre-session token of its cookie (login CSRF).
func (u *UI) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if err := r.ParseForm(); err != nil || !sameOrigin(r) {
		u.forbidden(w, r, "cannot read the sign-in form")
		return
	}
	c, err := r.Cookie(loginCookie)
	if err != nil || !equal(r.PostFormValue("csrf"), c.Value) {
		u.showLogin(w, r, http.StatusForbidden, "loginExpired")
		return
	}
	if !equal(strings.TrimSpace(r.PostFormValue("token")), u.cfg.AdminToken) {
		u.log.Warn("admin sign-in refused", "remote", r.RemoteAddr)
		u.showLogin(w, r, http.StatusUnauthorized, "loginWrong")
		return
	}
	ss := u.sess.create()
	http.SetCookie(w, u.cookie(r, loginCookie, "", -1))
	http.SetCookie(w, u.cookie(r, sessionCookie, ss.id, 0))
	http.Redirect(w, r, localPath(r.PostFormValue("next")), http.StatusSeeOther)
}

func (u *UI) logout(w http.ResponseWriter, r *http.Request, ss *session) error {
	u.sess.drop(ss.id)
	http.SetCookie(w, u.cookie(r, sessionCookie, "", -1))
	http.Redirect(w, r, "/ui/login", http.StatusSeeOther)
	return nil
}
