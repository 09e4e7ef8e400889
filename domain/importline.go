package domain

import (
	"encoding/csv"
	"errors"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/batonhq/baton"
)

// MaxSourceLen bounds the source column of an import line, in bytes.
const MaxSourceLen = 64

// Entry is one domain to import: its normalized name, when the registry
// deletes it (zero when the line did not say) and where it came from.
type Entry struct {
	Name     string
	DeleteAt time.Time
	Source   string
}

// ErrSkip is returned by ParseImportLine for a line that holds no entry: a
// blank line, a "#" comment or a CSV header ("name,delete_at,...").
var ErrSkip = errors.New("domain: blank, comment or header line")

// deleteAtLayouts are tried in order; the ones without a zone are UTC.
var deleteAtLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02T15:04:05",
	"2006-01-02 15:04:05",
	"2006-01-02 15:04",
	"2006-01-02",
}

// ParseImportLine parses one line of the import format: a domain name alone,
// or CSV "name,delete_at[,source]". delete_at may be empty, RFC 3339, or
// "2006-01-02 15:04:05" / "2006-01-02T15:04:05" / "2006-01-02" (UTC); it is
// returned in UTC. The name goes through Normalize. A line with nothing to
// import returns ErrSkip; an invalid line an EInvalid *baton.Error whose
// message is the reason.
func ParseImportLine(line string) (Entry, error) {
	line = strings.TrimFunc(line, isSpace)
	if line == "" || line[0] == '#' {
		return Entry{}, ErrSkip
	}
	if !utf8.ValidString(line) {
		return Entry{}, invalid("not valid UTF-8")
	}
	fields := []string{line}
	if strings.ContainsAny(line, ",\"") {
		r := csv.NewReader(strings.NewReader(line))
		r.FieldsPerRecord = -1
		r.TrimLeadingSpace = true
		rec, err := r.Read()
		if err != nil {
			return Entry{}, &baton.Error{Code: baton.EInvalid, Message: "malformed CSV", Err: err}
		}
		fields = rec
	}
	if len(fields) > 3 {
		return Entry{}, invalid("too many fields (%d > 3: name,delete_at,source)", len(fields))
	}
	for i := range fields {
		fields[i] = strings.TrimFunc(fields[i], isSpace)
	}
	if h := strings.ToLower(fields[0]); h == "name" || h == "domain" {
		return Entry{}, ErrSkip
	}
	name, err := Normalize(fields[0])
	if err != nil {
		return Entry{}, err
	}
	e := Entry{Name: name}
	if len(fields) > 1 && fields[1] != "" {
		e.DeleteAt, err = ParseDeleteAt(fields[1])
		if err != nil {
			return Entry{}, err
		}
	}
	if len(fields) > 2 {
		e.Source = fields[2]
		if len(e.Source) > MaxSourceLen {
			return Entry{}, invalid("source too long (%d > %d bytes)", len(e.Source), MaxSourceLen)
		}
		for _, r := range e.Source {
			if r < ' ' || r == 0x7f {
				return Entry{}, invalid("control character in source")
			}
		}
	}
	return e, nil
}

// ParseDeleteAt parses a delete_at value in one of the accepted layouts
// (see ParseImportLine) and returns it in UTC.
func ParseDeleteAt(s string) (time.Time, error) {
	for _, layout := range deleteAtLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			if t.Year() < 1970 || t.Year() > 9999 {
				return time.Time{}, invalid("delete_at out of range")
			}
			return t.UTC(), nil
		}
	}
	return time.Time{}, invalid("bad delete_at %q (want RFC 3339, 2006-01-02 15:04:05 or 2006-01-02)", truncate(s, 40))
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
