package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"
)

// Resolver resolves host names. *net.Resolver implements it; tests inject
// one with fixed answers so that they never query real DNS.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

var _ Resolver = (*net.Resolver)(nil)

// DialContext connects to addr ("host:port") over TCP only if the policy
// allows every address the host resolves to. It resolves the name once,
// judges each answer with CheckIP and then dials the judged IP literally, so
// a second DNS answer (rebinding) can never be what is connected to. An
// answer that mixes allowed and refused addresses is refused as a whole:
// that is the signature of a rebinding attack, not of a real service.
// The connection attempt itself carries the Control hook as a second check.
//
// network must be "tcp", "tcp4" or "tcp6". It has the signature of
// net.Dialer.DialContext and http.Transport.DialContext.
func (p *Policy) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	var ipNet string
	switch network {
	case "tcp":
		ipNet = "ip"
	case "tcp4":
		ipNet = "ip4"
	case "tcp6":
		ipNet = "ip6"
	default:
		return nil, fmt.Errorf("egress: dial %s %s: only TCP is supported", network, addr)
	}
	h, port, err := parseHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("egress: dial: %w", err)
	}
	var addrs []netip.Addr
	if h.ip.IsValid() {
		if err := p.CheckIP(h.ip); err != nil {
			return nil, withTarget(err, addr)
		}
		addrs = []netip.Addr{h.ip}
	} else {
		addrs, err = p.resolve(ctx, ipNet, h.name)
		if err != nil {
			return nil, err
		}
		for _, a := range addrs {
			if err := p.CheckIP(a); err != nil {
				if r, ok := err.(*Refused); ok {
					r.Target, r.resolved = addr, true
				}
				return nil, err
			}
		}
	}
	var errs []error
	for _, a := range addrs {
		a = a.Unmap()
		if (network == "tcp4" && !a.Is4()) || (network == "tcp6" && a.Is4()) {
			continue
		}
		c, err := p.dial(ctx, network, net.JoinHostPort(a.String(), port))
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	if len(errs) == 0 {
		return nil, fmt.Errorf("egress: dial %s %s: no %s address", network, addr, ipNet)
	}
	return nil, fmt.Errorf("egress: dial %s: %w", addr, errors.Join(errs...))
}

func (p *Policy) resolve(ctx context.Context, network, name string) ([]netip.Addr, error) {
	r := p.resolver
	if r == nil {
		r = net.DefaultResolver
	}
	addrs, err := r.LookupNetIP(ctx, network, name)
	if err != nil {
		return nil, fmt.Errorf("egress: resolve %s: %w", name, err)
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("egress: resolve %s: no addresses", name)
	}
	return addrs, nil
}

// Control is a net.Dialer.Control hook: it refuses a connection attempt
// whose address (always a literal IP:port by the time Control runs, after
// any name resolution) the policy forbids. It runs after the socket is
// created and before connect(2), so a refused address receives no packet.
// Any net.Dialer that sets Control: p.Control is guarded even if it resolves
// names itself; DialContext uses it as a second line.
func (p *Policy) Control(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return &Refused{Target: address, Reason: "unparsable dial address", kind: "unparsable dial address"}
	}
	if err := p.CheckIP(ap.Addr()); err != nil {
		return withTarget(err, network+" "+address)
	}
	return nil
}

// MaxRedirects is how many redirects an HTTPClient follows.
const MaxRedirects = 10

// HTTPClient returns a client for outbound fetches (webhooks, providers,
// dry-run probes) that connects only through DialContext, ignores proxy
// settings from the environment, follows at most MaxRedirects redirects and
// re-checks each redirect target with CheckURL (scheme, userinfo, IP
// literals); names in redirects are judged at connect time like any other.
// timeout is the whole-request timeout (http.Client.Timeout; zero means none).
func (p *Policy) HTTPClient(timeout time.Duration) *http.Client {
	t := &http.Transport{
		Proxy:                 nil,
		DialContext:           p.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	return &http.Client{
		Transport: t,
		Timeout:   timeout,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= MaxRedirects {
				return fmt.Errorf("egress: stopped after %d redirects", MaxRedirects)
			}
			u, err := p.CheckURL(req.URL.String())
			if err != nil {
				return fmt.Errorf("egress: redirect to %s: %w", req.URL.Redacted(), err)
			}
			if u.Host != req.URL.Host {
				req.Host = "" // the normalized host, not the one written
			}
			req.URL = u
			return nil
		},
	}
}
