package egress

import (
	"fmt"
	"net/netip"
	"net/url"
	"strings"

	"github.com/batonhq/baton"
)

// URLOption widens what CheckURL accepts for one call.
type URLOption func(*urlOptions)

type urlOptions struct {
	webSocket  bool
	aboutBlank bool
}

// AllowWebSocket lets CheckURL accept ws: and wss: URLs as well.
func AllowWebSocket() URLOption { return func(o *urlOptions) { o.webSocket = true } }

// AllowAboutBlank lets CheckURL accept exactly "about:blank" (the page the
// PDF service loads before setting HTML content). Other about: URLs stay
// refused.
func AllowAboutBlank() URLOption { return func(o *urlOptions) { o.aboutBlank = true } }

// CheckURL parses raw and decides whether it may be fetched. It returns the
// URL with its host normalized as a browser would (lower-case, IDNA to
// punycode, integer IPv4 forms such as http://2130706433/ or http://0x7f.1/
// rewritten as dotted quads, port without leading zeros), so the caller
// fetches exactly what was judged.
//
// Only http and https are accepted unless options say otherwise; userinfo is
// refused (it only serves to make a URL look like another host). A host that
// is an IP address is judged now; a DNS name is judged at connect time by
// DialContext / the proxy, against the address it actually resolves to.
// "localhost" and names under .localhost are judged as 127.0.0.1 because
// browsers resolve them to loopback without asking DNS.
//
// Errors: *Refused (errors.Is ErrRefused) for destinations the policy
// forbids, a *baton.Error with code EInvalid wrapping ErrInvalidURL for
// input that is not a usable URL.
func (p *Policy) CheckURL(raw string, opts ...URLOption) (*url.URL, error) {
	var o urlOptions
	for _, f := range opts {
		f(&o)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, invalidURL("cannot parse URL", err)
	}
	switch u.Scheme {
	case "http", "https":
	case "ws", "wss":
		if !o.webSocket {
			return nil, refusedScheme(raw, u.Scheme)
		}
	case "about":
		if o.aboutBlank && u.Opaque == "blank" && u.RawQuery == "" && u.Fragment == "" {
			return u, nil
		}
		return nil, refusedScheme(raw, u.Scheme)
	case "":
		return nil, invalidURL("missing scheme", nil)
	default:
		return nil, refusedScheme(raw, u.Scheme)
	}
	if u.Opaque != "" {
		return nil, invalidURL("missing // after scheme", nil)
	}
	if u.User != nil {
		return nil, &Refused{Target: raw, Reason: "credentials (userinfo) in URLs are not allowed", kind: "credentials in URL"}
	}
	if u.Host == "" {
		return nil, invalidURL("empty host", nil)
	}
	port, err := normalizePort(u.Port())
	if err != nil {
		return nil, invalidURL("bad port", err)
	}
	h, err := parseHost(u.Hostname(), strings.HasPrefix(u.Host, "["))
	if err != nil {
		return nil, invalidURL("bad host", err)
	}
	if h.ip.IsValid() {
		if err := p.CheckIP(h.ip); err != nil {
			return nil, withTarget(err, raw)
		}
	} else if isLocalhostName(h.name) {
		if err := p.CheckIP(netip.AddrFrom4([4]byte{127, 0, 0, 1})); err != nil {
			return nil, withTarget(err, raw)
		}
	}
	u.Host = h.authority(port)
	return u, nil
}

func isLocalhostName(name string) bool {
	name = strings.TrimSuffix(name, ".")
	return name == "localhost" || strings.HasSuffix(name, ".localhost")
}

func refusedScheme(raw, scheme string) *Refused {
	return &Refused{Target: raw, Reason: fmt.Sprintf("scheme %q is not allowed", scheme), kind: "scheme not allowed"}
}

// withTarget sets Target on a *Refused from CheckIP.
func withTarget(err error, target string) error {
	if r, ok := err.(*Refused); ok {
		r.Target = target
	}
	return err
}

func invalidURL(msg string, cause error) error {
	e := &baton.Error{Code: baton.EInvalid, Message: "invalid URL: " + msg, Err: ErrInvalidURL}
	if cause != nil {
		e.Err = fmt.Errorf("%w: %w", ErrInvalidURL, cause)
		e.Message += ": " + cause.Error()
	}
	return e
}
