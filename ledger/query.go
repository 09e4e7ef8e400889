package ledger

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/batonhq/baton"
)

// ErrDomainNotFound is returned by GetDomain for a name not in the ledger.
var ErrDomainNotFound = &baton.Error{Code: baton.ENotFound, Message: "domain not found"}

const domainCols = `name, source, delete_at, status, blacklisted, black_reason, last_run_id, finished, created_at, updated_at`

func scanDomain(scan func(...any) error) (Domain, error) {
	var d Domain
	var del, created, updated nullTime
	var black, fin int
	err := scan(&d.Name, &d.Source, &del, &d.Status, &black, &d.BlackReason, &d.LastRunID, &fin, &created, &updated)
	d.DeleteAt, d.CreatedAt, d.UpdatedAt = del.T, created.T, updated.T
	d.Blacklisted, d.Finished = black != 0, fin != 0
	return d, err
}

// GetDomain returns a domain with its step results and runs (newest
// first), or ErrDomainNotFound.
func (db *DB) GetDomain(ctx context.Context, name string) (Domain, error) {
	d, err := scanDomain(db.r.QueryRowContext(ctx, `SELECT `+domainCols+` FROM domains WHERE name = ?`, name).Scan)
	if errors.Is(err, sql.ErrNoRows) {
		return Domain{}, ErrDomainNotFound
	}
	if err != nil {
		return Domain{}, fmt.Errorf("get domain: %w", err)
	}
	rows, err := db.r.QueryContext(ctx, `SELECT domain, step, state, outcome, reason, data, attempts, finished_at, run_id, task_id, version
		FROM step_results WHERE domain = ? ORDER BY step`, name)
	if err != nil {
		return Domain{}, fmt.Errorf("get domain steps: %w", err)
	}
	defer rows.Close()
	d.Steps = map[string]StepResult{}
	for rows.Next() {
		var r StepResult
		var data sql.NullString
		var fin nullTime
		if err := rows.Scan(&r.Domain, &r.Step, &r.State, &r.Outcome, &r.Reason, &data, &r.Attempts, &fin, &r.RunID, &r.TaskID, &r.Version); err != nil {
			return Domain{}, fmt.Errorf("get domain steps: %w", err)
		}
		if data.Valid {
			r.Data = json.RawMessage(data.String)
		}
		r.FinishedAt = fin.T
		d.Steps[r.Step] = r
	}
	if err := rows.Err(); err != nil {
		return Domain{}, fmt.Errorf("get domain steps: %w", err)
	}
	rows.Close()

	rows, err = db.r.QueryContext(ctx, `SELECT id, domain, started_at, finished_at, status, steps, stopped_at_step, version
		FROM runs WHERE domain = ? ORDER BY started_at DESC, id DESC`, name)
	if err != nil {
		return Domain{}, fmt.Errorf("get domain runs: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var r Run
		var started, finished nullTime
		var steps sql.NullString
		if err := rows.Scan(&r.ID, &r.Domain, &started, &finished, &r.Status, &steps, &r.StoppedAtStep, &r.Version); err != nil {
			return Domain{}, fmt.Errorf("get domain runs: %w", err)
		}
		r.StartedAt, r.FinishedAt = started.T, finished.T
		if steps.Valid {
			if err := json.Unmarshal([]byte(steps.String), &r.Steps); err != nil {
				return Domain{}, fmt.Errorf("get domain runs: steps of run %s: %w", r.ID, err)
			}
		}
		d.Runs = append(d.Runs, r)
	}
	if err := rows.Err(); err != nil {
		return Domain{}, fmt.Errorf("get domain runs: %w", err)
	}
	return d, nil
}

// Filter selects domains for ListDomains. Zero fields select everything.
type Filter struct {
	// Status keeps domains in this status.
	Status Status
	// Step keeps domains that have a result for this step.
	Step string
	// Outcome, with Step, keeps domains whose latest result for Step has
	// this outcome.
	Outcome baton.Outcome
	// Query keeps names starting with this prefix (ASCII, lower-cased).
	Query string
	// Limit is the page size: default 100, at most MaxPage.
	Limit int
	// Cursor is the Next of the previous page ("" for the first).
	Cursor string
}

// ListDomains returns a page of domains ordered by name and the cursor of
// the next page ("" after the last page).
func (db *DB) ListDomains(ctx context.Context, f Filter) (page []Domain, next string, err error) {
	limit := f.Limit
	if limit == 0 {
		limit = 100
	}
	if limit < 0 || limit > MaxPage {
		return nil, "", baton.Errorf(baton.EInvalid, "limit must be between 1 and %d", MaxPage)
	}
	if f.Status != "" && !f.Status.Valid() {
		return nil, "", baton.Errorf(baton.EInvalid, "unknown status %q", f.Status)
	}
	if f.Outcome != "" && (f.Step == "" || !f.Outcome.Valid()) {
		return nil, "", baton.Errorf(baton.EInvalid, "outcome needs a step and one of pass, reject, black_hit, retry")
	}
	where := []string{"name > ?"}
	args := []any{f.Cursor}
	if f.Status != "" {
		where = append(where, "status = ?")
		args = append(args, string(f.Status))
	}
	if q := strings.ToLower(strings.TrimSpace(f.Query)); q != "" {
		// Names are LDH ASCII, all below '~', so [q, q+"~") is the prefix range.
		where = append(where, "name >= ? AND name < ?")
		args = append(args, q, q+"~")
	}
	if f.Step != "" {
		sub := "EXISTS (SELECT 1 FROM step_results s WHERE s.domain = domains.name AND s.step = ?"
		args = append(args, f.Step)
		if f.Outcome != "" {
			sub += " AND s.outcome = ?"
			args = append(args, string(f.Outcome))
		}
		where = append(where, sub+")")
	}
	args = append(args, limit+1)
	rows, err := db.r.QueryContext(ctx, `SELECT `+domainCols+` FROM domains WHERE `+strings.Join(where, " AND ")+
		` ORDER BY name LIMIT ?`, args...)
	if err != nil {
		return nil, "", fmt.Errorf("list domains: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		d, err := scanDomain(rows.Scan)
		if err != nil {
			return nil, "", fmt.Errorf("list domains: %w", err)
		}
		page = append(page, d)
	}
	if err := rows.Err(); err != nil {
		return nil, "", fmt.Errorf("list domains: %w", err)
	}
	if len(page) > limit {
		page = page[:limit]
		next = page[limit-1].Name
	}
	return page, next, nil
}

// FunnelStep counts the domains that reached one step and how they left it.
type FunnelStep struct {
	Step     string `json:"step"`
	Reached  int64  `json:"reached"`  // has a result for the step
	Passed   int64  `json:"passed"`   // latest outcome pass
	Rejected int64  `json:"rejected"` // latest outcome reject
	BlackHit int64  `json:"blackHit"` // latest outcome black_hit
	Failed   int64  `json:"failed"`   // latest state failed (attempts spent)
}

// Funnel counts, for each of steps in the order given, the domains that
// reached it and their outcomes, in one grouped query.
func (db *DB) Funnel(ctx context.Context, steps []string) ([]FunnelStep, error) {
	if len(steps) == 0 {
		return nil, nil
	}
	args := make([]any, len(steps))
	for i, s := range steps {
		args[i] = s
	}
	rows, err := db.r.QueryContext(ctx, `SELECT step, COUNT(*),
		SUM(CASE WHEN outcome = 'pass' THEN 1 ELSE 0 END),
		SUM(CASE WHEN outcome = 'reject' THEN 1 ELSE 0 END),
		SUM(CASE WHEN outcome = 'black_hit' THEN 1 ELSE 0 END),
		SUM(CASE WHEN state = 'failed' THEN 1 ELSE 0 END)
		FROM step_results WHERE step IN (`+list(len(steps))+`) GROUP BY step`, args...)
	if err != nil {
		return nil, fmt.Errorf("funnel: %w", err)
	}
	defer rows.Close()
	by := map[string]FunnelStep{}
	for rows.Next() {
		var f FunnelStep
		if err := rows.Scan(&f.Step, &f.Reached, &f.Passed, &f.Rejected, &f.BlackHit, &f.Failed); err != nil {
			return nil, fmt.Errorf("funnel: %w", err)
		}
		by[f.Step] = f
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("funnel: %w", err)
	}
	out := make([]FunnelStep, len(steps))
	for i, s := range steps {
		out[i] = by[s]
		out[i].Step = s
	}
	return out, nil
}

// PipelineConfig is the operator's step configuration as stored: an opaque
// JSON document (the pipeline package owns its shape) and a version that
// grows by one with each Put.
type PipelineConfig struct {
	Version   int64
	Doc       json.RawMessage
	UpdatedAt time.Time
}

// ErrNoPipelineConfig is returned by PipelineConfig before the first Put.
var ErrNoPipelineConfig = &baton.Error{Code: baton.ENotFound, Message: "no pipeline configuration stored"}

// PipelineConfig returns the stored pipeline configuration, or
// ErrNoPipelineConfig.
func (db *DB) PipelineConfig(ctx context.Context) (PipelineConfig, error) {
	var c PipelineConfig
	var doc string
	var at nullTime
	err := db.r.QueryRowContext(ctx, `SELECT version, doc, updated_at FROM pipeline_config WHERE id = 1`).Scan(&c.Version, &doc, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return PipelineConfig{}, ErrNoPipelineConfig
	}
	if err != nil {
		return PipelineConfig{}, fmt.Errorf("get pipeline config: %w", err)
	}
	c.Doc, c.UpdatedAt = json.RawMessage(doc), at.T
	return c, nil
}

// PutPipelineConfig stores doc as the pipeline configuration and returns
// the stored record. With ifVersion > 0 it succeeds only if the stored
// version is ifVersion (EConflict otherwise), so two operators editing at
// once cannot silently overwrite each other; 0 writes unconditionally.
func (db *DB) PutPipelineConfig(ctx context.Context, doc json.RawMessage, ifVersion int64) (PipelineConfig, error) {
	if !json.Valid(doc) {
		return PipelineConfig{}, baton.Errorf(baton.EInvalid, "pipeline configuration must be JSON")
	}
	c := PipelineConfig{Doc: doc, UpdatedAt: db.now().UTC().Truncate(time.Microsecond)}
	err := db.inTx(ctx, func(tx *sql.Tx) error {
		var cur int64
		err := tx.QueryRowContext(ctx, `SELECT version FROM pipeline_config WHERE id = 1`).Scan(&cur)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if ifVersion > 0 && cur != ifVersion {
			return baton.Errorf(baton.EConflict, "pipeline configuration is at version %d, not %d", cur, ifVersion)
		}
		c.Version = cur + 1
		if cur == 0 {
			_, err = tx.ExecContext(ctx, `INSERT INTO pipeline_config (id, version, doc, updated_at) VALUES (1, ?, ?, ?)`,
				c.Version, string(doc), ts(c.UpdatedAt))
		} else {
			var res sql.Result
			res, err = tx.ExecContext(ctx, `UPDATE pipeline_config SET version = ?, doc = ?, updated_at = ? WHERE id = 1 AND version = ?`,
				c.Version, string(doc), ts(c.UpdatedAt), cur)
			if err == nil {
				if n, _ := res.RowsAffected(); n != 1 {
					return baton.Errorf(baton.EConflict, "pipeline configuration changed concurrently")
				}
			}
		}
		return err
	})
	if err != nil {
		return PipelineConfig{}, fmt.Errorf("put pipeline config: %w", err)
	}
	return c, nil
}
