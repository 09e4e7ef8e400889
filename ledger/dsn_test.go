package ledger

import (
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/go-sql-driver/mysql"
	"github.com/google/go-cmp/cmp"
)

func TestParseDSN(t *testing.T) {
	tests := []struct {
		dsn     string
		dialect string
		driver  string // the driver DSN, or the error reason
		redact  string
	}{
		{"sqlite:/data/baton.db", DialectSQLite, "file:/data/baton.db?" + sqlitePragmas, "sqlite:/data/baton.db"},
		{"sqlite:rel/b.db", DialectSQLite, "file:rel/b.db?" + sqlitePragmas, "sqlite:rel/b.db"},
		{"sqlite:///abs/b.db", DialectSQLite, "file:/abs/b.db?" + sqlitePragmas, "sqlite:///abs/b.db"},
		{"mysql://baton:s3cret@db.example:3307/ledger", DialectMySQL,
			"baton:s3cret@tcp(db.example:3307)/ledger?charset=utf8mb4&collation=utf8mb4_bin&parseTime=true",
			"mysql://baton:xxxxx@db.example:3307/ledger"},
		{"mysql://root@127.0.0.1/baton", DialectMySQL,
			"root@tcp(127.0.0.1:3306)/baton?charset=utf8mb4&collation=utf8mb4_bin&parseTime=true", "mysql://root@127.0.0.1/baton"},
		{"mysql://u:p%40ss%2Fw@[::1]:3306/db?timeout=5s&multiStatements=true&parseTime=false", DialectMySQL,
			"u:p@ss/w@tcp([::1]:3306)/db?charset=utf8mb4&collation=utf8mb4_bin&parseTime=true&timeout=5s",
			"mysql://u:xxxxx@[::1]:3306/db?timeout=5s&multiStatements=true&parseTime=false"},

		{"sqlite:", "", "sqlite DSN \"sqlite:\" has no path (want sqlite:PATH)", ""},
		{"sqlite:a.db?mode=ro", "", "sqlite path \"a.db?mode=ro\" must not contain ? or #", ""},
		{"postgres://x/y", "", "unsupported database DSN \"postgres://x/y\" (want sqlite:PATH or mysql://user:pass@host:port/db)", ""},
		{"/data/baton.db", "", "unsupported database DSN \"/data/baton.db\" (want sqlite:PATH or mysql://user:pass@host:port/db)", ""},
		{"mysql://u:p@host:3306/", "", "mysql DSN needs one database name after the host (want mysql://user:pass@host:port/db)", ""},
		{"mysql://u:p@/db", "", "mysql DSN has no host (want mysql://user:pass@host:port/db)", ""},
		{"mysql://u:p@h/a/b", "", "mysql DSN needs one database name after the host (want mysql://user:pass@host:port/db)", ""},
		{"mysql://u:p@h/db?timeout=soon", "", "bad mysql DSN parameter", ""},
		{"mysql://u:p@h:port/db", "", "malformed mysql DSN", ""},
	}
	for _, tt := range tests {
		t.Run(tt.dsn, func(t *testing.T) {
			got, err := ParseDSN(tt.dsn)
			if tt.dialect == "" {
				if baton.ErrorCode(err) != baton.EInvalid {
					t.Fatalf("err = %v, want invalid", err)
				}
				if diff := cmp.Diff(tt.driver, baton.ErrorMessage(err)); diff != "" {
					t.Errorf("reason (-want +got):\n%s", diff)
				}
				if strings.Contains(err.Error(), "s3cret") {
					t.Errorf("error leaks the password: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := DSN{Dialect: tt.dialect, Driver: tt.driver, Redacted: tt.redact}
			if tt.dialect == DialectSQLite {
				want.Path = strings.TrimSuffix(strings.TrimPrefix(tt.driver, "file:"), "?"+sqlitePragmas)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("ParseDSN (-want +got):\n%s", diff)
			}
		})
	}
}

func FuzzParseDSN(f *testing.F) {
	for _, s := range []string{
		"sqlite:/tmp/a.db", "sqlite:", "mysql://u:p@h:3306/db", "mysql://u@h/db?tls=true&timeout=1s",
		"mysql://u:p%40@[::1]/db", "mysql://@/", "mysql://u:p@h/db?parseTime=false&loc=Local", "mysql://h:99999/d",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDSN(s)
		if err != nil {
			if baton.ErrorCode(err) != baton.EInvalid && baton.ErrorCode(err) != baton.EInternal {
				t.Fatalf("ParseDSN(%q): %v", s, err)
			}
			return
		}
		switch d.Dialect {
		case DialectSQLite:
			if d.Path == "" || strings.ContainsAny(d.Path, "?#") {
				t.Fatalf("ParseDSN(%q): path %q", s, d.Path)
			}
		case DialectMySQL:
			cfg, err := mysql.ParseDSN(d.Driver)
			if err != nil {
				t.Fatalf("ParseDSN(%q) driver DSN %q does not parse: %v", s, d.Driver, err)
			}
			if !cfg.ParseTime || cfg.MultiStatements || cfg.Loc != time.UTC || cfg.DBName == "" || cfg.Net != "tcp" {
				t.Fatalf("ParseDSN(%q) driver config %+v", s, cfg)
			}
			if pw, _ := strings.CutPrefix(d.Redacted, "mysql://"); cfg.Passwd != "" && cfg.Passwd != "xxxxx" && strings.Contains(pw, ":"+cfg.Passwd+"@") {
				t.Fatalf("ParseDSN(%q): Redacted %q shows the password", s, d.Redacted)
			}
		default:
			t.Fatalf("ParseDSN(%q): dialect %q", s, d.Dialect)
		}
	})
}
