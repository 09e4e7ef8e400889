package egress

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"

	"github.com/batonhq/baton"
)

func TestDialContextRefusesBeforeDialing(t *testing.T) {
	res := resolverOf(
		"private.test", "10.0.0.1",
		"metadata.test", "169.254.169.254",
		"mapped.test", "::ffff:127.0.0.1",
		"loop.test", "127.0.0.3",
		"ula.test", "fd00::1",
		"nat64.test", "64:ff9b::a9fe:a9fe",
		"rebind.test", "8.8.8.8",
		"rebind.test", "10.0.0.1", // one refused answer spoils the name
	)
	p, dials := newTestPolicy(t, "", res)
	tests := []struct {
		addr   string
		reason string
	}{
		{"private.test:80", "10.0.0.1 is private"},
		{"metadata.test:80", "cloud metadata"},
		{"mapped.test:443", "loopback"},
		{"loop.test:80", "loopback"},
		{"ula.test:80", "unique local"},
		{"nat64.test:80", "NAT64 form of 169.254.169.254"},
		{"rebind.test:80", "10.0.0.1 is private"},
		{"127.0.0.3:80", "loopback"},
		{"[::1]:80", "loopback"},
		{"0x7f.1:80", "loopback"},     // WHATWG/inet_aton form, no DNS query
		{"2130706433:80", "loopback"}, // likewise
		{"169.254.169.254:80", "cloud metadata"},
		{"[::ffff:169.254.169.254]:80", "cloud metadata"},
		{"LOCALHOST.test:80", ""}, // unknown name: a resolver error, not a refusal
	}
	for _, tc := range tests {
		t.Run(tc.addr, func(t *testing.T) {
			c, err := p.DialContext(context.Background(), "tcp", tc.addr)
			if c != nil {
				c.Close()
				t.Fatal("connected")
			}
			if tc.reason == "" {
				if err == nil || errors.Is(err, ErrRefused) {
					t.Fatalf("err %v, want a resolver error", err)
				}
				return
			}
			checkDecision(t, err, tc.reason)
		})
	}
	if n := dials.n.Load(); n != 0 {
		t.Fatalf("the dial function was reached %d times for refused destinations", n)
	}
	if n := res.calls.Load(); n != 8 {
		t.Fatalf("resolver called %d times, want 8 (never for literals)", n)
	}
}

func TestDialContextResolvedRefusalHidesAddressFromClient(t *testing.T) {
	p, _ := newTestPolicy(t, "", resolverOf("db.test", "10.9.8.7"))
	_, err := p.DialContext(context.Background(), "tcp", "db.test:3306")
	if !errors.Is(err, ErrRefused) {
		t.Fatalf("err %v", err)
	}
	if !strings.Contains(err.Error(), "10.9.8.7") {
		t.Fatalf("log error %q lacks the address", err)
	}
	if msg := baton.ErrorMessage(err); strings.Contains(msg, "10.9.8.7") || !strings.Contains(msg, "db.test") {
		t.Fatalf("client message %q", msg)
	}
}

func TestDialContextAllowed(t *testing.T) {
	srv, count := serveOn(t, "127.0.0.2", okHandler, false)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	res := resolverOf("app.test", "127.0.0.2", "app6.test", "::ffff:127.0.0.2")
	p, dials := newTestPolicy(t, "127.0.0.2/32", res)
	for _, addr := range []string{"127.0.0.2:" + port, "app.test:" + port, "app6.test:" + port, "0x7f.0.0.2:" + port} {
		t.Run(addr, func(t *testing.T) {
			c, err := p.DialContext(context.Background(), "tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			// A full exchange, so the server has surely accepted.
			if _, err := io.WriteString(c, "GET /dial HTTP/1.0\r\n\r\n"); err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(c)
			if !strings.HasSuffix(string(b), "ok /dial") {
				t.Fatalf("response %q", b)
			}
		})
	}
	if dials.n.Load() != 4 || count.n.Load() != 4 {
		t.Fatalf("dials %d, accepted %d, want 4 and 4", dials.n.Load(), count.n.Load())
	}
}

func TestDialContextBadInput(t *testing.T) {
	p, dials := newTestPolicy(t, "", nil)
	for _, tc := range []struct{ network, addr string }{
		{"udp", "8.8.8.8:53"},
		{"unix", "/run/x.sock"},
		{"tcp", "no-port"},
		{"tcp", "example.com:0"},
		{"tcp", "example.com:http"},
		{"tcp", "example.com:70000"},
		{"tcp", "exa mple.com:80"},
		{"tcp", ":80"},
	} {
		t.Run(tc.network+" "+tc.addr, func(t *testing.T) {
			if _, err := p.DialContext(context.Background(), tc.network, tc.addr); err == nil {
				t.Fatal("accepted")
			}
		})
	}
	if dials.n.Load() != 0 {
		t.Fatal("dialed")
	}
}

func TestControl(t *testing.T) {
	p, _ := newTestPolicy(t, "127.0.0.2/32", nil)
	tests := []struct {
		addr   string
		reason string
	}{
		{"127.0.0.2:80", ""},
		{"8.8.8.8:443", ""},
		{"127.0.0.1:80", "loopback"},
		{"10.0.0.1:80", "private"},
		{"169.254.169.254:80", "cloud metadata"},
		{"[::1]:80", "loopback"},
		{"[::ffff:10.0.0.1]:80", "private"},
		{"[fe80::1%eth0]:80", "link-local"},
		{"[2002:a00:1::]:80", "6to4"},
		{"host.example:80", "unparsable"},
	}
	for _, tc := range tests {
		t.Run(tc.addr, func(t *testing.T) {
			// Decision only: Control is called directly, with no socket.
			checkDecision(t, p.Control("tcp", tc.addr, nil), tc.reason)
		})
	}

	t.Run("net.Dialer never connects", func(t *testing.T) {
		_, count := serveOn(t, "127.0.0.3", okHandler, false)
		d := &net.Dialer{Control: p.Control}
		c, err := d.DialContext(context.Background(), "tcp", count.Addr().String())
		if err == nil {
			c.Close()
			t.Fatal("connected")
		}
		if !errors.Is(err, ErrRefused) {
			t.Fatalf("err %v, want ErrRefused", err)
		}
		if n := count.n.Load(); n != 0 {
			t.Fatalf("server on 127.0.0.3 accepted %d connections", n)
		}
	})
}

func TestHTTPClientRedirects(t *testing.T) {
	forbidden, forbiddenCount := serveOn(t, "127.0.0.3", okHandler, false)
	_, fport, _ := net.SplitHostPort(forbidden.Listener.Addr().String())

	mux := http.NewServeMux()
	redirect := func(path, to string) {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, to, http.StatusFound)
		})
	}
	redirect("/to-loopback", "http://127.0.0.3:"+fport+"/")
	redirect("/to-metadata", "http://169.254.169.254/latest/meta-data/")
	redirect("/to-metadata-decimal", "http://2852039166/")
	redirect("/to-name", "http://internal.test:"+fport+"/")
	redirect("/to-mapped", "http://[::ffff:127.0.0.3]:"+fport+"/")
	redirect("/to-file", "file:///etc/passwd")
	redirect("/to-gopher", "gopher://127.0.0.3:"+fport+"/_x")
	redirect("/to-userinfo", "http://x@127.0.0.2/")
	redirect("/to-ok", "/final")
	redirect("/loop", "/loop")
	mux.Handle("/final", okHandler)
	allowed, _ := serveOn(t, "127.0.0.2", mux, false)

	res := resolverOf("internal.test", "127.0.0.3", "allowed.test", "127.0.0.2")
	p, dials := newTestPolicy(t, "127.0.0.2/32", res)
	client := p.HTTPClient(0)

	for _, tc := range []struct {
		path   string
		reason string
	}{
		{"/to-loopback", "127.0.0.3 is loopback"},
		{"/to-metadata", "169.254.169.254 is link-local (cloud metadata)"},
		{"/to-metadata-decimal", "cloud metadata"},
		{"/to-name", "127.0.0.3 is loopback"},
		{"/to-mapped", "loopback"},
		{"/to-file", "scheme \"file\""},
		{"/to-gopher", "scheme \"gopher\""},
		{"/to-userinfo", "userinfo"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			resp, err := client.Get(allowed.URL + tc.path)
			if err == nil {
				resp.Body.Close()
				t.Fatalf("followed the redirect: %s", resp.Status)
			}
			checkDecision(t, err, tc.reason)
		})
	}
	t.Run("allowed redirect", func(t *testing.T) {
		_, port, _ := net.SplitHostPort(allowed.Listener.Addr().String())
		resp, err := client.Get("http://allowed.test:" + port + "/to-ok")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if string(b) != "ok /final" {
			t.Fatalf("body %q", b)
		}
	})
	t.Run("redirect limit", func(t *testing.T) {
		_, err := client.Get(allowed.URL + "/loop")
		if err == nil || !strings.Contains(err.Error(), "10 redirects") {
			t.Fatalf("err %v", err)
		}
	})
	if n := forbiddenCount.n.Load(); n != 0 {
		t.Fatalf("the refused server on 127.0.0.3 accepted %d connections", n)
	}
	// Every dial went to 127.0.0.2: newTestPolicy fails the test otherwise.
	if dials.n.Load() == 0 {
		t.Fatal("no dial at all")
	}
}

func TestHTTPClientIgnoresEnvironmentProxy(t *testing.T) {
	trap, trapCount := serveOn(t, "127.0.0.3", okHandler, false)
	t.Setenv("HTTP_PROXY", trap.URL)
	t.Setenv("http_proxy", trap.URL)
	srv, _ := serveOn(t, "127.0.0.2", okHandler, false)
	p, _ := newTestPolicy(t, "127.0.0.2/32", nil)
	c := p.HTTPClient(0)
	if tr := c.Transport.(*http.Transport); tr.Proxy != nil {
		t.Fatal("transport has a Proxy func")
	}
	resp, err := c.Get(srv.URL + "/x")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if trapCount.n.Load() != 0 {
		t.Fatal("request went to the environment's proxy")
	}
}

func TestDialContextFamilies(t *testing.T) {
	srv, _ := serveOn(t, "::1", okHandler, false)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	res := resolverOf("dual.test", "127.0.0.2", "dual.test", "::1")
	p, _ := newTestPolicy(t, "127.0.0.2/32,::1/128", res)
	c, err := p.DialContext(context.Background(), "tcp6", "dual.test:"+port)
	if err != nil {
		t.Fatal(err)
	}
	if got := netip.MustParseAddrPort(c.RemoteAddr().String()).Addr(); got != netip.IPv6Loopback() {
		t.Fatalf("tcp6 dialed %v", got)
	}
	c.Close()
	if _, err := p.DialContext(context.Background(), "tcp4", "[::1]:"+port); err == nil {
		t.Fatal("tcp4 to an IPv6 literal succeeded")
	}
}
