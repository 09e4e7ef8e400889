package ledger

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/batonhq/baton"
)

// batchChunk is the number of rows of one multi-row upsert.
const batchChunk = 200

var (
	upsertResults = upsert{
		table: "step_results",
		cols:  []string{"domain", "step", "state", "outcome", "reason", "data", "attempts", "finished_at", "run_id", "task_id", "version"},
		key:   []string{"domain", "step"},
	}
	upsertRuns = upsert{
		table:    "runs",
		cols:     []string{"id", "domain", "started_at", "finished_at", "status", "steps", "stopped_at_step", "version"},
		key:      []string{"id"},
		keep:     []string{"domain"},
		coalesce: []string{"started_at", "steps"},
	}
	upsertDomains = upsert{
		table: "domains",
		// scannable is inserted (CHECK constraints see the row before the
		// conflict is resolved) but updated from the stored blacklisted.
		cols: []string{"name", "status", "last_run_id", "finished", "updated_at", "black_reason", "created_at", "scannable", "version"},
		key:  []string{"name"},
		keep: []string{"black_reason", "created_at", "scannable"},
		derived: []string{"scannable = CASE WHEN {old.blacklisted} = 0 AND {new.status} NOT IN " +
			"('rejected','review','blacklisted') THEN 1 ELSE 0 END"},
	}
	upsertBlacklist = upsert{
		table: "blacklist",
		cols:  []string{"domain", "reason", "category", "evidence", "step", "created_at", "version"},
		key:   []string{"domain"},
	}
)

// ApplyBatch writes b in one transaction with idempotent, version-guarded
// upserts (see Batch). Changes for a domain that is not in the ledger are
// dropped and logged: a domain deleted by an operator must not wedge the
// syncer. An invalid change fails the whole batch with EInvalid.
func (db *DB) ApplyBatch(ctx context.Context, b Batch) error {
	if err := b.validate(); err != nil {
		return err
	}
	if b.Len() == 0 {
		return nil
	}
	err := db.inTx(ctx, func(tx *sql.Tx) error {
		known, err := db.existing(ctx, tx, b.domainNames())
		if err != nil {
			return err
		}
		dropped := 0
		var rows [][]any
		for _, d := range b.Domains {
			if !known[d.Name] {
				dropped++
				continue
			}
			at := ts(d.At)
			rows = append(rows, []any{d.Name, string(d.Status), d.LastRunID, boolInt(d.Finished), at, "", at, boolInt(d.Status.Scannable()), d.Version})
		}
		if err := db.exec(ctx, tx, upsertDomains, rows); err != nil {
			return fmt.Errorf("domains: %w", err)
		}

		rows = rows[:0]
		for _, r := range b.Runs {
			if !known[r.Domain] {
				dropped++
				continue
			}
			rows = append(rows, []any{r.ID, r.Domain, ts(r.StartedAt), ts(r.FinishedAt), r.Status, jsonSteps(r.Steps), r.StoppedAtStep, r.Version})
		}
		if err := db.exec(ctx, tx, upsertRuns, rows); err != nil {
			return fmt.Errorf("runs: %w", err)
		}

		rows = rows[:0]
		for _, r := range b.Results {
			if !known[r.Domain] {
				dropped++
				continue
			}
			rows = append(rows, []any{r.Domain, r.Step, string(r.State), string(r.Outcome), r.Reason, jsonText(r.Data),
				r.Attempts, ts(r.FinishedAt), r.RunID, r.TaskID, r.Version})
		}
		if err := db.exec(ctx, tx, upsertResults, rows); err != nil {
			return fmt.Errorf("step results: %w", err)
		}

		rows = rows[:0]
		var black []string
		for _, e := range b.Blacklist {
			if !known[e.Domain] {
				dropped++
				continue
			}
			rows = append(rows, []any{e.Domain, e.Reason, e.Category, jsonText(e.Evidence), e.Step, ts(e.CreatedAt), e.Version})
			black = append(black, e.Domain)
		}
		if err := db.exec(ctx, tx, upsertBlacklist, rows); err != nil {
			return fmt.Errorf("blacklist: %w", err)
		}
		if err := markBlacklisted(ctx, tx, black); err != nil {
			return err
		}
		if dropped > 0 {
			db.log.Warn("batch changes for unknown domains dropped", "dropped", dropped, "changes", b.Len())
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("apply batch: %w", err)
	}
	return nil
}

func (db *DB) exec(ctx context.Context, tx *sql.Tx, u upsert, rows [][]any) error {
	if len(rows) == 0 {
		return nil
	}
	_, err := execChunks(ctx, tx, batchChunk, rows, func(n int) string { return u.sql(db.dialect, n) })
	return err
}

// markBlacklisted copies the stored blacklist reason onto the domains. It
// reads the blacklist row rather than the change so that an older entry
// ignored by the version guard cannot leave its reason behind.
func markBlacklisted(ctx context.Context, tx *sql.Tx, names []string) error {
	for len(names) > 0 {
		n := min(len(names), batchChunk)
		args := make([]any, n)
		for i, s := range names[:n] {
			args[i] = s
		}
		_, err := tx.ExecContext(ctx, `UPDATE domains SET blacklisted = 1, scannable = 0,
			black_reason = (SELECT reason FROM blacklist WHERE blacklist.domain = domains.name)
			WHERE name IN (`+list(n)+`)`, args...)
		if err != nil {
			return fmt.Errorf("mark blacklisted: %w", err)
		}
		names = names[n:]
	}
	return nil
}

// existing returns which of names are in the domains table.
func (db *DB) existing(ctx context.Context, tx *sql.Tx, names []string) (map[string]bool, error) {
	known := make(map[string]bool, len(names))
	for len(names) > 0 {
		n := min(len(names), 500)
		args := make([]any, n)
		for i, s := range names[:n] {
			args[i] = s
		}
		rows, err := tx.QueryContext(ctx, `SELECT name FROM domains WHERE name IN (`+list(n)+`)`, args...)
		if err != nil {
			return nil, fmt.Errorf("look up domains: %w", err)
		}
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				rows.Close()
				return nil, fmt.Errorf("look up domains: %w", err)
			}
			known[s] = true
		}
		if err := rows.Close(); err != nil {
			return nil, fmt.Errorf("look up domains: %w", err)
		}
		names = names[n:]
	}
	return known, nil
}

// domainNames returns the distinct domains b touches, sorted.
func (b Batch) domainNames() []string {
	set := map[string]struct{}{}
	for _, d := range b.Domains {
		set[d.Name] = struct{}{}
	}
	for _, r := range b.Runs {
		set[r.Domain] = struct{}{}
	}
	for _, r := range b.Results {
		set[r.Domain] = struct{}{}
	}
	for _, e := range b.Blacklist {
		set[e.Domain] = struct{}{}
	}
	out := make([]string, 0, len(set))
	for s := range set {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// Field limits, matching the narrowest column of the two dialects.
const (
	maxNameLen   = 253
	maxStepLen   = 32
	maxIDLen     = 64
	maxStatusLen = 16
	maxCatLen    = 64
)

func (b Batch) validate() error {
	bad := func(kind string, i int, format string, args ...any) error {
		return baton.Errorf(baton.EInvalid, "batch %s[%d]: %s", kind, i, fmt.Sprintf(format, args...))
	}
	for i, d := range b.Domains {
		switch {
		case !validName(d.Name):
			return bad("domains", i, "bad name %q", d.Name)
		case !d.Status.Valid():
			return bad("domains", i, "bad status %q", d.Status)
		case len(d.LastRunID) > maxIDLen:
			return bad("domains", i, "run id too long")
		case d.At.IsZero():
			return bad("domains", i, "At is required")
		case d.Version <= 0:
			return bad("domains", i, "version must be positive")
		}
	}
	for i, r := range b.Runs {
		switch {
		case r.ID == "" || len(r.ID) > maxIDLen:
			return bad("runs", i, "bad id %q", r.ID)
		case !validName(r.Domain):
			return bad("runs", i, "bad domain %q", r.Domain)
		case r.Status == "" || len(r.Status) > maxStatusLen:
			return bad("runs", i, "bad status %q", r.Status)
		case len(r.StoppedAtStep) > maxStepLen:
			return bad("runs", i, "step name too long")
		case r.Version <= 0:
			return bad("runs", i, "version must be positive")
		}
	}
	for i, r := range b.Results {
		switch {
		case !validName(r.Domain):
			return bad("results", i, "bad domain %q", r.Domain)
		case r.Step == "" || len(r.Step) > maxStepLen:
			return bad("results", i, "bad step %q", r.Step)
		case !r.State.Valid():
			return bad("results", i, "bad state %q", r.State)
		case r.Outcome != "" && !r.Outcome.Valid():
			return bad("results", i, "bad outcome %q", r.Outcome)
		case len(r.RunID) > maxIDLen || len(r.TaskID) > maxIDLen:
			return bad("results", i, "id too long")
		case len(r.Data) > 0 && !json.Valid(r.Data):
			return bad("results", i, "data is not JSON")
		case r.Version <= 0:
			return bad("results", i, "version must be positive")
		}
	}
	for i, e := range b.Blacklist {
		switch {
		case !validName(e.Domain):
			return bad("blacklist", i, "bad domain %q", e.Domain)
		case len(e.Category) > maxCatLen || len(e.Step) > maxStepLen:
			return bad("blacklist", i, "category or step too long")
		case len(e.Evidence) > 0 && !json.Valid(e.Evidence):
			return bad("blacklist", i, "evidence is not JSON")
		case e.CreatedAt.IsZero():
			return bad("blacklist", i, "CreatedAt is required")
		case e.Version <= 0:
			return bad("blacklist", i, "version must be positive")
		}
	}
	return nil
}

// validName is a cheap shape check; names were normalized on import.
func validName(s string) bool {
	if s == "" || len(s) > maxNameLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// jsonText stores raw JSON as text, nil (NULL) when empty.
func jsonText(m json.RawMessage) any {
	if len(m) == 0 {
		return nil
	}
	return string(m)
}

// jsonSteps stores a step list as a JSON array, nil (NULL) when nil.
func jsonSteps(steps []string) any {
	if steps == nil {
		return nil
	}
	b, _ := json.Marshal(steps)
	return string(b)
}
