package httpcheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ErrPath is wrapped by every path syntax error.
var ErrPath = errors.New("httpcheck: invalid path")

// MaxPathSteps bounds the steps of one path.
const MaxPathSteps = 64

type stepKind uint8

const (
	stepKey     stepKind = iota // object member
	stepIndex                   // array element (negative counts from the end)
	stepWild                    // every member / element
	stepPointer                 // JSON-pointer token: member, or element when numeric
)

type pathStep struct {
	kind  stepKind
	key   string
	index int
}

// Path selects values inside a decoded JSON document. Two syntaxes are
// accepted:
//
//   - dotted: "Result.BaiduPcWeight", "data.history[*].bt", "data.success[0]",
//     `a["key.with.dots"]`, an optional leading "$" or "$."; "[*]" and "[]"
//     select every element of an array (or every member of an object, in key
//     order), "[-1]" the last element;
//   - JSON pointer (RFC 6901) when it starts with "/": "/Result/BaiduPcWeight",
//     "/data/history/0/bt" ("~1" is "/", "~0" is "~").
//
// The empty path (and "$") selects the whole document.
type Path struct {
	src   string
	steps []pathStep
}

// String returns the path as written.
func (p Path) String() string { return p.src }

// IsZero reports whether p is the zero Path (the whole document).
func (p Path) IsZero() bool { return len(p.steps) == 0 }

// ParsePath parses a dotted path or a JSON pointer.
func ParsePath(s string) (Path, error) {
	p := Path{src: s}
	if !utf8.ValidString(s) {
		return p, fmt.Errorf("%w %q: not UTF-8", ErrPath, s)
	}
	if strings.HasPrefix(s, "/") {
		for _, tok := range strings.Split(s[1:], "/") {
			tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
			p.steps = append(p.steps, pathStep{kind: stepPointer, key: tok})
		}
		if len(p.steps) > MaxPathSteps {
			return p, fmt.Errorf("%w %q: more than %d steps", ErrPath, s, MaxPathSteps)
		}
		return p, nil
	}
	rest := strings.TrimPrefix(s, "$")
	first := true
	for rest != "" {
		switch {
		case rest[0] == '[':
			end, st, err := parseBracket(rest)
			if err != nil {
				return p, fmt.Errorf("%w %q: %w", ErrPath, s, err)
			}
			p.steps = append(p.steps, st)
			rest = rest[end:]
		case rest[0] == '.' || first:
			if rest[0] == '.' {
				rest = rest[1:]
			}
			n := strings.IndexAny(rest, ".[")
			if n < 0 {
				n = len(rest)
			}
			key := rest[:n]
			if key == "" {
				return p, fmt.Errorf("%w %q: empty key", ErrPath, s)
			}
			if strings.ContainsAny(key, `]"`) {
				return p, fmt.Errorf("%w %q: key %q needs the [\"...\"] form", ErrPath, s, key)
			}
			if key == "*" {
				p.steps = append(p.steps, pathStep{kind: stepWild})
			} else {
				p.steps = append(p.steps, pathStep{kind: stepKey, key: key})
			}
			rest = rest[n:]
		default:
			return p, fmt.Errorf("%w %q: unexpected %q", ErrPath, s, rest[:1])
		}
		first = false
		if len(p.steps) > MaxPathSteps {
			return p, fmt.Errorf("%w %q: more than %d steps", ErrPath, s, MaxPathSteps)
		}
	}
	return p, nil
}

// parseBracket reads "[...]" at the start of s: [*], [], [n], ["key"].
func parseBracket(s string) (int, pathStep, error) {
	if len(s) > 1 && s[1] == '"' {
		// A JSON string, then "]".
		i := 2
		for i < len(s) && s[i] != '"' {
			if s[i] == '\\' {
				i++
			}
			i++
		}
		if i >= len(s) || i+1 >= len(s) || s[i+1] != ']' {
			return 0, pathStep{}, errors.New(`unterminated ["key"]`)
		}
		var key string
		if err := json.Unmarshal([]byte(s[1:i+1]), &key); err != nil {
			return 0, pathStep{}, fmt.Errorf("bad quoted key: %w", err)
		}
		return i + 2, pathStep{kind: stepKey, key: key}, nil
	}
	end := strings.IndexByte(s, ']')
	if end < 0 {
		return 0, pathStep{}, errors.New("unterminated [")
	}
	in := strings.TrimSpace(s[1:end])
	if in == "" || in == "*" {
		return end + 1, pathStep{kind: stepWild}, nil
	}
	n, err := strconv.Atoi(in)
	if err != nil || n > math.MaxInt32 || n < math.MinInt32 {
		return 0, pathStep{}, fmt.Errorf("bad index %q", in)
	}
	return end + 1, pathStep{kind: stepIndex, index: n}, nil
}

// splitLastWild splits p after its last wildcard step: prefix selects the
// items, suffix the value inside each. ok is false without a wildcard.
func (p Path) splitLastWild() (prefix, suffix Path, ok bool) {
	for i := len(p.steps) - 1; i >= 0; i-- {
		if p.steps[i].kind == stepWild {
			return Path{steps: p.steps[:i+1]}, Path{steps: p.steps[i+1:]}, true
		}
	}
	return Path{}, Path{}, false
}

func (p Path) equal(q Path) bool { return slices.Equal(p.steps, q.steps) }

// MustParsePath is ParsePath for paths known to be valid; it panics otherwise.
func MustParsePath(s string) Path {
	p, err := ParsePath(s)
	if err != nil {
		panic(err)
	}
	return p
}

// Eval returns every value p selects in doc (a value decoded by DecodeJSON
// or encoding/json), in document order; nil when nothing matches.
func (p Path) Eval(doc any) []any {
	cur := []any{doc}
	for _, st := range p.steps {
		var next []any
		for _, v := range cur {
			switch x := v.(type) {
			case map[string]any:
				switch st.kind {
				case stepKey, stepPointer:
					if m, ok := x[st.key]; ok {
						next = append(next, m)
					}
				case stepWild:
					keys := make([]string, 0, len(x))
					for k := range x {
						keys = append(keys, k)
					}
					sort.Strings(keys)
					for _, k := range keys {
						next = append(next, x[k])
					}
				}
			case []any:
				switch st.kind {
				case stepIndex:
					i := st.index
					if i < 0 {
						i += len(x)
					}
					if i >= 0 && i < len(x) {
						next = append(next, x[i])
					}
				case stepPointer:
					if i, err := strconv.Atoi(st.key); err == nil && i >= 0 && i < len(x) && st.key == strconv.Itoa(i) {
						next = append(next, x[i])
					}
				case stepWild:
					next = append(next, x...)
				}
			}
		}
		if len(next) == 0 {
			return nil
		}
		cur = next
	}
	return cur
}

// First returns the first value p selects in doc.
func (p Path) First(doc any) (any, bool) {
	vs := p.Eval(doc)
	if len(vs) == 0 {
		return nil, false
	}
	return vs[0], true
}

// ErrNotJSON is returned by DecodeJSON for a body that is not one JSON value.
var ErrNotJSON = errors.New("httpcheck: body is not a JSON value")

// DecodeJSON decodes one JSON value (numbers as json.Number, so large
// integers keep their digits). A UTF-8 BOM is skipped; trailing data other
// than white space is an error.
func DecodeJSON(b []byte) (any, error) {
	b = bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotJSON, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%w: trailing data after the value", ErrNotJSON)
	}
	return v, nil
}

// Text renders a scalar JSON value as text: strings as they are, numbers
// as written, booleans as "true"/"false". Objects, arrays and null report false.
func Text(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case json.Number:
		return x.String(), true
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), true
	case bool:
		return strconv.FormatBool(x), true
	}
	return "", false
}
