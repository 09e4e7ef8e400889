package artifact

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	baton "github.com/batonhq/baton"
)

// TestPutOpenSweep checks the filesystem layout (<dir>/<task>/<sha256>)
// and that Sweep goes by a task directory's modification time.
func TestPutOpenSweep(t *testing.T) {
	ctx := context.Background()
	fs, err := NewFS(t.TempDir(), 16)
	if err != nil {
		t.Fatal(err)
	}
	info, err := fs.Put(ctx, "task1", bytes.NewReader([]byte("%PDF-1.7")))
	if err != nil || info.Size != 8 || len(info.SHA256) != 64 {
		t.Fatalf("put: %+v %v", info, err)
	}
	f, size, err := fs.Open(ctx, "task1", info.SHA256)
	if err != nil || size != 8 {
		t.Fatal(size, err)
	}
	b, _ := io.ReadAll(f)
	f.Close()
	if string(b) != "%PDF-1.7" {
		t.Fatalf("read back %q", b)
	}
	if _, err := fs.Put(ctx, "task1", bytes.NewReader(make([]byte, 17))); baton.ErrorCode(err) != baton.ETooLarge {
		t.Fatalf("oversize: %v, want too_large", err)
	}
	for _, bad := range [][2]string{{"../x", info.SHA256}, {"task1", "../../etc/passwd"}, {"task2", info.SHA256}} {
		if _, _, err := fs.Open(ctx, bad[0], bad[1]); baton.ErrorCode(err) != baton.ENotFound {
			t.Fatalf("open %v: %v, want not_found", bad, err)
		}
	}
	// Only the old task's directory goes; a fresh one stays.
	if _, err := fs.Put(ctx, "task2", bytes.NewReader([]byte("x"))); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-48 * time.Hour)
	if err := os.Chtimes(filepath.Join(fs.Dir, "task1"), old, old); err != nil {
		t.Fatal(err)
	}
	n, err := fs.Sweep(ctx, time.Now().Add(-24*time.Hour))
	if err != nil || n != 1 {
		t.Fatalf("sweep: %d %v", n, err)
	}
	if _, _, err := fs.Open(ctx, "task1", info.SHA256); baton.ErrorCode(err) != baton.ENotFound {
		t.Fatalf("swept artifact still readable: %v", err)
	}
	if _, err := os.Stat(filepath.Join(fs.Dir, "task2")); err != nil {
		t.Fatalf("fresh artifact swept: %v", err)
	}
}
