package artifact

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	baton "github.com/batonhq/baton"
	"github.com/batonhq/baton/artifact/s3test"
)

// storeKind makes fresh, empty stores of one kind for the contract test.
type storeKind struct {
	// open returns an empty store bounded by maxBytes and a function
	// counting the objects it holds (to see that nothing was stored).
	open func(t *testing.T, maxBytes int64) (Store, func() int)
}

func fsKind() storeKind {
	return storeKind{func(t *testing.T, maxBytes int64) (Store, func() int) {
		dir := t.TempDir()
		st, err := NewFS(dir, maxBytes)
		if err != nil {
			t.Fatal(err)
		}
		return st, func() int {
			n := 0
			_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					n++
				}
				return nil
			})
			return n
		}
	}}
}

// s3Kind gives each store its own prefix in one bucket of a weed server.
func s3Kind(srv *s3test.Server, bucket string) storeKind {
	seq := 0
	return storeKind{func(t *testing.T, maxBytes int64) (Store, func() int) {
		seq++
		prefix := fmt.Sprintf("t%d/artifacts/", seq)
		st := openS3(t, srv, S3Config{Bucket: bucket, Prefix: prefix, MaxBytes: maxBytes})
		return st, func() int { return countObjects(t, srv, bucket, prefix) }
	}}
}

func openS3(t *testing.T, srv *s3test.Server, cfg S3Config) *S3 {
	t.Helper()
	cfg.Endpoint = srv.Endpoint
	cfg.AccessKeyID, cfg.SecretAccessKey = s3test.AccessKey, s3test.SecretKey
	if cfg.SpoolDir == "" {
		cfg.SpoolDir = t.TempDir()
	}
	st, err := NewS3(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func countObjects(t *testing.T, srv *s3test.Server, bucket, prefix string) int {
	t.Helper()
	n := 0
	for o := range srv.Client(t).ListObjects(context.Background(), bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if o.Err != nil {
			t.Fatal(o.Err)
		}
		n++
	}
	return n
}

// TestStores runs the same behavioural test against the filesystem store
// and the S3 store (on a real SeaweedFS S3 gateway).
func TestStores(t *testing.T) {
	t.Run("fs", func(t *testing.T) { testStore(t, fsKind()) })
	t.Run("s3", func(t *testing.T) {
		srv := weedServer(t)
		srv.MakeBucket(t, "baton-artifacts")
		testStore(t, s3Kind(srv, "baton-artifacts"))
	})
}

func sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

func put(t *testing.T, st Store, task, body string) Info {
	t.Helper()
	info, err := st.Put(context.Background(), task, bytes.NewReader([]byte(body)))
	if err != nil {
		t.Fatalf("put %s: %v", task, err)
	}
	if info.Size != int64(len(body)) || info.SHA256 != sum([]byte(body)) {
		t.Fatalf("put %s: %+v, want size %d sha %s", task, info, len(body), sum([]byte(body)))
	}
	return info
}

// read opens an artifact and checks its size against its content.
func read(t *testing.T, st Store, task, sha string) (string, error) {
	t.Helper()
	rc, size, err := st.Open(context.Background(), task, sha)
	if err != nil {
		return "", err
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("read %s/%s: %v", task, sha, err)
	}
	if size != int64(len(b)) {
		t.Fatalf("open %s/%s: size %d, content %d bytes", task, sha, size, len(b))
	}
	return string(b), nil
}

func mustRead(t *testing.T, st Store, task, sha, want string) {
	t.Helper()
	got, err := read(t, st, task, sha)
	if err != nil || got != want {
		t.Fatalf("open %s/%s: %q %v, want %q", task, sha, got, err, want)
	}
}

func testStore(t *testing.T, k storeKind) {
	ctx := context.Background()
	t.Run("round trip", func(t *testing.T) {
		st, count := k.open(t, 1024)
		if st.MaxSize() != 1024 {
			t.Fatalf("MaxSize %d", st.MaxSize())
		}
		info := put(t, st, "task1", "%PDF-1.7 hello")
		mustRead(t, st, "task1", info.SHA256, "%PDF-1.7 hello")
		empty := put(t, st, "task-empty", "")
		mustRead(t, st, "task-empty", empty.SHA256, "")
		if n := count(); n != 2 {
			t.Fatalf("%d objects stored, want 2", n)
		}
	})
	t.Run("oversize", func(t *testing.T) {
		st, count := k.open(t, 16)
		put(t, st, "task1", string(make([]byte, 16))) // exactly the limit
		big := make([]byte, 17)
		_, err := st.Put(ctx, "task2", bytes.NewReader(big))
		if baton.ErrorCode(err) != baton.ETooLarge {
			t.Fatalf("oversize: %v, want too_large", err)
		}
		if _, err := read(t, st, "task2", sum(big)); baton.ErrorCode(err) != baton.ENotFound {
			t.Fatalf("oversize artifact readable: %v", err)
		}
		if n := count(); n != 1 {
			t.Fatalf("%d objects stored after an oversize put, want 1", n)
		}
	})
	t.Run("bad ids", func(t *testing.T) {
		st, count := k.open(t, 1024)
		info := put(t, st, "task1", "x")
		for _, id := range []string{"../x", "", "a/b", "a b", string(make([]byte, 129))} {
			if _, err := st.Put(ctx, id, bytes.NewReader([]byte("y"))); baton.ErrorCode(err) != baton.EInvalid {
				t.Fatalf("put %q: %v, want invalid", id, err)
			}
		}
		for _, bad := range [][2]string{
			{"../x", info.SHA256}, {"task1", "../../etc/passwd"}, {"task1", ""},
			{"task1", sum([]byte("other"))}, {"task2", info.SHA256}, {"task1/" + info.SHA256[:8], info.SHA256},
		} {
			if _, err := read(t, st, bad[0], bad[1]); baton.ErrorCode(err) != baton.ENotFound {
				t.Fatalf("open %v: %v, want not_found", bad, err)
			}
		}
		if n := count(); n != 1 {
			t.Fatalf("%d objects stored, want 1", n)
		}
	})
	t.Run("content addressed", func(t *testing.T) {
		st, count := k.open(t, 1024)
		first := put(t, st, "task1", "accepted result")
		if again := put(t, st, "task1", "accepted result"); again != first {
			t.Fatalf("same content twice: %+v then %+v", first, again)
		}
		if n := count(); n != 1 {
			t.Fatalf("same content twice: %d objects, want 1", n)
		}
		// A stale worker's late upload gets its own name.
		stale := put(t, st, "task1", "stale worker's output")
		if stale.SHA256 == first.SHA256 {
			t.Fatal("different content, same digest")
		}
		mustRead(t, st, "task1", first.SHA256, "accepted result")
		mustRead(t, st, "task1", stale.SHA256, "stale worker's output")
		// The same content under another task is another artifact.
		put(t, st, "task2", "accepted result")
		if n := count(); n != 3 {
			t.Fatalf("%d objects, want 3", n)
		}
	})
	t.Run("sweep", func(t *testing.T) {
		st, count := k.open(t, 1024)
		start := time.Now()
		old1 := put(t, st, "old1", "a")
		old2 := put(t, st, "old2", "b")
		old2b := put(t, st, "old2", "c")
		// S3 keeps LastModified to the second: leave a clear gap either side.
		time.Sleep(1100 * time.Millisecond)
		cutoff := time.Now()
		time.Sleep(1100 * time.Millisecond)
		fresh := put(t, st, "fresh", "d")

		if n, err := st.Sweep(ctx, start.Add(-time.Hour)); err != nil || n != 0 {
			t.Fatalf("sweep with a cutoff in the past: %d %v, want 0", n, err)
		}
		if n := count(); n != 4 {
			t.Fatalf("%d objects after a sweep that removes nothing, want 4", n)
		}
		if n, err := st.Sweep(ctx, cutoff); err != nil || n != 2 {
			t.Fatalf("sweep: %d %v, want 2 tasks", n, err)
		}
		for _, gone := range []struct{ task, sha string }{{"old1", old1.SHA256}, {"old2", old2.SHA256}, {"old2", old2b.SHA256}} {
			if _, err := read(t, st, gone.task, gone.sha); baton.ErrorCode(err) != baton.ENotFound {
				t.Fatalf("swept artifact %s still readable: %v", gone.task, err)
			}
		}
		mustRead(t, st, "fresh", fresh.SHA256, "d")
		if n, err := st.Sweep(ctx, time.Now().Add(time.Hour)); err != nil || n != 1 {
			t.Fatalf("sweep with a cutoff in the future: %d %v, want 1", n, err)
		}
		if n := count(); n != 0 {
			t.Fatalf("%d objects after sweeping everything, want 0", n)
		}
	})
}
