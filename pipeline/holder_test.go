package pipeline

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	baton "github.com/batonhq/baton"
	"github.com/batonhq/baton/check/wordlist"
	"github.com/batonhq/baton/controller"
	"github.com/batonhq/baton/ledger"
	"github.com/batonhq/baton/queue/sqliteq"
)

func newHolder(t *testing.T, dir string, words *wordlist.Store) *ConfigHolder {
	t.Helper()
	ctx := context.Background()
	db, err := ledger.Open(ctx, "sqlite:"+filepath.Join(dir, "baton.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqliteq.Open(ctx, filepath.Join(dir, "queue.db"), sqliteq.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := controller.New(controller.Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close(); _ = db.Close() })
	h, err := NewConfigHolder(ctx, db, c, nil, words)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// Operator-edited word lists reach the checks at once, survive a restart,
// and a bad list is refused with the reason and changes nothing.
func TestWordListsAreEditable(t *testing.T) {
	dir := t.TempDir()
	words := wordlist.NewStore(wordlist.Default())
	h := newHolder(t, dir, words)
	ctx := context.Background()
	if hits := words.Load().Match("welcome to zorblax"); len(hits) != 0 {
		t.Fatalf("default lists already match: %v", hits)
	}
	lists := json.RawMessage(`{"lists":[{"category":"gambling","black":true,"words":["zorblax"]},{"category":"parked","black":false,"words":["for sale"]}]}`)
	if _, err := h.SetWordLists(ctx, lists); err != nil {
		t.Fatal(err)
	}
	hits := words.Load().Match("welcome to zorblax")
	if len(hits) != 1 || hits[0].Category != "gambling" || !hits[0].Black {
		t.Fatalf("after the edit: %v", hits)
	}
	_, err := h.SetWordLists(ctx, json.RawMessage(`{"lists":[{"category":"gambling","black":true,"words":[""]}]}`))
	if baton.ErrorCode(err) != baton.EInvalid {
		t.Fatalf("empty word: %v, want invalid", err)
	}
	if len(words.Load().Match("zorblax")) != 1 {
		t.Fatal("a refused list changed the lists in use")
	}
	// A new controller on the same main DB loads them.
	again := wordlist.NewStore(wordlist.Default())
	newHolder(t, dir, again)
	if len(again.Load().Match("zorblax")) != 1 {
		t.Fatal("word lists did not survive a restart")
	}
}
