package egress

import (
	"errors"
	"net/netip"
	"net/url"
	"strings"
	"testing"
)

var urlSeeds = []string{
	"http://example.com/", "https://EXAMPLE.com:0443/a?b#c", "http://bücher.de/",
	"http://127.0.0.1/", "http://2130706433/", "http://0x7f.1/", "http://017700000001/",
	"http://0x7f000001/", "http://127.1/", "http://127.0.0.1./", "http://0/", "http://0x/",
	"http://１２７。０。０。１/", "http://０ｘ７ｆ．１/", "http://%E2%91%A0/",
	"http://169.254.169.254/latest/meta-data/", "http://2852039166/", "http://[::1]/",
	"http://[::ffff:127.0.0.1]/", "http://[::ffff:a9fe:a9fe]/", "http://[64:ff9b::a00:1]/",
	"http://[2002:c0a8:101::1]/", "http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/",
	"http://[fe80::1%25eth0]/", "http://user:pass@example.com/", "http://example.com@127.0.0.1/",
	`http://example.com\@127.0.0.1/`, "http:///x", "http:example.com", "http://h:65536/",
	"http://h:0/", "http://1.2.3.4.5/", "http://foo.123/", "http://4294967296/",
	"http://99999999999999999999999/", "http://0x00000000000000000000000000000001/",
	"file:///etc/passwd", "about:blank", "data:,x", "javascript:alert(1)", "ws://example.com/",
	"wss://[::1]:443/", "gopher://127.0.0.1:6379/_x", "http://localhost/", "http://a.localhost./",
	"http://8.8.8.8:80/", "http://[2606:4700::1111]/", "http://127.0.0.2:9/", "http://010.0.0.1/",
}

// FuzzCheckURL: CheckURL never panics; whatever it accepts is stable
// (checking the returned URL again gives the same URL) and, when its host
// is an IP literal, re-parses to an address CheckIP accepts.
func FuzzCheckURL(f *testing.F) {
	for _, s := range urlSeeds {
		f.Add(s)
	}
	p, err := NewPolicy(Config{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := p.CheckURL(raw, AllowWebSocket(), AllowAboutBlank())
		if err != nil {
			if !errors.Is(err, ErrRefused) && !errors.Is(err, ErrInvalidURL) {
				t.Fatalf("CheckURL(%q): error %v is neither ErrRefused nor ErrInvalidURL", raw, err)
			}
			return
		}
		if u.Scheme == "about" {
			return
		}
		switch u.Scheme {
		case "http", "https", "ws", "wss":
		default:
			t.Fatalf("CheckURL(%q) accepted scheme %q", raw, u.Scheme)
		}
		if u.User != nil || u.Host == "" {
			t.Fatalf("CheckURL(%q) accepted %q", raw, u)
		}
		s := u.String()
		again, err := url.Parse(s)
		if err != nil {
			t.Fatalf("CheckURL(%q) = %q, which does not parse: %v", raw, s, err)
		}
		if a, err := netip.ParseAddr(again.Hostname()); err == nil {
			if err := p.CheckIP(a); err != nil {
				t.Fatalf("CheckURL(%q) = %q, whose address is refused: %v", raw, s, err)
			}
		} else if _, err := parseIPv4(again.Hostname()); err == nil && endsInNumber(again.Hostname()) {
			t.Fatalf("CheckURL(%q) = %q left a numeric host unnormalized", raw, s)
		}
		u2, err := p.CheckURL(s, AllowWebSocket())
		if err != nil {
			t.Fatalf("CheckURL(%q) = %q, which CheckURL then refuses: %v", raw, s, err)
		}
		if u2.String() != s {
			t.Fatalf("not stable: %q -> %q -> %q", raw, s, u2)
		}
	})
}

// FuzzParseHost: the host normalizer never panics; an address result is
// what its own string parses to, a name result is idempotent, free of
// forbidden characters and never numeric (it would have been an address).
func FuzzParseHost(f *testing.F) {
	for _, s := range []string{
		"example.com", "EXAMPLE.COM.", "127.0.0.1", "2130706433", "0x7f.1", "017700000001",
		"0x7f000001", "127.1", "127.0.1", "0", "0x", "0X", "00", "0x.0x.0x.0x", "1.2.3.4.5",
		"foo.123", "4294967295", "4294967296", "255.255.255.255.", "１２７。０。０。１",
		"０ｘ７ｆ．１", "①", "bücher.de", "xn--bcher-kva.de", "xn--zz", "a..b", "..", ".",
		"a b", "a%b", "a_b", "\u200d", "0x0000000000000000000000000000000001", "09", "0.0x1g",
		"1.1.1.1.", "1..1", "ß", "0177.0.0.01", "99999999999999999999999999",
	} {
		f.Add(s, false)
	}
	for _, s := range []string{"::1", "::ffff:127.0.0.1", "fe80::1%eth0", "127.0.0.1", "64:ff9b::a00:1", "::", "[::1]"} {
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, s string, bracketed bool) {
		h, err := parseHost(s, bracketed)
		if err != nil {
			return
		}
		if h.ip.IsValid() == (h.name != "") {
			t.Fatalf("parseHost(%q) = %+v: want exactly one of ip and name", s, h)
		}
		if h.ip.IsValid() {
			if h.ip.Zone() != "" {
				t.Fatalf("parseHost(%q) kept zone %q", s, h.ip.Zone())
			}
			a, err := netip.ParseAddr(h.ip.String())
			if err != nil || a != h.ip {
				t.Fatalf("parseHost(%q) = %v, which re-parses to %v, %v", s, h.ip, a, err)
			}
			again, err := parseHost(h.ip.String(), h.ip.Is6())
			if err != nil || again.ip != h.ip {
				t.Fatalf("parseHost(%q) = %v, not stable: %+v %v", s, h.ip, again, err)
			}
			return
		}
		for i := 0; i < len(h.name); i++ {
			if forbiddenDomainByte(h.name[i]) {
				t.Fatalf("parseHost(%q) = %q with forbidden byte %q", s, h.name, h.name[i])
			}
		}
		if h.name != strings.ToLower(h.name) {
			t.Fatalf("parseHost(%q) = %q not lower case", s, h.name)
		}
		if endsInNumber(h.name) {
			t.Fatalf("parseHost(%q) = name %q that ends in a number", s, h.name)
		}
		again, err := parseHost(h.name, false)
		if err != nil || again != h {
			t.Fatalf("parseHost(%q) = %q, not stable: %+v %v", s, h.name, again, err)
		}
	})
}

// FuzzParseAllowList: never panics; every prefix is valid, masked, not
// IPv4-mapped and survives a round trip through its string form.
func FuzzParseAllowList(f *testing.F) {
	for _, s := range []string{
		"", "10.0.0.0/8", "127.0.0.2", "::1", "::ffff:10.0.0.0/104", "fd00::/8, 192.168.0.0/16",
		"10.0.0.0/33", "fe80::/10%eth0", "::ffff:0:0/90", ",,", "1.2.3.4/0", "::/0",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseAllowList(s)
		if err != nil {
			return
		}
		var parts []string
		for _, p := range got {
			if !p.IsValid() || p != p.Masked() || p.Addr().Is4In6() || p.Addr().Zone() != "" {
				t.Fatalf("ParseAllowList(%q) gave %v", s, p)
			}
			parts = append(parts, p.String())
		}
		again, err := ParseAllowList(strings.Join(parts, ","))
		if err != nil || len(again) != len(got) {
			t.Fatalf("round trip of %q: %v %v", s, again, err)
		}
		for i := range got {
			if again[i] != got[i] {
				t.Fatalf("round trip of %q: %v != %v", s, again[i], got[i])
			}
		}
	})
}

// FuzzCheckIPForms: an IPv4 address gets the same decision in every IPv6
// spelling that carries it (mapped, NAT64, 6to4), and IPv4-compatible
// spellings are always refused.
func FuzzCheckIPForms(f *testing.F) {
	for _, s := range []string{"127.0.0.1", "10.0.0.1", "8.8.8.8", "169.254.169.254", "0.0.0.0", "100.64.0.1", "255.255.255.255"} {
		b := netip.MustParseAddr(s).As4()
		f.Add(b[:])
	}
	p, err := NewPolicy(Config{Allow: []netip.Prefix{netip.MustParsePrefix("10.1.0.0/16")}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) < 4 {
			return
		}
		v4 := netip.AddrFrom4([4]byte(b[:4]))
		want := p.CheckIP(v4) == nil
		var nat, six, compat [16]byte
		copy(nat[:], netip.MustParseAddr("64:ff9b::").AsSlice())
		copy(nat[12:], b[:4])
		six[0], six[1] = 0x20, 0x02
		copy(six[2:6], b[:4])
		copy(compat[12:], b[:4])
		forms := map[string]netip.Addr{
			"mapped": netip.AddrFrom16(v4.As16()),
			"NAT64":  netip.AddrFrom16(nat),
			"6to4":   netip.AddrFrom16(six),
		}
		for name, a := range forms {
			if got := p.CheckIP(a) == nil; got != want && !(name != "mapped" && v4.IsUnspecified()) {
				t.Fatalf("%s %v: allowed=%v, but %v allowed=%v", name, a, got, v4, want)
			}
		}
		if p.CheckIP(netip.AddrFrom16(compat)) == nil {
			t.Fatalf("IPv4-compatible %v allowed", netip.AddrFrom16(compat))
		}
	})
}
