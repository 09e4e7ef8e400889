package sqliteq

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	baton "github.com/batonhq/baton"
	"github.com/batonhq/baton/queue"
)

// Queues implements queue.Store. One statement, so the snapshot is consistent.
func (s *Store) Queues(ctx context.Context, now time.Time) ([]queue.QueueStat, error) {
	nowMs := ms(now)
	rows, err := s.r.QueryContext(ctx, `SELECT q.name, q.paused, q.rate_per_min,
		(SELECT count(*) FROM tasks t WHERE t.queue = q.name AND t.ready_at <= ?1),
		(SELECT count(*) FROM tasks t WHERE t.queue = q.name AND t.state = 'processing'),
		(SELECT count(*) FROM tasks t WHERE t.queue = q.name AND t.ready_at > ?1),
		(SELECT count(*) FROM tasks t WHERE t.queue = q.name AND t.state = 'failed' AND t.finished_at > ?2),
		(SELECT t.created_at FROM tasks t WHERE t.queue = q.name AND t.ready_at <= ?1 ORDER BY t.ready_at, t.seq LIMIT 1)
		FROM queues q ORDER BY q.name`, nowMs, nowMs-s.retention.Milliseconds())
	if err != nil {
		return nil, fmt.Errorf("sqliteq: queues: %w", err)
	}
	defer rows.Close()
	out := []queue.QueueStat{}
	for rows.Next() {
		var st queue.QueueStat
		var oldest sql.NullInt64
		if err := rows.Scan(&st.Name, &st.Paused, &st.RatePerMin, &st.Ready, &st.Running, &st.Retry, &st.Dead, &oldest); err != nil {
			return nil, fmt.Errorf("sqliteq: queues: %w", err)
		}
		if oldest.Valid {
			st.OldestAgeMs = max(nowMs-oldest.Int64, 0)
		}
		out = append(out, st)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqliteq: queues: %w", err)
	}
	return out, nil
}

// SetQueueConfig implements queue.Store. The rate limiter's state is kept,
// so a changed rate applies from the next interval.
func (s *Store) SetQueueConfig(ctx context.Context, name string, cfg queue.QueueConfig) error {
	if name == "" {
		return baton.Errorf(baton.EInvalid, "queue name is required")
	}
	if cfg.RatePerMin < 0 {
		return baton.Errorf(baton.EInvalid, "ratePerMin must not be negative")
	}
	_, err := s.w.ExecContext(ctx, `INSERT INTO queues (name, paused, rate_per_min) VALUES (?, ?, ?)
		ON CONFLICT (name) DO UPDATE SET paused = excluded.paused, rate_per_min = excluded.rate_per_min`,
		name, cfg.Paused, cfg.RatePerMin)
	if err != nil {
		return fmt.Errorf("sqliteq: set config of queue %s: %w", name, err)
	}
	return nil
}

// QueueConfig implements queue.Store.
func (s *Store) QueueConfig(ctx context.Context, name string) (queue.QueueConfig, error) {
	var cfg queue.QueueConfig
	err := s.r.QueryRowContext(ctx, `SELECT paused, rate_per_min FROM queues WHERE name = ?`, name).Scan(&cfg.Paused, &cfg.RatePerMin)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return cfg, fmt.Errorf("sqliteq: config of queue %s: %w", name, err)
	}
	return cfg, nil
}

// ReadOutbox implements queue.Store.
func (s *Store) ReadOutbox(ctx context.Context, limit int) ([]queue.OutboxEntry, error) {
	if limit <= 0 {
		return nil, nil
	}
	rows, err := s.r.QueryContext(ctx, `SELECT id, kind, body FROM outbox ORDER BY id LIMIT ?`, limit)
	if err != nil {
		return nil, fmt.Errorf("sqliteq: read outbox: %w", err)
	}
	defer rows.Close()
	var out []queue.OutboxEntry
	for rows.Next() {
		var id int64
		var e queue.OutboxEntry
		var body []byte
		if err := rows.Scan(&id, &e.Kind, &body); err != nil {
			return nil, fmt.Errorf("sqliteq: read outbox: %w", err)
		}
		e.ID, e.Body = strconv.FormatInt(id, 10), body
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqliteq: read outbox: %w", err)
	}
	return out, nil
}

// AckOutbox implements queue.Store.
func (s *Store) AckOutbox(ctx context.Context, ids []string) error {
	var args []any
	for _, id := range ids {
		if n, err := strconv.ParseInt(id, 10, 64); err == nil {
			args = append(args, n)
		}
	}
	for start := 0; start < len(args); start += insertChunk {
		chunk := args[start:min(start+insertChunk, len(args))]
		if _, err := s.w.ExecContext(ctx, `DELETE FROM outbox WHERE id IN (`+placeholders(len(chunk))+`)`, chunk...); err != nil {
			return fmt.Errorf("sqliteq: ack outbox: %w", err)
		}
	}
	return nil
}

// TouchWorker implements queue.Store.
func (s *Store) TouchWorker(ctx context.Context, w queue.WorkerSeen) error {
	if w.ID == "" {
		return baton.Errorf(baton.EInvalid, "worker id is required")
	}
	types := w.Types
	if types == nil {
		types = []string{}
	}
	tj, err := json.Marshal(types)
	if err != nil {
		return fmt.Errorf("sqliteq: touch worker %s: %w", w.ID, err)
	}
	_, err = s.w.ExecContext(ctx, `INSERT INTO workers (id, name, types, last_seen) VALUES (?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET name = excluded.name, types = excluded.types, last_seen = excluded.last_seen`,
		w.ID, w.Name, string(tj), ms(w.Now))
	if err != nil {
		return fmt.Errorf("sqliteq: touch worker %s: %w", w.ID, err)
	}
	return nil
}

// Workers implements queue.Store; sorted by ID.
func (s *Store) Workers(ctx context.Context, since time.Time) ([]queue.WorkerInfo, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT w.id, w.name, w.types, w.last_seen,
		(SELECT count(*) FROM tasks t WHERE t.state = 'processing' AND t.worker_id = w.id)
		FROM workers w WHERE w.last_seen >= ? ORDER BY w.id`, ms(since))
	if err != nil {
		return nil, fmt.Errorf("sqliteq: workers: %w", err)
	}
	defer rows.Close()
	var out []queue.WorkerInfo
	for rows.Next() {
		var wi queue.WorkerInfo
		var types string
		var seen int64
		if err := rows.Scan(&wi.ID, &wi.Name, &types, &seen, &wi.Running); err != nil {
			return nil, fmt.Errorf("sqliteq: workers: %w", err)
		}
		if err := json.Unmarshal([]byte(types), &wi.Types); err != nil {
			return nil, fmt.Errorf("sqliteq: workers: types of %s: %w", wi.ID, err)
		}
		wi.LastSeen = fromMs(seen)
		out = append(out, wi)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqliteq: workers: %w", err)
	}
	return out, nil
}

// PutIfAbsent implements queue.Store. ttl runs on the wall clock; ttl <= 0
// keeps the key forever.
func (s *Store) PutIfAbsent(ctx context.Context, key string, val []byte, ttl time.Duration) ([]byte, bool, error) {
	if val == nil {
		val = []byte{}
	}
	wall := time.Now().UnixMilli()
	expires := int64(math.MaxInt64)
	if ttl > 0 {
		expires = wall + max(ttl.Milliseconds(), 1)
	}
	var stored []byte
	var created bool
	err := s.tx(ctx, func(tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx, `INSERT INTO kv (key, val, expires_at) VALUES (?1, ?2, ?3)
			ON CONFLICT (key) DO UPDATE SET val = excluded.val, expires_at = excluded.expires_at WHERE kv.expires_at <= ?4
			RETURNING val`, key, val, expires, wall).Scan(&stored)
		if err == nil {
			created = true
			return nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		return tx.QueryRowContext(ctx, `SELECT val FROM kv WHERE key = ?`, key).Scan(&stored)
	})
	if err != nil {
		return nil, false, fmt.Errorf("sqliteq: put if absent %s: %w", key, err)
	}
	return stored, created, nil
}
