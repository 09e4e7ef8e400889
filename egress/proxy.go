package egress

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/batonhq/baton"
)

// MaxRefusalsPerSession bounds the distinct refusals a Session keeps; later
// distinct ones are counted in Session.Overflow only. A page cannot grow the
// proxy's memory without limit by requesting many refused URLs.
const MaxRefusalsPerSession = 1000

// Refusal is one refused request in a Session.
type Refusal struct {
	// Target is the URL of a plain HTTP request, or host:port of a CONNECT
	// (HTTPS or WebSocket tunnel).
	Target string
	// Reason says why it was refused.
	Reason string
	// Count is how many times this Target was refused for this Reason.
	Count int
}

// Session collects what the proxy refused on behalf of one caller (one PDF
// task). It is safe for concurrent use.
type Session struct {
	id string

	mu       sync.Mutex
	refused  []Refusal
	index    map[string]int
	overflow int
}

// ID returns the session ID (the proxy user name).
func (s *Session) ID() string { return s.id }

// Refused returns a copy of the refusals so far, in first-seen order.
func (s *Session) Refused() []Refusal {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Refusal(nil), s.refused...)
}

// Overflow returns how many distinct refusals were not kept because the
// session already held MaxRefusalsPerSession.
func (s *Session) Overflow() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.overflow
}

func (s *Session) record(target, reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := target + "\x00" + reason
	if i, ok := s.index[key]; ok {
		s.refused[i].Count++
		return
	}
	if len(s.refused) >= MaxRefusalsPerSession {
		s.overflow++
		return
	}
	if s.index == nil {
		s.index = make(map[string]int)
	}
	s.index[key] = len(s.refused)
	s.refused = append(s.refused, Refusal{Target: target, Reason: reason, Count: 1})
}

// Proxy is a forward HTTP proxy for Chromium that connects only through a
// Policy: plain HTTP requests in absolute form are forwarded, CONNECT
// tunnels (HTTPS, WSS, WS) are opened, and every connection it makes is
// judged against the address actually dialed. A refused request gets 403
// with a short text body and is recorded in the caller's Session; the
// refused address is never connected to.
//
// Callers identify their session with proxy credentials: user name = the
// session ID, password ignored (http://<session>:x@127.0.0.1:PORT). Requests
// without credentials or with an unknown session get 407. The session ID is
// a label for reporting, not a secret: knowing one grants nothing the policy
// does not already allow.
type Proxy struct {
	policy    *Policy
	log       *slog.Logger
	transport *http.Transport
	rp        *httputil.ReverseProxy

	mu       sync.Mutex
	sessions map[string]*Session
	ln       net.Listener
	srv      *http.Server
	tunnels  map[net.Conn]struct{}
	closed   bool
	wg       sync.WaitGroup
}

var _ http.Handler = (*Proxy)(nil)

// NewProxy returns a proxy that dials through policy (which must not be
// nil). A nil logger discards logs. The proxy does not listen until Start;
// it can also be mounted as an http.Handler on a server of the caller's.
func NewProxy(policy *Policy, logger *slog.Logger) *Proxy {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	logger = logger.With("component", "egress-proxy")
	p := &Proxy{
		policy:   policy,
		log:      logger,
		sessions: make(map[string]*Session),
		tunnels:  make(map[net.Conn]struct{}),
	}
	p.transport = &http.Transport{
		Proxy:                 nil,
		DialContext:           policy.DialContext,
		MaxIdleConnsPerHost:   8,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 60 * time.Second,
		DisableCompression:    true, // pass the browser's Accept-Encoding through
	}
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			st := pr.In.Context().Value(stateKey{}).(*reqState)
			u := *st.url
			pr.Out.URL = &u
			pr.Out.Host = u.Host
		},
		Transport:    p.transport,
		ErrorLog:     slog.NewLogLogger(logger.Handler(), slog.LevelDebug),
		ErrorHandler: p.upstreamError,
	}
	return p
}

type stateKey struct{}

type reqState struct {
	sess *Session
	url  *url.URL
}

// Start listens on addr, which must be a loopback IP and port
// ("127.0.0.1:0" when empty: any free port), and serves in the background.
// It fails if the proxy was started or closed before.
func (p *Proxy) Start(addr string) error {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("egress proxy: listen address %q: %w", addr, err)
	}
	if ip, err := netip.ParseAddr(host); err != nil || !ip.IsLoopback() {
		return fmt.Errorf("egress proxy: listen address %q is not a loopback IP", addr)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.srv != nil {
		return errors.New("egress proxy: already started or closed")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("egress proxy: listen: %w", err)
	}
	p.ln = ln
	p.srv = &http.Server{
		Handler:           p,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       90 * time.Second,
		ErrorLog:          slog.NewLogLogger(p.log.Handler(), slog.LevelDebug),
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		if err := p.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			p.log.Error("serve", "err", err)
		}
	}()
	p.log.Info("listening", "addr", ln.Addr().String())
	return nil
}

// Addr returns the address the proxy listens on, "" before Start.
func (p *Proxy) Addr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln == nil {
		return ""
	}
	return p.ln.Addr().String()
}

// URL returns the proxy URL carrying session's credentials,
// http://<session>:x@<Addr()>, for clients that send proxy credentials
// from the URL (Go's http.ProxyURL does). Chromium ignores credentials in
// --proxy-server; see the package documentation.
func (p *Proxy) URL(session string) *url.URL {
	return &url.URL{Scheme: "http", User: url.UserPassword(session, "x"), Host: p.Addr()}
}

// Close stops listening, closes open tunnels and idle upstream connections,
// and waits for the tunnels to end. It is safe to call more than once and
// before Start.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	srv := p.srv
	tunnels := make([]net.Conn, 0, len(p.tunnels))
	for c := range p.tunnels {
		tunnels = append(tunnels, c)
	}
	p.mu.Unlock()
	var err error
	if srv != nil {
		err = srv.Close()
	}
	for _, c := range tunnels {
		_ = c.Close()
	}
	p.transport.CloseIdleConnections()
	p.wg.Wait()
	if err != nil {
		return fmt.Errorf("egress proxy: close: %w", err)
	}
	return nil
}

// Session registers the session id, or returns it if it exists, so that
// requests carrying id as the proxy user name are accepted. It returns nil
// if id is empty or contains ':' or a control character (such an id could
// never be sent as a Basic user name).
func (p *Proxy) Session(id string) *Session {
	if id == "" || strings.ContainsFunc(id, func(r rune) bool { return r == ':' || r < 0x20 || r == 0x7f }) {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	s, ok := p.sessions[id]
	if !ok {
		s = &Session{id: id}
		p.sessions[id] = s
	}
	return s
}

// EndSession forgets the session id and returns what it refused. Later
// requests with its credentials get 407. Unknown ids return nil.
func (p *Proxy) EndSession(id string) []Refusal {
	p.mu.Lock()
	s, ok := p.sessions[id]
	delete(p.sessions, id)
	p.mu.Unlock()
	if !ok {
		return nil
	}
	return s.Refused()
}

func (p *Proxy) lookup(r *http.Request) *Session {
	scheme, cred, ok := strings.Cut(r.Header.Get("Proxy-Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Basic") {
		return nil
	}
	b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(cred))
	if err != nil {
		return nil
	}
	user, _, ok := strings.Cut(string(b), ":")
	if !ok || user == "" {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sessions[user]
}

// ServeHTTP implements http.Handler: CONNECT opens a tunnel, an
// absolute-form request is forwarded, anything else is 400.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	sess := p.lookup(r)
	if sess == nil {
		w.Header().Set("Proxy-Authenticate", `Basic realm="baton-egress"`)
		http.Error(w, "proxy authentication required: user name must be a registered session", http.StatusProxyAuthRequired)
		return
	}
	if r.Method == http.MethodConnect {
		p.tunnel(w, r, sess)
		return
	}
	if !r.URL.IsAbs() {
		http.Error(w, "forward proxy: absolute-form requests and CONNECT only", http.StatusBadRequest)
		return
	}
	target := r.URL.String()
	u, err := p.policy.CheckURL(target)
	if err != nil {
		p.reject(w, sess, target, err)
		return
	}
	ctx := context.WithValue(r.Context(), stateKey{}, &reqState{sess: sess, url: u})
	p.rp.ServeHTTP(w, r.WithContext(ctx))
}

// upstreamError is the ReverseProxy's error handler: dial-time refusals
// become 403 and are recorded; other failures are 502.
func (p *Proxy) upstreamError(w http.ResponseWriter, r *http.Request, err error) {
	st := r.Context().Value(stateKey{}).(*reqState)
	if errors.Is(err, ErrRefused) {
		p.reject(w, st.sess, st.url.String(), err)
		return
	}
	if r.Context().Err() == nil {
		p.log.Debug("upstream failed", "session", st.sess.id, "target", st.url.Redacted(), "err", err)
	}
	http.Error(w, "bad gateway", http.StatusBadGateway)
}

// reject answers a request the proxy will not make and records it:
// 403 for a policy refusal, 400 for an unusable target.
func (p *Proxy) reject(w http.ResponseWriter, sess *Session, target string, err error) {
	status := http.StatusForbidden
	reason := err.Error()
	var ref *Refused
	if errors.As(err, &ref) {
		reason = ref.Reason
	} else {
		status = http.StatusBadRequest
	}
	sess.record(target, reason)
	p.log.Info("refused", "session", sess.id, "target", target, "reason", reason)
	if status == http.StatusForbidden {
		// RFC 9209: says that the proxy, not the site, refused the request,
		// so that Chromium's caller can tell the two 403s apart.
		w.Header().Set("Proxy-Status", `baton-egress; error=destination_ip_prohibited`)
	}
	// The body is what a page may see: the client-safe message only.
	http.Error(w, baton.ErrorMessage(err), status)
}

func (p *Proxy) tunnel(w http.ResponseWriter, r *http.Request, sess *Session) {
	target := r.Host
	h, port, err := parseHostPort(target)
	if err != nil {
		p.reject(w, sess, target, &baton.Error{Code: baton.EInvalid, Message: "invalid CONNECT target", Err: err})
		return
	}
	if h.ip.IsValid() {
		// Judge literals before any dial, as CheckURL does for URLs.
		if err := p.policy.CheckIP(h.ip); err != nil {
			p.reject(w, sess, target, withTarget(err, target))
			return
		}
	}
	ctx, cancel := context.WithTimeout(r.Context(), 2*p.policy.dialTimeout)
	defer cancel()
	up, err := p.policy.DialContext(ctx, "tcp", h.authority(port))
	if err != nil {
		if errors.Is(err, ErrRefused) {
			p.reject(w, sess, target, err)
			return
		}
		p.log.Debug("tunnel dial failed", "session", sess.id, "target", target, "err", err)
		http.Error(w, "bad gateway", http.StatusBadGateway)
		return
	}
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		_ = up.Close()
		http.Error(w, "tunnel not supported", http.StatusInternalServerError)
		return
	}
	if !p.track(conn, up) {
		_ = conn.Close()
		_ = up.Close()
		return
	}
	defer p.untrack(conn, up)
	if _, err := brw.WriteString("HTTP/1.1 200 Connection Established\r\n\r\n"); err != nil {
		return
	}
	if err := brw.Flush(); err != nil {
		return
	}
	// Either direction ending ends the tunnel; bytes the client sent early
	// are still in brw.Reader, so copy from it rather than from conn.
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, brw.Reader); done <- struct{}{} }()
	go func() { _, _ = io.Copy(conn, up); done <- struct{}{} }()
	<-done
	_ = conn.Close()
	_ = up.Close()
	<-done
}

// track registers a tunnel's connections so Close can end them; it reports
// false if the proxy is closed.
func (p *Proxy) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	for _, c := range conns {
		p.tunnels[c] = struct{}{}
	}
	p.wg.Add(1)
	return true
}

func (p *Proxy) untrack(conns ...net.Conn) {
	p.mu.Lock()
	for _, c := range conns {
		delete(p.tunnels, c)
	}
	p.mu.Unlock()
	p.wg.Done()
}
