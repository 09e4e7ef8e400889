package ledger

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/batonhq/baton"
)

// MaxPage bounds the limit of ScanCandidates and ListDomains.
const MaxPage = 5000

// Candidate is a domain the dispatcher may enqueue.
type Candidate struct {
	Name      string
	DeleteAt  time.Time // zero when unknown; such domains come last
	Status    Status
	LastRunID string
	Finished  bool
	// Passed lists the steps whose latest result is a pass, sorted.
	Passed []string
}

// HasPassed reports whether step is among c.Passed.
func (c Candidate) HasPassed(step string) bool {
	_, ok := slices.BinarySearch(c.Passed, step)
	return ok
}

// Cursor is a position in the candidate scan. The zero Cursor is the start.
// String and ParseCursor turn it into an opaque token and back.
type Cursor struct {
	// Started is false for the zero Cursor.
	Started bool `json:"s,omitempty"`
	// Null is true once the scan has reached the domains without delete_at.
	Null bool `json:"n,omitempty"`
	// DeleteAt and Name are the key of the last row returned.
	DeleteAt time.Time `json:"d,omitzero"`
	Name     string    `json:"k,omitempty"`
}

// String returns c as an opaque URL-safe token ("" for the zero Cursor).
func (c Cursor) String() string {
	if !c.Started {
		return ""
	}
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

// ParseCursor parses a token from Cursor.String; "" is the zero Cursor.
func ParseCursor(s string) (Cursor, error) {
	var c Cursor
	if s == "" {
		return c, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || json.Unmarshal(b, &c) != nil || !c.Started {
		return Cursor{}, baton.Errorf(baton.EInvalid, "bad cursor")
	}
	return c, nil
}

// ScanCandidates returns up to limit domains the dispatcher may enqueue —
// not blacklisted, not rejected, not parked for review — ordered by
// delete_at (soonest first, unknown last) then name, starting after the
// cursor, and the cursor to pass for the next page. A page shorter than
// limit means the scan reached the end. A page costs two or three indexed
// queries, whatever its size: a keyset range over the covering
// domains_scan index (a second one for the page that crosses from dated to
// undated domains) and one primary-key lookup batch over step_results for
// the page's passed steps. In-flight filtering is the queue store's
// business, not the ledger's.
func (db *DB) ScanCandidates(ctx context.Context, after Cursor, limit int) ([]Candidate, Cursor, error) {
	if limit <= 0 || limit > MaxPage {
		return nil, after, baton.Errorf(baton.EInvalid, "limit must be between 1 and %d", MaxPage)
	}
	const cols = `SELECT name, delete_at, status, last_run_id, finished FROM domains WHERE scannable = 1 AND `
	var out []Candidate
	if !after.Null {
		q := cols + `delete_at IS NOT NULL ORDER BY delete_at, name LIMIT ?`
		args := []any{limit}
		if after.Started {
			d := ts(after.DeleteAt)
			// Each dialect's planner turns only one spelling of the keyset
			// condition into a range over all of domains_scan (checked with
			// EXPLAIN): SQLite a row value, MariaDB the OR form.
			if db.dialect == DialectMySQL {
				q = cols + `(delete_at > ? OR (delete_at = ? AND name > ?)) ORDER BY delete_at, name LIMIT ?`
				args = []any{d, d, after.Name, limit}
			} else {
				q = cols + `(delete_at, name) > (?, ?) ORDER BY delete_at, name LIMIT ?`
				args = []any{d, after.Name, limit}
			}
		}
		var err error
		if out, err = db.scanPage(ctx, out, q, args...); err != nil {
			return nil, after, err
		}
		if len(out) == limit {
			return db.withPassed(ctx, out)
		}
		after = Cursor{Started: true, Null: true}
	}
	q := cols + `delete_at IS NULL AND name > ? ORDER BY name LIMIT ?`
	var err error
	if out, err = db.scanPage(ctx, out, q, after.Name, limit-len(out)); err != nil {
		return nil, after, err
	}
	if len(out) == 0 {
		return nil, after, nil
	}
	return db.withPassed(ctx, out)
}

func (db *DB) scanPage(ctx context.Context, out []Candidate, q string, args ...any) ([]Candidate, error) {
	rows, err := db.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("scan candidates: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var c Candidate
		var d nullTime
		var fin int
		if err := rows.Scan(&c.Name, &d, &c.Status, &c.LastRunID, &fin); err != nil {
			return nil, fmt.Errorf("scan candidates: %w", err)
		}
		c.DeleteAt, c.Finished = d.T, fin != 0
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("scan candidates: %w", err)
	}
	return out, nil
}

// withPassed fills Passed for a page and returns the cursor after it.
func (db *DB) withPassed(ctx context.Context, page []Candidate) ([]Candidate, Cursor, error) {
	last := page[len(page)-1]
	next := Cursor{Started: true, Null: last.DeleteAt.IsZero(), DeleteAt: last.DeleteAt, Name: last.Name}
	idx := make(map[string]int, len(page))
	args := make([]any, len(page))
	for i, c := range page {
		idx[c.Name] = i
		args[i] = c.Name
	}
	rows, err := db.r.QueryContext(ctx, `SELECT domain, step FROM step_results
		WHERE domain IN (`+list(len(page))+`) AND outcome = 'pass' ORDER BY domain, step`, args...)
	if err != nil {
		return nil, Cursor{}, fmt.Errorf("scan passed steps: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var name, step string
		if err := rows.Scan(&name, &step); err != nil {
			return nil, Cursor{}, fmt.Errorf("scan passed steps: %w", err)
		}
		i := idx[name]
		page[i].Passed = append(page[i].Passed, step)
	}
	if err := rows.Err(); err != nil {
		return nil, Cursor{}, fmt.Errorf("scan passed steps: %w", err)
	}
	return page, next, nil
}
