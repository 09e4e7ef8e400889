package domain

import (
	"strings"
	"testing"

	"github.com/batonhq/baton"
	"github.com/google/go-cmp/cmp"
)

func TestNormalize(t *testing.T) {
	long63 := strings.Repeat("a", 63)
	tests := []struct {
		name string
		in   string
		want string // "" when an error is expected
		err  string // the expected reason
	}{
		{"plain", "example.com", "example.com", ""},
		{"uppercase", "EXAMPLE.COM", "example.com", ""},
		{"mixed case", "ExAmPlE.Com", "example.com", ""},
		{"trailing dot", "example.com.", "example.com", ""},
		{"two trailing dots", "example.com..", "", "empty label"},
		{"spaces", "  example.com \t", "example.com", ""},
		{"ideographic space", "\u3000example.com\u3000", "example.com", ""},
		{"nbsp and bom", "\uFEFF\u00A0example.com\u200B", "example.com", ""},
		{"full-width", "ＥＸＡＭＰＬＥ．ＣＯＭ", "example.com", ""},
		{"chinese idn", "中文.com", "xn--fiq228c.com", ""},
		{"chinese idn and tld", "例子.中国", "xn--fsqu00a.xn--fiqs8s", ""},
		{"ideographic full stop", "例子。中国", "xn--fsqu00a.xn--fiqs8s", ""},
		{"punycode in", "xn--fiq228c.com", "xn--fiq228c.com", ""},
		{"punycode upper", "XN--FIQ228C.COM", "xn--fiq228c.com", ""},
		{"german sharp s", "straße.de", "xn--strae-oqa.de", ""},
		{"co.uk registrable", "example.co.uk", "example.co.uk", ""},
		{"digits", "123.com", "123.com", ""},
		{"inner hyphens", "a--b.com", "a--b.com", ""},
		{"63 char label", long63 + ".com", long63 + ".com", ""},
		{"http url", "http://example.com/", "example.com", ""},
		{"https url with path", "HTTPS://Example.com/a/b?c=d#e", "example.com", ""},
		{"private suffix is not one", "foo.blogspot.com", "", "not a registrable domain (subdomain of blogspot.com)"},

		{"empty", "", "", "empty"},
		{"only spaces", " \u3000 ", "", "empty"},
		{"www not stripped", "www.example.com", "", "not a registrable domain (subdomain of example.com)"},
		{"deep subdomain", "a.b.example.co.uk", "", "not a registrable domain (subdomain of example.co.uk)"},
		{"www in url", "http://www.example.com/", "", "not a registrable domain (subdomain of example.com)"},
		{"public suffix", "com", "", "no top-level domain"},
		{"public suffix two labels", "co.uk", "", "is a public suffix"},
		{"wildcard suffix", "foo.ck", "", "is a public suffix"},
		{"unknown tld", "example.notatld", "", `unknown top-level domain "notatld"`},
		{"single label", "localhost", "", "no top-level domain"},
		{"emoji", "😀.com", "", "symbol or emoji '😀' (U+1F600) not allowed (IDNA2008)"},
		{"emoji punycode", "xn--e28h.com", "", "symbol or emoji '😀' (U+1F600) not allowed (IDNA2008)"},
		{"label too long", strings.Repeat("a", 64) + ".com", "", "label too long (64 > 63)"},
		{"name too long", strings.Repeat(long63+".", 4) + "com", "", "name too long (259 > 253)"},
		{"leading hyphen", "-example.com", "", "label starts or ends with a hyphen"},
		{"trailing hyphen", "example-.com", "", "label starts or ends with a hyphen"},
		{"idn hyphen", "-中文.com", "", "invalid label"},
		{"hyphens 3-4", "ab--cd.com", "", "label has -- in positions 3-4 but is not punycode"},
		{"bad punycode", "xn--zz.com", "", "invalid punycode label"},
		{"punycode of ascii", "xn--abc-.com", "", "label starts or ends with a hyphen"},
		{"zero width joiner", "e\u200dx.com", "", "invalid label"},
		{"empty punycode", "xn--.com", "", "label starts or ends with a hyphen"},
		{"underscore", "a_b.com", "", "invalid character '_' (U+005F)"},
		{"inner space", "exa mple.com", "", "invalid character U+0020"},
		{"ipv4", "1.2.3.4", "", "is an IP address, not a domain name"},
		{"ipv6", "::1", "", "is an IP address, not a domain name"},
		{"ipv6 brackets", "[2001:db8::1]", "", "is an IP address, not a domain name"},
		{"ipv4 url", "http://10.0.0.1/", "", "is an IP address, not a domain name"},
		{"leading dot", ".example.com", "", "empty label"},
		{"double dot", "example..com", "", "empty label"},
		{"ftp url", "ftp://example.com", "", `unsupported URL scheme "ftp"`},
		{"url with port", "http://example.com:8080/", "", "URL with a port"},
		{"url with user", "http://u@example.com/", "", "URL with user info"},
		{"path without scheme", "example.com/path", "", "not a domain name (contains one of / ? # @)"},
		{"invalid utf8", "ex\xffample.com", "", "not valid UTF-8"},
		{"huge", strings.Repeat("a", 5000), "", "too long (5000 bytes)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Normalize(tt.in)
			gotErr := ""
			if err != nil {
				if code := baton.ErrorCode(err); code != baton.EInvalid {
					t.Errorf("error code = %q, want %q (%v)", code, baton.EInvalid, err)
				}
				gotErr = Reason(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Normalize(%q) name (-want +got):\n%s", tt.in, diff)
			}
			if diff := cmp.Diff(tt.err, gotErr); diff != "" {
				t.Errorf("Normalize(%q) reason (-want +got):\n%s", tt.in, diff)
			}
			if err == nil {
				again, err := Normalize(got)
				if err != nil || again != got {
					t.Errorf("Normalize(%q) = %q, %v; not idempotent", got, again, err)
				}
			}
		})
	}
}

func FuzzNormalize(f *testing.F) {
	for _, s := range []string{
		"example.com", "中文.com", "例子.中国", "www.example.com", "co.uk", "😀.com",
		"xn--fiq228c.com", "http://example.com/", "1.2.3.4", "EXAMPLE.COM.", "a--b.com",
		"\u3000ｅｘａｍｐｌｅ．ｃｏｍ", "xn--zz.com", "", "straße.de", "e\u200dx.com",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out, err := Normalize(in)
		if err != nil {
			if baton.ErrorCode(err) != baton.EInvalid || Reason(err) == "" {
				t.Fatalf("Normalize(%q): error %v is not an EInvalid with a reason", in, err)
			}
			return
		}
		if len(out) > MaxNameLen || out != strings.ToLower(out) || strings.HasSuffix(out, ".") {
			t.Fatalf("Normalize(%q) = %q: not canonical", in, out)
		}
		for i := 0; i < len(out); i++ {
			if c := out[i]; !isLDH(c) && c != '.' {
				t.Fatalf("Normalize(%q) = %q: byte %q", in, out, c)
			}
		}
		again, err := Normalize(out)
		if err != nil || again != out {
			t.Fatalf("Normalize(%q) = %q, but Normalize(%q) = %q, %v", in, out, out, again, err)
		}
	})
}
