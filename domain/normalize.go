// Package domain turns what operators paste or import into canonical domain
// names: ASCII (punycode), lower case, no trailing dot, and registrable — one
// label below an ICANN public suffix, the unit a registry deletes and a
// registrar sells.
//
// Every rejection is a *baton.Error with code baton.EInvalid whose message is
// a short reason (no name in it) fit for an import report line such as
// "line 12: not a registrable domain (subdomain of example.com)".
package domain

import (
	"errors"
	"net/netip"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/batonhq/baton"
	"github.com/weppos/publicsuffix-go/publicsuffix"
	"golang.org/x/net/idna"
)

// Limits from RFC 1035 §2.3.4 (in octets of the ASCII form).
const (
	MaxNameLen  = 253 // a name without its trailing dot
	MaxLabelLen = 63
)

// maxInputLen bounds the raw input looked at, so a pasted megabyte costs
// nothing; no valid name (even as Unicode with a URL around it) comes close.
const maxInputLen = 4096

// pslFind looks names up in the ICANN section only, without the implicit "*"
// rule: private suffixes (blogspot.com, github.io) are registrable domains for
// browsers but not for registries, and an unknown TLD must be an error.
var pslFind = &publicsuffix.FindOptions{IgnorePrivate: true, DefaultRule: nil}

// Normalize returns the canonical form of a domain name, or an EInvalid
// *baton.Error saying why it has none.
//
// It trims surrounding white space (any Unicode space, including the
// ideographic U+3000, no-break spaces, zero-width spaces and a byte order
// mark). It accepts a pasted http:// or https:// URL and keeps only its host
// (no user info, no port); other schemes are rejected. It maps the name the
// way IDNA's lookup profile does (case folding, full-width forms, the
// ideographic full stop 。 as a dot), converts Unicode labels to punycode, and
// strips one trailing dot.
//
// It then requires: LDH labels of 1–63 octets with no leading or trailing
// hyphen; punycode labels that decode and are valid IDNA2008 (no symbols or
// emoji); at most 253 octets in all; not an IP address; a TLD on the public
// suffix list; and a registrable domain — exactly one label in front of an
// ICANN public suffix. The list's private section is ignored: a registry
// deletes example.com, never foo.blogspot.com, so the latter is reported as
// a subdomain of blogspot.com. "www." and other sub-domains are never stripped: they
// are rejected, naming the registrable domain they belong to.
//
// Normalize is idempotent: Normalize(out) == out for every accepted out.
func Normalize(raw string) (string, error) {
	if len(raw) > maxInputLen {
		return "", invalid("too long (%d bytes)", len(raw))
	}
	if !utf8.ValidString(raw) {
		return "", invalid("not valid UTF-8")
	}
	s := strings.TrimFunc(raw, isSpace)
	if s == "" {
		return "", invalid("empty")
	}
	s, err := stripURL(s)
	if err != nil {
		return "", err
	}
	if _, err := netip.ParseAddr(strings.Trim(s, "[]")); err == nil {
		return "", invalid("is an IP address, not a domain name")
	}
	for _, r := range s {
		if r < utf8.RuneSelf && !isLDH(byte(r)) && r != '.' {
			return "", invalid("invalid character %s", quoteRune(r))
		}
	}

	// Pure ASCII needs no mapping beyond case, and checkLabels gives sharper
	// reasons than the idna package.
	ascii := strings.ToLower(s)
	if !isASCII(s) {
		if ascii, err = idna.Lookup.ToASCII(s); err != nil {
			return "", idnaError(err)
		}
	}
	ascii = strings.TrimSuffix(ascii, ".")
	if err := checkLabels(ascii); err != nil {
		return "", err
	}
	if _, err := netip.ParseAddr(ascii); err == nil {
		return "", invalid("is an IP address, not a domain name")
	}
	if err := checkRegistrable(ascii); err != nil {
		return "", err
	}
	return ascii, nil
}

// stripURL keeps the host of an http(s) URL; anything else passes unchanged.
func stripURL(s string) (string, error) {
	i := strings.Index(s, "://")
	if i < 0 {
		if strings.ContainsAny(s, "/?#@") {
			return "", invalid("not a domain name (contains one of / ? # @)")
		}
		return s, nil
	}
	switch strings.ToLower(s[:i]) {
	case "http", "https":
	default:
		return "", invalid("unsupported URL scheme %q", s[:i])
	}
	host := s[i+3:]
	if j := strings.IndexAny(host, "/?#"); j >= 0 {
		host = host[:j]
	}
	if strings.Contains(host, "@") {
		return "", invalid("URL with user info")
	}
	if strings.HasPrefix(host, "[") {
		return "", invalid("is an IP address, not a domain name")
	}
	if strings.Contains(host, ":") {
		return "", invalid("URL with a port")
	}
	if host == "" {
		return "", invalid("URL without a host")
	}
	return host, nil
}

// checkLabels validates the ASCII form label by label.
func checkLabels(name string) error {
	if name == "" {
		return invalid("empty")
	}
	if len(name) > MaxNameLen {
		return invalid("name too long (%d > %d)", len(name), MaxNameLen)
	}
	labels := strings.Split(name, ".")
	if len(labels) < 2 {
		return invalid("no top-level domain")
	}
	for _, l := range labels {
		switch {
		case l == "":
			return invalid("empty label")
		case len(l) > MaxLabelLen:
			return invalid("label too long (%d > %d)", len(l), MaxLabelLen)
		case l[0] == '-' || l[len(l)-1] == '-':
			return invalid("label starts or ends with a hyphen")
		}
		for i := 0; i < len(l); i++ {
			if !isLDH(l[i]) {
				return invalid("invalid character %s", quoteRune(rune(l[i])))
			}
		}
		if strings.HasPrefix(l, "xn--") {
			if err := checkPunycode(l); err != nil {
				return err
			}
		} else if len(l) >= 4 && l[2:4] == "--" {
			return invalid("label has -- in positions 3-4 but is not punycode")
		}
	}
	return nil
}

// checkPunycode requires an A-label to decode under IDNA's registration
// profile, to re-encode to itself, and to hold no symbol, punctuation or
// control character (IDNA2008 disallows them; UTS 46, which x/net/idna
// implements, lets emoji through).
func checkPunycode(label string) error {
	u, err := idna.Registration.ToUnicode(label)
	if err != nil || u == label {
		return &baton.Error{Code: baton.EInvalid, Message: "invalid punycode label", Err: err}
	}
	back, err := idna.Registration.ToASCII(u)
	if err != nil || back != label {
		return &baton.Error{Code: baton.EInvalid, Message: "invalid punycode label", Err: err}
	}
	for _, r := range u {
		if r >= utf8.RuneSelf && (unicode.In(r, unicode.S, unicode.P, unicode.Z, unicode.C)) {
			return invalid("symbol or emoji %s not allowed (IDNA2008)", quoteRune(r))
		}
	}
	return nil
}

// checkRegistrable requires name to be exactly eTLD+1 under the ICANN section
// of the public suffix list.
func checkRegistrable(name string) error {
	tld := name[strings.LastIndexByte(name, '.')+1:]
	if publicsuffix.DefaultList.Find("x."+tld, pslFind) == nil {
		return invalid("unknown top-level domain %q", tld)
	}
	rule := publicsuffix.DefaultList.Find(name, pslFind)
	if rule == nil {
		// Only a wildcard rule matched no further (e.g. "*.ck" for "ck").
		return invalid("is a public suffix")
	}
	parts := rule.Decompose(name)
	left, suffix := parts[0], parts[1]
	if suffix == "" || left == "" {
		return invalid("is a public suffix")
	}
	if i := strings.LastIndexByte(left, '.'); i >= 0 {
		return invalid("not a registrable domain (subdomain of %s.%s)", left[i+1:], suffix)
	}
	return nil
}

func idnaError(err error) error {
	msg := strings.TrimPrefix(err.Error(), "idna: ")
	switch {
	case strings.HasPrefix(msg, "disallowed rune"):
		msg = "invalid character " + strings.TrimPrefix(msg, "disallowed rune ")
	case strings.HasPrefix(msg, "invalid label"):
		msg = "invalid label"
	default:
		msg = "invalid international name"
	}
	return &baton.Error{Code: baton.EInvalid, Message: msg, Err: err}
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func isLDH(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-'
}

// isSpace reports white space and the invisible characters that ride along
// with copied text.
func isSpace(r rune) bool {
	switch r {
	case '\uFEFF', '\u200B', '\u200C', '\u200D', '\u2060':
		return true
	}
	return unicode.IsSpace(r)
}

func quoteRune(r rune) string {
	if unicode.IsPrint(r) && r != ' ' {
		return strconv.QuoteRune(r) + " (" + runeCode(r) + ")"
	}
	return runeCode(r)
}

func runeCode(r rune) string {
	s := strings.ToUpper(strconv.FormatInt(int64(r), 16))
	for len(s) < 4 {
		s = "0" + s
	}
	return "U+" + s
}

func invalid(format string, args ...any) error {
	return baton.Errorf(baton.EInvalid, format, args...)
}

// Reason returns the short reason of a rejection by this package: the message
// of its *baton.Error, or err.Error() for any other error.
func Reason(err error) string {
	var e *baton.Error
	if errors.As(err, &e) {
		return e.Message
	}
	return err.Error()
}
