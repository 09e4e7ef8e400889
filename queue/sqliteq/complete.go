package sqliteq

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	baton "github.com/batonhq/baton"
	"github.com/batonhq/baton/queue"
)

// taskRow is what Complete, Reap and Cancel need of a task.
type taskRow struct {
	seq         int64
	id, typ, q  string
	payload     []byte
	state       baton.State
	attempt     int
	maxAttempts int
	notify      bool
	leaseToken  string
	ackToken    string
	ack         []byte
	outcome     string
	reason      string
	data        []byte
	errText     string
}

const taskRowCols = `seq, id, type, queue, payload, state, attempt, max_attempts, notify,
	COALESCE(lease_token, ''), COALESCE(ack_token, ''), ack, COALESCE(outcome, ''), COALESCE(reason, ''), data, COALESCE(error, '')`

func scanTaskRow(sc interface{ Scan(...any) error }) (*taskRow, error) {
	r := &taskRow{}
	err := sc.Scan(&r.seq, &r.id, &r.typ, &r.q, &r.payload, &r.state, &r.attempt, &r.maxAttempts, &r.notify,
		&r.leaseToken, &r.ackToken, &r.ack, &r.outcome, &r.reason, &r.data, &r.errText)
	return r, err
}

// outboxRow is an outbox entry waiting to be inserted.
type outboxRow struct {
	kind string
	body []byte
}

// finalEvent adds the task.final entry of a task created with Notify to ob.
func finalEvent(ob []outboxRow, r *taskRow, finishedMs int64) ([]outboxRow, error) {
	if !r.notify {
		return ob, nil
	}
	f := queue.TaskFinal{
		TaskID: r.id, Type: r.typ, Queue: r.q, State: r.state,
		Outcome: baton.Outcome(r.outcome), Reason: r.reason, Error: r.errText,
		Attempts: r.attempt, Payload: r.payload, FinishedAt: fromMs(finishedMs),
	}
	if len(r.data) > 0 {
		f.Data = r.data
	}
	body, err := json.Marshal(f)
	if err != nil {
		return ob, fmt.Errorf("encode task.final of %s: %w", r.id, err)
	}
	return append(ob, outboxRow{queue.OutboxKindTaskFinal, body}), nil
}

// appendOutbox inserts entries in order, a few hundred per statement.
func appendOutbox(ctx context.Context, tx *sql.Tx, ob []outboxRow) error {
	for start := 0; start < len(ob); start += insertChunk {
		chunk := ob[start:min(start+insertChunk, len(ob))]
		args := make([]any, 0, 2*len(chunk))
		for _, e := range chunk {
			args = append(args, e.kind, e.body)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO outbox (kind, body) VALUES `+
			strings.TrimSuffix(strings.Repeat("(?,?),", len(chunk)), ","), args...); err != nil {
			return fmt.Errorf("append outbox: %w", err)
		}
	}
	return nil
}

// checkCompletion validates the parts of a completion the lease checks do
// not cover; it returns the result to store (reason truncated).
func checkCompletion(c *queue.Completion) (baton.Result, error) {
	res := c.Result
	if err := res.Validate(); err != nil {
		return res, err
	}
	if c.FinalState != "" && !c.FinalState.Terminal() {
		return res, baton.Errorf(baton.EInvalid, "final state %q is not terminal", string(c.FinalState))
	}
	for i := range c.FollowUps {
		if err := validateNewTask(&c.FollowUps[i]); err != nil {
			return res, err
		}
	}
	for _, e := range c.Outbox {
		if e.Kind == "" {
			return res, baton.Errorf(baton.EInvalid, "outbox entry kind is required")
		}
		if len(e.Body) > 0 && !json.Valid(e.Body) {
			return res, baton.Errorf(baton.EInvalid, "outbox entry %s: body must be JSON", e.Kind)
		}
	}
	return res, nil
}

// Complete implements queue.Store: all completions in one transaction, each
// applied or refused on its own.
func (s *Store) Complete(ctx context.Context, cs []queue.Completion) ([]queue.CompleteResult, error) {
	out := make([]queue.CompleteResult, len(cs))
	if len(cs) == 0 {
		return out, nil
	}
	var wake bool
	err := s.tx(ctx, func(tx *sql.Tx) error {
		wake = false
		// Outbox entries are inserted together at the end: the order is the
		// same, as the whole batch commits at once.
		var ob []outboxRow
		rows, err := loadRows(ctx, tx, cs)
		if err != nil {
			return err
		}
		upd, err := tx.PrepareContext(ctx, `UPDATE tasks SET state = ?, outcome = ?, reason = ?, data = ?, error = ?,
			ready_at = ?, next_attempt_at = ?, finished_at = ?, lease_token = NULL, lease_expires_at = NULL,
			ack_token = ?, ack = ? WHERE seq = ?`)
		if err != nil {
			return fmt.Errorf("prepare: %w", err)
		}
		defer upd.Close()
		for i := range cs {
			c := &cs[i]
			r, ok := rows[c.TaskID]
			if !ok {
				// Perhaps created by an earlier completion's follow-ups.
				r, err = scanTaskRow(tx.QueryRowContext(ctx, `SELECT `+taskRowCols+` FROM tasks WHERE id = ?`, c.TaskID))
				if errors.Is(err, sql.ErrNoRows) {
					out[i].Err = baton.ErrNotFound
					continue
				}
				if err != nil {
					return fmt.Errorf("read task %s: %w", c.TaskID, err)
				}
				rows[c.TaskID] = r
			}
			ack, woke, err := s.apply(ctx, tx, upd, r, c, &ob)
			if err != nil {
				if isSentinel(err) {
					out[i].Err = err
					continue
				}
				return err
			}
			out[i].Ack = ack
			wake = wake || woke
		}
		return appendOutbox(ctx, tx, ob)
	})
	if err != nil {
		return nil, fmt.Errorf("sqliteq: complete: %w", err)
	}
	if wake {
		s.signal()
	}
	return out, nil
}

// loadRows reads the tasks of a batch of completions in one query.
func loadRows(ctx context.Context, tx *sql.Tx, cs []queue.Completion) (map[string]*taskRow, error) {
	rows := make(map[string]*taskRow, len(cs))
	for start := 0; start < len(cs); start += insertChunk {
		chunk := cs[start:min(start+insertChunk, len(cs))]
		args := make([]any, len(chunk))
		for i, c := range chunk {
			args[i] = c.TaskID
		}
		rs, err := tx.QueryContext(ctx, `SELECT `+taskRowCols+` FROM tasks WHERE id IN (`+placeholders(len(args))+`)`, args...)
		if err != nil {
			return nil, fmt.Errorf("read tasks: %w", err)
		}
		for rs.Next() {
			r, err := scanTaskRow(rs)
			if err != nil {
				rs.Close()
				return nil, fmt.Errorf("read tasks: %w", err)
			}
			rows[r.id] = r
		}
		if err := rs.Close(); err != nil {
			return nil, fmt.Errorf("read tasks: %w", err)
		}
	}
	return rows, nil
}

// apply applies one completion to the task row r, keeping r current. It
// returns an application error (nothing written) or the ack, and whether a
// task became claimable.
func (s *Store) apply(ctx context.Context, tx *sql.Tx, upd *sql.Stmt, r *taskRow, c *queue.Completion, ob *[]outboxRow) (queue.Ack, bool, error) {
	tok := c.Result.LeaseToken
	if r.ackToken != "" && tok == r.ackToken {
		var ack queue.Ack
		if err := json.Unmarshal(r.ack, &ack); err != nil {
			return ack, false, fmt.Errorf("decode stored ack of %s: %w", r.id, err)
		}
		ack.Duplicate = true
		return ack, false, nil
	}
	if r.state != baton.StateProcessing || tok == "" || tok != r.leaseToken {
		return queue.Ack{}, false, baton.ErrLeaseLost
	}
	res, err := checkCompletion(c)
	if err != nil {
		return queue.Ack{}, false, err
	}

	nowMs := ms(c.Now)
	var data []byte
	if len(res.Data) > 0 {
		data = res.Data
	}
	r.outcome, r.reason, r.data = string(res.Outcome), res.Reason, data
	var ack queue.Ack
	var readyAt, nextAt, finishedAt any
	ends := true
	if res.Outcome == baton.OutcomeRetry {
		if r.attempt < r.maxAttempts {
			ends = false
			next := c.Now.Add(c.Backoff.Delay(r.attempt, time.Duration(res.RetryAfterMs)*time.Millisecond, c.Jitter))
			nextMs := ms(next)
			r.state = baton.StatePending
			readyAt, nextAt = nextMs, nextMs
			t := fromMs(nextMs)
			ack = queue.Ack{State: r.state, NextAttemptAt: &t}
		} else {
			r.state = baton.StateFailed
			r.errText = "attempts exhausted: " + res.Reason
		}
	} else {
		r.state = c.FinalState
		if r.state == "" {
			r.state = baton.StateCompleted
		}
	}
	if ends {
		finishedAt = nowMs
		ack = queue.Ack{State: r.state}
	}
	ackJSON, err := json.Marshal(ack)
	if err != nil {
		return ack, false, fmt.Errorf("encode ack of %s: %w", r.id, err)
	}
	var errText any
	if r.errText != "" {
		errText = r.errText
	}
	if _, err := upd.ExecContext(ctx, string(r.state), r.outcome, r.reason, data, errText,
		readyAt, nextAt, finishedAt, tok, string(ackJSON), r.seq); err != nil {
		return ack, false, fmt.Errorf("update task %s: %w", r.id, err)
	}
	r.leaseToken, r.ackToken, r.ack = "", tok, ackJSON
	if !ends {
		return ack, true, nil
	}
	// The task ended: its dedup key is free (the partial unique index no
	// longer covers it), so follow-ups may take it.
	woke := false
	if len(c.FollowUps) > 0 {
		_, ready, err := enqueueTx(ctx, tx, c.Now, c.FollowUps)
		if err != nil {
			return ack, false, fmt.Errorf("follow-ups of %s: %w", r.id, err)
		}
		woke = ready
	}
	for _, e := range c.Outbox {
		body := []byte(e.Body)
		if len(body) == 0 {
			body = []byte("null")
		}
		*ob = append(*ob, outboxRow{e.Kind, body})
	}
	if *ob, err = finalEvent(*ob, r, nowMs); err != nil {
		return ack, false, err
	}
	return ack, woke, nil
}

// Reap implements queue.Store.
func (s *Store) Reap(ctx context.Context, now time.Time, limit int) (queue.ReapStats, error) {
	if limit <= 0 {
		limit = 1000
	}
	limit = min(limit, maxClaim)
	nowMs := ms(now)
	var st queue.ReapStats
	err := s.tx(ctx, func(tx *sql.Tx) error {
		st = queue.ReapStats{}
		rs, err := tx.QueryContext(ctx, `SELECT `+taskRowCols+` FROM tasks
			WHERE lease_expires_at IS NOT NULL AND lease_expires_at <= ?
			ORDER BY lease_expires_at, seq LIMIT ?`, nowMs, limit)
		if err != nil {
			return fmt.Errorf("select expired leases: %w", err)
		}
		var expired []*taskRow
		for rs.Next() {
			r, err := scanTaskRow(rs)
			if err != nil {
				rs.Close()
				return fmt.Errorf("select expired leases: %w", err)
			}
			expired = append(expired, r)
		}
		if err := rs.Close(); err != nil {
			return fmt.Errorf("select expired leases: %w", err)
		}
		var stall, fail []any
		for _, r := range expired {
			st.Queues = append(st.Queues, r.q)
			if r.attempt < r.maxAttempts {
				stall = append(stall, r.seq)
			} else {
				fail = append(fail, r.seq)
			}
		}
		if len(stall) > 0 {
			if _, err := tx.ExecContext(ctx, `UPDATE tasks SET state = 'stalled', ready_at = ?, lease_token = NULL, lease_expires_at = NULL
				WHERE seq IN (`+placeholders(len(stall))+`)`, append([]any{nowMs}, stall...)...); err != nil {
				return fmt.Errorf("stall tasks: %w", err)
			}
		}
		if len(fail) > 0 {
			if _, err := tx.ExecContext(ctx, `UPDATE tasks SET state = 'failed', error = 'lease expired', finished_at = ?,
				ready_at = NULL, lease_token = NULL, lease_expires_at = NULL
				WHERE seq IN (`+placeholders(len(fail))+`)`, append([]any{nowMs}, fail...)...); err != nil {
				return fmt.Errorf("fail tasks: %w", err)
			}
			var ob []outboxRow
			for _, r := range expired {
				if r.attempt >= r.maxAttempts {
					r.state, r.errText = baton.StateFailed, "lease expired"
					if ob, err = finalEvent(ob, r, nowMs); err != nil {
						return err
					}
				}
			}
			if err := appendOutbox(ctx, tx, ob); err != nil {
				return err
			}
		}
		st.Stalled, st.Failed = len(stall), len(fail)

		res, err := tx.ExecContext(ctx, `DELETE FROM tasks WHERE seq IN (SELECT seq FROM tasks
			WHERE finished_at IS NOT NULL AND finished_at <= ? ORDER BY finished_at LIMIT ?)`, nowMs-s.retention.Milliseconds(), limit)
		if err != nil {
			return fmt.Errorf("purge finished tasks: %w", err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return fmt.Errorf("purge finished tasks: %w", err)
		}
		st.Purged = int(n)
		if _, err := tx.ExecContext(ctx, `DELETE FROM kv WHERE key IN (SELECT key FROM kv WHERE expires_at <= ? LIMIT ?)`,
			time.Now().UnixMilli(), limit); err != nil {
			return fmt.Errorf("purge expired keys: %w", err)
		}
		return nil
	})
	if err != nil {
		return queue.ReapStats{}, fmt.Errorf("sqliteq: reap: %w", err)
	}
	if st.Stalled > 0 {
		s.signal()
	}
	return st, nil
}

// Cancel implements queue.Store.
func (s *Store) Cancel(ctx context.Context, id string, now time.Time) (baton.State, error) {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		r, err := scanTaskRow(tx.QueryRowContext(ctx, `SELECT `+taskRowCols+` FROM tasks WHERE id = ?`, id))
		if errors.Is(err, sql.ErrNoRows) {
			return baton.ErrNotFound
		}
		if err != nil {
			return err
		}
		if r.state.Terminal() {
			return baton.Errorf(baton.EConflict, "task already %s", r.state)
		}
		nowMs := ms(now)
		if _, err := tx.ExecContext(ctx, `UPDATE tasks SET state = 'cancelled', finished_at = ?, ready_at = NULL,
			next_attempt_at = NULL, lease_token = NULL, lease_expires_at = NULL WHERE seq = ?`, nowMs, r.seq); err != nil {
			return err
		}
		r.state = baton.StateCancelled
		ob, err := finalEvent(nil, r, nowMs)
		if err != nil {
			return err
		}
		return appendOutbox(ctx, tx, ob)
	})
	if err != nil {
		if isSentinel(err) {
			return "", err
		}
		return "", fmt.Errorf("sqliteq: cancel %s: %w", id, err)
	}
	return baton.StateCancelled, nil
}
