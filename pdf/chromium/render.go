package chromium

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/inspector"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	cdpruntime "github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// Limits of a Job.
const (
	maxHTMLBytes      = 20 << 20
	maxURLBytes       = 8 << 10
	maxSessionBytes   = 256
	maxFailedReported = 50
)

// inlineURL is the document URL of inline HTML without a BaseURL. The
// .invalid TLD (RFC 2606) never resolves, so relative references fail
// instead of reaching a real host.
const inlineURL = "http://inline.baton.invalid/"

// Job is one render request: a URL, or inline HTML with an optional BaseURL.
type Job struct {
	// URL is an http or https page to render. Exactly one of URL and HTML.
	URL string `json:"url,omitempty"`
	// HTML is a document to render. It never touches the filesystem: the
	// browser's request for BaseURL is answered from memory (Fetch
	// interception), so the document has BaseURL's origin and its relative
	// links resolve against BaseURL.
	HTML string `json:"html,omitempty"`
	// BaseURL is the http(s) URL the inline HTML pretends to live at.
	BaseURL string `json:"baseUrl,omitempty"`
	// Options are the render options.
	Options Options `json:"options"`
	// SessionID is given to the egress proxy (Config.ProxyURL) as the user
	// name of its 407 challenge. Ignored without a proxy.
	SessionID string `json:"sessionId,omitempty"`
}

// Output is the result of a successful Render.
type Output struct {
	PDF []byte
	// Status is the HTTP status of the main document (200 for inline HTML).
	Status int
	// FinalURL is the main document's URL after redirects.
	FinalURL string
	// FailedResources lists sub-resources that failed or were refused
	// ("URL: net::ERR_..."), at most 50.
	FailedResources []string
	// Instance and BrowserPID identify the browser that rendered it.
	Instance   int
	BrowserPID int
	Duration   time.Duration
	// Phases is where the time of a successful render went.
	Phases Phases
}

// Phases times the parts of a render. Duration minus their sum is the wait
// for a render slot.
type Phases struct {
	Setup      time.Duration // page (taken or created) and the options applied
	Navigation time.Duration // navigation and the waits of the options
	Print      time.Duration // animation frames and Page.printToPDF
	ReusedPage bool          // a page made ready ahead of time (spare or warm)
}

// Validate checks the job and its options; errors match ErrInvalid.
func (j *Job) Validate() error {
	switch {
	case j.URL == "" && j.HTML == "":
		return invalidf("job: one of url and html is required")
	case j.URL != "" && j.HTML != "":
		return invalidf("job: url and html are mutually exclusive")
	case j.URL != "" && j.BaseURL != "":
		return invalidf("job: baseUrl is only for html")
	case len(j.HTML) > maxHTMLBytes:
		return invalidf("job: html is larger than %d bytes", maxHTMLBytes)
	case len(j.SessionID) > maxSessionBytes || strings.ContainsAny(j.SessionID, ":\r\n\x00"):
		return invalidf("job: sessionId must be at most %d bytes without ':' or line breaks", maxSessionBytes)
	}
	if j.URL != "" {
		if err := checkHTTPURL(j.URL); err != nil {
			return invalidf("job.url %s", err)
		}
	}
	if j.BaseURL != "" {
		if err := checkHTTPURL(j.BaseURL); err != nil {
			return invalidf("job.baseUrl %s", err)
		}
	}
	return j.Options.Validate()
}

func checkHTTPURL(s string) error {
	if len(s) > maxURLBytes {
		return fmt.Errorf("is longer than %d bytes", maxURLBytes)
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("must be an absolute http or https URL")
	}
	return nil
}

// Render renders job on a free browser of the pool, waiting for a free slot
// as long as ctx allows. Errors are *Error values matching the package's
// sentinels (ErrInvalid, ErrTimeout, ErrNavigation, ErrEgressRefused,
// ErrStalled with ErrBrowserCrashed or ErrHung, ErrClosed); a canceled ctx
// gives an error matching ctx.Err().
func (p *Pool) Render(ctx context.Context, job Job) (Output, error) {
	start := time.Now()
	out, err := p.render(ctx, &job)
	out.Duration = time.Since(start)
	if h := p.cfg.Hooks.OnRender; h != nil {
		h(out.Duration, ErrorKind(err))
	}
	if err != nil {
		return Output{}, err
	}
	return out, nil
}

func (p *Pool) render(ctx context.Context, job *Job) (Output, error) {
	if err := job.Validate(); err != nil {
		return Output{}, err
	}
	inst, b, err := p.acquire(ctx)
	if err != nil {
		return Output{}, err
	}
	r := &renderer{p: p, b: b, job: job, opts: &job.Options}
	out, err := r.run(ctx)
	out.Instance, out.BrowserPID = inst.id, b.pid
	// The page is closed (or cleaned, in warm mode) and the slot released
	// after Render returns, so that the caller stores the PDF meanwhile. A
	// closed page holds the slot until it is gone (disposing of a browser
	// context costs CPU that the next render would compete with); a warm
	// page is cleaned after the slot is released.
	tb, reuse := r.tab, err == nil && job.Options.UserAgent == ""
	finish := func() {
		switch {
		case tb == nil:
			p.release(inst, b)
		case p.keepWarm(tb, reuse):
			p.release(inst, b)
			p.cleanAndKeep(tb, &r.st)
		default:
			p.closeTab(tb)
			p.release(inst, b)
		}
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		finish()
	} else {
		p.wg.Add(1)
		p.mu.Unlock()
		go func() {
			defer p.wg.Done()
			finish()
		}()
	}
	if err != nil {
		var e *Error
		if errors.As(err, &e) && e.Kind == KindHung && !b.gone() {
			// The page or the browser stopped answering; find out which
			// before the next task lands on it.
			go p.check(inst, b)
		}
		p.log.Debug("render failed", "instance", inst.id, "pid", b.pid, "kind", ErrorKind(err), "err", err)
	}
	return out, err
}

// Causes of the cancellation of a render's context.
var (
	errCallerCanceled = errors.New("caller canceled")
	errBrowserGone    = errors.New("browser process exited")
	errPageCrashed    = errors.New("page renderer crashed")
)

// phaseTimeout is the cancellation cause when a phase ran out of time.
type phaseTimeout struct {
	phase  string
	budget bool // the job's own timeoutMs, not a pool timeout
	d      time.Duration
}

func (e *phaseTimeout) Error() string {
	return fmt.Sprintf("%s phase exceeded %s", e.phase, e.d)
}

// renderer holds the state of one render.
type renderer struct {
	p    *Pool
	b    *browserProc
	job  *Job
	opts *Options

	ctx    context.Context // the render's context carrying the tab's chromedp values
	cancel context.CancelCauseFunc
	t      *chromedp.Target
	tab    *tab

	reused bool // the page was a spare or a warm page

	phaseMu    sync.Mutex
	phase      string
	phaseTimer *time.Timer

	st pageState
}

// setPhase starts a phase with its own deadline; exceeding it cancels the
// render with a *phaseTimeout cause.
func (r *renderer) setPhase(name string, d time.Duration) {
	r.phaseMu.Lock()
	defer r.phaseMu.Unlock()
	if r.phaseTimer != nil {
		r.phaseTimer.Stop()
	}
	r.phase = name
	r.phaseTimer = time.AfterFunc(d, func() { r.cancel(&phaseTimeout{phase: name, d: d}) })
}

func (r *renderer) currentPhase() string {
	r.phaseMu.Lock()
	defer r.phaseMu.Unlock()
	return r.phase
}

func (r *renderer) run(callerCtx context.Context) (out Output, err error) {
	cfg := &r.p.cfg
	budget := cfg.NavigationTimeout + cfg.RenderTimeout
	fromJob := r.opts.TimeoutMs > 0
	if fromJob {
		budget = time.Duration(r.opts.TimeoutMs) * time.Millisecond
	}
	taskCtx, cancel := context.WithCancelCause(r.b.ctx)
	r.cancel = cancel
	defer cancel(nil)
	stopCaller := context.AfterFunc(callerCtx, func() { cancel(errCallerCanceled) })
	defer stopCaller()
	budgetTimer := time.AfterFunc(budget, func() { cancel(&phaseTimeout{phase: "budget", budget: fromJob, d: budget}) })
	defer budgetTimer.Stop()
	go func() {
		select {
		case <-r.b.exited:
			cancel(errBrowserGone)
		case <-taskCtx.Done():
		}
	}()
	defer func() {
		r.phaseMu.Lock()
		if r.phaseTimer != nil {
			r.phaseTimer.Stop()
		}
		r.phaseMu.Unlock()
		if err != nil {
			err = r.classify(callerCtx, taskCtx, err)
		}
	}()

	r.st.crashed = func() { cancel(errPageCrashed) }

	t0 := time.Now()
	r.setPhase("setup", cfg.RenderTimeout)
	if err := r.setup(taskCtx); err != nil {
		return out, err
	}
	t1 := time.Now()
	r.setPhase("navigation", min(cfg.NavigationTimeout, budget))
	if err := r.navigate(&out); err != nil {
		return out, err
	}
	t2 := time.Now()
	r.setPhase("print", cfg.RenderTimeout)
	pdf, err := r.print()
	if err != nil {
		return out, err
	}
	out.PDF = pdf
	out.FailedResources = r.st.failedList()
	out.Phases = Phases{Setup: t1.Sub(t0), Navigation: t2.Sub(t1), Print: time.Since(t2), ReusedPage: r.reused}
	return out, nil
}

// classify turns a raw error into an *Error with a client-safe message.
func (r *renderer) classify(callerCtx, taskCtx context.Context, err error) error {
	var e *Error
	if errors.As(err, &e) && e.Kind != KindInternal {
		return err
	}
	cause := context.Cause(taskCtx)
	var pt *phaseTimeout
	switch {
	case r.p.isClosed():
		return newError(KindClosed, err, "the renderer is shutting down")
	case errors.Is(cause, errCallerCanceled):
		return newError(KindCanceled, fmt.Errorf("%w: %w", callerCtx.Err(), err), "canceled")
	case errors.Is(cause, errBrowserGone) || r.b.gone():
		return newError(KindCrashed, fmt.Errorf("browser pid %d (%s): %w", r.b.pid, exitText(r.b), err), "the browser crashed during the render")
	case errors.Is(cause, errPageCrashed):
		return newError(KindCrashed, err, "the page's renderer process crashed")
	case errors.As(cause, &pt):
		phase := pt.phase
		if phase == "budget" {
			phase = r.currentPhase()
			if pt.budget && phase == "print" {
				return newError(KindTimeout, err, "the render did not finish within options.timeoutMs")
			}
		}
		switch phase {
		case "navigation":
			if r.opts.WaitForSelector != "" && r.st.loaded() {
				return newError(KindTimeout, err, "options.waitForSelector did not match before the timeout")
			}
			return newError(KindTimeout, err, "the page did not finish loading before the timeout")
		case "setup":
			return newError(KindHung, err, "the browser did not answer")
		default:
			return newError(KindHung, err, "printing did not finish before the render timeout")
		}
	}
	return newError(KindInternal, err, "render failed")
}

// setup creates the page and applies the options that must precede the
// navigation.
func (r *renderer) setup(taskCtx context.Context) error {
	// A page in a browser context of its own (like an incognito profile:
	// own cookies, cache, storage): created ahead of time or now.
	tb, reused, err := r.p.getTab(r.b, taskCtx)
	if err != nil {
		return err
	}
	r.tab, r.reused, r.t = tb, reused, tb.t
	r.p.refill(r.b)
	r.ctx = renderCtx{Context: taskCtx, vals: tb.ctx}
	r.st.init(tb.frame)
	r.st.addOrigin(r.docURL())
	tb.st.Store(&r.st)
	if err := tb.ctx.Err(); err != nil {
		return fmt.Errorf("page closed: %w", err)
	}

	o := r.opts
	if o.UserAgent != "" {
		if _, err := cdp.Call(r.ctx, r.t, emulation.SetUserAgentOverride, emulation.SetUserAgentOverrideParams{UserAgent: o.UserAgent}); err != nil {
			return fmt.Errorf("set user agent: %w", err)
		}
	}
	if o.EmulateMedia == "screen" {
		r.st.mediaSet = true
		if _, err := cdp.Call(r.ctx, r.t, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Media: "screen"}); err != nil {
			return fmt.Errorf("emulate media: %w", err)
		}
	}
	if len(o.ExtraHTTPHeaders) > 0 {
		r.st.headersSet = true
		if _, err := cdp.Call(r.ctx, r.t, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{Headers: o.headerParams()}); err != nil {
			return fmt.Errorf("set headers: %w", err)
		}
	}
	if len(o.Cookies) > 0 {
		if _, err := cdp.Call(r.ctx, r.t, network.SetCookies, network.SetCookiesParams{Cookies: o.cookieParams(r.docURL())}); err != nil {
			var ce *cdproto.Error
			if errors.As(err, &ce) {
				return newError(KindInvalid, err, "options.cookies were refused by the browser: %s", truncate(ce.Message, 200))
			}
			return fmt.Errorf("set cookies: %w", err)
		}
	}

	// Fetch interception answers the inline HTML from memory and the
	// proxy's 407 challenge with the session's credentials.
	inline := r.job.HTML != ""
	auth := r.p.cfg.ProxyURL != "" && r.job.SessionID != ""
	if inline || auth {
		params := fetch.EnableParams{Patterns: []*fetch.RequestPattern{{URLPattern: "*", ResourceType: network.ResourceTypeDocument}}}
		if auth {
			params = fetch.EnableParams{Patterns: []*fetch.RequestPattern{{URLPattern: "*"}}, HandleAuthRequests: ptr(true)}
		}
		r.st.fetchOn = true
		work := r.st.enableFetch()
		go r.fetchLoop(work)
		if _, err := cdp.Call(r.ctx, r.t, fetch.Enable, params); err != nil {
			return fmt.Errorf("enable fetch: %w", err)
		}
	}
	return nil
}

func (r *renderer) docURL() string {
	if r.job.URL != "" {
		return r.job.URL
	}
	if r.job.BaseURL != "" {
		return r.job.BaseURL
	}
	return inlineURL
}

// fetchLoop answers paused requests and auth challenges, in order, off the
// event goroutine.
func (r *renderer) fetchLoop(work <-chan struct{}) {
	authTried := make(map[fetch.RequestID]bool)
	fulfilled := false
	for {
		select {
		case <-r.ctx.Done():
			return
		case <-work:
		}
		for _, ev := range r.st.takeFetch() {
			var err error
			switch ev := ev.(type) {
			case *fetch.EventRequestPaused:
				if r.job.HTML != "" && !fulfilled && ev.ResourceType == network.ResourceTypeDocument && ev.FrameID == r.st.mainFrame {
					fulfilled = true
					_, err = cdp.Call(r.ctx, r.t, fetch.FulfillRequest, fetch.FulfillRequestParams{
						RequestID:       ev.RequestID,
						ResponseCode:    200,
						ResponseHeaders: []*fetch.HeaderEntry{{Name: "Content-Type", Value: "text/html; charset=utf-8"}, {Name: "Cache-Control", Value: "no-store"}},
						Body:            []byte(r.job.HTML),
					})
				} else {
					_, err = cdp.Call(r.ctx, r.t, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: ev.RequestID})
				}
			case *fetch.EventAuthRequired:
				resp := &fetch.AuthChallengeResponse{Response: fetch.AuthChallengeResponseResponseCancelAuth}
				if ev.AuthChallenge != nil && ev.AuthChallenge.Source == fetch.AuthChallengeSourceProxy && !authTried[ev.RequestID] {
					authTried[ev.RequestID] = true
					resp = &fetch.AuthChallengeResponse{Response: fetch.AuthChallengeResponseResponseProvideCredentials, Username: r.job.SessionID, Password: "x"}
				}
				_, err = cdp.Call(r.ctx, r.t, fetch.ContinueWithAuth, fetch.ContinueWithAuthParams{RequestID: ev.RequestID, AuthChallengeResponse: resp})
			}
			if err != nil && r.ctx.Err() == nil {
				r.p.log.Debug("fetch interception", "err", err)
			}
		}
	}
}

// navigate loads the document and waits as the options say.
func (r *renderer) navigate(out *Output) error {
	target := r.docURL()
	res, err := cdp.Call(r.ctx, r.t, page.Navigate, page.NavigateParams{URL: target})
	if err != nil {
		return fmt.Errorf("navigate: %w", err)
	}
	loader := res.LoaderID
	r.st.setLoader(loader)
	doc := r.st.docResponse(loader)
	if res.ErrorText != "" {
		return r.navError(res.ErrorText, doc)
	}
	if res.IsDownload {
		return newError(KindNavigation, nil, "navigation failed: the URL is a download, not a page")
	}

	need := []string{"load"}
	if r.opts.WaitUntil == WaitNetworkIdle {
		need = append(need, "networkIdle")
	}
	if err := r.st.waitLifecycle(r.ctx, loader, need...); err != nil {
		return err
	}
	doc = r.st.docResponse(loader)
	if doc != nil {
		out.Status, out.FinalURL = int(doc.Status), doc.URL
		if r.p.cfg.ProxyURL != "" && doc.Status == 403 && headerPresent(doc.Headers, "Proxy-Status") {
			return newError(KindRefused, fmt.Errorf("proxy answered 403 for %s", doc.URL), "the page was refused by egress policy")
		}
	}
	if r.job.HTML != "" {
		out.Status, out.FinalURL = 200, target
	}

	if sel := r.opts.WaitForSelector; sel != "" {
		if err := r.waitSelector(sel); err != nil {
			return err
		}
	}
	if d := r.opts.WaitDelayMs; d > 0 {
		t := time.NewTimer(time.Duration(d) * time.Millisecond)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.ctx.Done():
			return r.ctx.Err()
		}
	}
	return nil
}

// navError maps Chromium's net error for the main document.
func (r *renderer) navError(text string, doc *network.Response) error {
	proxied := r.p.cfg.ProxyURL != ""
	if proxied && (strings.Contains(text, "ERR_TUNNEL_CONNECTION_FAILED") || strings.Contains(text, "PROXY_AUTH")) {
		return newError(KindRefused, fmt.Errorf("main document: %s", text), "the page was refused by egress policy")
	}
	if proxied && doc != nil && doc.Status == 403 {
		return newError(KindRefused, fmt.Errorf("main document: %s", text), "the page was refused by egress policy")
	}
	return newError(KindNavigation, fmt.Errorf("main document: %s", text), "navigation failed: %s", text)
}

func headerPresent(h network.Headers, name string) bool {
	for k := range h {
		if strings.EqualFold(k, name) {
			return true
		}
	}
	return false
}

// waitSelector polls until the selector matches an element.
func (r *renderer) waitSelector(sel string) error {
	q, _ := json.Marshal(sel)
	expr := "document.querySelector(" + string(q) + ") !== null"
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		res, err := cdp.Call(r.ctx, r.t, cdpruntime.Evaluate, cdpruntime.EvaluateParams{Expression: expr, ReturnByValue: ptr(true)})
		if err != nil {
			return fmt.Errorf("wait for selector: %w", err)
		}
		if res.ExceptionDetails != nil {
			if strings.Contains(exceptionText(res.ExceptionDetails), "not a valid selector") {
				return invalidf("options.waitForSelector is not a valid CSS selector")
			}
			// The document may be navigating; try again.
		} else if res.Result != nil && string(res.Result.Value) == "true" {
			return nil
		}
		select {
		case <-tick.C:
		case <-r.ctx.Done():
			return r.ctx.Err()
		}
	}
}

func exceptionText(d *cdpruntime.ExceptionDetails) string {
	s := d.Text
	if d.Exception != nil {
		s += " " + d.Exception.Description
	}
	return s
}

// print waits for two animation frames (so requestAnimationFrame drawing is
// done) and prints.
func (r *renderer) print() ([]byte, error) {
	_, err := cdp.Call(r.ctx, r.t, cdpruntime.Evaluate, cdpruntime.EvaluateParams{
		Expression:   "new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))",
		AwaitPromise: ptr(true), ReturnByValue: ptr(true),
	})
	if err != nil {
		return nil, fmt.Errorf("wait for animation frames: %w", err)
	}
	params := r.opts.printParams()
	pdf, err := chromedp.Run(r.ctx, chromedp.PrintToPDF(func(p *page.PrintToPDFParams) { *p = params }))
	if err != nil {
		var ce *cdproto.Error
		if errors.As(err, &ce) && r.opts.PageRanges != "" && strings.Contains(strings.ToLower(ce.Message), "range") {
			return nil, newError(KindInvalid, err, "options.pageRanges selects no page of the document")
		}
		return nil, fmt.Errorf("print: %w", err)
	}
	return pdf, nil
}

// pageState collects what the page's events tell us. onEvent runs on the
// target's event goroutine and must not block or call the browser.
type pageState struct {
	mu        sync.Mutex
	mainFrame cdp.FrameID
	loader    cdp.LoaderID
	lifecycle map[cdp.LoaderID]map[string]bool
	docs      map[cdp.LoaderID]*network.Response
	urls      map[network.RequestID]string
	failed    []string
	notify    chan struct{}
	crashed   func()

	fetchWork  chan struct{}
	fetchQueue []any

	// What a warm page must undo after the task (set before the calls).
	fetchOn, headersSet, mediaSet bool
	origins                       map[string]bool
}

// addOrigin remembers the origin of an http(s) URL the page used, for the
// warm page's cleanup.
func (s *pageState) addOrigin(u string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.addOriginLocked(u)
}

// addOriginLocked is addOrigin with s.mu held (at most 1000 origins).
func (s *pageState) addOriginLocked(u string) {
	o := originOf(u)
	if o == "" || len(s.origins) >= 1000 {
		return
	}
	if s.origins == nil {
		s.origins = make(map[string]bool)
	}
	s.origins[o] = true
}

func (s *pageState) originList() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.origins))
	for o := range s.origins {
		out = append(out, o)
	}
	return out
}

func (s *pageState) init(mainFrame cdp.FrameID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mainFrame = mainFrame
}

func (s *pageState) lazyInit() {
	if s.lifecycle == nil {
		s.lifecycle = make(map[cdp.LoaderID]map[string]bool)
		s.docs = make(map[cdp.LoaderID]*network.Response)
		s.urls = make(map[network.RequestID]string)
		s.notify = make(chan struct{}, 1)
	}
}

func (s *pageState) signal() {
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

func (s *pageState) onEvent(ev any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lazyInit()
	switch ev := ev.(type) {
	case *page.EventLifecycleEvent:
		if ev.FrameID != s.mainFrame && s.mainFrame != "" {
			return
		}
		m := s.lifecycle[ev.LoaderID]
		if m == nil {
			m = make(map[string]bool)
			s.lifecycle[ev.LoaderID] = m
		}
		m[ev.Name] = true
		s.signal()
	case *network.EventRequestWillBeSent:
		if len(s.urls) < 5000 && ev.Request != nil {
			s.urls[ev.RequestID] = ev.Request.URL
			s.addOriginLocked(ev.Request.URL)
		}
	case *network.EventResponseReceived:
		if ev.Type == network.ResourceTypeDocument && string(ev.RequestID) == string(ev.LoaderID) {
			s.docs[ev.LoaderID] = ev.Response
		}
	case *network.EventLoadingFailed:
		if string(ev.RequestID) == string(s.loader) || len(s.failed) >= maxFailedReported {
			return
		}
		u := s.urls[ev.RequestID]
		if u == "" || strings.HasPrefix(u, "data:") {
			return
		}
		reason := ev.ErrorText
		if ev.BlockedReason != "" {
			reason += " (" + string(ev.BlockedReason) + ")"
		}
		s.failed = append(s.failed, truncate(u, 512)+": "+reason)
	case *inspector.EventTargetCrashed:
		if s.crashed != nil {
			go s.crashed()
		}
	case *fetch.EventRequestPaused, *fetch.EventAuthRequired:
		if s.fetchWork != nil {
			s.fetchQueue = append(s.fetchQueue, ev)
			select {
			case s.fetchWork <- struct{}{}:
			default:
			}
		}
	}
}

// enableFetch starts queueing Fetch events and returns the channel that
// signals new ones.
func (s *pageState) enableFetch() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fetchWork = make(chan struct{}, 1)
	return s.fetchWork
}

func (s *pageState) takeFetch() []any {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.fetchQueue
	s.fetchQueue = nil
	return q
}

func (s *pageState) setLoader(l cdp.LoaderID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lazyInit()
	s.loader = l
}

func (s *pageState) docResponse(l cdp.LoaderID) *network.Response {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.docs[l]
}

// loaded reports whether the main document fired its load event.
func (s *pageState) loaded() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lifecycle[s.loader]["load"]
}

func (s *pageState) failedList() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.failed...)
}

// waitLifecycle waits until the main frame's document from loader fired
// every named lifecycle event.
func (s *pageState) waitLifecycle(ctx context.Context, loader cdp.LoaderID, names ...string) error {
	for {
		s.mu.Lock()
		s.lazyInit()
		ok := true
		for _, n := range names {
			ok = ok && s.lifecycle[loader][n]
		}
		ch := s.notify
		s.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
