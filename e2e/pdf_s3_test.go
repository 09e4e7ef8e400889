package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/batonhq/baton/artifact/s3test"
)

// TestPDFResultInS3 runs baton serve with the S3 artifact store (--s3-*)
// against a real S3 server (SeaweedFS): the rendered PDF is stored in the
// bucket under <prefix><task>/<sha256>, nothing under the data directory,
// and the client downloads it through the API. A missing bucket stops the
// controller at start with a message that says so.
func TestPDFResultInS3(t *testing.T) {
	srv := s3test.Start(t)
	srv.MakeBucket(t, "baton-e2e")
	t.Setenv("AWS_ACCESS_KEY_ID", s3test.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", s3test.SecretKey)

	t.Run("missing bucket", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, batonBin, "serve", "--addr", "127.0.0.1:0", "--data-dir", t.TempDir(), "--workers", "0",
			"--s3-endpoint", srv.Endpoint, "--s3-bucket", "no-such-bucket").CombinedOutput()
		if err == nil || !strings.Contains(string(out), `bucket "no-such-bucket" does not exist`) {
			t.Fatalf("serve with a missing bucket: %v\n%s", err, out)
		}
	})

	data := t.TempDir()
	ctrl := pdfServe(t, "--data-dir", data, "--s3-endpoint", srv.Endpoint, "--s3-bucket", "baton-e2e", "--s3-prefix", "pdfs/")
	key, _ := newKey(t, ctrl.url, "s3 client")
	id := submit(t, ctrl.url, key, map[string]any{
		"source": map[string]any{"type": "html", "content": `<!doctype html><meta charset="utf-8"><h1>S3-MARK 对象存储</h1>`}})
	if v := waitEnd(t, ctrl.url, key, id); v.Status != "completed" {
		t.Fatalf("task %+v\n%s", v, ctrl.output())
	}
	pdf := download(t, ctrl.url, key, id)
	if text := pdfText(t, pdf); !strings.Contains(text, "S3-MARK") || !strings.Contains(text, "对象存储") {
		t.Fatalf("downloaded PDF text %q", text)
	}
	st, b := call(t, ctrl.url, key, "GET", "/api/tasks/"+id, nil)
	var v struct {
		SHA256 string `json:"sha256"`
		Size   int64  `json:"size"`
	}
	if st != 200 || json.Unmarshal(b, &v) != nil {
		t.Fatalf("task: %d %s", st, b)
	}
	h := sha256.Sum256(pdf)
	if v.SHA256 != hex.EncodeToString(h[:]) || v.Size != int64(len(pdf)) {
		t.Fatalf("task says sha256 %s size %d; downloaded %d bytes with sha256 %x", v.SHA256, v.Size, len(pdf), h)
	}

	var keys []string
	for o := range srv.Client(t).ListObjects(context.Background(), "baton-e2e", minio.ListObjectsOptions{Prefix: "pdfs/", Recursive: true}) {
		if o.Err != nil {
			t.Fatal(o.Err)
		}
		keys = append(keys, o.Key)
		if o.Key == "pdfs/"+id+"/"+v.SHA256 && o.Size != int64(len(pdf)) {
			t.Errorf("object %s is %d bytes, the PDF %d", o.Key, o.Size, len(pdf))
		}
	}
	if len(keys) != 1 || keys[0] != "pdfs/"+id+"/"+v.SHA256 {
		t.Fatalf("objects in the bucket: %v, want pdfs/%s/%s", keys, id, v.SHA256)
	}
	if _, err := os.Stat(filepath.Join(data, "artifacts")); !os.IsNotExist(err) {
		t.Fatalf("the data directory has an artifacts directory with S3 configured: %v", err)
	}
}
