// Package httpapi is Baton's HTTP interface: the worker protocol (SPEC §4),
// the generic task, queue and worker routes, health and metrics, and a Go
// client of the same API. It maps application errors to HTTP statuses in
// one place (errors.go) and decodes every body strictly (decode.go).
package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	baton "github.com/batonhq/baton"
	"github.com/batonhq/baton/artifact"
	"github.com/batonhq/baton/controller"
)

// Config configures a Server.
type Config struct {
	Controller *controller.Controller
	Tokens     Tokens
	// Artifacts stores worker uploads; nil disables the artifact route.
	Artifacts artifact.Store
	// Gatherer serves /metrics; nil disables it.
	Gatherer prometheus.Gatherer
	// Ready reports whether every dependency is reachable (/readyz); the
	// queue store is always checked.
	Ready func(ctx context.Context) error
	// Logger; default slog.Default().
	Logger *slog.Logger
}

// Server serves the API.
type Server struct {
	c      *controller.Controller
	tokens Tokens
	arts   artifact.Store
	ready  func(ctx context.Context) error
	log    *slog.Logger
	mux    *http.ServeMux
	// taskHook is the TaskHook of GET/DELETE /api/tasks/{id}, if any.
	taskHook atomic.Pointer[TaskHook]
}

// New builds the server and its routes.
func New(cfg Config) *Server {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	s := &Server{
		c: cfg.Controller, tokens: cfg.Tokens, arts: cfg.Artifacts, ready: cfg.Ready,
		log: cfg.Logger.With("component", "http"), mux: http.NewServeMux(),
	}
	s.routes()
	if cfg.Gatherer != nil {
		s.mux.Handle("GET /metrics", promhttp.HandlerFor(cfg.Gatherer, promhttp.HandlerOpts{}))
	}
	return s
}

// HandlerFunc is a handler that returns an error to be answered as JSON.
type HandlerFunc func(w http.ResponseWriter, r *http.Request) error

// Handle mounts h on pattern (ServeMux syntax) for callers with at least
// role; other packages (pipeline, PDF, admin UI) add their routes with it.
func (s *Server) Handle(pattern string, role Role, h HandlerFunc) {
	s.mux.Handle(pattern, s.wrap(role, h))
}

// HandleRaw mounts a plain handler with no authentication (the admin UI
// does its own).
func (s *Server) HandleRaw(pattern string, h http.Handler) { s.mux.Handle(pattern, h) }

// Log returns the server's logger.
func (s *Server) Log() *slog.Logger { return s.log }

// Tokens returns the server's tokens.
func (s *Server) Tokens() Tokens { return s.tokens }

// RoleOf returns what a request's bearer token allows.
func (s *Server) RoleOf(r *http.Request) Role { return s.tokens.role(r) }

// WriteJSON writes v as JSON with status (for handlers mounted by other packages).
func WriteJSON(w http.ResponseWriter, status int, v any) { writeJSON(w, status, v) }

// DecodeJSON strictly decodes a request body of at most limit bytes.
func DecodeJSON(w http.ResponseWriter, r *http.Request, limit int64, v any) error {
	return decodeJSON(w, r, limit, v)
}

func (s *Server) wrap(role Role, h HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := s.authorize(w, r, role); err != nil {
			writeError(w, r, s.log, err)
			return
		}
		if err := h(w, r); err != nil {
			writeError(w, r, s.log, err)
		}
	})
}

// authorize refuses a request whose token does not reach role.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request, role Role) error {
	if role == RoleNone || s.tokens.role(r) >= role {
		return nil
	}
	if s.tokens.role(r) == RoleNone {
		w.Header().Set("WWW-Authenticate", `Bearer realm="baton"`)
		return errUnauthorized
	}
	return baton.Errorf(baton.EForbidden, "this token may not call %s", r.URL.Path)
}

// TaskHook lets a service answer GET and DELETE /api/tasks/{id} for its own
// tasks and callers (the PDF service: its API keys and its fields). It runs
// before the generic route's authorization with the caller's role and
// returns handled=false to leave the request to the generic, admin-only
// route.
type TaskHook func(w http.ResponseWriter, r *http.Request, role Role) (handled bool, err error)

// SetTaskHook installs h (nil removes it). Call it while assembling the
// server, before it serves.
func (s *Server) SetTaskHook(h TaskHook) { s.taskHook.Store(&h) }

// hooked runs the task hook, then h for callers with at least role.
func (s *Server) hooked(role Role, h HandlerFunc) HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		if hp := s.taskHook.Load(); hp != nil && *hp != nil {
			if handled, err := (*hp)(w, r, s.tokens.role(r)); handled {
				return err
			}
		}
		if err := s.authorize(w, r, role); err != nil {
			return err
		}
		return h(w, r)
	}
}

// ServeHTTP implements http.Handler, turning panics into a logged 500 with
// a JSON body (never a stack trace to the client).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.log.Error("panic in handler", "path", r.URL.Path, "panic", v, "stack", string(debug.Stack()))
			writeError(w, r, s.log, baton.Errorf(baton.EInternal, "internal error"))
		}
	}()
	s.mux.ServeHTTP(w, r)
}

func (s *Server) routes() {
	s.Handle("POST /api/worker/claim", RoleWorker, s.claim)
	s.Handle("POST /api/worker/tasks/{id}/heartbeat", RoleWorker, s.heartbeat)
	s.Handle("POST /api/worker/tasks/{id}/result", RoleWorker, s.result)
	s.Handle("POST /api/worker/tasks/{id}/release", RoleWorker, s.release)
	s.Handle("POST /api/worker/results", RoleWorker, s.results)
	s.Handle("PUT /api/worker/tasks/{id}/artifact", RoleWorker, s.artifact)

	s.Handle("POST /api/tasks", RoleAdmin, s.createTask)
	s.Handle("POST /api/tasks/batch", RoleAdmin, s.createTasks)
	s.Handle("GET /api/tasks/{id}", RoleNone, s.hooked(RoleAdmin, s.getTask))
	s.Handle("DELETE /api/tasks/{id}", RoleNone, s.hooked(RoleAdmin, s.cancelTask))
	s.Handle("GET /api/queues", RoleAdmin, s.listQueues)
	s.Handle("PUT /api/queues/{name}", RoleAdmin, s.putQueue)
	s.Handle("POST /api/queues/{name}/pause", RoleAdmin, s.pauseQueue(true))
	s.Handle("POST /api/queues/{name}/resume", RoleAdmin, s.pauseQueue(false))
	s.Handle("GET /api/workers", RoleAdmin, s.listWorkers)

	s.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	s.Handle("GET /readyz", RoleNone, s.readyz)
	s.Handle("/api/", RoleNone, func(w http.ResponseWriter, r *http.Request) error {
		return baton.Errorf(baton.ENotFound, "no route %s %s", r.Method, r.URL.Path)
	})
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
	defer cancel()
	checks := map[string]string{}
	ok := true
	if err := s.c.Store().Ping(ctx); err != nil {
		checks["store"] = err.Error()
		ok = false
	} else {
		checks["store"] = "ok"
	}
	if s.ready != nil {
		if err := s.ready(ctx); err != nil {
			checks["dependencies"] = err.Error()
			ok = false
		} else {
			checks["dependencies"] = "ok"
		}
	}
	status := http.StatusOK
	if !ok {
		status = http.StatusServiceUnavailable
	}
	writeJSON(w, status, map[string]any{"ready": ok, "checks": checks})
	return nil
}
