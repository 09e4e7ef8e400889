package artifact

import (
	"bytes"
	"context"
	"crypto/rand"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/batonhq/baton/artifact/s3test"
)

// weed is the one S3 server of this package's tests, started by the first
// test that needs it and stopped by TestMain.
var weed struct {
	once sync.Once
	srv  *s3test.Server
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if weed.srv != nil {
		weed.srv.Stop()
	}
	os.Exit(code)
}

// weedServer returns the shared S3 server; a test fails (never skips)
// when it cannot be started, e.g. without the weed binary.
func weedServer(t *testing.T) *s3test.Server {
	t.Helper()
	weed.once.Do(func() {
		weed.srv, weed.err = s3test.Launch()
		if weed.err == nil {
			t.Logf("weed S3 gateway at %s, ready in %s", weed.srv.Endpoint, weed.srv.Ready.Round(time.Millisecond))
		}
	})
	if weed.err != nil {
		t.Fatal(weed.err)
	}
	return weed.srv
}

// TestS3 checks what only the S3 store has: the key layout, its checks at
// open (credentials, bucket, endpoint), credentials from the environment,
// a multipart-sized upload, the spool cleanup and a sweep that leaves
// other objects alone. The behaviour it shares with FS is TestStores.
func TestS3(t *testing.T) {
	srv := weedServer(t)
	srv.MakeBucket(t, "baton-s3")
	ctx := context.Background()
	cli := srv.Client(t)

	t.Run("open refuses", func(t *testing.T) {
		for _, c := range []struct {
			name string
			cfg  S3Config
			want string
		}{
			{"wrong secret", S3Config{Endpoint: srv.Endpoint, Bucket: "baton-s3", AccessKeyID: s3test.AccessKey, SecretAccessKey: "wrong"}, "credentials refused"},
			{"unknown key", S3Config{Endpoint: srv.Endpoint, Bucket: "baton-s3", AccessKeyID: "nobody", SecretAccessKey: s3test.SecretKey}, "credentials refused"},
			{"missing bucket", S3Config{Endpoint: srv.Endpoint, Bucket: "no-such-bucket", AccessKeyID: s3test.AccessKey, SecretAccessKey: s3test.SecretKey}, `bucket "no-such-bucket" does not exist`},
			{"no bucket", S3Config{Endpoint: srv.Endpoint, AccessKeyID: s3test.AccessKey, SecretAccessKey: s3test.SecretKey}, "a bucket is required"},
			{"bad endpoint", S3Config{Endpoint: "ftp://127.0.0.1:1", Bucket: "baton-s3", AccessKeyID: s3test.AccessKey, SecretAccessKey: s3test.SecretKey}, "want http://host"},
			{"endpoint with a path", S3Config{Endpoint: srv.Endpoint + "/x", Bucket: "baton-s3", AccessKeyID: s3test.AccessKey, SecretAccessKey: s3test.SecretKey}, "want http://host"},
		} {
			_, err := NewS3(ctx, c.cfg)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s: %v, want an error with %q", c.name, err, c.want)
			} else {
				t.Logf("%s: %v", c.name, err)
			}
		}
		t.Setenv("AWS_ACCESS_KEY_ID", "")
		t.Setenv("AWS_SECRET_ACCESS_KEY", "")
		if _, err := NewS3(ctx, S3Config{Endpoint: srv.Endpoint, Bucket: "baton-s3"}); err == nil || !strings.Contains(err.Error(), "AWS_ACCESS_KEY_ID") {
			t.Errorf("no credentials: %v", err)
		}
	})

	t.Run("credentials from the environment", func(t *testing.T) {
		t.Setenv("AWS_ACCESS_KEY_ID", s3test.AccessKey)
		t.Setenv("AWS_SECRET_ACCESS_KEY", s3test.SecretKey)
		t.Setenv("AWS_SESSION_TOKEN", "")
		st, err := NewS3(ctx, S3Config{Endpoint: srv.Endpoint, Bucket: "baton-s3", Prefix: "env/", SpoolDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		put(t, st, "task1", "from env")
	})

	t.Run("layout, large upload, spool", func(t *testing.T) {
		spool := t.TempDir()
		st := openS3(t, srv, S3Config{Bucket: "baton-s3", Prefix: "pdf/", SpoolDir: spool, MaxBytes: 40 << 20})
		big := make([]byte, 20<<20) // above minio-go's 16 MiB multipart threshold
		_, _ = rand.Read(big)
		info, err := st.Put(ctx, "task-big", bytes.NewReader(big))
		if err != nil {
			t.Fatal(err)
		}
		oi, err := cli.StatObject(ctx, "baton-s3", "pdf/task-big/"+info.SHA256, minio.StatObjectOptions{})
		if err != nil || oi.Size != int64(len(big)) {
			t.Fatalf("object pdf/task-big/%s: %+v %v", info.SHA256, oi, err)
		}
		rc, size, err := st.Open(ctx, "task-big", info.SHA256)
		if err != nil || size != int64(len(big)) {
			t.Fatalf("open: %d %v", size, err)
		}
		var got bytes.Buffer
		_, err = got.ReadFrom(rc)
		rc.Close()
		if err != nil || !bytes.Equal(got.Bytes(), big) {
			t.Fatalf("read back %d bytes, %v", got.Len(), err)
		}
		small := openS3(t, srv, S3Config{Bucket: "baton-s3", Prefix: "pdf/", SpoolDir: spool, MaxBytes: 8})
		if _, err := small.Put(ctx, "task-over", bytes.NewReader(big[:9])); err == nil {
			t.Fatal("oversize put accepted")
		}
		if ents, _ := os.ReadDir(spool); len(ents) != 0 {
			t.Fatalf("spool dir not empty: %v", ents)
		}
	})

	t.Run("sweep leaves other objects", func(t *testing.T) {
		for _, k := range []string{"outside/task1/" + sum([]byte("o")), "keep/README", "keep/task1/not-a-digest"} {
			if _, err := cli.PutObject(ctx, "baton-s3", k, bytes.NewReader([]byte("o")), 1, minio.PutObjectOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		st := openS3(t, srv, S3Config{Bucket: "baton-s3", Prefix: "keep/"})
		put(t, st, "task1", "swept")
		if n, err := st.Sweep(ctx, time.Now().Add(time.Hour)); err != nil || n != 1 {
			t.Fatalf("sweep: %d %v, want 1", n, err)
		}
		if n := countObjects(t, srv, "baton-s3", "keep/"); n != 2 {
			t.Fatalf("%d objects left under keep/, want the 2 that are not artifacts", n)
		}
		if n := countObjects(t, srv, "baton-s3", "outside/"); n != 1 {
			t.Fatalf("object outside the prefix swept")
		}
	})
}
