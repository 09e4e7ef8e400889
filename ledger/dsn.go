package ledger

import (
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/batonhq/baton"
	"github.com/go-sql-driver/mysql"
)

// Dialects of the main database.
const (
	DialectSQLite = "sqlite"
	DialectMySQL  = "mysql"
)

// DSN is a parsed main-database address.
type DSN struct {
	// Dialect is DialectSQLite or DialectMySQL.
	Dialect string
	// Path is the SQLite database file (DialectSQLite only).
	Path string
	// Driver is what sql.Open gets: a modernc.org/sqlite "file:" name or a
	// go-sql-driver/mysql DSN.
	Driver string
	// Redacted is the DSN with its password replaced by "xxxxx", for logs.
	Redacted string
}

// sqlitePragmas are set on every SQLite connection: WAL so readers never
// block the writer, a busy timeout instead of SQLITE_BUSY, enforced foreign
// keys, and NORMAL sync (durable across a process crash, which is what WAL
// needs; an OS crash may lose the last commits, the outbox replays them),
// a 32 MiB page cache per connection and 256 MiB of memory-mapped I/O so a
// scan of a million rows reads pages without a system call each.
const sqlitePragmas = "_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)&_pragma=cache_size(-32768)&_pragma=mmap_size(268435456)"

// ParseDSN parses "sqlite:PATH" or "mysql://user:pass@host:port/db?params".
//
// MySQL query parameters are those of go-sql-driver/mysql (timeout, tls,
// readTimeout, ...); whatever they say, parseTime is on, times are UTC,
// the connection character set is utf8mb4 and multiStatements is off.
// Errors are EInvalid *baton.Error values naming the problem.
func ParseDSN(dsn string) (DSN, error) {
	switch {
	case strings.HasPrefix(dsn, "sqlite:"):
		p := strings.TrimPrefix(strings.TrimPrefix(dsn, "sqlite:"), "//")
		if p == "" {
			return DSN{}, baton.Errorf(baton.EInvalid, "sqlite DSN %q has no path (want sqlite:PATH)", dsn)
		}
		if strings.ContainsAny(p, "?#\x00") {
			return DSN{}, baton.Errorf(baton.EInvalid, "sqlite path %q must not contain ? or #", p)
		}
		return DSN{Dialect: DialectSQLite, Path: p, Driver: "file:" + p + "?" + sqlitePragmas, Redacted: dsn}, nil
	case strings.HasPrefix(dsn, "mysql://"):
		return parseMySQL(dsn)
	}
	return DSN{}, baton.Errorf(baton.EInvalid, "unsupported database DSN %q (want sqlite:PATH or mysql://user:pass@host:port/db)", redact(dsn))
}

func parseMySQL(dsn string) (DSN, error) {
	u, err := url.Parse(dsn)
	if err != nil {
		return DSN{}, &baton.Error{Code: baton.EInvalid, Message: "malformed mysql DSN", Err: fmt.Errorf("parse mysql DSN: %w", redactURLError(err))}
	}
	if u.Host == "" {
		return DSN{}, baton.Errorf(baton.EInvalid, "mysql DSN has no host (want mysql://user:pass@host:port/db)")
	}
	host, port := u.Hostname(), u.Port()
	if host == "" {
		return DSN{}, baton.Errorf(baton.EInvalid, "mysql DSN has no host (want mysql://user:pass@host:port/db)")
	}
	if port == "" {
		port = "3306"
	}
	db := strings.TrimPrefix(u.Path, "/")
	if db == "" || strings.Contains(db, "/") {
		return DSN{}, baton.Errorf(baton.EInvalid, "mysql DSN needs one database name after the host (want mysql://user:pass@host:port/db)")
	}
	if u.Fragment != "" || u.Opaque != "" {
		return DSN{}, baton.Errorf(baton.EInvalid, "malformed mysql DSN")
	}
	cfg := mysql.NewConfig()
	if u.RawQuery != "" {
		// Let the driver parse (and validate) its own parameters.
		q, err := url.ParseQuery(u.RawQuery)
		if err != nil {
			return DSN{}, &baton.Error{Code: baton.EInvalid, Message: "malformed mysql DSN parameters", Err: err}
		}
		parsed, err := mysql.ParseDSN("/?" + q.Encode())
		if err != nil {
			return DSN{}, &baton.Error{Code: baton.EInvalid, Message: "bad mysql DSN parameter", Err: err}
		}
		cfg = parsed
	}
	cfg.User = u.User.Username()
	cfg.Passwd, _ = u.User.Password()
	cfg.Net = "tcp"
	cfg.Addr = net.JoinHostPort(host, port)
	cfg.DBName = db
	cfg.ParseTime = true
	cfg.Loc = time.UTC
	cfg.MultiStatements = false
	cfg.InterpolateParams = false
	if err := cfg.Apply(mysql.Charset("utf8mb4", "utf8mb4_bin")); err != nil {
		return DSN{}, fmt.Errorf("mysql DSN: %w", err)
	}
	return DSN{Dialect: DialectMySQL, Driver: cfg.FormatDSN(), Redacted: redact(dsn)}, nil
}

// redact hides the password of a URL-shaped DSN.
func redact(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil || u.User == nil {
		if i := strings.Index(dsn, "@"); i >= 0 {
			return "xxxxx" + dsn[i:]
		}
		return dsn
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}

func redactURLError(err error) error {
	if ue, ok := err.(*url.Error); ok {
		return fmt.Errorf("%s", ue.Err)
	}
	return err
}
