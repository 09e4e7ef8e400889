package pdf

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	baton "github.com/batonhq/baton"
	"github.com/batonhq/baton/artifact"
	"github.com/batonhq/baton/callback"
	"github.com/batonhq/baton/controller"
	"github.com/batonhq/baton/egress"
	"github.com/batonhq/baton/httpapi"
	"github.com/batonhq/baton/ledger"
	"github.com/batonhq/baton/pdf/chromium"
	"github.com/batonhq/baton/queue"
)

// Config configures a Service. Zero values take the documented defaults.
type Config struct {
	// Controller, DB, Artifacts and Policy are required.
	Controller *controller.Controller
	DB         *ledger.DB
	Artifacts  artifact.Store
	// Policy judges dry-run probes and callbacks (the same egress code the
	// renderer's proxy uses).
	Policy *egress.Policy
	// Callbacks sends the signed callbacks; nil builds one from Policy.
	Callbacks *callback.Sender
	// Metrics; nil registers on a private registry.
	Metrics *Metrics
	// BrowserStats reports the in-process browsers (GET /api/pdf/browsers);
	// nil when this controller renders nothing itself.
	BrowserStats func() []chromium.InstanceStats
	// PublicURL returns the controller's external base URL, used in
	// resultUrl; required.
	PublicURL func() string
	// IdempotencyTTL is how long an Idempotency-Key is kept. Default 24h.
	IdempotencyTTL time.Duration
	// MaxHTMLBytes bounds inline HTML. Default 10 MiB.
	MaxHTMLBytes int64
	// MaxAttempts of a conversion (crashes and lease expiries). Default 3.
	MaxAttempts int
	// LeaseTTL of a render; the worker heartbeats within it. Default 30s.
	LeaseTTL time.Duration
	// SuggestBudget bounds the dry run done at creation when the client
	// gives no priority. Default 3s.
	SuggestBudget time.Duration
	// ProbeTimeout bounds one dry-run fetch. Default 5s.
	ProbeTimeout time.Duration
	// Advancer, when set, wakes GET /api/tasks/{id}/result?wait= as soon
	// as a render's result is applied; without it the wait polls.
	Advancer *Advancer
	// Logger; default slog.Default().
	Logger *slog.Logger
}

// Service is the PDF conversion API and its outbox consumer.
type Service struct {
	cfg   Config
	c     *controller.Controller
	store queue.Store
	db    *ledger.DB
	arts  artifact.Store
	m     *Metrics
	log   *slog.Logger
	srv   *httpapi.Server
	probe *http.Client
	send  *callback.Sender
	disp  *callback.Dispatcher

	secretMu    sync.Mutex
	adminSecret string
}

// New validates cfg and returns the service; Close stops its callback
// dispatcher.
func New(cfg Config) (*Service, error) {
	if cfg.Controller == nil || cfg.DB == nil || cfg.Artifacts == nil || cfg.Policy == nil || cfg.PublicURL == nil {
		return nil, errors.New("pdf: Controller, DB, Artifacts, Policy and PublicURL are required")
	}
	if cfg.IdempotencyTTL <= 0 {
		cfg.IdempotencyTTL = 24 * time.Hour
	}
	if cfg.MaxHTMLBytes <= 0 {
		cfg.MaxHTMLBytes = DefaultMaxHTMLBytes
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = 3
	}
	if cfg.LeaseTTL <= 0 {
		cfg.LeaseTTL = 30 * time.Second
	}
	if cfg.SuggestBudget <= 0 {
		cfg.SuggestBudget = 3 * time.Second
	}
	if cfg.ProbeTimeout <= 0 {
		cfg.ProbeTimeout = 5 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Metrics == nil {
		cfg.Metrics = NewMetrics(nil, nil)
	}
	s := &Service{cfg: cfg, c: cfg.Controller, store: cfg.Controller.Store(), db: cfg.DB, arts: cfg.Artifacts,
		m: cfg.Metrics, log: cfg.Logger.With("component", "pdf"), probe: cfg.Policy.HTTPClient(0)}
	s.send = cfg.Callbacks
	if s.send == nil {
		var err error
		s.send, err = callback.New(callback.Config{HTTP: cfg.Policy.HTTPClient(0), Record: s.RecordCallback, Logger: cfg.Logger})
		if err != nil {
			return nil, err
		}
	}
	s.disp = callback.NewDispatcher(s.send, 4, 1024)
	return s, nil
}

// Close stops the callback dispatcher; safe to call twice.
func (s *Service) Close() error { return s.disp.Stop() }

// Mount adds the service's routes to srv and its hook on GET/DELETE
// /api/tasks/{id}.
func (s *Service) Mount(srv *httpapi.Server) {
	s.srv = srv
	srv.Handle("POST /api/keys", httpapi.RoleAdmin, s.createKey)
	srv.Handle("GET /api/keys", httpapi.RoleAdmin, s.listKeys)
	srv.Handle("DELETE /api/keys/{id}", httpapi.RoleAdmin, s.revokeKey)
	srv.Handle("GET /api/pdf/browsers", httpapi.RoleAdmin, s.browsers)
	srv.Handle("GET /api/pdf/callback-secret", httpapi.RoleAdmin, s.callbackSecret)
	srv.Handle("GET /api/pdf/tasks", httpapi.RoleNone, s.listTasks)
	srv.Handle("POST /api/tasks/pdf", httpapi.RoleNone, s.create)
	srv.Handle("POST /api/tasks/validate", httpapi.RoleNone, s.validate)
	srv.Handle("GET /api/tasks/{id}/result", httpapi.RoleNone, s.result)
	srv.Handle("GET /api/tasks/{id}/callbacks", httpapi.RoleNone, s.callbacks)
	srv.Handle("POST /api/tasks/{id}/callback/replay", httpapi.RoleNone, s.replay)
	srv.SetTaskHook(s.taskHook)
}

// Relay registers the task.final consumer on the outbox relay.
func (s *Service) Relay(r *controller.Relay) {
	r.Handle(queue.OutboxKindTaskFinal, s.onFinal)
}

// principal is who calls: the admin, or one API key.
type principal struct {
	admin  bool
	keyID  string
	secret string
}

func (p principal) owns(t ledger.ConversionTask) bool { return p.admin || t.APIKeyID == p.keyID }

// scope names the principal in store keys.
func (p principal) scope() string {
	if p.admin {
		return "admin"
	}
	return "key:" + p.keyID
}

var errNoKey = baton.Errorf(baton.EUnauthorized, "missing or wrong bearer token: send Authorization: Bearer <api key>")

func bearer(r *http.Request) string {
	h := r.Header.Get("Authorization")
	if len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
		return strings.TrimSpace(h[7:])
	}
	return ""
}

func hashKey(k string) string {
	sum := sha256.Sum256([]byte(k))
	return hex.EncodeToString(sum[:])
}

// auth identifies the caller: the admin token, or an unrevoked API key.
func (s *Service) auth(r *http.Request) (principal, error) {
	if s.srv != nil && s.srv.RoleOf(r) == httpapi.RoleAdmin {
		return principal{admin: true}, nil
	}
	tok := bearer(r)
	if tok == "" || len(tok) > 256 {
		return principal{}, errNoKey
	}
	k, err := s.db.APIKeyByHash(r.Context(), hashKey(tok))
	if errors.Is(err, ledger.ErrAPIKeyNotFound) {
		return principal{}, errNoKey
	}
	if err != nil {
		return principal{}, &baton.Error{Code: baton.EUnavailable, Message: "main database unavailable", Err: err}
	}
	return principal{keyID: k.ID, secret: k.Secret}, nil
}

// owned reads a conversion the caller may see; others' tasks are not found.
func (s *Service) owned(r *http.Request) (principal, ledger.ConversionTask, error) {
	p, err := s.auth(r)
	if err != nil {
		return p, ledger.ConversionTask{}, err
	}
	id := r.PathValue("id")
	if id == "" || len(id) > 64 {
		return p, ledger.ConversionTask{}, ledger.ErrConversionTaskNotFound
	}
	t, err := s.db.GetConversionTask(r.Context(), id)
	if err != nil {
		return p, t, dbErr(err)
	}
	if !p.owns(t) {
		return p, ledger.ConversionTask{}, ledger.ErrConversionTaskNotFound
	}
	return p, t, nil
}

func dbErr(err error) error {
	var be *baton.Error
	if err == nil || errors.As(err, &be) {
		return err
	}
	return &baton.Error{Code: baton.EUnavailable, Message: "main database unavailable", Err: err}
}

// randomHex returns n random bytes, hex-encoded.
func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

// KeyCreated is the answer to POST /api/keys: key and secret shown once.
type KeyCreated struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Key       string    `json:"key"`
	Secret    string    `json:"secret"`
	CreatedAt time.Time `json:"createdAt"`
}

// KeyInfo is a key in GET /api/keys.
type KeyInfo struct {
	ID        string     `json:"id"`
	Name      string     `json:"name"`
	CreatedAt time.Time  `json:"createdAt"`
	RevokedAt *time.Time `json:"revokedAt,omitempty"`
}

// CreateKey makes an API key with its callback secret.
func (s *Service) CreateKey(ctx context.Context, name string) (KeyCreated, error) {
	name = strings.TrimSpace(name)
	if name == "" || len(name) > 100 {
		return KeyCreated{}, baton.Errorf(baton.EInvalid, "name must be 1 to 100 characters")
	}
	k := KeyCreated{ID: controller.NewID(), Name: name, Key: "bk_" + randomHex(24), Secret: "whsec_" + randomHex(24),
		CreatedAt: s.c.Now().UTC().Truncate(time.Microsecond)}
	if err := s.db.CreateAPIKey(ctx, ledger.APIKey{ID: k.ID, Name: k.Name, KeyHash: hashKey(k.Key), Secret: k.Secret, CreatedAt: k.CreatedAt}); err != nil {
		return KeyCreated{}, dbErr(err)
	}
	return k, nil
}

// ListKeys returns every key without its secret.
func (s *Service) ListKeys(ctx context.Context) ([]KeyInfo, error) {
	ks, err := s.db.ListAPIKeys(ctx)
	if err != nil {
		return nil, dbErr(err)
	}
	out := make([]KeyInfo, 0, len(ks))
	for _, k := range ks {
		ki := KeyInfo{ID: k.ID, Name: k.Name, CreatedAt: k.CreatedAt}
		if !k.RevokedAt.IsZero() {
			r := k.RevokedAt
			ki.RevokedAt = &r
		}
		out = append(out, ki)
	}
	return out, nil
}

// RevokeKey revokes a key; its tasks stay readable by the admin.
func (s *Service) RevokeKey(ctx context.Context, id string) error {
	if id == "" || len(id) > 64 {
		return ledger.ErrAPIKeyNotFound
	}
	return dbErr(s.db.RevokeAPIKey(ctx, id, s.c.Now()))
}

func (s *Service) createKey(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Name string `json:"name"`
	}
	if err := httpapi.DecodeJSON(w, r, httpapi.DefaultBodyLimit, &req); err != nil {
		return err
	}
	k, err := s.CreateKey(r.Context(), req.Name)
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	httpapi.WriteJSON(w, http.StatusCreated, k)
	return nil
}

func (s *Service) listKeys(w http.ResponseWriter, r *http.Request) error {
	ks, err := s.ListKeys(r.Context())
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, ks)
	return nil
}

func (s *Service) revokeKey(w http.ResponseWriter, r *http.Request) error {
	if err := s.RevokeKey(r.Context(), r.PathValue("id")); err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, map[string]any{"id": r.PathValue("id"), "revoked": true})
	return nil
}

func (s *Service) browsers(w http.ResponseWriter, r *http.Request) error {
	var st []chromium.InstanceStats
	if s.cfg.BrowserStats != nil {
		st = s.cfg.BrowserStats()
	}
	if st == nil {
		st = []chromium.InstanceStats{}
	}
	httpapi.WriteJSON(w, http.StatusOK, map[string]any{"browsers": st})
	return nil
}

// AdminSecret returns the secret that signs callbacks of tasks the admin
// submitted. It is created once per queue store (PutIfAbsent), so every
// controller sharing the store signs with the same one.
func (s *Service) AdminSecret(ctx context.Context) (string, error) {
	s.secretMu.Lock()
	defer s.secretMu.Unlock()
	if s.adminSecret != "" {
		return s.adminSecret, nil
	}
	v, _, err := s.store.PutIfAbsent(ctx, "pdf:admin-callback-secret", []byte("whsec_"+randomHex(24)), 100*365*24*time.Hour)
	if err != nil {
		return "", &baton.Error{Code: baton.EUnavailable, Message: "queue store unavailable", Err: err}
	}
	s.adminSecret = string(v)
	return s.adminSecret, nil
}

func (s *Service) callbackSecret(w http.ResponseWriter, r *http.Request) error {
	sec, err := s.AdminSecret(r.Context())
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	httpapi.WriteJSON(w, http.StatusOK, map[string]string{"secret": sec})
	return nil
}

// secretFor returns the callback secret of a task's owner.
func (s *Service) secretFor(ctx context.Context, t ledger.ConversionTask) (string, error) {
	if t.APIKeyID == "" {
		return s.AdminSecret(ctx)
	}
	k, err := s.db.APIKeyByID(ctx, t.APIKeyID)
	if err != nil {
		return "", dbErr(err)
	}
	return k.Secret, nil
}

// RecordCallback stores one callback attempt in the audit log (the
// Record hook of the service's callback.Sender).
func (s *Service) RecordCallback(ctx context.Context, a callback.Attempt) error {
	s.m.callbackAttempt(a.Error == "")
	_, err := s.db.AppendCallbackLog(ctx, ledger.CallbackLog{TaskID: a.TaskID, Attempt: a.Attempt, URL: a.URL, RequestBody: a.RequestBody,
		ResponseStatus: a.ResponseStatus, ResponseBody: a.ResponseBody, SentAt: a.SentAt, ResponseAt: a.ResponseAt,
		DurationMs: a.DurationMs, Error: a.Error, Replay: a.Replay})
	return err
}

func jsonOf(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("pdf: marshal %T: %v", v, err))
	}
	return b
}
