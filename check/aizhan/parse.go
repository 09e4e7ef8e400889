package aizhan

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Range is a number aizhan may print as a range ("4928466 ~ 7671300").
// A plain number has Lo == Hi.
type Range struct {
	Lo int64 `json:"lo"`
	Hi int64 `json:"hi"`
}

// MaxNumber bounds a parsed number (10^15).
const MaxNumber int64 = 1_000_000_000_000_000

// ErrNumber is wrapped by every ParseRange error.
var ErrNumber = errors.New("aizhan: not a number")

// ParseRange reads a number leniently: "3", " 3 ", "1,234", "3.0",
// "4928466 ~ 7671300" (also "～", "至", "-" between two numbers), a trailing
// "..." or "+" ("76713...", "1000+"). The order of a range is normalized
// (Lo ≤ Hi). Empty text, "-", "--" and "n/a" are errors.
func ParseRange(s string) (Range, error) {
	orig := s
	s = strings.TrimSpace(s)
	if s == "" {
		return Range{}, fmt.Errorf("%w: empty", ErrNumber)
	}
	var parts []string
	for _, sep := range []string{"~", "～", "至"} {
		if strings.Contains(s, sep) {
			parts = strings.SplitN(s, sep, 2)
			break
		}
	}
	if parts == nil {
		// "100-200": a dash between two digits is a range; a leading dash is not.
		if i := strings.Index(s, "-"); i > 0 && i < len(s)-1 && (isDigit(s[i-1]) || s[i-1] == ' ') {
			parts = []string{s[:i], s[i+1:]}
		} else {
			parts = []string{s}
		}
	}
	var vals []int64
	for _, p := range parts {
		n, err := parseOne(p)
		if err != nil {
			return Range{}, fmt.Errorf("%w %q: %w", ErrNumber, orig, err)
		}
		vals = append(vals, n)
	}
	r := Range{Lo: vals[0], Hi: vals[len(vals)-1]}
	if r.Lo > r.Hi {
		r.Lo, r.Hi = r.Hi, r.Lo
	}
	return r, nil
}

func isDigit(b byte) bool { return b >= '0' && b <= '9' }

// parseOne reads one non-negative integer: digits with "," separators, an
// optional fraction (truncated), an optional trailing "..."/"…"/"+".
func parseOne(s string) (int64, error) {
	s = strings.TrimSpace(s)
	for _, suf := range []string{"...", "…", "+"} {
		s = strings.TrimSpace(strings.TrimSuffix(s, suf))
	}
	if s == "" {
		return 0, errors.New("no digits")
	}
	if i := strings.IndexByte(s, '.'); i >= 0 {
		frac := s[i+1:]
		for j := 0; j < len(frac); j++ {
			if !isDigit(frac[j]) {
				return 0, fmt.Errorf("bad fraction %q", frac)
			}
		}
		s = s[:i]
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case isDigit(c):
			b.WriteByte(c)
		case c == ',' && i > 0 && i+1 < len(s) && isDigit(s[i-1]) && isDigit(s[i+1]):
		default:
			r, _ := utf8.DecodeRuneInString(s[i:])
			return 0, fmt.Errorf("unexpected %q", r)
		}
	}
	if b.Len() == 0 {
		return 0, errors.New("no digits")
	}
	if b.Len() > 16 {
		return 0, errors.New("too large")
	}
	n, err := strconv.ParseInt(b.String(), 10, 64)
	if err != nil || n > MaxNumber {
		return 0, errors.New("too large")
	}
	return n, nil
}

// Number is a JSON number aizhan may send as a number, a numeric string or
// a range string; it decodes leniently. Valid is false for null, "" and
// anything unreadable (decoding never fails).
type Number struct {
	Range
	Valid bool
	Text  string // the value as sent when it was a string
}

// UnmarshalJSON implements json.Unmarshaler leniently.
func (n *Number) UnmarshalJSON(b []byte) error {
	*n = Number{}
	b = bytes.TrimSpace(b)
	if len(b) == 0 || string(b) == "null" {
		return nil
	}
	var s string
	if b[0] == '"' {
		if err := json.Unmarshal(b, &s); err != nil {
			return nil
		}
		n.Text = s
	} else {
		s = string(b)
	}
	if b[0] != '"' && strings.ContainsAny(s, "eE-") {
		// An exponent or negative JSON number: read it as a float.
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || f < 0 || f > float64(MaxNumber) {
			return nil
		}
		n.Range, n.Valid = Range{Lo: int64(f), Hi: int64(f)}, true
		return nil
	}
	r, err := ParseRange(s)
	if err != nil {
		return nil
	}
	n.Range, n.Valid = r, true
	return nil
}

// MarshalJSON writes the number (Lo), the range text, or null.
func (n Number) MarshalJSON() ([]byte, error) {
	switch {
	case !n.Valid:
		return []byte("null"), nil
	case n.Lo != n.Hi:
		return json.Marshal(fmt.Sprintf("%d ~ %d", n.Lo, n.Hi))
	}
	return []byte(strconv.FormatInt(n.Lo, 10)), nil
}

// Row is one domain's entry in data.success (siteinfos and hisinfos).
type Row struct {
	Domain    string `json:"domain"`
	PCBR      Number `json:"pc_br"`
	MBR       Number `json:"m_br"`
	IP        Number `json:"ip"`
	PCIP      Number `json:"pc_ip"`
	MIP       Number `json:"m_ip"`
	PCBRMax   Number `json:"pc_br_max"`
	MBRMax    Number `json:"m_br_max"`
	PCMaxTime string `json:"pc_max_time,omitempty"`
	MMaxTime  string `json:"m_max_time,omitempty"`
	// Raw is the row as sent.
	Raw json.RawMessage `json:"-"`
}

// Answer is a decoded siteinfos / hisinfos answer.
type Answer struct {
	Code   Number `json:"code"`
	Status string `json:"status"`
	Msg    string `json:"msg"`
	// Success are the domains answered; Failed the domains the provider
	// could not answer now (lower-cased).
	Success []Row    `json:"success"`
	Failed  []string `json:"failed"`
}

// SuccessCode is the code of a successful answer.
const SuccessCode = 200000

// ErrAnswer is wrapped by ParseAnswer errors.
var ErrAnswer = errors.New("aizhan: malformed answer")

// ParseAnswer decodes an apistore answer: {"code":200000,"status":"success",
// "data":{"success":[rows],"count":N,"failed":[...]},"msg":"请求成功"}.
// "failed" entries may be domain strings or objects with a "domain". An
// error answer (no data) decodes with Code, Status and Msg only.
func ParseAnswer(body []byte) (Answer, error) {
	var raw struct {
		Code   Number          `json:"code"`
		Status string          `json:"status"`
		Msg    json.RawMessage `json:"msg"`
		Data   json.RawMessage `json:"data"`
	}
	var a Answer
	if err := json.Unmarshal(bytes.TrimPrefix(body, []byte("\xef\xbb\xbf")), &raw); err != nil {
		return a, fmt.Errorf("%w: %w", ErrAnswer, err)
	}
	a.Code, a.Status = raw.Code, raw.Status
	if len(raw.Msg) > 0 {
		var s string
		if json.Unmarshal(raw.Msg, &s) == nil {
			a.Msg = s
		} else {
			a.Msg = string(raw.Msg)
		}
	}
	if !a.Code.Valid {
		return a, fmt.Errorf("%w: no numeric code", ErrAnswer)
	}
	if a.Code.Lo != SuccessCode {
		return a, nil
	}
	var data struct {
		Success []json.RawMessage `json:"success"`
		Failed  []json.RawMessage `json:"failed"`
	}
	if len(raw.Data) == 0 || string(raw.Data) == "null" {
		return a, fmt.Errorf("%w: code %d without data", ErrAnswer, SuccessCode)
	}
	if err := json.Unmarshal(raw.Data, &data); err != nil {
		return a, fmt.Errorf("%w: data: %w", ErrAnswer, err)
	}
	for _, r := range data.Success {
		var row Row
		if err := json.Unmarshal(r, &row); err != nil {
			continue // a row we cannot read: its domain ends up "missing" → retry
		}
		row.Domain = normalize(row.Domain)
		if row.Domain == "" {
			continue
		}
		row.Raw = r
		a.Success = append(a.Success, row)
	}
	for _, f := range data.Failed {
		var s string
		if json.Unmarshal(f, &s) != nil {
			var obj struct {
				Domain string `json:"domain"`
			}
			if json.Unmarshal(f, &obj) != nil {
				continue
			}
			s = obj.Domain
		}
		if s = normalize(s); s != "" {
			a.Failed = append(a.Failed, s)
		}
	}
	return a, nil
}

func normalize(d string) string {
	return strings.TrimSuffix(strings.ToLower(strings.TrimSpace(d)), ".")
}
