package wayback

import (
	"bytes"
	"mime"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
	"golang.org/x/net/html/charset"
	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/simplifiedchinese"
	"golang.org/x/text/encoding/unicode"
)

// How the charset of a page was found.
const (
	FromBOM    = "bom"
	FromHeader = "header"
	FromMeta   = "meta"
	FromSniff  = "sniff"
)

const (
	prescanBytes = 4096
	maxTitle     = 1 << 10
	maxMeta      = 4 << 10
	maxBodyText  = 256 << 10
)

// DecodeHTML converts a page to UTF-8. It honours, in order: a byte-order
// mark, the Content-Type header's charset, <meta charset> or <meta
// http-equiv="Content-Type"> in the first 4 KiB, then sniffs (valid UTF-8 →
// UTF-8; mostly valid GBK double-byte sequences → GB18030; else
// windows-1252). Unknown labels are ignored. It returns the text, the
// WHATWG charset name and how it was found.
func DecodeHTML(body []byte, contentType string) (text, name, from string) {
	enc, name, from := detectCharset(body, contentType)
	if name == "utf-8" {
		return strings.ToValidUTF8(string(bytes.TrimPrefix(body, []byte("\xef\xbb\xbf"))), "\uFFFD"), name, from
	}
	out, err := enc.NewDecoder().Bytes(body)
	if err != nil {
		// Decoders replace bad input; an error here is exceptional — fall back.
		return strings.ToValidUTF8(string(body), "\uFFFD"), name, from
	}
	return strings.ToValidUTF8(string(out), "\uFFFD"), name, from
}

func detectCharset(body []byte, contentType string) (encoding.Encoding, string, string) {
	switch {
	case bytes.HasPrefix(body, []byte("\xef\xbb\xbf")):
		return unicode.UTF8, "utf-8", FromBOM
	case bytes.HasPrefix(body, []byte("\xfe\xff")):
		return unicode.UTF16(unicode.BigEndian, unicode.ExpectBOM), "utf-16be", FromBOM
	case bytes.HasPrefix(body, []byte("\xff\xfe")):
		return unicode.UTF16(unicode.LittleEndian, unicode.ExpectBOM), "utf-16le", FromBOM
	}
	if _, params, err := mime.ParseMediaType(contentType); err == nil {
		if enc, name := lookup(params["charset"]); enc != nil {
			return enc, name, FromHeader
		}
	}
	if enc, name := prescan(body); enc != nil {
		return enc, name, FromMeta
	}
	if utf8.Valid(body) {
		return unicode.UTF8, "utf-8", FromSniff
	}
	if looksGBK(body) {
		return simplifiedchinese.GB18030, "gb18030", FromSniff
	}
	enc, name := lookup("windows-1252")
	return enc, name, FromSniff
}

// lookup maps a charset label to an encoding (WHATWG labels: "gb2312" → GBK).
// UTF-16 labels in a meta tag are treated as UTF-8, as browsers do.
func lookup(label string) (encoding.Encoding, string) {
	label = strings.TrimSpace(strings.Trim(label, `"'`))
	if label == "" {
		return nil, ""
	}
	enc, name := charset.Lookup(label)
	if enc == nil {
		return nil, ""
	}
	return enc, name
}

// prescan looks for a charset declaration in the first prescanBytes.
func prescan(body []byte) (encoding.Encoding, string) {
	if len(body) > prescanBytes {
		body = body[:prescanBytes]
	}
	z := html.NewTokenizer(bytes.NewReader(body))
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			return nil, ""
		case html.StartTagToken, html.SelfClosingTagToken:
			tn, hasAttr := z.TagName()
			if atom.Lookup(tn) != atom.Meta || !hasAttr {
				continue
			}
			var cs, httpEquiv, content string
			for {
				k, v, more := z.TagAttr()
				switch strings.ToLower(string(k)) {
				case "charset":
					cs = string(v)
				case "http-equiv":
					httpEquiv = strings.ToLower(string(v))
				case "content":
					content = string(v)
				}
				if !more {
					break
				}
			}
			if cs == "" && httpEquiv == "content-type" {
				cs = charsetFromContent(content)
			}
			if enc, name := lookup(cs); enc != nil {
				if strings.HasPrefix(name, "utf-16") {
					return unicode.UTF8, "utf-8"
				}
				return enc, name
			}
		}
	}
}

// charsetFromContent extracts charset=X from a meta content value.
func charsetFromContent(s string) string {
	low := strings.ToLower(s)
	i := strings.Index(low, "charset")
	if i < 0 {
		return ""
	}
	rest := strings.TrimLeft(s[i+len("charset"):], " \t")
	if !strings.HasPrefix(rest, "=") {
		return ""
	}
	rest = strings.TrimLeft(rest[1:], " \t\"'")
	if j := strings.IndexAny(rest, " \t;\"'"); j >= 0 {
		rest = rest[:j]
	}
	return rest
}

// looksGBK reports whether the high bytes of b mostly form valid GBK
// double-byte pairs (lead 0x81–0xFE, trail 0x40–0xFE except 0x7F).
func looksGBK(b []byte) bool {
	pairs, bad := 0, 0
	for i := 0; i < len(b); i++ {
		c := b[i]
		if c < 0x80 {
			continue
		}
		if c == 0x80 || c == 0xFF || i+1 >= len(b) {
			bad++
			continue
		}
		t := b[i+1]
		if t >= 0x40 && t <= 0xFE && t != 0x7F {
			pairs++
			i++
		} else {
			bad++
		}
	}
	return pairs > 0 && bad*20 <= pairs
}

// Page is the text of a snapshot that the word lists scan.
type Page struct {
	Title       string `json:"title,omitempty"`
	Keywords    string `json:"keywords,omitempty"`
	Description string `json:"description,omitempty"`
	Body        string `json:"-"`
}

// ExtractPage pulls title, meta keywords/description and visible body text
// (script and style skipped) out of UTF-8 HTML, each capped in size.
func ExtractPage(doc string) Page {
	var p Page
	var body strings.Builder
	var title strings.Builder
	z := html.NewTokenizer(strings.NewReader(doc))
	skip := 0 // depth inside script/style
	inTitle := false
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			p.Title = clean(title.String(), maxTitle)
			p.Body = clean(body.String(), maxBodyText)
			return p
		case html.StartTagToken, html.SelfClosingTagToken:
			tn, hasAttr := z.TagName()
			switch a := atom.Lookup(tn); a {
			case atom.Script, atom.Style, atom.Template:
				if tt == html.StartTagToken {
					skip++
				}
			case atom.Title:
				inTitle = true
			case atom.Meta:
				if hasAttr {
					var name, content string
					for {
						k, v, more := z.TagAttr()
						switch strings.ToLower(string(k)) {
						case "name", "property":
							name = strings.ToLower(string(v))
						case "content":
							content = string(v)
						}
						if !more {
							break
						}
					}
					switch name {
					case "keywords":
						p.Keywords = clean(p.Keywords+" "+content, maxMeta)
					case "description", "og:description":
						p.Description = clean(p.Description+" "+content, maxMeta)
					}
				}
			case atom.Br, atom.P, atom.Div, atom.Li, atom.Td, atom.Tr, atom.H1, atom.H2, atom.H3, atom.A, atom.Span:
				body.WriteByte(' ')
			}
		case html.EndTagToken:
			tn, _ := z.TagName()
			switch atom.Lookup(tn) {
			case atom.Script, atom.Style, atom.Template:
				if skip > 0 {
					skip--
				}
			case atom.Title:
				inTitle = false
			}
		case html.TextToken:
			if skip > 0 {
				continue
			}
			t := z.Text()
			if inTitle {
				if title.Len() < maxTitle {
					title.Write(t)
				}
				continue
			}
			if body.Len() < maxBodyText {
				body.Write(t)
				body.WriteByte(' ')
			}
		}
	}
}

// clean collapses white space and cuts to n bytes on a rune boundary.
func clean(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		s = s[:n]
		for len(s) > 0 && !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
	}
	return s
}
