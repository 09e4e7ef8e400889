package artifact

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	baton "github.com/batonhq/baton"
)

// S3Config configures an S3 store.
type S3Config struct {
	// Endpoint is the URL of the S3-compatible service, http:// or
	// https:// with no path, e.g. https://s3.eu-west-1.amazonaws.com or
	// http://127.0.0.1:8333; default https://s3.amazonaws.com.
	Endpoint string
	// Bucket must exist; required.
	Bucket string
	// Prefix is put before every key (<prefix><task id>/<sha256>), e.g.
	// "artifacts/"; may be empty.
	Prefix string
	// Region; default us-east-1.
	Region string
	// AccessKeyID, SecretAccessKey and SessionToken are the credentials;
	// when AccessKeyID is empty they are read from the environment
	// variables AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and
	// AWS_SESSION_TOKEN.
	AccessKeyID, SecretAccessKey, SessionToken string
	// MaxBytes bounds one artifact; default DefaultMaxBytes.
	MaxBytes int64
	// SpoolDir holds an upload while its digest is computed (the object's
	// name); default os.TempDir().
	SpoolDir string
}

// S3 is an artifact store in a bucket of an S3-compatible service:
// <prefix><task id>/<sha256>.
type S3 struct {
	c   *minio.Client
	cfg S3Config
}

// NewS3 connects to the service and checks that the bucket exists and the
// credentials are accepted (an error says which is wrong).
func NewS3(ctx context.Context, cfg S3Config) (*S3, error) {
	if cfg.Bucket == "" {
		return nil, errors.New("s3: a bucket is required")
	}
	if cfg.Endpoint == "" {
		cfg.Endpoint = "https://s3.amazonaws.com"
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = DefaultMaxBytes
	}
	if cfg.SpoolDir == "" {
		cfg.SpoolDir = os.TempDir()
	}
	if err := os.MkdirAll(cfg.SpoolDir, 0o750); err != nil {
		return nil, fmt.Errorf("s3: spool dir: %w", err)
	}
	if cfg.AccessKeyID == "" {
		cfg.AccessKeyID = os.Getenv("AWS_ACCESS_KEY_ID")
		cfg.SecretAccessKey = os.Getenv("AWS_SECRET_ACCESS_KEY")
		cfg.SessionToken = os.Getenv("AWS_SESSION_TOKEN")
	}
	if cfg.AccessKeyID == "" || cfg.SecretAccessKey == "" {
		return nil, errors.New("s3: no credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")
	}
	u, err := url.Parse(cfg.Endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || strings.Trim(u.Path, "/") != "" || u.RawQuery != "" {
		return nil, fmt.Errorf("s3: endpoint %q: want http://host[:port] or https://host[:port]", cfg.Endpoint)
	}
	c, err := minio.New(u.Host, &minio.Options{
		Creds:  credentials.NewStaticV4(cfg.AccessKeyID, cfg.SecretAccessKey, cfg.SessionToken),
		Secure: u.Scheme == "https",
		Region: cfg.Region,
	})
	if err != nil {
		return nil, fmt.Errorf("s3: %w", err)
	}
	ok, err := c.BucketExists(ctx, cfg.Bucket)
	if err != nil {
		if minio.ToErrorResponse(err).StatusCode == http.StatusForbidden {
			// A HEAD answer has no body: a GET tells refused credentials
			// from a refused bucket.
			lctx, cancel := context.WithCancel(ctx)
			if o, ok := <-c.ListObjects(lctx, cfg.Bucket, minio.ListObjectsOptions{MaxKeys: 1}); ok && o.Err != nil {
				err = o.Err
			}
			cancel()
		}
		return nil, fmt.Errorf("s3: bucket %q at %s: %w", cfg.Bucket, cfg.Endpoint, describe(err))
	}
	if !ok {
		return nil, fmt.Errorf("s3: bucket %q does not exist at %s: create it first", cfg.Bucket, cfg.Endpoint)
	}
	return &S3{c: c, cfg: cfg}, nil
}

// describe names the usual causes of a refused request.
func describe(err error) error {
	resp := minio.ToErrorResponse(err)
	switch {
	case resp.Code == "InvalidAccessKeyId" || resp.Code == "SignatureDoesNotMatch" || resp.StatusCode == http.StatusUnauthorized:
		return fmt.Errorf("credentials refused (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY): %w", err)
	case resp.Code == "AccessDenied" || resp.StatusCode == http.StatusForbidden:
		return fmt.Errorf("access denied (wrong credentials, or no permission on the bucket): %w", err)
	}
	return err
}

func (s *S3) key(taskID, sha string) string { return s.cfg.Prefix + taskID + "/" + sha }

// MaxSize implements Store: the largest artifact Put accepts.
func (s *S3) MaxSize() int64 { return s.cfg.MaxBytes }

// Put stores r for task id. The body is spooled to a temporary file while
// its SHA-256 is computed (the object's name), then uploaded with its
// size; bodies over MaxBytes fail with baton ETooLarge and upload nothing.
func (s *S3) Put(ctx context.Context, taskID string, r io.Reader) (Info, error) {
	if !idRE.MatchString(taskID) {
		return Info{}, baton.Errorf(baton.EInvalid, "invalid task id")
	}
	tmp, err := os.CreateTemp(s.cfg.SpoolDir, ".s3-upload-*")
	if err != nil {
		return Info{}, fmt.Errorf("artifact temp: %w", err)
	}
	defer func() { _ = tmp.Close(); _ = os.Remove(tmp.Name()) }()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(tmp, h), io.LimitReader(r, s.cfg.MaxBytes+1))
	if err != nil {
		return Info{}, fmt.Errorf("artifact write: %w", err)
	}
	if n > s.cfg.MaxBytes {
		return Info{}, baton.Errorf(baton.ETooLarge, "artifact larger than %d bytes", s.cfg.MaxBytes)
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		return Info{}, fmt.Errorf("artifact rewind: %w", err)
	}
	sum := hex.EncodeToString(h.Sum(nil))
	if _, err := s.c.PutObject(ctx, s.cfg.Bucket, s.key(taskID, sum), tmp, n, minio.PutObjectOptions{}); err != nil {
		return Info{}, fmt.Errorf("artifact upload to s3 bucket %q: %w", s.cfg.Bucket, describe(err))
	}
	return Info{Size: n, SHA256: sum}, nil
}

// Open returns the artifact of task id with the given digest, and its size.
func (s *S3) Open(ctx context.Context, taskID, sha string) (io.ReadCloser, int64, error) {
	if !idRE.MatchString(taskID) || !shaRE.MatchString(sha) {
		return nil, 0, baton.Errorf(baton.ENotFound, "artifact not found")
	}
	obj, err := s.c.GetObject(ctx, s.cfg.Bucket, s.key(taskID, sha), minio.GetObjectOptions{})
	if err != nil {
		return nil, 0, fmt.Errorf("artifact from s3 bucket %q: %w", s.cfg.Bucket, describe(err))
	}
	st, err := obj.Stat()
	if err != nil {
		_ = obj.Close()
		if minio.ToErrorResponse(err).Code == minio.NoSuchKey {
			return nil, 0, baton.Errorf(baton.ENotFound, "artifact not found")
		}
		return nil, 0, fmt.Errorf("artifact from s3 bucket %q: %w", s.cfg.Bucket, describe(err))
	}
	return obj, st.Size, nil
}

// Sweep removes the artifacts stored before the cutoff (their
// LastModified), in batches, and returns how many tasks it removed
// artifacts of. Objects under the prefix that are not named like
// artifacts are left alone.
func (s *S3) Sweep(ctx context.Context, before time.Time) (int, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var listErr error
	old := func(yield func(minio.ObjectInfo) bool) {
		for o := range s.c.ListObjects(ctx, s.cfg.Bucket, minio.ListObjectsOptions{Prefix: s.cfg.Prefix, Recursive: true}) {
			if o.Err != nil {
				listErr = o.Err
				return
			}
			if _, ok := s.taskOf(o.Key); !ok || !o.LastModified.Before(before) {
				continue
			}
			if !yield(o) {
				return
			}
		}
	}
	results, err := s.c.RemoveObjectsWithIter(ctx, s.cfg.Bucket, old, minio.RemoveObjectsOptions{})
	if err != nil {
		return 0, fmt.Errorf("artifact sweep: %w", err)
	}
	tasks := map[string]bool{}
	var rmErr error
	for res := range results {
		if res.Err != nil {
			if rmErr == nil {
				rmErr = fmt.Errorf("artifact sweep: remove %s: %w", res.ObjectName, describe(res.Err))
			}
			continue
		}
		if id, ok := s.taskOf(res.ObjectName); ok {
			tasks[id] = true
		}
	}
	if listErr != nil {
		return len(tasks), fmt.Errorf("artifact sweep: list s3 bucket %q: %w", s.cfg.Bucket, describe(listErr))
	}
	return len(tasks), rmErr
}

// taskOf returns the task id of an artifact's key, and whether the key is
// one (<prefix><task id>/<sha256>).
func (s *S3) taskOf(key string) (string, bool) {
	rest, ok := strings.CutPrefix(key, s.cfg.Prefix)
	if !ok {
		return "", false
	}
	id, sha, ok := strings.Cut(rest, "/")
	if !ok || !idRE.MatchString(id) || !shaRE.MatchString(sha) {
		return "", false
	}
	return id, true
}

var _ Store = (*S3)(nil)
