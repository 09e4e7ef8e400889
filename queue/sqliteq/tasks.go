package sqliteq

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	baton "github.com/batonhq/baton"
	"github.com/batonhq/baton/queue"
)

// maxClaim caps one claim's batch (keeps statements within SQLite's limits).
const maxClaim = 1000

// insertChunk is how many tasks one multi-row INSERT carries.
const insertChunk = 500

// validateNewTask checks a task before anything is written.
func validateNewTask(t *queue.NewTask) error {
	switch {
	case t.ID == "":
		return baton.Errorf(baton.EInvalid, "task id is required")
	case t.Type == "":
		return baton.Errorf(baton.EInvalid, "task %s: type is required", t.ID)
	case t.Queue == "":
		return baton.Errorf(baton.EInvalid, "task %s: queue is required", t.ID)
	case len(t.Payload) > 0 && !json.Valid(t.Payload):
		return baton.Errorf(baton.EInvalid, "task %s: payload must be JSON", t.ID)
	case t.MaxAttempts < 0:
		return baton.Errorf(baton.EInvalid, "task %s: maxAttempts must not be negative", t.ID)
	case t.LeaseTTL < 0:
		return baton.Errorf(baton.EInvalid, "task %s: lease TTL must not be negative", t.ID)
	}
	return nil
}

// Enqueue implements queue.Store.
func (s *Store) Enqueue(ctx context.Context, now time.Time, tasks []queue.NewTask) ([]queue.EnqueueResult, error) {
	for i := range tasks {
		if err := validateNewTask(&tasks[i]); err != nil {
			return nil, err
		}
	}
	if len(tasks) == 0 {
		return []queue.EnqueueResult{}, nil
	}
	var res []queue.EnqueueResult
	var ready bool
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var err error
		res, ready, err = enqueueTx(ctx, tx, now, tasks)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("sqliteq: enqueue: %w", err)
	}
	if ready {
		s.signal()
	}
	return res, nil
}

// enqueueTx inserts validated tasks in tx, honouring IDs and dedup keys, and
// reports whether a created task is claimable at now.
func enqueueTx(ctx context.Context, tx *sql.Tx, now time.Time, tasks []queue.NewTask) ([]queue.EnqueueResult, bool, error) {
	// Make the queues known.
	seen := map[string]bool{}
	var qargs []any
	for _, t := range tasks {
		if !seen[t.Queue] {
			seen[t.Queue] = true
			qargs = append(qargs, t.Queue)
		}
	}
	if _, err := tx.ExecContext(ctx, "INSERT OR IGNORE INTO queues (name) VALUES "+
		strings.TrimSuffix(strings.Repeat("(?),", len(qargs)), ","), qargs...); err != nil {
		return nil, false, fmt.Errorf("register queues: %w", err)
	}

	nowMs := ms(now)
	created := make(map[string]bool, len(tasks))
	ready := false
	for start := 0; start < len(tasks); start += insertChunk {
		chunk := tasks[start:min(start+insertChunk, len(tasks))]
		var sb strings.Builder
		sb.WriteString(`INSERT INTO tasks (id, type, queue, payload, state, max_attempts, lease_ttl_ms, dedup_key, notify, ready_at, created_at) VALUES `)
		args := make([]any, 0, len(chunk)*10)
		for i, t := range chunk {
			if i > 0 {
				sb.WriteByte(',')
			}
			sb.WriteString("(?,?,?,?,'pending',?,?,?,?,?,?)")
			payload := []byte(t.Payload)
			if len(payload) == 0 {
				payload = []byte("null")
			}
			maxAttempts := t.MaxAttempts
			if maxAttempts == 0 {
				maxAttempts = queue.DefaultMaxAttempts
			}
			lease := t.LeaseTTL
			if lease == 0 {
				lease = queue.DefaultLeaseTTL
			}
			lease = min(max(lease, queue.MinLeaseTTL), queue.MaxLeaseTTL)
			runAt := nowMs
			if !t.RunAt.IsZero() {
				runAt = ms(t.RunAt)
			}
			var key any
			if t.DedupKey != "" {
				key = t.DedupKey
			}
			args = append(args, t.ID, t.Type, t.Queue, payload, maxAttempts, lease.Milliseconds(), key, t.Notify, runAt, nowMs)
		}
		sb.WriteString(" ON CONFLICT DO NOTHING RETURNING id, ready_at")
		rows, err := tx.QueryContext(ctx, sb.String(), args...)
		if err != nil {
			return nil, false, fmt.Errorf("insert tasks: %w", err)
		}
		for rows.Next() {
			var id string
			var readyAt int64
			if err := rows.Scan(&id, &readyAt); err != nil {
				rows.Close()
				return nil, false, fmt.Errorf("insert tasks: %w", err)
			}
			created[id] = true
			ready = ready || readyAt <= nowMs
		}
		if err := rows.Close(); err != nil {
			return nil, false, fmt.Errorf("insert tasks: %w", err)
		}
		if err := rows.Err(); err != nil {
			return nil, false, fmt.Errorf("insert tasks: %w", err)
		}
	}

	res := make([]queue.EnqueueResult, len(tasks))
	answered := make(map[string]bool, len(tasks)) // a created ID answers Created only once
	for i, t := range tasks {
		if created[t.ID] && !answered[t.ID] {
			answered[t.ID] = true
			res[i] = queue.EnqueueResult{ID: t.ID, Created: true, State: baton.StatePending, Queue: t.Queue}
			continue
		}
		r, err := existing(ctx, tx, t)
		if err != nil {
			return nil, false, err
		}
		res[i] = r
	}
	return res, ready, nil
}

// existing answers for a task that was not inserted: the task with its ID,
// else the holder of its dedup key.
func existing(ctx context.Context, tx *sql.Tx, t queue.NewTask) (queue.EnqueueResult, error) {
	r := queue.EnqueueResult{}
	err := tx.QueryRowContext(ctx, `SELECT id, state, queue FROM tasks WHERE id = ?`, t.ID).Scan(&r.ID, &r.State, &r.Queue)
	if err == nil {
		return r, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return r, fmt.Errorf("look up task %s: %w", t.ID, err)
	}
	if t.DedupKey != "" {
		err = tx.QueryRowContext(ctx, `SELECT id, state, queue FROM tasks
			WHERE dedup_key = ? AND state IN ('pending', 'processing', 'stalled')`, t.DedupKey).Scan(&r.ID, &r.State, &r.Queue)
		if err == nil {
			return r, nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return r, fmt.Errorf("look up dedup key of task %s: %w", t.ID, err)
		}
	}
	return r, fmt.Errorf("task %s was neither inserted nor found", t.ID)
}

// newToken returns a fresh 128-bit lease token in hex.
func newToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}

// Claim implements queue.Store.
func (s *Store) Claim(ctx context.Context, req queue.ClaimRequest) ([]baton.Task, error) {
	if req.Max <= 0 || len(req.Queues) == 0 {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("sqliteq: claim: %w", err)
		}
		return nil, nil
	}
	remaining := min(req.Max, maxClaim)
	nowMs := ms(req.Now)
	var out []baton.Task
	err := s.tx(ctx, func(tx *sql.Tx) error {
		out = out[:0]
		// Dedupe the queue list, keeping the first position.
		var queues []string
		seen := map[string]bool{}
		for _, q := range req.Queues {
			if !seen[q] {
				seen[q] = true
				queues = append(queues, q)
			}
		}
		type cfg struct {
			paused bool
			rate   int
			tat    int64
		}
		cfgs := map[string]cfg{}
		args := make([]any, len(queues))
		for i, q := range queues {
			args[i] = q
		}
		rows, err := tx.QueryContext(ctx, `SELECT name, paused, rate_per_min, tat_ms FROM queues WHERE name IN (`+placeholders(len(queues))+`)`, args...)
		if err != nil {
			return fmt.Errorf("read queue configs: %w", err)
		}
		for rows.Next() {
			var name string
			var c cfg
			if err := rows.Scan(&name, &c.paused, &c.rate, &c.tat); err != nil {
				rows.Close()
				return fmt.Errorf("read queue configs: %w", err)
			}
			cfgs[name] = c
		}
		if err := rows.Close(); err != nil {
			return fmt.Errorf("read queue configs: %w", err)
		}

		for _, q := range queues {
			if remaining == 0 {
				break
			}
			c, ok := cfgs[q]
			if !ok || c.paused {
				continue // unknown queues have no tasks
			}
			n := remaining
			if c.rate > 0 {
				// GCRA with burst 1: one claim per emission interval.
				if nowMs < c.tat {
					continue
				}
				n = 1
			}
			got, err := claimQueue(ctx, tx, q, req.WorkerID, nowMs, n)
			if err != nil {
				return err
			}
			if len(got) > 0 && c.rate > 0 {
				if _, err := tx.ExecContext(ctx, `UPDATE queues SET tat_ms = ? WHERE name = ?`, nowMs+int64(60000/c.rate), q); err != nil {
					return fmt.Errorf("update rate limiter of %s: %w", q, err)
				}
			}
			out = append(out, got...)
			remaining -= len(got)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("sqliteq: claim: %w", err)
	}
	return out, nil
}

// claimQueue leases up to n ready tasks of queue q, FIFO.
func claimQueue(ctx context.Context, tx *sql.Tx, q, worker string, nowMs int64, n int) ([]baton.Task, error) {
	rows, err := tx.QueryContext(ctx, `SELECT seq, id, type, payload, attempt, max_attempts, lease_ttl_ms, created_at
		FROM tasks WHERE queue = ? AND ready_at IS NOT NULL AND ready_at <= ?
		ORDER BY ready_at, seq LIMIT ?`, q, nowMs, n)
	if err != nil {
		return nil, fmt.Errorf("select ready tasks of %s: %w", q, err)
	}
	var tasks []baton.Task
	var seqs []int64
	for rows.Next() {
		var t baton.Task
		var seq, leaseMs, created int64
		var payload []byte
		if err := rows.Scan(&seq, &t.ID, &t.Type, &payload, &t.Attempt, &t.MaxAttempts, &leaseMs, &created); err != nil {
			rows.Close()
			return nil, fmt.Errorf("select ready tasks of %s: %w", q, err)
		}
		t.Queue = q
		t.Payload = payload
		t.Attempt++
		t.LeaseToken = newToken()
		t.LeaseExpiresAt = fromMs(nowMs + leaseMs)
		t.CreatedAt = fromMs(created)
		tasks = append(tasks, t)
		seqs = append(seqs, seq)
	}
	if err := rows.Close(); err != nil {
		return nil, fmt.Errorf("select ready tasks of %s: %w", q, err)
	}
	if len(tasks) == 0 {
		return nil, nil
	}
	// One UPDATE for the batch, joined to (seq, token) pairs.
	var sb strings.Builder
	args := make([]any, 0, 2*len(seqs)+3)
	args = append(args, nowMs, worker, nowMs)
	sb.WriteString(`UPDATE tasks SET state = 'processing', attempt = attempt + 1, lease_token = v.column2,
		lease_expires_at = ? + lease_ttl_ms, worker_id = ?, started_at = COALESCE(started_at, ?),
		ready_at = NULL, next_attempt_at = NULL
		FROM (VALUES `)
	for i, seq := range seqs {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString("(?,?)")
		args = append(args, seq, tasks[i].LeaseToken)
	}
	sb.WriteString(`) AS v WHERE tasks.seq = v.column1`)
	res, err := tx.ExecContext(ctx, sb.String(), args...)
	if err != nil {
		return nil, fmt.Errorf("lease tasks of %s: %w", q, err)
	}
	if n, err := res.RowsAffected(); err != nil || n != int64(len(seqs)) {
		return nil, fmt.Errorf("lease tasks of %s: %d of %d rows updated (%v)", q, n, len(seqs), err)
	}
	return tasks, nil
}

// leaseMiss tells why a lease-guarded statement matched no row.
func leaseMiss(ctx context.Context, tx *sql.Tx, id string) error {
	var one int
	err := tx.QueryRowContext(ctx, `SELECT 1 FROM tasks WHERE id = ?`, id).Scan(&one)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return baton.ErrNotFound
	case err != nil:
		return fmt.Errorf("look up task %s: %w", id, err)
	}
	return baton.ErrLeaseLost
}

// Heartbeat implements queue.Store.
func (s *Store) Heartbeat(ctx context.Context, id, token string, now time.Time, extend time.Duration) (time.Time, error) {
	extend = min(max(extend, 0), queue.MaxLeaseTTL)
	var until int64
	err := s.tx(ctx, func(tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx, `UPDATE tasks
			SET lease_expires_at = ?1 + MIN(CASE WHEN ?2 > 0 THEN ?2 ELSE lease_ttl_ms END, ?3)
			WHERE id = ?4 AND state = 'processing' AND lease_token = ?5
			RETURNING lease_expires_at`,
			ms(now), extend.Milliseconds(), queue.MaxLeaseTTL.Milliseconds(), id, token).Scan(&until)
		if errors.Is(err, sql.ErrNoRows) {
			return leaseMiss(ctx, tx, id)
		}
		return err
	})
	if err != nil {
		if isSentinel(err) {
			return time.Time{}, err
		}
		return time.Time{}, fmt.Errorf("sqliteq: heartbeat %s: %w", id, err)
	}
	return fromMs(until), nil
}

// Release implements queue.Store.
func (s *Store) Release(ctx context.Context, id, token string, now time.Time) error {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE tasks
			SET state = 'pending', attempt = MAX(attempt - 1, 0), ready_at = ?,
			    lease_token = NULL, lease_expires_at = NULL
			WHERE id = ? AND state = 'processing' AND lease_token = ?`, ms(now), id, token)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return leaseMiss(ctx, tx, id)
		}
		return nil
	})
	if err != nil {
		if isSentinel(err) {
			return err
		}
		return fmt.Errorf("sqliteq: release %s: %w", id, err)
	}
	s.signal()
	return nil
}

// isSentinel reports whether err is an application error to return as is.
func isSentinel(err error) bool {
	var e *baton.Error
	return errors.As(err, &e)
}

// Get implements queue.Store.
func (s *Store) Get(ctx context.Context, id string) (baton.TaskInfo, error) {
	var (
		ti                                      baton.TaskInfo
		payload, data                           []byte
		leaseMs, created                        int64
		dedup, worker, outcome, reason, errText sql.NullString
		started, finished, next                 sql.NullInt64
	)
	err := s.r.QueryRowContext(ctx, `SELECT id, type, queue, state, payload, attempt, max_attempts, outcome, reason, data,
		error, dedup_key, worker_id, lease_ttl_ms, created_at, started_at, finished_at, next_attempt_at
		FROM tasks WHERE id = ?`, id).Scan(&ti.ID, &ti.Type, &ti.Queue, &ti.Status, &payload, &ti.Attempts, &ti.MaxAttempts,
		&outcome, &reason, &data, &errText, &dedup, &worker, &leaseMs, &created, &started, &finished, &next)
	if errors.Is(err, sql.ErrNoRows) {
		return ti, baton.ErrNotFound
	}
	if err != nil {
		return ti, fmt.Errorf("sqliteq: get %s: %w", id, err)
	}
	ti.Payload = payload
	if len(data) > 0 {
		ti.Data = data
	}
	ti.Outcome, ti.Reason, ti.Error = baton.Outcome(outcome.String), reason.String, errText.String
	ti.DedupKey, ti.WorkerID = dedup.String, worker.String
	ti.LeaseTTL = time.Duration(leaseMs) * time.Millisecond
	ti.CreatedAt = fromMs(created)
	ti.StartedAt, ti.FinishedAt, ti.NextAttemptAt = msPtr(started), msPtr(finished), msPtr(next)
	if started.Valid && finished.Valid {
		d := finished.Int64 - started.Int64
		ti.DurationMs = &d
	}
	return ti, nil
}
