package egress

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// idnaProfile is UTS #46 ToASCII with the options the WHATWG URL Standard
// uses for "domain to ASCII": non-transitional, no STD3 rules, no hyphen
// checks, bidi and joiner checks on, no DNS length check. It maps full-width
// digits and ideographic full stops, so "１２７。０。０。１" becomes 127.0.0.1
// here exactly as it does in Chromium.
var idnaProfile = idna.New(
	idna.MapForLookup(),
	idna.Transitional(false),
	idna.StrictDomainName(false),
	idna.CheckHyphens(false),
	idna.BidiRule(),
	idna.VerifyDNSLength(false),
)

// host is a parsed host: either a DNS name (lower-case ASCII) or an address.
type host struct {
	name string
	ip   netip.Addr
}

// authority returns h as written in a URL authority or a dial address:
// IPv6 bracketed, names and IPv4 as they are.
func (h host) authority(port string) string {
	s := h.name
	if h.ip.IsValid() {
		s = h.ip.String()
		if h.ip.Is6() {
			s = "[" + s + "]"
		}
	}
	if port != "" {
		s += ":" + port
	}
	return s
}

// parseHost parses the host of a special-scheme URL (http, https, ws, wss)
// the way the WHATWG URL Standard, and so Chromium, does: a bracketed host is
// an IPv6 address; anything else goes through domain-to-ASCII, must not
// contain a forbidden domain code point, and if its last label is a number
// (decimal, 0-prefixed octal or 0x-prefixed hex) the whole host is an IPv4
// address in the inet_aton forms (2130706433, 0x7f.1, 017700000001, 127.1).
// s must already be percent-decoded (net/url does that).
func parseHost(s string, bracketed bool) (host, error) {
	if bracketed {
		a, err := netip.ParseAddr(s)
		if err != nil {
			return host{}, fmt.Errorf("invalid IPv6 address %q: %w", s, err)
		}
		if !a.Is6() {
			return host{}, fmt.Errorf("%q in brackets is not an IPv6 address", s)
		}
		if a.Zone() != "" {
			return host{}, fmt.Errorf("IPv6 zone in %q is not allowed", s)
		}
		return host{ip: a}, nil
	}
	if s == "" {
		return host{}, errors.New("empty host")
	}
	if !utf8.ValidString(s) {
		// The standard decodes invalid UTF-8 to U+FFFD, which UTS #46
		// disallows; x/net/idna would instead encode it into punycode.
		return host{}, fmt.Errorf("host %q is not valid UTF-8", s)
	}
	ascii, err := idnaProfile.ToASCII(s)
	if err != nil {
		return host{}, fmt.Errorf("invalid host name %q: %w", s, err)
	}
	if ascii == "" {
		return host{}, errors.New("empty host")
	}
	for i := 0; i < len(ascii); i++ {
		if forbiddenDomainByte(ascii[i]) {
			return host{}, fmt.Errorf("host %q contains forbidden character %q", s, ascii[i])
		}
	}
	if endsInNumber(ascii) {
		a, err := parseIPv4(ascii)
		if err != nil {
			return host{}, fmt.Errorf("invalid IPv4 host %q: %w", s, err)
		}
		return host{ip: a}, nil
	}
	return host{name: ascii}, nil
}

// forbiddenDomainByte reports the URL Standard's forbidden domain code points
// (all ASCII) plus every non-ASCII byte, which domain-to-ASCII never leaves.
func forbiddenDomainByte(c byte) bool {
	if c <= 0x20 || c >= 0x7f {
		return true
	}
	return strings.IndexByte("#%/:<>?@[\\]^|", c) >= 0
}

// endsInNumber is the URL Standard's "ends in a number checker".
func endsInNumber(s string) bool {
	parts := strings.Split(s, ".")
	if parts[len(parts)-1] == "" {
		if len(parts) == 1 {
			return false
		}
		parts = parts[:len(parts)-1]
	}
	last := parts[len(parts)-1]
	if last != "" && strings.Trim(last, "0123456789") == "" {
		return true
	}
	_, ok := parseIPv4Number(last)
	return ok
}

// ipv4Overflow stands for any part value above 2^32; it fails every range
// check exactly like the unbounded integer the standard describes.
const ipv4Overflow = 1 << 33

// parseIPv4Number is the URL Standard's IPv4 number parser. Values are
// saturated at ipv4Overflow so that huge inputs cannot overflow.
func parseIPv4Number(s string) (uint64, bool) {
	if s == "" {
		return 0, false
	}
	radix := uint64(10)
	switch {
	case len(s) >= 2 && (s[:2] == "0x" || s[:2] == "0X"):
		s, radix = s[2:], 16
	case len(s) >= 2 && s[0] == '0':
		s, radix = s[1:], 8
	}
	var v uint64
	for i := 0; i < len(s); i++ {
		d, ok := digitValue(s[i])
		if !ok || d >= radix {
			return 0, false
		}
		if v < ipv4Overflow {
			v = v*radix + d
		}
	}
	return min(v, ipv4Overflow), true
}

func digitValue(c byte) (uint64, bool) {
	switch {
	case '0' <= c && c <= '9':
		return uint64(c - '0'), true
	case 'a' <= c && c <= 'f':
		return uint64(c-'a') + 10, true
	case 'A' <= c && c <= 'F':
		return uint64(c-'A') + 10, true
	}
	return 0, false
}

// parseIPv4 is the URL Standard's IPv4 parser: one to four parts, every part
// but the last at most 255, the last filling the remaining bytes.
func parseIPv4(s string) (netip.Addr, error) {
	parts := strings.Split(s, ".")
	if parts[len(parts)-1] == "" && len(parts) > 1 {
		parts = parts[:len(parts)-1]
	}
	if len(parts) > 4 {
		return netip.Addr{}, errors.New("more than four parts")
	}
	nums := make([]uint64, len(parts))
	for i, p := range parts {
		n, ok := parseIPv4Number(p)
		if !ok {
			return netip.Addr{}, fmt.Errorf("part %q is not a number", p)
		}
		nums[i] = n
	}
	for _, n := range nums[:len(nums)-1] {
		if n > 255 {
			return netip.Addr{}, errors.New("a part other than the last exceeds 255")
		}
	}
	last := nums[len(nums)-1]
	if last >= 1<<(8*(5-len(nums))) {
		return netip.Addr{}, errors.New("last part out of range")
	}
	v := last
	for i, n := range nums[:len(nums)-1] {
		v += n << (8 * (3 - i))
	}
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), nil
}

// parseHostPort parses a dial address or CONNECT authority ("host:port",
// "[v6]:port") with the same host rules as URLs, so that "0x7f.1:80" means
// 127.0.0.1 here as it would to a browser or to getaddrinfo. Port must be a
// decimal number from 1 to 65535. IPv6 zones are kept (the allow-list may
// name link-local networks, which need them).
func parseHostPort(hostport string) (host, string, error) {
	h, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return host{}, "", fmt.Errorf("address %q: %w", hostport, err)
	}
	port, err = normalizePort(port)
	if err != nil {
		return host{}, "", fmt.Errorf("address %q: %w", hostport, err)
	}
	if port == "" {
		return host{}, "", fmt.Errorf("address %q: missing port", hostport)
	}
	if a, err := netip.ParseAddr(h); err == nil {
		return host{ip: a}, port, nil
	}
	hh, err := parseHost(h, false)
	if err != nil {
		return host{}, "", fmt.Errorf("address %q: %w", hostport, err)
	}
	return hh, port, nil
}

// normalizePort checks a decimal port (1–65535) and drops leading zeros;
// the empty string stays empty.
func normalizePort(port string) (string, error) {
	if port == "" {
		return "", nil
	}
	var n int
	for i := 0; i < len(port); i++ {
		c := port[i]
		if c < '0' || c > '9' {
			return "", fmt.Errorf("port %q is not a number", port)
		}
		n = n*10 + int(c-'0')
		if n > 65535 {
			return "", fmt.Errorf("port %q out of range", port)
		}
	}
	if n == 0 {
		return "", fmt.Errorf("port %q out of range", port)
	}
	return fmt.Sprint(n), nil
}
