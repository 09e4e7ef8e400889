package admin

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	baton "github.com/batonhq/baton"
)

// PDFBackend is what the PDF pages need from the HTML→PDF service (SPEC
// §6). The service implements it on its own store; the admin token's view:
// every client's tasks. Errors should be *baton.Error (ENotFound for an
// unknown id, EInvalid for bad input) so the pages show the right message.
type PDFBackend interface {
	// ListTasks returns a page of tasks, newest first, and the cursor of the
	// next page ("" after the last).
	ListTasks(ctx context.Context, f PDFTaskFilter) (page []PDFTask, next string, err error)
	// Task returns one task (GET /api/tasks/{id} with its options).
	Task(ctx context.Context, id string) (PDFTask, error)
	// Result opens a completed task's PDF (GET /api/tasks/{id}/result).
	Result(ctx context.Context, id string) (io.ReadCloser, error)
	// Callbacks returns the task's callback attempts, oldest first (GET
	// /api/tasks/{id}/callbacks).
	Callbacks(ctx context.Context, id string) ([]CallbackAttempt, error)
	// ReplayCallback resends the task's last callback payload (POST
	// /api/tasks/{id}/callback/replay), logs it and returns the outcome.
	ReplayCallback(ctx context.Context, id string, req ReplayRequest) (ReplayOutcome, error)
	// CreateKey makes an API key (POST /api/keys); the key and secret are
	// returned this once.
	CreateKey(ctx context.Context, name string) (NewAPIKey, error)
	// ListKeys returns every key, revoked ones included, without secrets.
	ListKeys(ctx context.Context) ([]APIKeyInfo, error)
	// RevokeKey revokes a key (DELETE /api/keys/{id}).
	RevokeKey(ctx context.Context, id string) error
}

// PDFTaskFilter selects tasks; zero fields select everything.
type PDFTaskFilter struct {
	Status baton.State
	Queue  string // pdf.fast, pdf.normal, pdf.slow
	// KeyID keeps one client's tasks.
	KeyID string
	// IDPrefix keeps tasks whose id starts with it.
	IDPrefix string
	Limit    int
	Cursor   string
}

// PDFTask is a conversion task as the admin sees it.
type PDFTask struct {
	ID          string
	Status      baton.State
	Queue       string
	KeyID       string // "" for tasks the admin submitted
	KeyName     string
	SourceType  string // url or html
	Source      string // the URL, or the start of the HTML
	Options     json.RawMessage
	CallbackURL string
	Attempts    int
	Error       string
	ResultSize  int64 // bytes of the PDF; 0 while there is none
	CreatedAt   time.Time
	StartedAt   time.Time // zero until claimed
	FinishedAt  time.Time // zero until done
}

// CallbackAttempt is one logged callback (conversion_callback_logs).
type CallbackAttempt struct {
	Attempt        int
	URL            string
	RequestBody    string
	ResponseStatus int // 0 when no answer came
	ResponseBody   string
	SentAt         time.Time
	DurationMs     int64
	Error          string
	Replay         bool
}

// ReplayRequest is the body of a replay.
type ReplayRequest struct {
	Attempts          int     `json:"attempts"`
	BackoffMultiplier float64 `json:"backoffMultiplier"`
}

// ReplayOutcome is what a replay did.
type ReplayOutcome struct {
	Delivered      bool
	Attempts       int
	ResponseStatus int
	Error          string
}

// NewAPIKey is a key just created; Key and Secret are never shown again.
type NewAPIKey struct {
	ID        string
	Name      string
	Key       string
	Secret    string
	CreatedAt time.Time
}

// APIKeyInfo is a key in the list.
type APIKeyInfo struct {
	ID        string
	Name      string
	CreatedAt time.Time
	RevokedAt time.Time // zero while valid
}

var pdfStatuses = []baton.State{baton.StatePending, baton.StateProcessing, baton.StateCompleted, baton.StateFailed,
	baton.StateTimeout, baton.StateCancelled, baton.StateStalled}

var pdfQueues = []string{"pdf.fast", "pdf.normal", "pdf.slow"}

var errNoPDF = baton.Errorf(baton.EUnavailable, "the PDF service is not connected to this controller")

type pdfTasksData struct {
	*base
	Connected        bool
	Status, Queue, Q string
	Statuses         []baton.State
	Queues           []string
	Tasks            []PDFTask
	NextURL          string
	KeyID            string
}

func (u *UI) pdfTasksPage(w http.ResponseWriter, r *http.Request, ss *session) error {
	b := u.base(r, ss, "pdf", "pdfTasks")
	q := r.URL.Query()
	d := &pdfTasksData{base: b, Connected: u.cfg.PDF != nil, Status: q.Get("status"), Queue: q.Get("queue"),
		Q: strings.TrimSpace(q.Get("q")), KeyID: q.Get("key"), Statuses: pdfStatuses, Queues: pdfQueues}
	if u.cfg.PDF != nil {
		st := baton.State(d.Status)
		if st != "" && !st.Valid() {
			return baton.Errorf(baton.EInvalid, "unknown status %q", d.Status)
		}
		page, next, err := u.cfg.PDF.ListTasks(r.Context(), PDFTaskFilter{Status: st, Queue: d.Queue, KeyID: d.KeyID,
			IDPrefix: d.Q, Limit: 50, Cursor: q.Get("cursor")})
		if err != nil {
			return err
		}
		d.Tasks = page
		if next != "" {
			v := url.Values{"status": {d.Status}, "queue": {d.Queue}, "q": {d.Q}, "key": {d.KeyID}, "cursor": {next}}
			d.NextURL = "/ui/pdf?" + v.Encode()
		}
	}
	u.render(w, r, http.StatusOK, "pdf_tasks", d)
	return nil
}

type pdfTaskData struct {
	*base
	Task      PDFTask
	Options   string
	Wait      string
	Render    string
	Total     string
	Callbacks []CallbackAttempt
}

func (u *UI) pdfTaskPage(w http.ResponseWriter, r *http.Request, ss *session) error {
	if u.cfg.PDF == nil {
		return errNoPDF
	}
	id := r.PathValue("id")
	t, err := u.cfg.PDF.Task(r.Context(), id)
	if err != nil {
		return err
	}
	cbs, err := u.cfg.PDF.Callbacks(r.Context(), id)
	if err != nil {
		return err
	}
	d := &pdfTaskData{base: u.base(r, ss, "pdf", "pdfTask"), Task: t, Options: prettyJSON(t.Options), Callbacks: cbs}
	if !t.StartedAt.IsZero() {
		d.Wait = humanMs(t.StartedAt.Sub(t.CreatedAt).Milliseconds())
		if !t.FinishedAt.IsZero() {
			d.Render = humanMs(t.FinishedAt.Sub(t.StartedAt).Milliseconds())
		}
	}
	if !t.FinishedAt.IsZero() {
		d.Total = humanMs(t.FinishedAt.Sub(t.CreatedAt).Milliseconds())
	}
	u.render(w, r, http.StatusOK, "pdf_task", d)
	return nil
}

// pdfResult streams a completed task's PDF to the signed-in operator (the
// API's result route wants a bearer token, which a browser link cannot
// carry).
func (u *UI) pdfResult(w http.ResponseWriter, r *http.Request, ss *session) error {
	if u.cfg.PDF == nil {
		return errNoPDF
	}
	id := r.PathValue("id")
	rc, err := u.cfg.PDF.Result(r.Context(), id)
	if err != nil {
		return err
	}
	defer rc.Close()
	w.Header().Set("Content-Type", "application/pdf")
	w.Header().Set("Content-Disposition", `attachment; filename="`+safeFileName(id)+`.pdf"`)
	_, err = io.Copy(w, rc)
	if err != nil {
		u.log.Warn("stream pdf", "task", id, "err", err)
	}
	return nil
}

func safeFileName(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, s)
}

func (u *UI) replay(w http.ResponseWriter, r *http.Request, ss *session) error {
	if u.cfg.PDF == nil {
		return errNoPDF
	}
	id := r.PathValue("id")
	req := ReplayRequest{Attempts: 1, BackoffMultiplier: 2}
	if v := r.PostFormValue("attempts"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 10 {
			return baton.Errorf(baton.EInvalid, "attempts must be between 1 and 10")
		}
		req.Attempts = n
	}
	if v := r.PostFormValue("backoffMultiplier"); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 1 || f > 10 {
			return baton.Errorf(baton.EInvalid, "backoffMultiplier must be between 1 and 10")
		}
		req.BackoffMultiplier = f
	}
	out, err := u.cfg.PDF.ReplayCallback(r.Context(), id, req)
	if err != nil {
		return err
	}
	key, arg := "flashReplayOK", strconv.Itoa(out.ResponseStatus)
	if !out.Delivered {
		key, arg = "flashReplayFailed", out.Error
		if arg == "" {
			arg = "HTTP " + strconv.Itoa(out.ResponseStatus)
		}
	}
	u.redirect(w, r, ss, "/ui/pdf/"+url.PathEscape(id), key, arg)
	return nil
}

type keysData struct {
	*base
	Connected bool
	Keys      []APIKeyInfo
	New       *NewAPIKey
	Name      string
}

func (u *UI) keysPage(w http.ResponseWriter, r *http.Request, ss *session) error {
	return u.showKeys(w, r, ss, nil)
}

func (u *UI) showKeys(w http.ResponseWriter, r *http.Request, ss *session, created *NewAPIKey) error {
	d := &keysData{base: u.base(r, ss, "keys", "apiKeys"), Connected: u.cfg.PDF != nil, New: created}
	if u.cfg.PDF != nil {
		ks, err := u.cfg.PDF.ListKeys(r.Context())
		if err != nil {
			return err
		}
		d.Keys = ks
	}
	u.render(w, r, http.StatusOK, "keys", d)
	return nil
}

// createKey shows the new key and its secret in the answer to the POST
// itself (no redirect, no-store): they are never shown again.
func (u *UI) createKey(w http.ResponseWriter, r *http.Request, ss *session) error {
	if u.cfg.PDF == nil {
		return errNoPDF
	}
	name := strings.TrimSpace(r.PostFormValue("name"))
	if name == "" || len(name) > 100 {
		return baton.Errorf(baton.EInvalid, "a key needs a name of 1 to 100 characters")
	}
	k, err := u.cfg.PDF.CreateKey(r.Context(), name)
	if err != nil {
		return err
	}
	return u.showKeys(w, r, ss, &k)
}

func (u *UI) revokeKey(w http.ResponseWriter, r *http.Request, ss *session) error {
	if u.cfg.PDF == nil {
		return errNoPDF
	}
	id := r.PathValue("id")
	if err := u.cfg.PDF.RevokeKey(r.Context(), id); err != nil {
		return err
	}
	u.redirect(w, r, ss, "/ui/keys", "flashRevoked", id)
	return nil
}
