package egress

import (
	"errors"
	"strings"
	"testing"

	"github.com/batonhq/baton"
)

// Decision-only: CheckURL never connects.
func TestCheckURL(t *testing.T) {
	p, dials := newTestPolicy(t, "127.0.0.2/32", nil)
	const (
		ok      = ""
		invalid = "INVALID"
	)
	tests := []struct {
		name string
		raw  string
		opts []URLOption
		want string // ok, invalid, or a substring of the refusal reason
		norm string // expected normalized URL when ok; "" = unchecked
	}{
		{"public name", "https://example.com/a?b#c", nil, ok, "https://example.com/a?b#c"},
		{"upper case", "HTTP://EXAMPLE.COM/X", nil, ok, "http://example.com/X"},
		{"IDN", "http://bücher.de/", nil, ok, "http://xn--bcher-kva.de/"},
		{"public IP", "http://8.8.8.8:8080/", nil, ok, "http://8.8.8.8:8080/"},
		{"public IPv6", "http://[2606:4700:4700::1111]/", nil, ok, "http://[2606:4700:4700::1111]/"},
		{"allow-listed", "http://127.0.0.2:9/", nil, ok, "http://127.0.0.2:9/"},
		{"allow-listed as integer", "http://2130706434/", nil, ok, "http://127.0.0.2/"},
		{"port leading zeros", "http://example.com:0080/", nil, ok, "http://example.com:80/"},
		{"empty port", "http://example.com:/", nil, ok, "http://example.com/"},
		{"trailing dot name", "http://example.com./", nil, ok, "http://example.com./"},
		{"numeric-looking label", "http://1.2.3.example/", nil, ok, "http://1.2.3.example/"},

		// schemes
		{"file", "file:///etc/passwd", nil, "scheme \"file\"", ""},
		{"file host", "file://localhost/etc/passwd", nil, "scheme \"file\"", ""},
		{"chrome", "chrome://settings", nil, "scheme \"chrome\"", ""},
		{"chrome-extension", "chrome-extension://abc/x", nil, "not allowed", ""},
		{"devtools", "devtools://devtools/bundled/inspector.html", nil, "not allowed", ""},
		{"view-source", "view-source:http://example.com/", nil, "not allowed", ""},
		{"about blank", "about:blank", nil, "scheme \"about\"", ""},
		{"about blank opted in", "about:blank", []URLOption{AllowAboutBlank()}, ok, "about:blank"},
		{"about other opted in", "about:config", []URLOption{AllowAboutBlank()}, "scheme \"about\"", ""},
		{"data", "data:text/html,<script>alert(1)</script>", nil, "scheme \"data\"", ""},
		{"javascript", "javascript:alert(1)", nil, "scheme \"javascript\"", ""},
		{"JavaScript upper", "JAVASCRIPT:alert(1)", nil, "scheme \"javascript\"", ""},
		{"ftp", "ftp://example.com/", nil, "scheme \"ftp\"", ""},
		{"gopher", "gopher://127.0.0.1:6379/_FLUSHALL", nil, "scheme \"gopher\"", ""},
		{"dict", "dict://127.0.0.1:11211/stat", nil, "not allowed", ""},
		{"blob", "blob:https://example.com/uuid", nil, "scheme \"blob\"", ""},
		{"filesystem", "filesystem:https://example.com/temporary/x", nil, "not allowed", ""},
		{"ws refused", "ws://example.com/", nil, "scheme \"ws\"", ""},
		{"wss refused", "wss://example.com/", nil, "scheme \"wss\"", ""},
		{"ws opted in", "ws://example.com/socket", []URLOption{AllowWebSocket()}, ok, "ws://example.com/socket"},
		{"wss opted in", "wss://example.com/", []URLOption{AllowWebSocket()}, ok, ""},
		{"ws opted in private", "ws://10.0.0.1/", []URLOption{AllowWebSocket()}, "private", ""},
		{"no scheme", "//example.com/", nil, invalid, ""},
		{"relative", "/just/a/path", nil, invalid, ""},

		// userinfo tricks
		{"userinfo", "http://user:pass@example.com/", nil, "userinfo", ""},
		{"userinfo looks like host", "http://example.com@127.0.0.1/", nil, "userinfo", ""},
		{"empty userinfo", "http://@example.com/", nil, "userinfo", ""},
		{"backslash userinfo", `http://example.com\@127.0.0.1/`, nil, invalid, ""},
		{"backslash host", `http://127.0.0.1\.example.com/`, nil, invalid, ""},

		// empty hosts, ports
		{"empty host", "http:///path", nil, invalid, ""},
		{"no slashes", "http:example.com", nil, invalid, ""},
		{"one slash", "http:/example.com", nil, invalid, ""},
		{"port 0", "http://example.com:0/", nil, invalid, ""},
		{"port 65536", "http://example.com:65536/", nil, invalid, ""},
		{"huge port", "http://example.com:99999999999999999999/", nil, invalid, ""},
		{"port letters", "http://example.com:http/", nil, invalid, ""},
		{"space in host", "http://exa mple.com/", nil, invalid, ""},
		{"control char", "http://example.com\n.evil/", nil, invalid, ""},
		{"tab", "http://127.0.\t0.1/", nil, invalid, ""},
		{"percent-encoded ASCII host", "http://%31%32%37.0.0.1/", nil, invalid, ""},
		{"five parts", "http://1.2.3.4.5/", nil, invalid, ""},
		{"name ending in number", "http://foo.123/", nil, invalid, ""},
		{"IPv4 in brackets", "http://[127.0.0.1]/", nil, invalid, ""},
		{"IPv6 zone", "http://[fe80::1%25eth0]/", nil, invalid, ""},
		{"bad IPv6", "http://[::1/", nil, invalid, ""},

		// IP literals in every spelling: judged now
		{"loopback", "http://127.0.0.1/", nil, "loopback", ""},
		{"loopback port", "http://127.0.0.1:8080/admin", nil, "loopback", ""},
		{"loopback other", "http://127.0.0.3/", nil, "loopback", ""},
		{"decimal integer", "http://2130706433/", nil, "127.0.0.1 is loopback", ""},
		{"hex integer", "http://0x7f000001/", nil, "127.0.0.1 is loopback", ""},
		{"octal integer", "http://017700000001/", nil, "127.0.0.1 is loopback", ""},
		{"hex short", "http://0x7f.1/", nil, "127.0.0.1 is loopback", ""},
		{"hex upper", "http://0X7F.0X0.0X0.0X1/", nil, "127.0.0.1 is loopback", ""},
		{"octal dotted", "http://0177.0.0.01/", nil, "127.0.0.1 is loopback", ""},
		{"short two parts", "http://127.1/", nil, "127.0.0.1 is loopback", ""},
		{"short three parts", "http://127.0.1/", nil, "127.0.0.1 is loopback", ""},
		{"trailing dot IP", "http://127.0.0.1./", nil, "127.0.0.1 is loopback", ""},
		{"mixed radix", "http://0x7f.0.0.01/", nil, "loopback", ""},
		{"padded octal", "http://0000000177.0.0.1/", nil, "loopback", ""},
		{"leading zero is octal", "http://010.0.0.1/", nil, ok, "http://8.0.0.1/"},
		{"fullwidth digits", "http://１２７。０。０。１/", nil, "127.0.0.1 is loopback", ""},
		{"fullwidth hex", "http://０ｘ７ｆ．１/", nil, "loopback", ""},
		{"circled digit", "http://%E2%91%A0/", nil, "0.0.0.1", ""},
		{"zero", "http://0/", nil, "unspecified", ""},
		{"0x alone", "http://0x/", nil, "unspecified", ""},
		{"0.0.0.0", "http://0.0.0.0:8080/", nil, "unspecified", ""},
		{"metadata", "http://169.254.169.254/latest/meta-data/", nil, "169.254.169.254 is link-local (cloud metadata)", ""},
		{"metadata decimal", "http://2852039166/", nil, "cloud metadata", ""},
		{"metadata hex", "http://0xa9fea9fe/", nil, "cloud metadata", ""},
		{"metadata octal", "http://0251.0376.0251.0376/", nil, "cloud metadata", ""},
		{"metadata mixed", "http://169.254.43518/", nil, "cloud metadata", ""},
		{"container metadata", "http://169.254.170.2/v2/credentials", nil, "container metadata", ""},
		{"link-local", "http://169.254.1.1/", nil, "link-local", ""},
		{"private 10", "http://10.0.0.1/", nil, "private", ""},
		{"private 172", "http://172.16.0.1/", nil, "private", ""},
		{"private 192", "http://192.168.0.1/", nil, "private", ""},
		{"CGNAT", "http://100.64.0.1/", nil, "CGNAT", ""},
		{"multicast", "http://224.0.0.1/", nil, "multicast", ""},
		{"broadcast", "http://255.255.255.255/", nil, "broadcast", ""},
		{"broadcast integer", "http://4294967295/", nil, "broadcast", ""},
		{"integer too big", "http://4294967296/", nil, invalid, ""},
		{"0/8", "http://0.1.2.3/", nil, "this network", ""},
		{"reserved", "http://240.0.0.1/", nil, "reserved", ""},
		{"benchmark", "http://198.18.0.1/", nil, "benchmarking", ""},
		{"documentation", "http://192.0.2.1/", nil, "documentation", ""},
		{"IPv6 loopback", "http://[::1]/", nil, "loopback", ""},
		{"IPv6 loopback long", "http://[0:0:0:0:0:0:0:1]:80/", nil, "loopback", ""},
		{"IPv6 unspecified", "http://[::]/", nil, "unspecified", ""},
		{"IPv6 ULA", "http://[fd00::1]/", nil, "unique local", ""},
		{"IPv6 link-local", "http://[fe80::1]/", nil, "link-local", ""},
		{"IPv6 multicast", "http://[ff02::1]/", nil, "multicast", ""},
		{"IPv6 documentation", "http://[2001:db8::1]/", nil, "documentation", ""},
		{"mapped loopback", "http://[::ffff:127.0.0.1]/", nil, "loopback", ""},
		{"mapped loopback hex", "http://[::ffff:7f00:1]/", nil, "loopback", ""},
		{"mapped metadata", "http://[::ffff:a9fe:a9fe]/", nil, "cloud metadata", ""},
		{"mapped allow-listed", "http://[::ffff:127.0.0.2]/", nil, ok, "http://[::ffff:127.0.0.2]/"},
		{"IPv4-compatible", "http://[::127.0.0.1]/", nil, "IPv4-compatible", ""},
		{"6to4 private", "http://[2002:c0a8:101::1]/", nil, "6to4 form of 192.168.1.1", ""},
		{"6to4 loopback", "http://[2002:7f00:1::]/", nil, "loopback", ""},
		{"NAT64 private", "http://[64:ff9b::10.0.0.1]/", nil, "NAT64 form of 10.0.0.1", ""},
		{"NAT64 metadata", "http://[64:ff9b::a9fe:a9fe]/", nil, "cloud metadata", ""},
		{"Teredo", "http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/", nil, "Teredo", ""},
		{"localhost", "http://localhost:8080/", nil, "loopback", ""},
		{"LOCALHOST.", "http://LOCALHOST./", nil, "loopback", ""},
		{"sub.localhost", "http://evil.localhost/", nil, "loopback", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			u, err := p.CheckURL(tc.raw, tc.opts...)
			switch tc.want {
			case ok:
				if err != nil {
					t.Fatalf("CheckURL(%q) refused: %v", tc.raw, err)
				}
				if tc.norm != "" && u.String() != tc.norm {
					t.Fatalf("CheckURL(%q) = %q, want %q", tc.raw, u, tc.norm)
				}
			case invalid:
				if err == nil {
					t.Fatalf("CheckURL(%q) = %v, want invalid", tc.raw, u)
				}
				if !errors.Is(err, ErrInvalidURL) || baton.ErrorCode(err) != baton.EInvalid {
					t.Fatalf("CheckURL(%q) error %v: want ErrInvalidURL / EInvalid", tc.raw, err)
				}
			default:
				checkDecision(t, err, tc.want)
				if baton.ErrorCode(err) != baton.EForbidden {
					t.Fatalf("code %q, want forbidden", baton.ErrorCode(err))
				}
				if !strings.Contains(err.Error(), tc.raw) {
					t.Fatalf("error %q does not name the URL", err)
				}
			}
		})
	}
	if n := dials.n.Load(); n != 0 {
		t.Fatalf("CheckURL dialed %d times", n)
	}
}
