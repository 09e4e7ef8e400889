package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/batonhq/baton"
)

// ConversionFilter selects conversion tasks for ListConversionTasks; zero
// fields select everything.
type ConversionFilter struct {
	// KeyID keeps one API key's tasks ("" = every key and the admin's).
	KeyID string
	// AdminOnly keeps the tasks the admin submitted (api_key_id = '').
	AdminOnly bool
	Status    baton.State
	Queue     string
	// IDPrefix keeps tasks whose id starts with it.
	IDPrefix string
	// Limit bounds the page; 0 means 50, at most 500.
	Limit int
	// Cursor is the next value of an earlier page ("" = the newest).
	Cursor string
}

// MaxListedSource is how much of a task's source ListConversionTasks returns
// (inline HTML may be megabytes; a list shows its start).
const MaxListedSource = 300

// ListConversionTasks returns a page of tasks, newest first (ids are ULIDs,
// so id order is creation order), with Source cut to MaxListedSource bytes,
// and the cursor of the next page ("" after the last).
func (db *DB) ListConversionTasks(ctx context.Context, f ConversionFilter) ([]ConversionTask, string, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = 50
	}
	limit = min(limit, 500)
	cols := strings.Replace(taskCols, "source,", fmt.Sprintf("SUBSTR(source, 1, %d),", MaxListedSource), 1)
	var where []string
	var args []any
	add := func(cond string, v any) {
		where = append(where, cond)
		args = append(args, v)
	}
	switch {
	case f.KeyID != "":
		add("api_key_id = ?", f.KeyID)
	case f.AdminOnly:
		add("api_key_id = ?", "")
	}
	if f.Status != "" {
		add("status = ?", string(f.Status))
	}
	if f.Queue != "" {
		add("queue = ?", f.Queue)
	}
	if f.IDPrefix != "" {
		// Task ids are ULIDs: letters and digits only, so the prefix needs
		// no LIKE escaping once it is known to be one.
		for _, c := range f.IDPrefix {
			if !(c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z') {
				return nil, "", baton.Errorf(baton.EInvalid, "an id prefix holds letters and digits only")
			}
		}
		add("id LIKE ?", strings.ToUpper(f.IDPrefix)+"%")
	}
	if f.Cursor != "" {
		add("id < ?", f.Cursor)
	}
	q := `SELECT ` + cols + ` FROM conversion_tasks`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	q += ` ORDER BY id DESC LIMIT ?`
	args = append(args, limit+1)
	rows, err := db.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, "", fmt.Errorf("list conversion tasks: %w", err)
	}
	defer rows.Close()
	var out []ConversionTask
	for rows.Next() {
		t, err := scanTask(rows.Scan)
		if err != nil {
			return nil, "", fmt.Errorf("list conversion tasks: %w", err)
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, "", fmt.Errorf("list conversion tasks: %w", err)
	}
	next := ""
	if len(out) > limit {
		out = out[:limit]
		next = out[limit-1].ID
	}
	return out, next, nil
}

// ErrNoCallback is returned by LastCallbackLog for a task never called back.
var ErrNoCallback = &baton.Error{Code: baton.ENotFound, Message: "no callback was sent for this task"}

// LastCallbackLog returns the latest callback attempt of a task (the one
// a replay resends), or ErrNoCallback.
func (db *DB) LastCallbackLog(ctx context.Context, taskID string) (CallbackLog, error) {
	var l CallbackLog
	var status sql.NullInt64
	var sent, resp nullTime
	var replay int
	err := db.r.QueryRowContext(ctx, `SELECT id, task_id, attempt, url, request_body, response_status, response_body,
		sent_at, response_at, duration_ms, error, replay FROM conversion_callback_logs WHERE task_id = ? ORDER BY id DESC LIMIT 1`, taskID).
		Scan(&l.ID, &l.TaskID, &l.Attempt, &l.URL, &l.RequestBody, &status, &l.ResponseBody, &sent, &resp, &l.DurationMs, &l.Error, &replay)
	if errors.Is(err, sql.ErrNoRows) {
		return CallbackLog{}, ErrNoCallback
	}
	if err != nil {
		return CallbackLog{}, fmt.Errorf("last callback log: %w", err)
	}
	l.ResponseStatus, l.SentAt, l.ResponseAt, l.Replay = int(status.Int64), sent.T, resp.T, replay != 0
	return l, nil
}

// APIKeyByID returns a key (revoked or not) by id, or ErrAPIKeyNotFound.
func (db *DB) APIKeyByID(ctx context.Context, id string) (APIKey, error) {
	k, err := scanAPIKey(db.r.QueryRowContext(ctx, `SELECT `+apiKeyCols+` FROM api_keys WHERE id = ?`, id).Scan)
	if errors.Is(err, sql.ErrNoRows) {
		return APIKey{}, ErrAPIKeyNotFound
	}
	if err != nil {
		return APIKey{}, fmt.Errorf("get api key: %w", err)
	}
	return k, nil
}
