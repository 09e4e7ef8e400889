package httpcheck

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
)

// Int reads an integer leniently from a scalar JSON value or a text:
// numbers (fractions truncated), numeric strings with thousands separators
// ("1,234", "1，234"), and the first number inside a text ("建站5年" → 5,
// "4928466 ~ 76713" → 4928466). It reports false when there is no number or
// it does not fit in an int64.
func Int(v any) (int64, bool) {
	switch x := v.(type) {
	case json.Number:
		return Int(string(x))
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) || x >= math.MaxInt64 || x <= math.MinInt64 {
			return 0, false
		}
		return int64(x), true
	case int:
		return int64(x), true
	case int64:
		return x, true
	case bool, nil:
		return 0, false
	case string:
		return firstInt(x)
	}
	return 0, false
}

// firstInt finds the first run of digits in s (thousands separators ","
// and "，" allowed between digits, a fraction after "." ignored), with a "-"
// right before it making it negative.
func firstInt(s string) (int64, bool) {
	start := strings.IndexAny(s, "0123456789")
	if start < 0 {
		return 0, false
	}
	neg := start > 0 && s[start-1] == '-'
	var digits strings.Builder
	i := start
	for i < len(s) {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			digits.WriteByte(c)
			i++
			continue
		case c == ',' && i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9':
			i++
			continue
		case strings.HasPrefix(s[i:], "，") && i+3 < len(s) && s[i+3] >= '0' && s[i+3] <= '9':
			i += len("，")
			continue
		}
		break
	}
	n, err := strconv.ParseInt(digits.String(), 10, 64)
	if err != nil {
		return 0, false
	}
	if neg {
		n = -n
	}
	return n, true
}
