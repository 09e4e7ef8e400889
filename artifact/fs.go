// Package artifact stores the files workers upload for their tasks (a
// rendered PDF, for instance) on the controller's filesystem.
//
// Files are content-addressed per task: <dir>/<task id>/<sha256>. A worker
// that lost its lease may still finish an upload, but its file has its own
// name; only the digest named in the accepted result is ever served, so a
// stale worker can never replace its successor's output (fencing carries
// over to artifacts).
package artifact

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"time"

	baton "github.com/batonhq/baton"
)

// DefaultMaxBytes bounds one artifact.
const DefaultMaxBytes = 256 << 20

var (
	idRE  = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)
	shaRE = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

// FS is a filesystem artifact store.
type FS struct {
	Dir      string
	MaxBytes int64
}

// Info describes a stored artifact.
type Info struct {
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// NewFS creates the directory if needed.
func NewFS(dir string, maxBytes int64) (*FS, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("artifact dir: %w", err)
	}
	return &FS{Dir: dir, MaxBytes: maxBytes}, nil
}

// Put stores r for task id. It writes to a temporary file and renames it
// into place, so a crash never leaves a half-written artifact under a
// valid name. Bodies over MaxBytes fail with baton ETooLarge.
func (f *FS) Put(taskID string, r io.Reader) (Info, error) {
	if !idRE.MatchString(taskID) {
		return Info{}, baton.Errorf(baton.EInvalid, "invalid task id")
	}
	dir := filepath.Join(f.Dir, taskID)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return Info{}, fmt.Errorf("artifact dir: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".upload-*")
	if err != nil {
		return Info{}, fmt.Errorf("artifact temp: %w", err)
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(tmp, h), io.LimitReader(r, f.MaxBytes+1))
	if err != nil {
		_ = tmp.Close()
		return Info{}, fmt.Errorf("artifact write: %w", err)
	}
	if n > f.MaxBytes {
		_ = tmp.Close()
		return Info{}, baton.Errorf(baton.ETooLarge, "artifact larger than %d bytes", f.MaxBytes)
	}
	if err := tmp.Sync(); err != nil {
		_ = tmp.Close()
		return Info{}, fmt.Errorf("artifact sync: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return Info{}, fmt.Errorf("artifact close: %w", err)
	}
	sum := hex.EncodeToString(h.Sum(nil))
	if err := os.Rename(tmp.Name(), filepath.Join(dir, sum)); err != nil {
		return Info{}, fmt.Errorf("artifact rename: %w", err)
	}
	return Info{Size: n, SHA256: sum}, nil
}

// Open returns the artifact of task id with the given digest.
func (f *FS) Open(taskID, sha string) (*os.File, error) {
	if !idRE.MatchString(taskID) || !shaRE.MatchString(sha) {
		return nil, baton.Errorf(baton.ENotFound, "artifact not found")
	}
	fh, err := os.Open(filepath.Join(f.Dir, taskID, sha))
	if errors.Is(err, os.ErrNotExist) {
		return nil, baton.Errorf(baton.ENotFound, "artifact not found")
	}
	return fh, err
}

// Remove deletes every artifact of a task.
func (f *FS) Remove(taskID string) error {
	if !idRE.MatchString(taskID) {
		return nil
	}
	return os.RemoveAll(filepath.Join(f.Dir, taskID))
}

// Sweep removes the artifact directories of tasks not modified since
// before, returning how many it removed (retention).
func (f *FS) Sweep(before time.Time) (int, error) {
	ents, err := os.ReadDir(f.Dir)
	if err != nil {
		return 0, fmt.Errorf("artifact sweep: %w", err)
	}
	n := 0
	for _, e := range ents {
		info, err := e.Info()
		if err != nil || !e.IsDir() || info.ModTime().After(before) {
			continue
		}
		if os.RemoveAll(filepath.Join(f.Dir, e.Name())) == nil {
			n++
		}
	}
	return n, nil
}
