// Package sqliteq is the embedded queue store: one SQLite file in the data
// directory, for a single controller process with no server to install.
//
// Every state change is one transaction on a single writer connection
// (BEGIN IMMEDIATE), so transitions are serialized and a crash at any
// instant loses no committed transition (WAL journal). Reads (Get, Queues,
// ReadOutbox, Workers) use a separate pool of read-only connections and do
// not wait for writers. Batches are applied in one transaction per call:
// Claim runs one query per queue, Enqueue one multi-row insert.
//
// The file may be opened by another process too (busy_timeout makes
// writers wait for each other), but Wake only hears about tasks made
// claimable through this Store value.
package sqliteq

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/batonhq/baton/queue"
)

var _ queue.Store = (*Store)(nil)

// Options configure a Store.
type Options struct {
	// Retention is how long finished tasks stay readable before Reap purges
	// them; 0 means queue.DefaultRetention.
	Retention time.Duration
	// Logger receives the store's logs; nil discards them.
	Logger *slog.Logger
}

// Store is the SQLite queue store. It is safe for concurrent use.
type Store struct {
	w         *sql.DB // one connection: every write transaction
	r         *sql.DB // read-only pool
	retention time.Duration
	log       *slog.Logger
	wake      chan struct{}
	closeOnce sync.Once
	closeErr  error
}

//go:embed migrations/*.sql
var migrationFS embed.FS

// busyTimeoutMs is how long a connection waits for another process's write
// lock before giving up with SQLITE_BUSY.
const busyTimeoutMs = 10000

// Open opens (creating if needed) the store in the file at path and brings
// its schema up to date.
func Open(ctx context.Context, path string, opts Options) (*Store, error) {
	if path == "" || strings.ContainsAny(path, "?#") {
		return nil, fmt.Errorf("sqliteq: invalid database path %q", path)
	}
	if opts.Retention < 0 {
		return nil, fmt.Errorf("sqliteq: retention must not be negative (got %v)", opts.Retention)
	}
	if opts.Retention == 0 {
		opts.Retention = queue.DefaultRetention
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Store{retention: opts.Retention, log: log.With("component", "sqliteq"), wake: make(chan struct{}, 1)}

	// synchronous=NORMAL in WAL mode: a committed transaction survives the
	// process being killed at any instant (only a power loss can take back
	// the last commits; the file stays consistent either way).
	common := "_pragma=busy_timeout(" + strconv.Itoa(busyTimeoutMs) + ")&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)"
	w, err := sql.Open("sqlite", "file:"+path+"?"+common+"&_pragma=journal_mode(WAL)&_txlock=immediate")
	if err != nil {
		return nil, fmt.Errorf("sqliteq: open %s: %w", path, err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	s.w = w
	if err := s.migrate(ctx); err != nil {
		w.Close()
		return nil, fmt.Errorf("sqliteq: %s: %w", path, err)
	}
	r, err := sql.Open("sqlite", "file:"+path+"?"+common+"&_pragma=query_only(1)")
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("sqliteq: open %s for reading: %w", path, err)
	}
	n := max(4, runtime.GOMAXPROCS(0))
	r.SetMaxOpenConns(n)
	r.SetMaxIdleConns(n)
	s.r = r
	if err := s.Ping(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// migrate applies the embedded migrations newer than the file's
// user_version, each in its own transaction together with the version bump.
func (s *Store) migrate(ctx context.Context) error {
	names, err := fs.Glob(migrationFS, "migrations/*.sql")
	if err != nil {
		return fmt.Errorf("list migrations: %w", err)
	}
	sort.Strings(names)
	var current int
	if err := s.w.QueryRowContext(ctx, "PRAGMA user_version").Scan(&current); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	latest := 0
	for _, name := range names {
		v, err := migrationVersion(name)
		if err != nil {
			return err
		}
		latest = max(latest, v)
		if v <= current {
			continue
		}
		body, err := migrationFS.ReadFile(name)
		if err != nil {
			return fmt.Errorf("read migration %s: %w", name, err)
		}
		err = s.tx(ctx, func(tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, string(body)); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, "PRAGMA user_version = "+strconv.Itoa(v))
			return err
		})
		if err != nil {
			return fmt.Errorf("apply migration %s: %w", name, err)
		}
		s.log.Info("applied schema migration", "version", v, "file", name)
		current = v
	}
	if current > latest {
		return fmt.Errorf("schema version %d is newer than this program knows (%d): refusing to use the file", current, latest)
	}
	return nil
}

// migrationVersion parses the leading number of "migrations/0001_init.sql".
func migrationVersion(name string) (int, error) {
	base := strings.TrimPrefix(name, "migrations/")
	num, _, ok := strings.Cut(base, "_")
	v, err := strconv.Atoi(num)
	if !ok || err != nil || v <= 0 {
		return 0, fmt.Errorf("migration %s: name must start with a positive version number and '_'", name)
	}
	return v, nil
}

// tx runs fn in a write transaction (BEGIN IMMEDIATE on the writer).
func (s *Store) tx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// signal wakes a waiting claimer, coalescing with a pending signal.
func (s *Store) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Wake implements queue.Store. It hears only of tasks made claimable
// through this Store value.
func (s *Store) Wake() <-chan struct{} { return s.wake }

// Ping implements queue.Store.
func (s *Store) Ping(ctx context.Context) error {
	var one int
	if err := s.r.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
		return fmt.Errorf("sqliteq: ping: %w", err)
	}
	return nil
}

// Close implements queue.Store; it is safe to call more than once.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		var errs []error
		if s.r != nil {
			errs = append(errs, s.r.Close())
		}
		if s.w != nil {
			errs = append(errs, s.w.Close())
		}
		if err := errors.Join(errs...); err != nil {
			s.closeErr = fmt.Errorf("sqliteq: close: %w", err)
		}
	})
	return s.closeErr
}

// ms is t in Unix milliseconds, the unit every time is stored in.
func ms(t time.Time) int64 { return t.UnixMilli() }

// fromMs is the inverse of ms, in UTC.
func fromMs(v int64) time.Time { return time.UnixMilli(v).UTC() }

// msPtr converts a nullable column.
func msPtr(v sql.NullInt64) *time.Time {
	if !v.Valid {
		return nil
	}
	t := fromMs(v.Int64)
	return &t
}

// placeholders returns "?,?,...,?" with n marks.
func placeholders(n int) string {
	if n <= 0 {
		return ""
	}
	return strings.Repeat("?,", n-1) + "?"
}
