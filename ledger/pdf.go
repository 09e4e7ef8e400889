package ledger

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/batonhq/baton"
)

// APIKey is a PDF client's key. Only the SHA-256 of the key is stored.
type APIKey struct {
	ID        string
	Name      string
	KeyHash   string // hex SHA-256 of the key
	Secret    string // callback HMAC secret
	CreatedAt time.Time
	RevokedAt time.Time // zero while valid
}

// ErrAPIKeyNotFound is returned for an unknown (or revoked, by
// APIKeyByHash) API key.
var ErrAPIKeyNotFound = &baton.Error{Code: baton.ENotFound, Message: "api key not found"}

// CreateAPIKey stores k.
func (db *DB) CreateAPIKey(ctx context.Context, k APIKey) error {
	_, err := db.w.ExecContext(ctx, `INSERT INTO api_keys (id, name, key_hash, secret, created_at, revoked_at) VALUES (?, ?, ?, ?, ?, ?)`,
		k.ID, k.Name, k.KeyHash, k.Secret, ts(k.CreatedAt), ts(k.RevokedAt))
	if err != nil {
		return fmt.Errorf("create api key: %w", err)
	}
	return nil
}

const apiKeyCols = `id, name, key_hash, secret, created_at, revoked_at`

func scanAPIKey(scan func(...any) error) (APIKey, error) {
	var k APIKey
	var c, r nullTime
	err := scan(&k.ID, &k.Name, &k.KeyHash, &k.Secret, &c, &r)
	k.CreatedAt, k.RevokedAt = c.T, r.T
	return k, err
}

// APIKeyByHash returns the unrevoked key with this hash, or
// ErrAPIKeyNotFound.
func (db *DB) APIKeyByHash(ctx context.Context, hash string) (APIKey, error) {
	k, err := scanAPIKey(db.r.QueryRowContext(ctx, `SELECT `+apiKeyCols+` FROM api_keys WHERE key_hash = ? AND revoked_at IS NULL`, hash).Scan)
	if errors.Is(err, sql.ErrNoRows) {
		return APIKey{}, ErrAPIKeyNotFound
	}
	if err != nil {
		return APIKey{}, fmt.Errorf("get api key: %w", err)
	}
	return k, nil
}

// ListAPIKeys returns every key, revoked ones included, oldest first.
func (db *DB) ListAPIKeys(ctx context.Context) ([]APIKey, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT `+apiKeyCols+` FROM api_keys ORDER BY created_at, id`)
	if err != nil {
		return nil, fmt.Errorf("list api keys: %w", err)
	}
	defer rows.Close()
	var out []APIKey
	for rows.Next() {
		k, err := scanAPIKey(rows.Scan)
		if err != nil {
			return nil, fmt.Errorf("list api keys: %w", err)
		}
		out = append(out, k)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list api keys: %w", err)
	}
	return out, nil
}

// RevokeAPIKey marks key id revoked at at; revoking twice keeps the first
// time. An unknown id gives ErrAPIKeyNotFound.
func (db *DB) RevokeAPIKey(ctx context.Context, id string, at time.Time) error {
	if _, err := db.w.ExecContext(ctx, `UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ?`, ts(at), id); err != nil {
		return fmt.Errorf("revoke api key: %w", err)
	}
	var n int64
	if err := db.w.QueryRowContext(ctx, `SELECT COUNT(*) FROM api_keys WHERE id = ?`, id).Scan(&n); err != nil {
		return fmt.Errorf("revoke api key: %w", err)
	}
	if n == 0 {
		return ErrAPIKeyNotFound
	}
	return nil
}

// ConversionTask is the stored record of a PDF conversion.
type ConversionTask struct {
	ID             string
	APIKeyID       string // empty for the admin
	Status         baton.State
	SourceType     string // url or html
	Source         string
	Options        json.RawMessage
	CallbackURL    string
	Queue          string
	SuggestedQueue string
	IdempotencyKey string // empty when the client sent none
	RequestHash    string
	ResultPath     string
	ResultSHA256   string
	ResultSize     int64
	Error          string
	Attempts       int
	CreatedAt      time.Time
	StartedAt      time.Time
	FinishedAt     time.Time
}

// ErrConversionTaskNotFound is returned for an unknown conversion task.
var ErrConversionTaskNotFound = &baton.Error{Code: baton.ENotFound, Message: "task not found"}

const taskCols = `id, api_key_id, status, source_type, source, options, callback_url, queue, suggested_queue,
	idempotency_key, request_hash, result_path, result_sha256, result_size, error, attempts, created_at, started_at, finished_at`

func scanTask(scan func(...any) error) (ConversionTask, error) {
	var t ConversionTask
	var opts, idem sql.NullString
	var c, s, f nullTime
	err := scan(&t.ID, &t.APIKeyID, &t.Status, &t.SourceType, &t.Source, &opts, &t.CallbackURL, &t.Queue, &t.SuggestedQueue,
		&idem, &t.RequestHash, &t.ResultPath, &t.ResultSHA256, &t.ResultSize, &t.Error, &t.Attempts, &c, &s, &f)
	if opts.Valid {
		t.Options = json.RawMessage(opts.String)
	}
	t.IdempotencyKey = idem.String
	t.CreatedAt, t.StartedAt, t.FinishedAt = c.T, s.T, f.T
	return t, err
}

// CreateConversionTask stores t. When t has an IdempotencyKey that the same
// API key already used, nothing is written and the earlier task is returned
// with created false (compare RequestHash to tell a retry from a misuse).
func (db *DB) CreateConversionTask(ctx context.Context, t ConversionTask) (stored ConversionTask, created bool, err error) {
	if len(t.Options) > 0 && !json.Valid(t.Options) {
		return ConversionTask{}, false, baton.Errorf(baton.EInvalid, "options must be JSON")
	}
	var idem any
	if t.IdempotencyKey != "" {
		idem = t.IdempotencyKey
	}
	q := `INSERT INTO conversion_tasks (` + taskCols + `) VALUES ` + placeholders(1, 19)
	if db.dialect == DialectMySQL {
		q += ` ON DUPLICATE KEY UPDATE id = id`
	} else {
		q += ` ON CONFLICT (api_key_id, idempotency_key) DO NOTHING`
	}
	res, err := db.w.ExecContext(ctx, q, t.ID, t.APIKeyID, string(t.Status), t.SourceType, t.Source, jsonText(t.Options),
		t.CallbackURL, t.Queue, t.SuggestedQueue, idem, t.RequestHash, t.ResultPath, t.ResultSHA256, t.ResultSize,
		t.Error, t.Attempts, ts(t.CreatedAt), ts(t.StartedAt), ts(t.FinishedAt))
	if err != nil {
		return ConversionTask{}, false, fmt.Errorf("create conversion task: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return t, true, nil
	}
	if t.IdempotencyKey == "" {
		return ConversionTask{}, false, baton.Errorf(baton.EConflict, "task %s exists", t.ID)
	}
	stored, err = scanTask(db.w.QueryRowContext(ctx, `SELECT `+taskCols+` FROM conversion_tasks WHERE api_key_id = ? AND idempotency_key = ?`,
		t.APIKeyID, t.IdempotencyKey).Scan)
	if err != nil {
		return ConversionTask{}, false, fmt.Errorf("create conversion task: existing: %w", err)
	}
	return stored, false, nil
}

// GetConversionTask returns the task, or ErrConversionTaskNotFound.
func (db *DB) GetConversionTask(ctx context.Context, id string) (ConversionTask, error) {
	t, err := scanTask(db.r.QueryRowContext(ctx, `SELECT `+taskCols+` FROM conversion_tasks WHERE id = ?`, id).Scan)
	if errors.Is(err, sql.ErrNoRows) {
		return ConversionTask{}, ErrConversionTaskNotFound
	}
	if err != nil {
		return ConversionTask{}, fmt.Errorf("get conversion task: %w", err)
	}
	return t, nil
}

// UpdateConversionTask writes the mutable fields of t (status, queue,
// result, error, attempts, started/finished) to its row.
func (db *DB) UpdateConversionTask(ctx context.Context, t ConversionTask) error {
	res, err := db.w.ExecContext(ctx, `UPDATE conversion_tasks SET status = ?, queue = ?, suggested_queue = ?, result_path = ?,
		result_sha256 = ?, result_size = ?, error = ?, attempts = ?, started_at = ?, finished_at = ? WHERE id = ?`,
		string(t.Status), t.Queue, t.SuggestedQueue, t.ResultPath, t.ResultSHA256, t.ResultSize, t.Error, t.Attempts,
		ts(t.StartedAt), ts(t.FinishedAt), t.ID)
	if err != nil {
		return fmt.Errorf("update conversion task: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		if _, err := db.GetConversionTask(ctx, t.ID); err != nil {
			return err
		}
	}
	return nil
}

// CallbackLog is one callback attempt.
type CallbackLog struct {
	ID             int64
	TaskID         string
	Attempt        int
	URL            string
	RequestBody    string
	ResponseStatus int // 0 when no answer came
	ResponseBody   string
	SentAt         time.Time
	ResponseAt     time.Time
	DurationMs     int64
	Error          string
	Replay         bool
}

// MaxCallbackResponseBody is how much of a callback's response body is kept.
const MaxCallbackResponseBody = 4096

// AppendCallbackLog stores l (its response body cut to
// MaxCallbackResponseBody bytes) and returns its id.
func (db *DB) AppendCallbackLog(ctx context.Context, l CallbackLog) (int64, error) {
	if len(l.ResponseBody) > MaxCallbackResponseBody {
		l.ResponseBody = l.ResponseBody[:MaxCallbackResponseBody]
	}
	var status any
	if l.ResponseStatus != 0 {
		status = l.ResponseStatus
	}
	res, err := db.w.ExecContext(ctx, `INSERT INTO conversion_callback_logs (task_id, attempt, url, request_body, response_status,
		response_body, sent_at, response_at, duration_ms, error, replay) VALUES `+placeholders(1, 11),
		l.TaskID, l.Attempt, l.URL, l.RequestBody, status, l.ResponseBody, ts(l.SentAt), ts(l.ResponseAt), l.DurationMs, l.Error, boolInt(l.Replay))
	if err != nil {
		return 0, fmt.Errorf("append callback log: %w", err)
	}
	id, err := res.LastInsertId()
	if err != nil {
		return 0, fmt.Errorf("append callback log: %w", err)
	}
	return id, nil
}

// ListCallbackLogs returns the callback attempts of a task, oldest first.
func (db *DB) ListCallbackLogs(ctx context.Context, taskID string) ([]CallbackLog, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT id, task_id, attempt, url, request_body, response_status, response_body,
		sent_at, response_at, duration_ms, error, replay FROM conversion_callback_logs WHERE task_id = ? ORDER BY id`, taskID)
	if err != nil {
		return nil, fmt.Errorf("list callback logs: %w", err)
	}
	defer rows.Close()
	var out []CallbackLog
	for rows.Next() {
		var l CallbackLog
		var status sql.NullInt64
		var sent, resp nullTime
		var replay int
		if err := rows.Scan(&l.ID, &l.TaskID, &l.Attempt, &l.URL, &l.RequestBody, &status, &l.ResponseBody,
			&sent, &resp, &l.DurationMs, &l.Error, &replay); err != nil {
			return nil, fmt.Errorf("list callback logs: %w", err)
		}
		l.ResponseStatus, l.SentAt, l.ResponseAt, l.Replay = int(status.Int64), sent.T, resp.T, replay != 0
		out = append(out, l)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list callback logs: %w", err)
	}
	return out, nil
}
