package egress

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// proxyFixture is a started proxy over a test policy (127.0.0.2 allowed)
// plus a refused server on 127.0.0.3 that must never see a connection.
type proxyFixture struct {
	proxy     *Proxy
	dials     *dialCounter
	refused   string // host:port of the 127.0.0.3 server
	refusedN  *countingListener
	allowed   string // host:port of the plain 127.0.0.2 server
	allowedN  *countingListener
	tlsServer string // port of the TLS server on 127.0.0.2
	tlsRoots  *x509.CertPool
}

func newProxyFixture(t *testing.T) *proxyFixture {
	t.Helper()
	f := &proxyFixture{}
	ref, refN := serveOn(t, "127.0.0.3", okHandler, false)
	f.refused, f.refusedN = ref.Listener.Addr().String(), refN
	t.Cleanup(func() {
		if n := refN.n.Load(); n != 0 {
			t.Errorf("the refused server on 127.0.0.3 accepted %d connections", n)
		}
	})
	al, alN := serveOn(t, "127.0.0.2", okHandler, false)
	f.allowed, f.allowedN = al.Listener.Addr().String(), alN
	ts, _ := serveOn(t, "127.0.0.2", okHandler, true)
	_, f.tlsServer, _ = net.SplitHostPort(ts.Listener.Addr().String())
	f.tlsRoots = x509.NewCertPool()
	f.tlsRoots.AddCert(ts.Certificate())

	res := resolverOf(
		"example.com", "127.0.0.2", // the httptest certificate's name
		"internal.test", "127.0.0.3",
		"metadata.test", "169.254.169.254",
	)
	p, dials := newTestPolicy(t, "127.0.0.2/32", res)
	f.dials = dials
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	f.proxy = NewProxy(p, logger)
	if err := f.proxy.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.proxy.Close() })
	return f
}

// client returns an HTTP client that uses the proxy with session's
// credentials (Go sends them preemptively from the proxy URL).
func (f *proxyFixture) client(session string) *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			Proxy:           http.ProxyURL(f.proxy.URL(session)),
			TLSClientConfig: &tls.Config{RootCAs: f.tlsRoots},
		},
		Timeout: 10 * time.Second,
	}
}

// rawConnect sends a CONNECT for target and returns the response and the
// connection (open, for a tunnel).
func (f *proxyFixture) rawConnect(t *testing.T, target, session string, extra ...string) (*http.Response, net.Conn, *bufio.Reader) {
	t.Helper()
	return f.rawRequest(t, http.MethodConnect, target, target, session, extra...)
}

// rawRequest writes one request by hand (for what Go's client will not
// send, such as CONNECT with chosen headers or a ws:// absolute-form GET).
func (f *proxyFixture) rawRequest(t *testing.T, method, target, host, session string, extra ...string) (*http.Response, net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", f.proxy.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\n", method, target, host)
	if session != "" {
		fmt.Fprintf(&b, "Proxy-Authorization: Basic %s\r\n", base64.StdEncoding.EncodeToString([]byte(session+":x")))
	}
	for _, h := range extra {
		b.WriteString(h + "\r\n")
	}
	b.WriteString("\r\n")
	if _, err := io.WriteString(c, b.String()); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: method})
	if err != nil {
		t.Fatal(err)
	}
	return resp, c, br
}

func get(t *testing.T, c *http.Client, u string) (int, string) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestProxyHTTP(t *testing.T) {
	f := newProxyFixture(t)
	sess := f.proxy.Session("task-1")
	c := f.client("task-1")
	_, refPort, _ := net.SplitHostPort(f.refused)

	t.Run("allowed", func(t *testing.T) {
		code, body := get(t, c, "http://"+f.allowed+"/page")
		if code != 200 || body != "ok /page" {
			t.Fatalf("%d %q", code, body)
		}
	})
	tests := []struct {
		name, url, reason string
		hideAddr          bool
	}{
		{"loopback literal", "http://" + f.refused + "/x", "127.0.0.3 is loopback", false},
		{"loopback integer", "http://2130706435:" + refPort + "/x", "127.0.0.3 is loopback", false},
		{"name resolving to loopback", "http://internal.test:" + refPort + "/x", "127.0.0.3 is loopback", true},
		{"metadata literal", "http://169.254.169.254/latest/meta-data/", "cloud metadata", false},
		{"metadata by name", "http://metadata.test/latest/", "cloud metadata", true},
		{"ws scheme", "ws://" + f.allowed + "/socket", "scheme \"ws\"", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var code int
			var body string
			if strings.HasPrefix(tc.url, "ws:") {
				resp, _, _ := f.rawRequest(t, "GET", tc.url, f.allowed, "task-1",
					"Upgrade: websocket", "Connection: Upgrade", "Sec-WebSocket-Version: 13", "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==")
				b, _ := io.ReadAll(resp.Body)
				code, body = resp.StatusCode, string(b)
			} else {
				code, body = get(t, c, tc.url)
			}
			if code != http.StatusForbidden {
				t.Fatalf("status %d, want 403 (%q)", code, body)
			}
			if tc.hideAddr && (strings.Contains(body, "127.0.0.3") || strings.Contains(body, "169.254")) {
				t.Fatalf("body discloses the resolved address: %q", body)
			}
			found := false
			for _, r := range sess.Refused() {
				if strings.Contains(r.Target, strings.TrimPrefix(strings.TrimPrefix(tc.url, "ws://"), "http://")) && strings.Contains(r.Reason, tc.reason) {
					found = true
				}
			}
			if !found {
				t.Fatalf("not recorded; session has %+v", sess.Refused())
			}
		})
	}
	t.Run("repeat counts", func(t *testing.T) {
		get(t, c, "http://"+f.refused+"/x")
		for _, r := range sess.Refused() {
			if strings.Contains(r.Target, f.refused+"/x") && r.Count != 2 {
				t.Fatalf("count %d, want 2", r.Count)
			}
		}
	})
	t.Run("origin-form", func(t *testing.T) {
		req, _ := http.NewRequest("GET", "http://"+f.proxy.Addr()+"/", nil)
		req.Header.Set("Proxy-Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte("task-1:x")))
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("status %d", resp.StatusCode)
		}
	})

	got := f.proxy.EndSession("task-1")
	if len(got) != len(tests) {
		t.Fatalf("EndSession returned %d refusals, want %d: %+v", len(got), len(tests), got)
	}
	if f.allowedN.n.Load() == 0 {
		t.Fatal("allowed server never reached")
	}
}

func TestProxyAuth(t *testing.T) {
	f := newProxyFixture(t)
	f.proxy.Session("known")
	target := "http://" + f.allowed + "/"

	t.Run("no credentials", func(t *testing.T) {
		c := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: f.proxy.Addr()})}}
		resp, err := c.Get(target)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusProxyAuthRequired || !strings.HasPrefix(resp.Header.Get("Proxy-Authenticate"), "Basic ") {
			t.Fatalf("status %d, Proxy-Authenticate %q", resp.StatusCode, resp.Header.Get("Proxy-Authenticate"))
		}
	})
	for _, id := range []string{"unknown", "known-not"} {
		t.Run(id, func(t *testing.T) {
			code, _ := get(t, f.client(id), target)
			if code != http.StatusProxyAuthRequired {
				t.Fatalf("status %d", code)
			}
		})
	}
	t.Run("CONNECT unknown", func(t *testing.T) {
		resp, _, _ := f.rawConnect(t, f.allowed, "nobody")
		if resp.StatusCode != http.StatusProxyAuthRequired {
			t.Fatalf("status %d", resp.StatusCode)
		}
	})
	t.Run("ended session", func(t *testing.T) {
		f.proxy.Session("short")
		if code, _ := get(t, f.client("short"), target); code != 200 {
			t.Fatalf("status %d before EndSession", code)
		}
		f.proxy.EndSession("short")
		// A new client: Go's transport would otherwise reuse the
		// keep-alive connection, which is fine but not what we test.
		if code, _ := get(t, f.client("short"), target); code != http.StatusProxyAuthRequired {
			t.Fatalf("status %d after EndSession", code)
		}
	})
	t.Run("invalid ids", func(t *testing.T) {
		for _, id := range []string{"", "a:b", "a\nb"} {
			if f.proxy.Session(id) != nil {
				t.Fatalf("Session(%q) accepted", id)
			}
		}
		if f.proxy.EndSession("never") != nil {
			t.Fatal("EndSession of unknown id")
		}
	})
	if f.dials.n.Load() != 1 {
		t.Fatalf("dials %d: unauthenticated requests must not dial", f.dials.n.Load())
	}
}

func TestProxyCONNECT(t *testing.T) {
	f := newProxyFixture(t)
	sess := f.proxy.Session("task-2")
	_, refPort, _ := net.SplitHostPort(f.refused)

	t.Run("TLS end to end", func(t *testing.T) {
		// example.com resolves (at the proxy, injected resolver) to 127.0.0.2.
		code, body := get(t, f.client("task-2"), "https://example.com:"+f.tlsServer+"/secure")
		if code != 200 || body != "ok /secure" {
			t.Fatalf("%d %q", code, body)
		}
	})
	t.Run("HTTPS to refused name", func(t *testing.T) {
		_, err := f.client("task-2").Get("https://internal.test:" + refPort + "/")
		if err == nil || !strings.Contains(err.Error(), "Forbidden") {
			t.Fatalf("err %v, want a refused CONNECT", err)
		}
	})
	tests := []struct {
		name, target, reason string
		extra                []string
	}{
		{"loopback literal", f.refused, "127.0.0.3 is loopback", nil},
		{"loopback by name", "internal.test:" + refPort, "127.0.0.3 is loopback", nil},
		{"integer host", "2130706435:" + refPort, "loopback", nil},
		{"metadata", "169.254.169.254:443", "cloud metadata", nil},
		{"mapped metadata", "[::ffff:169.254.169.254]:443", "cloud metadata", nil},
		{"private", "10.0.0.1:443", "private", nil},
		{"IPv6 loopback", "[::1]:" + refPort, "::1 is loopback", nil},
		// What Chromium sends for ws:// and wss:// through an HTTP proxy.
		{"WebSocket to loopback", "127.0.0.3:" + refPort, "loopback", []string{"User-Agent: Mozilla/5.0", "Proxy-Connection: keep-alive"}},
		{"WebSocket to name", "internal.test:" + refPort, "loopback", []string{"User-Agent: Mozilla/5.0"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, _, _ := f.rawConnect(t, tc.target, "task-2", tc.extra...)
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusForbidden {
				t.Fatalf("status %d, want 403", resp.StatusCode)
			}
			if resp.Header.Get("Proxy-Status") == "" {
				t.Fatalf("403 without a Proxy-Status header: Chromium's caller cannot tell it from the site's own 403")
			}
			if !strings.Contains(string(body), "refused") {
				t.Fatalf("body %q", body)
			}
			found := false
			for _, r := range sess.Refused() {
				if r.Target == tc.target && strings.Contains(r.Reason, tc.reason) {
					found = true
				}
			}
			if !found {
				t.Fatalf("not recorded; session has %+v", sess.Refused())
			}
		})
	}
	t.Run("bad target", func(t *testing.T) {
		resp, _, _ := f.rawConnect(t, "no-port", "task-2")
		if resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("status %d", resp.StatusCode)
		}
	})
	t.Run("WebSocket tunnel to allowed", func(t *testing.T) {
		// A WebSocket handshake is plain HTTP inside the tunnel.
		resp, c, br := f.rawConnect(t, f.allowed, "task-2")
		if resp.StatusCode != 200 {
			t.Fatalf("status %d", resp.StatusCode)
		}
		fmt.Fprintf(c, "GET /ws HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", f.allowed)
		r2, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(r2.Body)
		if string(b) != "ok /ws" {
			t.Fatalf("through tunnel: %q", b)
		}
	})
}

func TestProxyCloseEndsTunnels(t *testing.T) {
	f := newProxyFixture(t)
	f.proxy.Session("s")
	resp, c, br := f.rawConnect(t, f.allowed, "s")
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if err := f.proxy.Close(); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := br.ReadByte(); err == nil {
		t.Fatal("tunnel still open after Close")
	}
	if err := f.proxy.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := f.proxy.Start("127.0.0.1:0"); err == nil {
		t.Fatal("Start after Close succeeded")
	}
}

func TestProxyStartLoopbackOnly(t *testing.T) {
	p, _ := newTestPolicy(t, "", nil)
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0", "localhost:0", "10.0.0.1:0", "nonsense"} {
		t.Run(addr, func(t *testing.T) {
			px := NewProxy(p, nil)
			defer px.Close()
			if err := px.Start(addr); err == nil {
				t.Fatalf("Start(%q) succeeded", addr)
			}
		})
	}
	t.Run("default and twice", func(t *testing.T) {
		px := NewProxy(p, nil)
		defer px.Close()
		if px.Addr() != "" {
			t.Fatal("Addr before Start")
		}
		if err := px.Start(""); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(px.Addr(), "127.0.0.1:") {
			t.Fatalf("Addr %q", px.Addr())
		}
		if err := px.Start(""); err == nil {
			t.Fatal("second Start succeeded")
		}
	})
	t.Run("close before start", func(t *testing.T) {
		if err := NewProxy(p, nil).Close(); err != nil {
			t.Fatal(err)
		}
	})
}

func TestSessionOverflow(t *testing.T) {
	s := &Session{id: "x"}
	for i := 0; i < MaxRefusalsPerSession+5; i++ {
		s.record(fmt.Sprintf("http://h/%d", i), "r")
	}
	s.record("http://h/0", "r")
	if got := len(s.Refused()); got != MaxRefusalsPerSession {
		t.Fatalf("kept %d", got)
	}
	if s.Overflow() != 5 || s.Refused()[0].Count != 2 {
		t.Fatalf("overflow %d, first count %d", s.Overflow(), s.Refused()[0].Count)
	}
}
