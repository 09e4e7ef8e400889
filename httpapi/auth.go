package httpapi

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	baton "github.com/batonhq/baton"
)

// Tokens are the controller's bearer tokens.
type Tokens struct {
	// Admin may call every route.
	Admin string
	// Worker may call the worker routes (/api/worker/...).
	Worker string
}

// tokenEqual compares in constant time, also across different lengths.
func tokenEqual(got, want string) bool {
	if want == "" {
		return false
	}
	g := sha256.Sum256([]byte(got))
	w := sha256.Sum256([]byte(want))
	return subtle.ConstantTimeCompare(g[:], w[:]) == 1
}

func bearer(r *http.Request) string {
	h := r.Header.Get("Authorization")
	if len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
		return strings.TrimSpace(h[7:])
	}
	return ""
}

// Role is what a request's credentials allow.
type Role int

// Roles, from least to most.
const (
	RoleNone Role = iota
	RoleWorker
	RoleAdmin
)

func (t Tokens) role(r *http.Request) Role {
	tok := bearer(r)
	if tok == "" {
		return RoleNone
	}
	if tokenEqual(tok, t.Admin) {
		return RoleAdmin
	}
	if tokenEqual(tok, t.Worker) {
		return RoleWorker
	}
	return RoleNone
}

var errUnauthorized = baton.Errorf(baton.EUnauthorized, "missing or wrong bearer token")

// NewToken returns a random 256-bit token, hex-encoded.
func NewToken() string {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b[:])
}

// LoadOrCreateTokens returns the given tokens, filling each empty one from
// <dataDir>/<name>.token, generating and storing it (mode 0600) on first
// start. created lists the tokens that were generated now.
func LoadOrCreateTokens(dataDir string, t Tokens) (Tokens, []string, error) {
	var created []string
	load := func(name string, v *string) error {
		if *v != "" {
			return nil
		}
		p := filepath.Join(dataDir, name+".token")
		b, err := os.ReadFile(p)
		if err == nil {
			*v = strings.TrimSpace(string(b))
			if *v == "" {
				return fmt.Errorf("%s is empty: delete it to generate a new token, or pass --%s-token", p, name)
			}
			return nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("read %s: %w", p, err)
		}
		if err := os.MkdirAll(dataDir, 0o750); err != nil {
			return fmt.Errorf("create data dir %s (--data-dir): %w", dataDir, err)
		}
		*v = NewToken()
		if err := os.WriteFile(p, []byte(*v+"\n"), 0o600); err != nil {
			return fmt.Errorf("write %s: %w", p, err)
		}
		created = append(created, name)
		return nil
	}
	if err := load("admin", &t.Admin); err != nil {
		return t, nil, err
	}
	if err := load("worker", &t.Worker); err != nil {
		return t, nil, err
	}
	if tokenEqual(t.Admin, t.Worker) {
		return t, nil, errors.New("the admin and worker tokens must differ (--admin-token, --worker-token)")
	}
	return t, created, nil
}
