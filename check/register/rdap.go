package register

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/openrdap/rdap"
)

// RDAPDomain is the part of an RDAP domain object the decision uses.
type RDAPDomain struct {
	// LDHName is the domain's name as the server spells it.
	LDHName string `json:"ldhName,omitempty"`
	// Status lists the RDAP status values ("active", "pending delete", ...).
	Status []string `json:"status,omitempty"`
	// Events lists the object's events.
	Events []Event `json:"events,omitempty"`
}

// Event is an RDAP event with its date kept raw and parsed defensively.
type Event struct {
	// Action is the eventAction ("registration", "expiration", ...).
	Action string `json:"action"`
	// Date is the eventDate as sent.
	Date string `json:"date"`
	// Time is the parsed date, nil when it is unparsable or absurd.
	Time *time.Time `json:"time,omitempty"`
}

// ErrNotDomain is returned by ParseRDAPDomain for a JSON document that is not
// an RDAP domain object (an RDAP error object, a help object, ...).
var ErrNotDomain = errors.New("register: not an RDAP domain object")

// ParseRDAPDomain decodes an RDAP domain object with openrdap's lenient
// decoder (minor type errors are ignored) and keeps what the decision needs.
func ParseRDAPDomain(body []byte) (*RDAPDomain, error) {
	obj, err := rdap.NewDecoder(body).Decode()
	if err != nil {
		return nil, fmt.Errorf("decode RDAP: %w", err)
	}
	d, ok := obj.(*rdap.Domain)
	if !ok {
		if e, ok := obj.(*rdap.Error); ok {
			code := 0
			if e.ErrorCode != nil {
				code = int(*e.ErrorCode)
			}
			return nil, fmt.Errorf("%w: RDAP error %d %q", ErrNotDomain, code, e.Title)
		}
		return nil, fmt.Errorf("%w: got %T", ErrNotDomain, obj)
	}
	out := &RDAPDomain{LDHName: d.LDHName}
	for _, s := range d.Status {
		if len(out.Status) == 32 {
			break
		}
		out.Status = append(out.Status, s)
	}
	for _, e := range d.Events {
		if len(out.Events) == 32 {
			break
		}
		ev := Event{Action: e.Action, Date: e.Date}
		if t, ok := ParseEventDate(e.Date); ok {
			ev.Time = &t
		}
		out.Events = append(out.Events, ev)
	}
	return out, nil
}

// ParseEventDate parses an RDAP eventDate (RFC 3339). It reports false for
// unparsable dates and for years outside 1985..9999 — real servers send
// things like "294247-01-10T04:00:54.775Z".
func ParseEventDate(s string) (time.Time, bool) {
	s = strings.TrimSpace(s)
	if len(s) < 10 || len(s) > 40 {
		return time.Time{}, false
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			if y := t.Year(); y < 1985 || y > 9999 {
				return time.Time{}, false
			}
			return t.UTC(), true
		}
	}
	return time.Time{}, false
}

// normStatus folds an RDAP or EPP status for comparison:
// "pending delete", "pendingDelete" and "PENDING_DELETE" all become "pendingdelete".
func normStatus(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if r == ' ' || r == '_' || r == '-' {
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// isDropping reports a status list marking a domain in its deletion cycle.
func isDropping(status []string) bool {
	for _, s := range status {
		switch normStatus(s) {
		case "pendingdelete", "redemptionperiod":
			return true
		}
	}
	return false
}
