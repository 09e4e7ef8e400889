package httpcheck

import (
	"errors"
	"fmt"
	"strings"

	"golang.org/x/net/html"
)

// ErrSelector is wrapped by every selector syntax error.
var ErrSelector = errors.New("httpcheck: invalid selector")

// Selector is a small subset of CSS selectors for picking values out of an
// HTML page without code:
//
//	tag  .class  #id  [attr]  [attr=value]  [attr="value"]  [attr*=part]  *
//
// compounded ("td.info[data-field=age]"), joined by descendant (" ") or
// child (" > ") combinators, alternatives separated by ",". A trailing
// "@attr" ("a.title@href") returns the attribute instead of the text.
type Selector struct {
	src   string
	alts  [][]compound // each alternative: compounds left to right
	combs [][]byte     // per alternative: combinator before compound i (i ≥ 1): ' ' or '>'
	attr  string
}

type attrTest struct {
	name, op, val string // op "", "=", "*="
}

type compound struct {
	tag     string // "" or "*" = any
	id      string
	classes []string
	attrs   []attrTest
}

// String returns the selector as written.
func (s *Selector) String() string { return s.src }

// MaxSelectorLen bounds a selector's source.
const MaxSelectorLen = 512

// ParseSelector parses sel.
func ParseSelector(sel string) (*Selector, error) {
	s := &Selector{src: sel}
	if len(sel) > MaxSelectorLen {
		return nil, fmt.Errorf("%w: longer than %d bytes", ErrSelector, MaxSelectorLen)
	}
	body := sel
	if i := strings.LastIndexByte(sel, '@'); i >= 0 && !strings.ContainsAny(sel[i:], "]\"") {
		s.attr = strings.ToLower(strings.TrimSpace(sel[i+1:]))
		if !validName(s.attr) {
			return nil, fmt.Errorf("%w %q: bad attribute after @", ErrSelector, sel)
		}
		body = sel[:i]
	}
	for _, alt := range splitOutsideBrackets(body, ',') {
		comps, combs, err := parseAlt(alt)
		if err != nil {
			return nil, fmt.Errorf("%w %q: %w", ErrSelector, sel, err)
		}
		s.alts = append(s.alts, comps)
		s.combs = append(s.combs, combs)
	}
	if len(s.alts) == 0 {
		return nil, fmt.Errorf("%w: empty", ErrSelector)
	}
	return s, nil
}

func validName(n string) bool {
	if n == "" {
		return false
	}
	for _, c := range n {
		if !(c == '-' || c == '_' || c == ':' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

func splitOutsideBrackets(s string, sep byte) []string {
	var out []string
	depth, quote, start := 0, byte(0), 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '[':
			depth++
		case c == ']':
			depth--
		case c == sep && depth == 0:
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

func parseAlt(alt string) ([]compound, []byte, error) {
	var comps []compound
	var combs []byte
	i := 0
	pending := byte(0)
	for {
		// Skip spaces and read a combinator.
		sawSpace := false
		for i < len(alt) && (alt[i] == ' ' || alt[i] == '\t' || alt[i] == '\n') {
			i++
			sawSpace = true
		}
		if i < len(alt) && alt[i] == '>' {
			if pending == '>' || len(comps) == 0 {
				return nil, nil, errors.New("misplaced >")
			}
			pending = '>'
			i++
			continue
		}
		if sawSpace && pending == 0 && len(comps) > 0 {
			pending = ' '
		}
		if i >= len(alt) {
			break
		}
		c, n, err := parseCompound(alt[i:])
		if err != nil {
			return nil, nil, err
		}
		if len(comps) > 0 {
			if pending == 0 {
				return nil, nil, errors.New("missing combinator")
			}
			combs = append(combs, pending)
		} else {
			combs = append(combs, 0)
		}
		comps = append(comps, c)
		pending = 0
		i += n
	}
	if len(comps) == 0 {
		return nil, nil, errors.New("empty selector")
	}
	if pending == '>' {
		return nil, nil, errors.New("dangling >")
	}
	return comps, combs, nil
}

func isNameByte(c byte) bool {
	return c == '-' || c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

func readName(s string) int {
	n := 0
	for n < len(s) && isNameByte(s[n]) {
		n++
	}
	return n
}

func parseCompound(s string) (compound, int, error) {
	var c compound
	i := 0
	if i < len(s) && s[i] == '*' {
		c.tag = "*"
		i++
	} else if n := readName(s); n > 0 {
		c.tag = strings.ToLower(s[:n])
		i = n
	}
	for i < len(s) {
		switch s[i] {
		case '.', '#':
			n := readName(s[i+1:])
			if n == 0 {
				return c, 0, fmt.Errorf("empty name after %q", s[i])
			}
			if s[i] == '.' {
				c.classes = append(c.classes, s[i+1:i+1+n])
			} else {
				c.id = s[i+1 : i+1+n]
			}
			i += 1 + n
		case '[':
			end := -1
			quote := byte(0)
			for j := i + 1; j < len(s); j++ {
				if quote != 0 {
					if s[j] == quote {
						quote = 0
					}
					continue
				}
				if s[j] == '"' || s[j] == '\'' {
					quote = s[j]
				} else if s[j] == ']' {
					end = j
					break
				}
			}
			if end < 0 {
				return c, 0, errors.New("unterminated [")
			}
			at, err := parseAttr(s[i+1 : end])
			if err != nil {
				return c, 0, err
			}
			c.attrs = append(c.attrs, at)
			i = end + 1
		default:
			if i == 0 {
				return c, 0, fmt.Errorf("unexpected %q", s[i])
			}
			if s[i] != ' ' && s[i] != '\t' && s[i] != '\n' && s[i] != '>' {
				return c, 0, fmt.Errorf("unexpected %q", s[i])
			}
			return c, i, nil
		}
	}
	if i == 0 {
		return c, 0, errors.New("empty compound")
	}
	return c, i, nil
}

func parseAttr(in string) (attrTest, error) {
	var a attrTest
	name, val := in, ""
	switch {
	case strings.Contains(in, "*="):
		a.op = "*="
		name, val, _ = strings.Cut(in, "*=")
	case strings.Contains(in, "="):
		a.op = "="
		name, val, _ = strings.Cut(in, "=")
	}
	a.name = strings.ToLower(strings.TrimSpace(name))
	if !validName(a.name) {
		return a, fmt.Errorf("bad attribute name %q", name)
	}
	val = strings.TrimSpace(val)
	if len(val) >= 2 && (val[0] == '"' || val[0] == '\'') && val[len(val)-1] == val[0] {
		val = val[1 : len(val)-1]
	} else if strings.ContainsAny(val, `"'`) {
		return a, fmt.Errorf("bad attribute value %q", val)
	}
	a.val = val
	return a, nil
}

func attrOf(n *html.Node, name string) (string, bool) {
	for _, a := range n.Attr {
		if a.Namespace == "" && strings.EqualFold(a.Key, name) {
			return a.Val, true
		}
	}
	return "", false
}

func (c *compound) match(n *html.Node) bool {
	if n.Type != html.ElementNode {
		return false
	}
	if c.tag != "" && c.tag != "*" && c.tag != n.Data {
		return false
	}
	if c.id != "" {
		if v, _ := attrOf(n, "id"); v != c.id {
			return false
		}
	}
	if len(c.classes) > 0 {
		v, _ := attrOf(n, "class")
		have := strings.Fields(v)
		for _, want := range c.classes {
			found := false
			for _, h := range have {
				if h == want {
					found = true
					break
				}
			}
			if !found {
				return false
			}
		}
	}
	for _, a := range c.attrs {
		v, ok := attrOf(n, a.name)
		if !ok {
			return false
		}
		switch a.op {
		case "=":
			if v != a.val {
				return false
			}
		case "*=":
			if !strings.Contains(v, a.val) {
				return false
			}
		}
	}
	return true
}

// matchAlt reports whether n matches comps[:k+1] with combinators combs.
func matchAlt(n *html.Node, comps []compound, combs []byte, k int) bool {
	if !comps[k].match(n) {
		return false
	}
	if k == 0 {
		return true
	}
	switch combs[k] {
	case '>':
		return n.Parent != nil && matchAlt(n.Parent, comps, combs, k-1)
	default:
		for p := n.Parent; p != nil; p = p.Parent {
			if matchAlt(p, comps, combs, k-1) {
				return true
			}
		}
	}
	return false
}

// Match returns the nodes of root matching s, in document order.
func (s *Selector) Match(root *html.Node) []*html.Node {
	var out []*html.Node
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			for i, comps := range s.alts {
				if matchAlt(n, comps, s.combs[i], len(comps)-1) {
					out = append(out, n)
					break
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(root)
	return out
}

// Values returns, for every node s matches, its text (white space
// collapsed) or, with "@attr", that attribute's value.
func (s *Selector) Values(root *html.Node) []string {
	var out []string
	for _, n := range s.Match(root) {
		if s.attr != "" {
			if v, ok := attrOf(n, s.attr); ok {
				out = append(out, strings.TrimSpace(v))
			}
			continue
		}
		out = append(out, NodeText(n))
	}
	return out
}

// blockTags end a run of text: NodeText puts a space between blocks but
// none inside inline markup ("真人<em>下注</em>" stays "真人下注").
var blockTags = map[string]bool{
	"address": true, "article": true, "aside": true, "blockquote": true, "br": true, "dd": true, "div": true,
	"dl": true, "dt": true, "footer": true, "form": true, "h1": true, "h2": true, "h3": true, "h4": true,
	"h5": true, "h6": true, "header": true, "hr": true, "li": true, "main": true, "nav": true, "ol": true,
	"p": true, "pre": true, "section": true, "table": true, "tbody": true, "td": true, "tfoot": true,
	"th": true, "thead": true, "tr": true, "ul": true, "option": true, "title": true,
}

// NodeText returns the text inside n (scripts and styles skipped), white
// space collapsed to single spaces, block elements separated by a space.
func NodeText(n *html.Node) string {
	var b strings.Builder
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		switch n.Type {
		case html.TextNode:
			b.WriteString(n.Data)
		case html.ElementNode:
			if n.Data == "script" || n.Data == "style" {
				return
			}
		}
		block := n.Type == html.ElementNode && blockTags[n.Data]
		if block {
			b.WriteByte(' ')
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
		if block {
			b.WriteByte(' ')
		}
	}
	walk(n)
	return strings.Join(strings.Fields(b.String()), " ")
}
