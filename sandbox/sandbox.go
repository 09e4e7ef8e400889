package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Config configures the simulator. Zero fields take the defaults.
type Config struct {
	// Addr is the HTTP listen address. Default "127.0.0.1:0". Only loopback
	// addresses are accepted.
	Addr string
	// WHOISAddr is the WHOIS listen address. Default "127.0.0.1:0".
	WHOISAddr string
	// Hang is how long a "timeout" failure holds a request before answering
	// 504 (the client should have given up by then). Default 30s.
	Hang time.Duration
	// CDXPageSize is the most CDX rows per page, whatever limit= asks.
	// Default 25 (so "many" domains page).
	CDXPageSize int
	// ChinazKey, AizhanKey and JuziCookie are the credentials the simulated
	// providers accept. Defaults "sandbox-chinaz-key", "sandbox-aizhan-key",
	// "sandbox-juzi-session".
	ChinazKey, AizhanKey, JuziCookie string
	// Now is the clock used to place captures in time. Default time.Now.
	Now func() time.Time
	// Logger. Default slog.Default().
	Logger *slog.Logger
}

// Endpoints are the addresses each checker's configuration needs.
type Endpoints struct {
	// HTTP is the base URL of the HTTP server, http://127.0.0.1:PORT.
	HTTP string `json:"http"`
	// RDAPBootstrap is the IANA-format DNS bootstrap file URL.
	RDAPBootstrap string `json:"rdapBootstrap"`
	// WHOIS is host:port of the WHOIS server (every TLD).
	WHOIS string `json:"whois"`
	// WHOISServers maps each TLD the sandbox serves to WHOIS.
	WHOISServers map[string]string `json:"whoisServers"`
	// Wayback is the Wayback base URL (CDX at /cdx/search/cdx, snapshots at /web/).
	Wayback string `json:"wayback"`
	// Baidu is the base for GET <Baidu>/s?wd=site:<domain>.
	Baidu string `json:"baidu"`
	// Chinaz is the base for GET <Chinaz>/single/<api>?key=KEY&domain=<domain>.
	Chinaz string `json:"chinaz"`
	// ChinazKey is the accepted chinaz key.
	ChinazKey string `json:"-"`
	// Aizhan is the base for GET <Aizhan>/baidurank/siteinfos/<KEY>?domains=a|b.
	Aizhan string `json:"aizhan"`
	// AizhanKey is the accepted aizhan key.
	AizhanKey string `json:"-"`
	// Jucha is the base for POST <Jucha>/item/search (form domain=<domain>). Simulated format.
	Jucha string `json:"jucha"`
	// Juzi is the base for GET <Juzi>/domain?domain=<domain> with cookie
	// juzi_session=<JuziCookie>. Simulated format.
	Juzi string `json:"juzi"`
	// JuziCookie is the accepted session cookie value.
	JuziCookie string `json:"-"`
}

// Sandbox is a running simulator.
type Sandbox struct {
	cfg   Config
	http  *http.Server
	hl    net.Listener
	wl    net.Listener
	ep    Endpoints
	once  sync.Map // domain+"\x00"+step → struct{}: the once-failure was served
	wg    sync.WaitGroup
	conns sync.Map // WHOIS net.Conn → struct{}

	closeOnce sync.Once
	closeErr  error
	done      chan struct{}
}

// Start listens on loopback and serves every simulated provider until Close
// or until ctx ends.
func Start(ctx context.Context, cfg Config) (*Sandbox, error) {
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	if cfg.WHOISAddr == "" {
		cfg.WHOISAddr = "127.0.0.1:0"
	}
	for _, a := range []string{cfg.Addr, cfg.WHOISAddr} {
		if err := loopbackOnly(a); err != nil {
			return nil, err
		}
	}
	if cfg.Hang <= 0 {
		cfg.Hang = 30 * time.Second
	}
	if cfg.CDXPageSize <= 0 {
		cfg.CDXPageSize = 25
	}
	if cfg.ChinazKey == "" {
		cfg.ChinazKey = "sandbox-chinaz-key"
	}
	if cfg.AizhanKey == "" {
		cfg.AizhanKey = "sandbox-aizhan-key"
	}
	if cfg.JuziCookie == "" {
		cfg.JuziCookie = "sandbox-juzi-session"
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	s := &Sandbox{cfg: cfg, done: make(chan struct{})}
	var lc net.ListenConfig
	hl, err := lc.Listen(ctx, "tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("sandbox: listen http %s: %w", cfg.Addr, err)
	}
	wl, err := lc.Listen(ctx, "tcp", cfg.WHOISAddr)
	if err != nil {
		hl.Close()
		return nil, fmt.Errorf("sandbox: listen whois %s: %w", cfg.WHOISAddr, err)
	}
	s.hl, s.wl = hl, wl
	base := "http://" + hl.Addr().String()
	s.ep = Endpoints{
		HTTP:          base,
		RDAPBootstrap: base + "/rdap/dns.json",
		WHOIS:         wl.Addr().String(),
		WHOISServers:  map[string]string{},
		Wayback:       base + "/wayback",
		Baidu:         base + "/baidu",
		Chinaz:        base + "/chinaz",
		ChinazKey:     cfg.ChinazKey,
		Aizhan:        base + "/aizhan",
		AizhanKey:     cfg.AizhanKey,
		Jucha:         base + "/jucha",
		Juzi:          base + "/juzi",
		JuziCookie:    cfg.JuziCookie,
	}
	for _, t := range TLDs() {
		s.ep.WHOISServers[t] = s.ep.WHOIS
	}

	mux := http.NewServeMux()
	s.routes(mux)
	// Snapshot paths embed a URL ("id_/http://..."): serve them before the
	// mux, which would redirect the "//" away.
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/wayback/web/") {
			s.snapshot(w, r)
			return
		}
		mux.ServeHTTP(w, r)
	})
	s.http = &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		if err := s.http.Serve(hl); err != nil && !errors.Is(err, http.ErrServerClosed) {
			cfg.Logger.Error("sandbox http server stopped", "component", "sandbox", "err", err)
		}
	}()
	go func() {
		defer s.wg.Done()
		s.serveWHOIS()
	}()
	go func() {
		select {
		case <-ctx.Done():
			s.Close()
		case <-s.done:
		}
	}()
	return s, nil
}

func loopbackOnly(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("sandbox: address %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("sandbox: address %q is not loopback", addr)
	}
	return nil
}

// Endpoints returns the addresses to point the checkers at.
func (s *Sandbox) Endpoints() Endpoints {
	ep := s.ep
	ep.WHOISServers = make(map[string]string, len(s.ep.WHOISServers))
	for k, v := range s.ep.WHOISServers {
		ep.WHOISServers[k] = v
	}
	return ep
}

// Reset forgets which once-failures were served, so they happen again.
func (s *Sandbox) Reset() { s.once.Clear() }

// Close stops both servers, dropping open connections (hanging requests
// included). It is safe to call more than once.
func (s *Sandbox) Close() error {
	s.closeOnce.Do(func() {
		close(s.done)
		err1 := s.http.Close()
		err2 := s.wl.Close()
		s.conns.Range(func(k, _ any) bool {
			k.(net.Conn).Close()
			return true
		})
		s.wg.Wait()
		if err2 != nil && errors.Is(err2, net.ErrClosed) {
			err2 = nil
		}
		s.closeErr = errors.Join(err1, err2)
	})
	return s.closeErr
}

// failure returns the once-failure to serve now for (domain, step), tNone
// when there is none or it was already served.
func (s *Sandbox) failure(domain, step string) transient {
	p := planFor(domain, step)
	if p.trans == tNone {
		return tNone
	}
	if _, served := s.once.LoadOrStore(strings.ToLower(domain)+"\x00"+step, struct{}{}); served {
		return tNone
	}
	return p.trans
}

// hang holds a request until the client gives up, the sandbox closes or
// Hang passes (then 504).
func (s *Sandbox) hang(w http.ResponseWriter, r *http.Request) {
	t := time.NewTimer(s.cfg.Hang)
	defer t.Stop()
	select {
	case <-r.Context().Done():
		return
	case <-s.done:
		return
	case <-t.C:
		http.Error(w, "gateway timeout (sandbox)", http.StatusGatewayTimeout)
	}
}

// httpFailure serves a generic once-failure; it reports whether it did.
func (s *Sandbox) httpFailure(w http.ResponseWriter, r *http.Request, t transient) bool {
	switch t {
	case t429:
		w.Header().Set("Retry-After", "2")
		http.Error(w, "Too Many Requests", http.StatusTooManyRequests)
	case t5xx:
		w.Header().Set("Retry-After", s.cfg.Now().Add(3*time.Second).UTC().Format(http.TimeFormat))
		http.Error(w, "Service Unavailable", http.StatusServiceUnavailable)
	case tTimeout:
		s.hang(w, r)
	default:
		return false
	}
	return true
}

func (s *Sandbox) routes(mux *http.ServeMux) {
	mux.HandleFunc("GET /rdap/dns.json", s.rdapBootstrap)
	mux.HandleFunc("GET /rdap/domain/{name}", s.rdapDomain)
	mux.HandleFunc("GET /rdap-relay/", s.rdapRelay)
	mux.HandleFunc("GET /wayback/cdx/search/cdx", s.cdx)
	mux.HandleFunc("GET /baidu/s", s.baidu)
	mux.HandleFunc("GET /baidu/wappass", s.baiduCaptcha)
	mux.HandleFunc("GET /chinaz/single/{api}", s.chinaz)
	mux.HandleFunc("GET /aizhan/baidurank/siteinfos/{key}", s.aizhan)
	mux.HandleFunc("GET /aizhan/site/hisinfos/{key}", s.aizhanHistory)
	mux.HandleFunc("POST /jucha/item/search", s.jucha)
	mux.HandleFunc("GET /juzi/domain", s.juzi)
	mux.HandleFunc("GET /juzi/login", s.juziLogin)
	mux.HandleFunc("GET /{$}", s.index)
}

func (s *Sandbox) index(w http.ResponseWriter, r *http.Request) {
	// Endpoints' credentials are tagged json:"-" and stay out of this page.
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"sandbox": "baton provider simulator (simulated data)", "endpoints": s.Endpoints()})
}
