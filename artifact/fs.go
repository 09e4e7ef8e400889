package artifact

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	baton "github.com/batonhq/baton"
)

// FS is a filesystem artifact store: <Dir>/<task id>/<sha256>.
type FS struct {
	Dir      string
	MaxBytes int64
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
func (f *FS) Put(_ context.Context, taskID string, r io.Reader) (Info, error) {
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

// Open returns the artifact of task id with the given digest, and its size.
func (f *FS) Open(_ context.Context, taskID, sha string) (io.ReadCloser, int64, error) {
	if !idRE.MatchString(taskID) || !shaRE.MatchString(sha) {
		return nil, 0, baton.Errorf(baton.ENotFound, "artifact not found")
	}
	fh, err := os.Open(filepath.Join(f.Dir, taskID, sha))
	if errors.Is(err, os.ErrNotExist) {
		return nil, 0, baton.Errorf(baton.ENotFound, "artifact not found")
	}
	if err != nil {
		return nil, 0, err
	}
	st, err := fh.Stat()
	if err != nil {
		_ = fh.Close()
		return nil, 0, err
	}
	return fh, st.Size(), nil
}

// MaxSize implements Store: the largest artifact Put accepts.
func (f *FS) MaxSize() int64 { return f.MaxBytes }

// Remove deletes every artifact of a task.
func (f *FS) Remove(taskID string) error {
	if !idRE.MatchString(taskID) {
		return nil
	}
	return os.RemoveAll(filepath.Join(f.Dir, taskID))
}

// Sweep removes the artifact directories of tasks not modified since
// before, returning how many it removed (retention).
func (f *FS) Sweep(_ context.Context, before time.Time) (int, error) {
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

var _ Store = (*FS)(nil)
