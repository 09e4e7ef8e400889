package ledger

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// backend is one real database the conformance tests run against.
type backend struct {
	name string
	// newDSN returns the DSN of a fresh, empty database, removed when the
	// test ends.
	newDSN func(t testing.TB) string
}

var backends = []backend{
	{name: "sqlite", newDSN: func(t testing.TB) string {
		return "sqlite:" + filepath.Join(t.TempDir(), "ledger.db")
	}},
	{name: "mysql", newDSN: newMySQLDatabase},
}

// forEachBackend runs fn as a subtest on SQLite and on MariaDB/MySQL, each
// with a fresh database that has been migrated by Open.
func forEachBackend(t *testing.T, fn func(t *testing.T, db *DB)) {
	t.Helper()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			db := openTest(t, b.newDSN(t))
			fn(t, db)
		})
	}
}

func openTest(t testing.TB, dsn string) *DB {
	t.Helper()
	db, err := Open(context.Background(), dsn, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("Open(%s): %v", redact(dsn), err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// mysqlServer is BATON_TEST_MYSQL (a go-sql-driver DSN without database),
// default root@tcp(127.0.0.1:3306)/.
func mysqlServer(t testing.TB) *mysql.Config {
	t.Helper()
	s := os.Getenv("BATON_TEST_MYSQL")
	if s == "" {
		s = "root@tcp(127.0.0.1:3306)/"
	}
	cfg, err := mysql.ParseDSN(s)
	if err != nil {
		t.Fatalf("BATON_TEST_MYSQL=%q: %v", s, err)
	}
	return cfg
}

var mysqlAdmin struct {
	once sync.Once
	db   *sql.DB
	err  error
}

// newMySQLDatabase creates a database with a random name on the test server
// and drops it when the test ends. A missing server fails the test: the
// MariaDB half of the conformance suite is never skipped.
func newMySQLDatabase(t testing.TB) string {
	t.Helper()
	cfg := mysqlServer(t)
	mysqlAdmin.once.Do(func() {
		c := cfg.Clone()
		c.DBName = ""
		mysqlAdmin.db, mysqlAdmin.err = sql.Open("mysql", c.FormatDSN())
		if mysqlAdmin.err == nil {
			mysqlAdmin.err = mysqlAdmin.db.Ping()
		}
	})
	if mysqlAdmin.err != nil {
		t.Fatalf("MariaDB/MySQL test server at %s unreachable (set BATON_TEST_MYSQL, or run .ci/run which starts it): %v", cfg.Addr, mysqlAdmin.err)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "baton_test_" + hex.EncodeToString(b[:])
	if _, err := mysqlAdmin.db.Exec("CREATE DATABASE " + name + " CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"); err != nil {
		t.Fatalf("create test database: %v", err)
	}
	t.Cleanup(func() {
		if _, err := mysqlAdmin.db.Exec("DROP DATABASE " + name); err != nil {
			t.Errorf("drop test database %s: %v", name, err)
		}
	})
	u := url.URL{Scheme: "mysql", Host: cfg.Addr, Path: "/" + name}
	if cfg.Passwd != "" {
		u.User = url.UserPassword(cfg.User, cfg.Passwd)
	} else {
		u.User = url.User(cfg.User)
	}
	return u.String()
}

// tables lists every table of the schema with the columns it is ordered by
// for dumps.
var tables = []struct{ name, order string }{
	{"domains", "name"},
	{"step_results", "domain, step"},
	{"runs", "id"},
	{"blacklist", "domain"},
	{"pipeline_config", "id"},
	{"api_keys", "id"},
	{"conversion_tasks", "id"},
	{"conversion_callback_logs", "id"},
}

// dump renders every row of every table as text, to compare states.
func dump(t testing.TB, db *DB) string {
	t.Helper()
	var b strings.Builder
	for _, tb := range tables {
		rows, err := db.r.Query("SELECT * FROM " + tb.name + " ORDER BY " + tb.order)
		if err != nil {
			t.Fatalf("dump %s: %v", tb.name, err)
		}
		cols, _ := rows.Columns()
		fmt.Fprintf(&b, "== %s %v\n", tb.name, cols)
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatalf("dump %s: %v", tb.name, err)
			}
			for i, v := range vals {
				if i > 0 {
					b.WriteString(" | ")
				}
				switch x := v.(type) {
				case nil:
					b.WriteString("NULL")
				case []byte:
					b.WriteString(strconv.Quote(string(x)))
				case string:
					b.WriteString(strconv.Quote(x))
				case time.Time:
					b.WriteString(x.Format(time.RFC3339Nano))
				default:
					fmt.Fprintf(&b, "%v", x)
				}
			}
			b.WriteString("\n")
		}
		if err := rows.Err(); err != nil {
			t.Fatalf("dump %s: %v", tb.name, err)
		}
		rows.Close()
	}
	return b.String()
}

// at returns a fixed UTC time plus d, at microsecond precision.
func at(d time.Duration) time.Time {
	return time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC).Add(d)
}
