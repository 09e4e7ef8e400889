package egress

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync/atomic"
	"testing"
)

// Network safety for this package's tests: the only addresses a test may
// ever connect to. Everything else is tested at the decision functions, and
// safeDial below fails the test before any packet could be sent.
var testSafeAddrs = map[netip.Addr]bool{
	netip.MustParseAddr("127.0.0.1"): true, // the proxy under test listens here
	netip.MustParseAddr("127.0.0.2"): true,
	netip.MustParseAddr("127.0.0.3"): true,
	netip.MustParseAddr("::1"):       true,
}

// fixedResolver answers from a map and never touches real DNS.
type fixedResolver struct {
	answers map[string][]netip.Addr
	calls   atomic.Int64
}

func (r *fixedResolver) LookupNetIP(_ context.Context, network, host string) ([]netip.Addr, error) {
	r.calls.Add(1)
	a, ok := r.answers[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host (test resolver)", Name: host, IsNotFound: true}
	}
	var out []netip.Addr
	for _, x := range a {
		if network == "ip" || (network == "ip4") == x.Unmap().Is4() {
			out = append(out, x)
		}
	}
	return out, nil
}

func resolverOf(pairs ...string) *fixedResolver {
	r := &fixedResolver{answers: map[string][]netip.Addr{}}
	for i := 0; i < len(pairs); i += 2 {
		r.answers[pairs[i]] = append(r.answers[pairs[i]], netip.MustParseAddr(pairs[i+1]))
	}
	return r
}

// dialCounter wraps a policy's final dial: it counts attempts and refuses
// (failing the test) any destination outside testSafeAddrs.
type dialCounter struct {
	n atomic.Int64
}

// newTestPolicy builds a Policy whose resolver is always a fixed one and
// whose low-level dial is counted and restricted to testSafeAddrs.
func newTestPolicy(t *testing.T, allow string, res *fixedResolver) (*Policy, *dialCounter) {
	t.Helper()
	prefixes, err := ParseAllowList(allow)
	if err != nil {
		t.Fatal(err)
	}
	if res == nil {
		res = resolverOf()
	}
	p, err := NewPolicy(Config{Allow: prefixes, Resolver: res})
	if err != nil {
		t.Fatal(err)
	}
	dc := &dialCounter{}
	real := p.dial
	p.dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		dc.n.Add(1)
		ap, err := netip.ParseAddrPort(addr)
		if err != nil || !testSafeAddrs[ap.Addr().Unmap()] {
			t.Errorf("SAFETY: attempted to dial %s %s, outside the test loopback set", network, addr)
			return nil, fmt.Errorf("test safety: %s not dialed", addr)
		}
		return real(ctx, network, addr)
	}
	return p, dc
}

// countingListener counts accepted connections.
type countingListener struct {
	net.Listener
	n atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

// serveOn starts an httptest server on ip (127.0.0.2, 127.0.0.3 or ::1)
// with a connection-counting listener. tls selects StartTLS.
func serveOn(t *testing.T, ip string, h http.Handler, tls bool) (*httptest.Server, *countingListener) {
	t.Helper()
	if !testSafeAddrs[netip.MustParseAddr(ip)] {
		t.Fatalf("SAFETY: test server on %s", ip)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatalf("listen on %s: %v", ip, err)
	}
	cl := &countingListener{Listener: ln}
	s := httptest.NewUnstartedServer(h)
	_ = s.Listener.Close()
	s.Listener = cl
	if tls {
		s.StartTLS()
	} else {
		s.Start()
	}
	t.Cleanup(s.Close)
	return s, cl
}

// okHandler answers "ok <path>".
var okHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	fmt.Fprintf(w, "ok %s", r.URL.Path)
})
