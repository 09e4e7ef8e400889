package sqliteq_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/batonhq/baton/queue"
	"github.com/batonhq/baton/queue/queuetest"
	"github.com/batonhq/baton/queue/sqliteq"
)

// newStore opens a store in a fresh temporary directory.
func newStore(t *testing.T) queue.Store {
	t.Helper()
	s, err := sqliteq.Open(context.Background(), filepath.Join(t.TempDir(), "queue.db"), sqliteq.Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func TestConformance(t *testing.T) {
	queuetest.Run(t, newStore)
}
