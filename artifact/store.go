// Package artifact stores the files workers upload for their tasks (a
// rendered PDF, for instance): on the controller's filesystem (FS) or in an
// S3-compatible object store (S3), behind one interface (Store).
//
// Files are content-addressed per task: <task id>/<sha256>. A worker that
// lost its lease may still finish an upload, but its file has its own
// name; only the digest named in the accepted result is ever served, so a
// stale worker can never replace its successor's output (fencing carries
// over to artifacts).
package artifact

import (
	"context"
	"io"
	"regexp"
	"time"
)

// DefaultMaxBytes bounds one artifact.
const DefaultMaxBytes = 256 << 20

var (
	idRE  = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)
	shaRE = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

// Store is an artifact store. FS and S3 implement it with the same
// behaviour:
//
//   - Put stores r for a task under the SHA-256 of its content and returns
//     its size and digest; an invalid task id is baton EInvalid, a body over
//     MaxSize is baton ETooLarge and stores nothing. Putting the same
//     content twice is harmless; different content never replaces it.
//   - Open returns the artifact of a task with a digest and its size; an
//     invalid id or digest, or a missing artifact, is baton ENotFound.
//   - Sweep removes artifacts stored before the cutoff (retention) and
//     returns how many tasks it removed artifacts of.
//   - MaxSize is the largest artifact Put accepts, in bytes.
type Store interface {
	Put(ctx context.Context, taskID string, r io.Reader) (Info, error)
	Open(ctx context.Context, taskID, sha string) (io.ReadCloser, int64, error)
	Sweep(ctx context.Context, before time.Time) (int, error)
	MaxSize() int64
}

// Info describes a stored artifact.
type Info struct {
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}
