package httpcheck

import (
	"bytes"
	"errors"
	"fmt"
	"html"
	"regexp"
	"strings"

	xhtml "golang.org/x/net/html"
)

// Response formats.
const (
	FormatJSON = "json"
	FormatHTML = "html"
)

// Extractor says where one value (or list of values) sits in a provider's
// answer. Exactly one field is set; the zero Extractor is "not configured".
type Extractor struct {
	// JSON is a Path (dotted or JSON pointer) into a JSON answer.
	JSON string `json:"json,omitempty"`
	// CSS is a Selector into an HTML answer.
	CSS string `json:"css,omitempty"`
	// Regexp is matched against the raw answer (JSON or HTML); each match
	// gives its first capture group (or the whole match), tags stripped and
	// entities decoded.
	Regexp string `json:"regexp,omitempty"`
}

// IsZero reports whether e is not configured.
func (e Extractor) IsZero() bool { return e == Extractor{} }

// String describes e for evidence and errors.
func (e Extractor) String() string {
	switch {
	case e.JSON != "":
		return "json:" + e.JSON
	case e.CSS != "":
		return "css:" + e.CSS
	case e.Regexp != "":
		return "regexp:" + e.Regexp
	}
	return "(none)"
}

// Compiled is a validated Extractor.
type Compiled struct {
	src  Extractor
	path *Path
	sel  *Selector
	re   *regexp.Regexp
}

// String describes the extractor.
func (c *Compiled) String() string {
	if c == nil {
		return "(none)"
	}
	return c.src.String()
}

// Compile validates e for answers in format (FormatJSON or FormatHTML): a
// JSON path needs JSON, a CSS selector needs HTML. A zero e compiles to nil.
func (e Extractor) Compile(format string) (*Compiled, error) {
	set := 0
	for _, s := range []string{e.JSON, e.CSS, e.Regexp} {
		if s != "" {
			set++
		}
	}
	switch {
	case set == 0:
		return nil, nil
	case set > 1:
		return nil, fmt.Errorf("extractor %+v: set exactly one of json, css, regexp", e)
	}
	c := &Compiled{src: e}
	switch {
	case e.JSON != "":
		if format != FormatJSON {
			return nil, fmt.Errorf("extractor %s: a JSON path needs format %q", e, FormatJSON)
		}
		p, err := ParsePath(e.JSON)
		if err != nil {
			return nil, err
		}
		c.path = &p
	case e.CSS != "":
		if format != FormatHTML {
			return nil, fmt.Errorf("extractor %s: a CSS selector needs format %q", e, FormatHTML)
		}
		s, err := ParseSelector(e.CSS)
		if err != nil {
			return nil, err
		}
		c.sel = s
	default:
		re, err := regexp.Compile(e.Regexp)
		if err != nil {
			return nil, fmt.Errorf("extractor %s: %w", e, err)
		}
		c.re = re
	}
	return c, nil
}

// Document is a provider answer ready for extraction.
type Document struct {
	// Raw is the body as received.
	Raw []byte
	// JSON is the decoded body for FormatJSON.
	JSON any
	// HTML is the parsed body for FormatHTML.
	HTML *xhtml.Node
}

// ErrNotHTML is returned by ParseDocument when an HTML body cannot be parsed.
var ErrNotHTML = errors.New("httpcheck: body is not HTML")

// ParseDocument parses body as format. A JSON body that is not one JSON
// value is an error wrapping ErrNotJSON.
func ParseDocument(body []byte, format string) (*Document, error) {
	d := &Document{Raw: body}
	switch format {
	case FormatJSON:
		v, err := DecodeJSON(body)
		if err != nil {
			return d, err
		}
		d.JSON = v
	case FormatHTML:
		n, err := xhtml.Parse(bytes.NewReader(body))
		if err != nil {
			return d, fmt.Errorf("%w: %w", ErrNotHTML, err)
		}
		d.HTML = n
	default:
		return d, fmt.Errorf("httpcheck: unknown format %q", format)
	}
	return d, nil
}

// MaxValues bounds the values one extractor returns.
const MaxValues = 1000

var tagRE = regexp.MustCompile(`<[^>]*>`)

// All returns every value c finds in d (nil c finds none). JSON scalars
// become text; objects and arrays are skipped.
func (c *Compiled) All(d *Document) []string {
	if c == nil || d == nil {
		return nil
	}
	var out []string
	switch {
	case c.path != nil:
		for _, v := range c.path.Eval(d.JSON) {
			if s, ok := Text(v); ok {
				out = append(out, s)
			}
		}
	case c.sel != nil:
		if d.HTML != nil {
			out = c.sel.Values(d.HTML)
		}
	case c.re != nil:
		for _, m := range c.re.FindAllSubmatch(d.Raw, MaxValues) {
			v := m[0]
			if len(m) > 1 {
				v = m[1]
			}
			s := html.UnescapeString(tagRE.ReplaceAllString(string(v), " "))
			out = append(out, strings.Join(strings.Fields(s), " "))
		}
	}
	if len(out) > MaxValues {
		out = out[:MaxValues]
	}
	return out
}

// jsonPath returns c's JSON path, nil for other kinds or a nil c.
func (c *Compiled) jsonPath() *Path {
	if c == nil {
		return nil
	}
	return c.path
}

// First returns the first value c finds in d.
func (c *Compiled) First(d *Document) (string, bool) {
	vs := c.All(d)
	if len(vs) == 0 {
		return "", false
	}
	return vs[0], true
}
