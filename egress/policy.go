package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"time"

	"github.com/batonhq/baton"
)

// ErrRefused is matched (errors.Is) by every *Refused: the policy forbids
// the destination. It is returned, wrapped in a *Refused, by CheckIP,
// CheckURL, DialContext, Control and the HTTP client's redirect check.
var ErrRefused = errors.New("egress: refused")

// ErrInvalidURL is wrapped by the errors CheckURL returns for input that is
// not a usable URL at all (unparsable, no host, port out of range). Those
// errors are *baton.Error with code baton.EInvalid.
var ErrInvalidURL = errors.New("egress: invalid URL")

// Refused is the error for a destination the policy forbids.
//
// Reason is a complete phrase fit for an operator's log, such as
// "169.254.169.254 is link-local (cloud metadata)". errors.As(err,
// **baton.Error) yields a baton.EForbidden error whose message does not
// disclose the address a client-supplied name resolved to.
type Refused struct {
	// Target is what was asked for: a URL, a host name or host:port. It may
	// be empty when only an address was judged.
	Target string
	// Addr is the address that was judged; invalid when the refusal is
	// not about an address (a scheme, userinfo).
	Addr netip.Addr
	// Reason says why, for logs and per-task reports.
	Reason string

	kind     string // Reason without the address, for client messages
	resolved bool   // Addr came from resolving Target (a DNS name)
}

// Error implements error.
func (r *Refused) Error() string {
	if r.Target != "" {
		return "egress refused: " + r.Target + ": " + r.Reason
	}
	return "egress refused: " + r.Reason
}

// Is reports whether target is ErrRefused.
func (r *Refused) Is(target error) bool { return target == ErrRefused }

// As lets errors.As turn a refusal into Baton's application error
// (baton.EForbidden), so the HTTP layer maps it without knowing this package.
func (r *Refused) As(target any) bool {
	p, ok := target.(**baton.Error)
	if !ok {
		return false
	}
	msg := r.Error()
	if r.resolved {
		// Do not tell a client which internal address its name resolved to.
		msg = "egress refused: " + r.Target + " resolves to a refused address: " + r.kind
	}
	*p = &baton.Error{Code: baton.EForbidden, Message: msg, Err: ErrRefused}
	return true
}

// Config configures a Policy. The zero value is a valid, strict policy.
type Config struct {
	// Allow lists the networks that may be reached although they are
	// private, loopback, link-local and so on (the --egress-allow flag).
	// IPv4-mapped IPv6 prefixes are converted to IPv4. Default none.
	Allow []netip.Prefix
	// Resolver resolves host names at dial time. Nil means
	// net.DefaultResolver. Tests inject fixed answers here.
	Resolver Resolver
	// DialTimeout bounds one TCP connection attempt. Zero means 10s.
	DialTimeout time.Duration
}

// Policy decides which destinations outbound connections may reach. It is
// immutable after NewPolicy and safe for concurrent use.
type Policy struct {
	allow       []netip.Prefix
	resolver    Resolver
	dialTimeout time.Duration
	// dial connects to a literal IP:port that has already been judged.
	// Tests replace it to prove that refused destinations are never dialed.
	dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// NewPolicy validates cfg and returns a Policy.
func NewPolicy(cfg Config) (*Policy, error) {
	p := &Policy{resolver: cfg.Resolver, dialTimeout: cfg.DialTimeout}
	if p.dialTimeout < 0 {
		return nil, fmt.Errorf("egress: dial timeout %v is negative", cfg.DialTimeout)
	}
	if p.dialTimeout == 0 {
		p.dialTimeout = 10 * time.Second
	}
	for _, pr := range cfg.Allow {
		n, err := normalizePrefix(pr)
		if err != nil {
			return nil, fmt.Errorf("egress: allow-list: %w", err)
		}
		p.allow = append(p.allow, n)
	}
	d := &net.Dialer{Timeout: p.dialTimeout, KeepAlive: 30 * time.Second, Control: p.Control}
	p.dial = d.DialContext
	return p, nil
}

// Allowed returns a copy of the normalized allow-list.
func (p *Policy) Allowed() []netip.Prefix {
	return append([]netip.Prefix(nil), p.allow...)
}

// ParseAllowList parses the --egress-allow flag value: CIDRs separated by
// commas (spaces around them ignored). A bare address means that address
// alone. The empty string is the empty list.
func ParseAllowList(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		var pr netip.Prefix
		var err error
		if strings.Contains(f, "/") {
			pr, err = netip.ParsePrefix(f)
		} else {
			var a netip.Addr
			a, err = netip.ParseAddr(f)
			if err == nil {
				pr = netip.PrefixFrom(a, a.BitLen())
			}
		}
		if err != nil {
			return nil, fmt.Errorf("--egress-allow: %q is not a CIDR: %w", f, err)
		}
		if pr, err = normalizePrefix(pr); err != nil {
			return nil, fmt.Errorf("--egress-allow: %w", err)
		}
		out = append(out, pr)
	}
	return out, nil
}

func normalizePrefix(pr netip.Prefix) (netip.Prefix, error) {
	if !pr.IsValid() {
		return netip.Prefix{}, fmt.Errorf("invalid prefix %v", pr)
	}
	a := pr.Addr()
	if a.Zone() != "" {
		return netip.Prefix{}, fmt.Errorf("prefix %v has an IPv6 zone", pr)
	}
	if a.Is4In6() {
		if pr.Bits() < 96 {
			return netip.Prefix{}, fmt.Errorf("prefix %v is wider than the IPv4-mapped range", pr)
		}
		pr = netip.PrefixFrom(a.Unmap(), pr.Bits()-96)
	}
	return pr.Masked(), nil
}

func (p *Policy) allowed(a netip.Addr) bool {
	for _, pr := range p.allow {
		if pr.Contains(a) {
			return true
		}
	}
	return false
}

// CheckIP returns nil if a connection to a may be made, or a *Refused
// saying why not. IPv4-mapped IPv6 addresses are judged as the IPv4 address
// they carry; NAT64 and 6to4 addresses as the IPv4 address they embed. The
// allow-list overrides every refusal except the unspecified address, which
// is never a real destination (connecting to it reaches this host).
func (p *Policy) CheckIP(a netip.Addr) error {
	if !a.IsValid() {
		return &Refused{Reason: "invalid address", kind: "invalid address"}
	}
	orig := a
	a = a.WithZone("").Unmap()
	if a.IsUnspecified() {
		return refusedAddr(orig, "unspecified")
	}
	if p.allowed(a) {
		return nil
	}
	if a.Is4() {
		if kind := classify4(a); kind != "" {
			return refusedAddr(orig, kind)
		}
		return nil
	}
	return p.check6(orig, a)
}

func refusedAddr(a netip.Addr, kind string) *Refused {
	s := a.String()
	if a.Is4In6() {
		s += " (IPv4-mapped " + a.Unmap().String() + ")"
	}
	return &Refused{Addr: a, Reason: s + " is " + kind, kind: kind}
}

type rule struct {
	prefix netip.Prefix
	kind   string
}

func rules(pairs ...string) []rule {
	out := make([]rule, 0, len(pairs)/2)
	for i := 0; i < len(pairs); i += 2 {
		out = append(out, rule{netip.MustParsePrefix(pairs[i]), pairs[i+1]})
	}
	return out
}

// v4Rules lists the IPv4 ranges that are not globally reachable (IANA
// special-purpose registry), most specific first: the first match names the
// reason.
var v4Rules = rules(
	"169.254.169.254/32", "link-local (cloud metadata)",
	"169.254.170.2/32", "link-local (container metadata)",
	"100.100.100.200/32", "shared address space (cloud metadata)",
	"192.0.0.192/32", "IETF protocol assignment (cloud metadata)",
	"0.0.0.0/8", "in 0.0.0.0/8 (\"this network\")",
	"10.0.0.0/8", "private (10.0.0.0/8)",
	"100.64.0.0/10", "shared address space (CGNAT, 100.64.0.0/10)",
	"127.0.0.0/8", "loopback",
	"169.254.0.0/16", "link-local",
	"172.16.0.0/12", "private (172.16.0.0/12)",
	"192.0.0.0/24", "IETF protocol assignment (192.0.0.0/24)",
	"192.0.2.0/24", "documentation (TEST-NET-1)",
	"192.88.99.0/24", "deprecated 6to4 relay anycast",
	"192.168.0.0/16", "private (192.168.0.0/16)",
	"198.18.0.0/15", "benchmarking (198.18.0.0/15)",
	"198.51.100.0/24", "documentation (TEST-NET-2)",
	"203.0.113.0/24", "documentation (TEST-NET-3)",
	"224.0.0.0/4", "multicast",
	"255.255.255.255/32", "broadcast",
	"240.0.0.0/4", "reserved (240.0.0.0/4)",
)

// v6Rules: as v4Rules. NAT64 (64:ff9b::/96) and 6to4 (2002::/16) are
// handled before these, by judging the IPv4 address they embed.
var v6Rules = rules(
	"::1/128", "loopback",
	"::ffff:0:0:0/96", "IPv4-translated (SIIT)",
	"::/96", "IPv4-compatible (deprecated)",
	"64:ff9b:1::/48", "local-use NAT64",
	"100::/64", "discard-only",
	"2001::/32", "Teredo",
	"2001:db8::/32", "documentation",
	"2001::/23", "IETF protocol assignment (2001::/23)",
	"3fff::/20", "documentation",
	"5f00::/16", "SRv6 SID space",
	"fd00:ec2::254/128", "unique local (cloud metadata)",
	"fc00::/7", "unique local (private)",
	"fe80::/10", "link-local",
	"fec0::/10", "site-local (deprecated)",
	"ff00::/8", "multicast",
)

var (
	nat64      = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour  = netip.MustParsePrefix("2002::/16")
	globalUni6 = netip.MustParsePrefix("2000::/3")
)

func classify4(a netip.Addr) string {
	for _, r := range v4Rules {
		if r.prefix.Contains(a) {
			return r.kind
		}
	}
	return ""
}

func (p *Policy) check6(orig, a netip.Addr) error {
	b := a.As16()
	var embedded netip.Addr
	var via string
	switch {
	case nat64.Contains(a):
		embedded, via = netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}), "NAT64"
	case sixToFour.Contains(a):
		embedded, via = netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}), "6to4"
	}
	if embedded.IsValid() {
		err := p.CheckIP(embedded)
		var r *Refused
		if errors.As(err, &r) {
			return &Refused{
				Addr:   orig,
				Reason: orig.String() + " is the " + via + " form of " + embedded.String() + ", which is " + r.kind,
				kind:   via + " form of a refused address: " + r.kind,
			}
		}
		return err
	}
	for _, r := range v6Rules {
		if r.prefix.Contains(a) {
			return refusedAddr(orig, r.kind)
		}
	}
	if !globalUni6.Contains(a) {
		return refusedAddr(orig, "not global unicast (outside 2000::/3)")
	}
	return nil
}
