package ledger

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/domain"
)

// importChunk is the number of rows of one multi-row INSERT.
const importChunk = 500

// ImportDomains inserts the entries whose names are not in the ledger yet,
// in one transaction, and returns how many were added and how many were
// duplicates (already present, or repeated within entries — the first one
// wins). Names must be normalized (domain.Normalize); an entry that is not
// fails the whole call with an EInvalid error naming its index.
func (db *DB) ImportDomains(ctx context.Context, entries []domain.Entry) (added, duplicates int, err error) {
	seen := make(map[string]struct{}, len(entries))
	now := ts(db.now())
	rows := make([][]any, 0, len(entries))
	for i, e := range entries {
		if n, err := domain.Normalize(e.Name); err != nil || n != e.Name {
			return 0, 0, baton.Errorf(baton.EInvalid, "entry %d: name %q is not a normalized domain name", i, e.Name)
		}
		if len(e.Source) > domain.MaxSourceLen {
			return 0, 0, baton.Errorf(baton.EInvalid, "entry %d: source longer than %d bytes", i, domain.MaxSourceLen)
		}
		if _, dup := seen[e.Name]; dup {
			duplicates++
			continue
		}
		seen[e.Name] = struct{}{}
		rows = append(rows, []any{e.Name, e.Source, ts(e.DeleteAt), string(StatusPending), "", 1, now, now})
	}
	if len(rows) == 0 {
		return 0, duplicates, nil
	}
	const cols = "name, source, delete_at, status, black_reason, finished, created_at, updated_at"
	stmt := func(n int) string {
		q := "INSERT INTO domains (" + cols + ") VALUES " + placeholders(n, 8)
		if db.dialect == DialectMySQL {
			// Affects 0 rows for a duplicate (clientFoundRows is off);
			// unlike INSERT IGNORE it does not hide other errors.
			return q + " ON DUPLICATE KEY UPDATE name = name"
		}
		return q + " ON CONFLICT (name) DO NOTHING"
	}
	var n int64
	err = db.inTx(ctx, func(tx *sql.Tx) error {
		var err error
		n, err = execChunks(ctx, tx, importChunk, rows, stmt)
		return err
	})
	if err != nil {
		return 0, 0, fmt.Errorf("import domains: %w", err)
	}
	return int(n), duplicates + len(rows) - int(n), nil
}
