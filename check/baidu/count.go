package baidu

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// ErrCount is wrapped by every ParseCount error.
var ErrCount = errors.New("baidu: not a result count")

// MaxCount bounds a parsed count (10^15): anything larger is an error.
const MaxCount int64 = 1_000_000_000_000_000

// ParseCount reads a Baidu result count as printed on its pages: plain
// digits ("1234"), thousands separators ("1,234", full-width "１，２３４"),
// the units 万 (10^4), 亿 (10^8) and 万亿 (10^12) with optional decimals
// ("12万", "1.5万", "3亿2000万", "1亿2345万6789"), an optional leading "约"
// and surrounding space. Units must decrease left to right; a fraction below
// one unit is truncated.
func ParseCount(s string) (int64, error) {
	orig := s
	s = strings.TrimSpace(s)
	s = strings.TrimPrefix(s, "约")
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("%w: empty", ErrCount)
	}
	var total int64
	lastUnit := int64(0) // 0 = nothing yet; the next unit must be smaller
	for s != "" {
		intPart, frac, rest, err := readNumber(s)
		if err != nil {
			return 0, fmt.Errorf("%w %q: %w", ErrCount, orig, err)
		}
		unit := int64(1)
		switch {
		case strings.HasPrefix(rest, "万亿"):
			unit, rest = 1_000_000_000_000, rest[len("万亿"):]
		case strings.HasPrefix(rest, "亿"):
			unit, rest = 100_000_000, rest[len("亿"):]
		case strings.HasPrefix(rest, "万"):
			unit, rest = 10_000, rest[len("万"):]
		}
		if lastUnit != 0 && unit >= lastUnit {
			return 0, fmt.Errorf("%w %q: units out of order", ErrCount, orig)
		}
		if unit == 1 && rest != "" {
			return 0, fmt.Errorf("%w %q: unexpected %q", ErrCount, orig, firstRune(rest))
		}
		if intPart >= MaxCount/unit+1 {
			return 0, fmt.Errorf("%w %q: too large", ErrCount, orig)
		}
		v := intPart * unit
		// Fraction digits: add frac * unit / 10^len(frac), digit by digit.
		scale := unit
		for i := 0; i < len(frac) && scale > 1; i++ {
			scale /= 10
			v += int64(frac[i]-'0') * scale
		}
		total += v
		if total > MaxCount {
			return 0, fmt.Errorf("%w %q: too large", ErrCount, orig)
		}
		lastUnit = unit
		s = strings.TrimSpace(rest)
	}
	return total, nil
}

func firstRune(s string) string {
	_, n := utf8.DecodeRuneInString(s)
	return s[:n]
}

// readNumber reads digits (ASCII or full-width) with thousands separators
// and an optional fraction; it returns the integer part, the fraction
// digits (ASCII) and the rest of s.
func readNumber(s string) (intPart int64, frac string, rest string, err error) {
	var digits, fracB []byte
	inFrac := false
	i := 0
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		var d byte
		switch {
		case r >= '0' && r <= '9':
			d = byte(r - '0')
		case r >= '０' && r <= '９':
			d = byte(r - '０')
		case (r == ',' || r == '，') && !inFrac && len(digits) > 0:
			i += n
			continue
		case (r == '.' || r == '．') && !inFrac && len(digits) > 0:
			inFrac = true
			i += n
			continue
		default:
			goto done
		}
		if inFrac {
			if len(fracB) < 18 {
				fracB = append(fracB, '0'+d)
			}
		} else {
			if len(digits) >= 18 {
				return 0, "", "", errors.New("too many digits")
			}
			digits = append(digits, '0'+d)
		}
		i += n
	}
done:
	if len(digits) == 0 {
		if i < len(s) {
			return 0, "", "", fmt.Errorf("unexpected %q", firstRune(s[i:]))
		}
		return 0, "", "", errors.New("no digits")
	}
	if prev := s[:i]; strings.HasSuffix(prev, ",") || strings.HasSuffix(prev, "，") {
		return 0, "", "", errors.New("dangling separator")
	}
	for _, d := range digits {
		intPart = intPart*10 + int64(d-'0')
	}
	return intPart, string(fracB), s[i:], nil
}
