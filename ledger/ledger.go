package ledger

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"strings"
	"time"

	"github.com/batonhq/baton"
	_ "github.com/go-sql-driver/mysql" // "mysql" driver
	"github.com/pressly/goose/v3"
	_ "modernc.org/sqlite" // "sqlite" driver
)

//go:embed migrations/sqlite/*.sql migrations/mysql/*.sql
var migrations embed.FS

// DB is the main database (the ledger). It is safe for concurrent use.
type DB struct {
	dialect string
	// w takes every write. On SQLite it has a single connection (SQLite has
	// one writer at a time; queueing in Go beats SQLITE_BUSY retries) and
	// opens its transactions with BEGIN IMMEDIATE.
	w *sql.DB
	// r serves reads: on SQLite a pool of query-only connections that WAL
	// lets run beside the writer; on MySQL the same pool as w.
	r   *sql.DB
	log *slog.Logger
	now func() time.Time
}

// Open connects to the main database named by dsn (see ParseDSN), applies
// the pending migrations and returns the DB. logger may be nil.
func Open(ctx context.Context, dsn string, logger *slog.Logger) (*DB, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	d, err := ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("open ledger: %w", err)
	}
	db := &DB{dialect: d.Dialect, log: logger.With("component", "ledger"), now: time.Now}
	switch d.Dialect {
	case DialectSQLite:
		if db.w, err = sql.Open("sqlite", d.Driver+"&_txlock=immediate"); err != nil {
			return nil, fmt.Errorf("open ledger %s: %w", d.Redacted, err)
		}
		db.w.SetMaxOpenConns(1)
		db.w.SetConnMaxIdleTime(0)
		if db.r, err = sql.Open("sqlite", d.Driver+"&_pragma=query_only(1)"); err != nil {
			db.w.Close()
			return nil, fmt.Errorf("open ledger %s: %w", d.Redacted, err)
		}
		db.r.SetMaxOpenConns(4)
	case DialectMySQL:
		if db.w, err = sql.Open("mysql", d.Driver); err != nil {
			return nil, fmt.Errorf("open ledger %s: %w", d.Redacted, err)
		}
		db.w.SetMaxOpenConns(16)
		db.w.SetMaxIdleConns(16)
		db.w.SetConnMaxLifetime(30 * time.Minute)
		db.r = db.w
	}
	if err := db.w.PingContext(ctx); err != nil {
		db.Close()
		return nil, &baton.Error{Code: baton.EUnavailable, Message: "main database unreachable", Err: fmt.Errorf("open ledger %s: %w", d.Redacted, err)}
	}
	if err := db.migrate(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("open ledger %s: %w", d.Redacted, err)
	}
	return db, nil
}

// migrate applies the embedded migrations of the dialect with goose.
func (db *DB) migrate(ctx context.Context) error {
	sub, err := fs.Sub(migrations, "migrations/"+db.dialect)
	if err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	gd := goose.DialectSQLite3
	if db.dialect == DialectMySQL {
		gd = goose.DialectMySQL
	}
	p, err := goose.NewProvider(gd, db.w, sub, goose.WithDisableGlobalRegistry(true))
	if err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	res, err := p.Up(ctx)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	for _, r := range res {
		db.log.Info("migration applied", "version", r.Source.Version, "file", r.Source.Path, "duration", r.Duration)
	}
	return nil
}

// SchemaVersion returns the version of the last migration applied.
func (db *DB) SchemaVersion(ctx context.Context) (int64, error) {
	var v int64
	err := db.r.QueryRowContext(ctx, `SELECT COALESCE(MAX(version_id), 0) FROM goose_db_version WHERE is_applied = 1`).Scan(&v)
	if err != nil {
		return 0, fmt.Errorf("schema version: %w", err)
	}
	return v, nil
}

// Dialect returns DialectSQLite or DialectMySQL.
func (db *DB) Dialect() string { return db.dialect }

// Ping checks that the database answers (for /readyz).
func (db *DB) Ping(ctx context.Context) error {
	if err := db.r.PingContext(ctx); err != nil {
		return fmt.Errorf("ping ledger: %w", err)
	}
	return nil
}

// Close closes the connections. It is safe to call more than once.
func (db *DB) Close() error {
	var errs []error
	if db.r != nil && db.r != db.w {
		errs = append(errs, db.r.Close())
	}
	if db.w != nil {
		errs = append(errs, db.w.Close())
	}
	return errors.Join(errs...)
}

// inTx runs fn in one write transaction, committed when fn returns nil.
func (db *DB) inTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := db.w.BeginTx(ctx, nil)
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

// timeLayout is how every timestamp is written, in UTC, for both dialects:
// fixed width, so SQLite's TEXT sorts and compares it in time order, and a
// literal MySQL's DATETIME(6) parses exactly (microseconds, its precision).
const timeLayout = "2006-01-02 15:04:05.000000"

// ts returns the stored form of t, or nil (NULL) for the zero time.
func ts(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Format(timeLayout)
}

// nullTime scans a timestamp column of either dialect: time.Time from MySQL
// (parseTime=true), text from SQLite; NULL gives the zero time.
type nullTime struct{ T time.Time }

// Scan implements sql.Scanner.
func (n *nullTime) Scan(v any) error {
	switch x := v.(type) {
	case nil:
		n.T = time.Time{}
	case time.Time:
		n.T = x.UTC()
	case string:
		return n.parse(x)
	case []byte:
		return n.parse(string(x))
	default:
		return fmt.Errorf("scan time: unsupported %T", v)
	}
	return nil
}

func (n *nullTime) parse(s string) error {
	t, err := time.Parse(timeLayout, s)
	if err != nil {
		return fmt.Errorf("scan time %q: %w", s, err)
	}
	n.T = t
	return nil
}

// placeholders returns "(?,?,?),(?,?,?)" for rows rows of cols columns.
func placeholders(rows, cols int) string {
	row := "(" + strings.TrimSuffix(strings.Repeat("?,", cols), ",") + ")"
	return strings.TrimSuffix(strings.Repeat(row+",", rows), ",")
}

// list returns "?,?,?" for n values.
func list(n int) string { return strings.TrimSuffix(strings.Repeat("?,", n), ",") }

// upsert is a multi-row INSERT that, on a key conflict, updates the row only
// when the incoming version is at least the stored one: an older change
// replayed after a newer one changes nothing, the same change replayed
// leaves the row as it was.
type upsert struct {
	table string
	cols  []string // all inserted columns; "version" must be one of them
	key   []string // conflict target (SQLite)
	keep  []string // columns not updated on conflict (keys, created_at)
	// coalesce lists columns where a NULL incoming value keeps the stored one.
	coalesce []string
	// derived are extra "col = expr" assignments made after the others
	// (and under the same version guard); in expr, "{new.X}" is the value X
	// gets and "{old.X}" the stored value of a column not updated.
	derived []string
}

// sql returns the statement for rows rows in dialect.
func (u upsert) sql(dialect string, rows int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "INSERT INTO %s (%s) VALUES %s ", u.table, strings.Join(u.cols, ", "), placeholders(rows, len(u.cols)))
	var sets []string
	for _, c := range u.cols {
		if c == "version" || contains(u.keep, c) || contains(u.key, c) {
			continue
		}
		co := contains(u.coalesce, c)
		if dialect == DialectMySQL {
			v := "VALUES(" + c + ")"
			if co {
				v = "COALESCE(" + v + ", " + c + ")"
			}
			sets = append(sets, fmt.Sprintf("%s = IF(VALUES(version) >= version, %s, %s)", c, v, c))
		} else {
			v := "excluded." + c
			if co {
				v = fmt.Sprintf("COALESCE(excluded.%s, %s.%s)", c, u.table, c)
			}
			sets = append(sets, c+" = "+v)
		}
	}
	for _, d := range u.derived {
		if dialect == DialectMySQL {
			// Assignments run left to right, so a bare column already holds
			// its new value here; the guard is repeated for clarity.
			c, expr, _ := strings.Cut(d, " = ")
			expr = strings.NewReplacer("{new.", "", "{old.", "", "}", "").Replace(expr)
			sets = append(sets, fmt.Sprintf("%s = IF(VALUES(version) >= version, %s, %s)", c, expr, c))
		} else {
			sets = append(sets, strings.NewReplacer("{new.", "excluded.", "{old.", u.table+".", "}", "").Replace(d))
		}
	}
	if dialect == DialectMySQL {
		// MySQL evaluates assignments left to right: version goes last so
		// the guards above still see the stored version.
		sets = append(sets, "version = GREATEST(version, VALUES(version))")
		b.WriteString("ON DUPLICATE KEY UPDATE " + strings.Join(sets, ", "))
	} else {
		sets = append(sets, "version = excluded.version")
		fmt.Fprintf(&b, "ON CONFLICT (%s) DO UPDATE SET %s WHERE excluded.version >= %s.version",
			strings.Join(u.key, ", "), strings.Join(sets, ", "), u.table)
	}
	return b.String()
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// execChunks runs stmt(n) with the args of rows, at most chunk rows per
// statement, and returns the total rows affected.
func execChunks(ctx context.Context, tx *sql.Tx, chunk int, rows [][]any, stmt func(n int) string) (int64, error) {
	var total int64
	for len(rows) > 0 {
		n := min(chunk, len(rows))
		args := make([]any, 0, n*len(rows[0]))
		for _, r := range rows[:n] {
			args = append(args, r...)
		}
		res, err := tx.ExecContext(ctx, stmt(n), args...)
		if err != nil {
			return total, err
		}
		a, err := res.RowsAffected()
		if err != nil {
			return total, err
		}
		total += a
		rows = rows[n:]
	}
	return total, nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
