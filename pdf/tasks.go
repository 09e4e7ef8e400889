package pdf

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	baton "github.com/batonhq/baton"
	"github.com/batonhq/baton/callback"
	"github.com/batonhq/baton/httpapi"
	"github.com/batonhq/baton/ledger"
	"github.com/batonhq/baton/queue"
)

// Created answers a first POST /api/tasks/pdf.
type Created struct {
	TaskID string      `json:"taskId"`
	Status baton.State `json:"status"`
	Queue  string      `json:"queue"`
}

// TaskView is a conversion as GET /api/tasks/{id} shows it: SPEC §3's task
// fields and §6's PDF fields.
type TaskView struct {
	TaskID         string      `json:"taskId"`
	Type           string      `json:"type"`
	Status         baton.State `json:"status"`
	Queue          string      `json:"queue"`
	SuggestedQueue string      `json:"suggestedQueue,omitempty"`
	Attempts       int         `json:"attempts"`
	Error          string      `json:"error"`
	ResultURL      string      `json:"resultUrl"`
	CreatedAt      time.Time   `json:"createdAt"`
	StartedAt      *time.Time  `json:"startedAt"`
	FinishedAt     *time.Time  `json:"finishedAt"`
	DurationMs     *int64      `json:"durationMs"`
	NextAttemptAt  *time.Time  `json:"nextAttemptAt,omitempty"`
	SourceType     string      `json:"sourceType"`
	CallbackURL    string      `json:"callbackUrl,omitempty"`
	SHA256         string      `json:"sha256,omitempty"`
	Size           int64       `json:"size,omitempty"`
	Pages          int         `json:"pages,omitempty"`
	RenderMs       int64       `json:"renderMs,omitempty"`
	// Refused lists what the egress guard refused while rendering (dropped
	// sub-resources, redirects).
	Refused         []Refusal `json:"refused,omitempty"`
	FailedResources []string  `json:"failedResources,omitempty"`

	conv      ledger.ConversionTask
	queueTask string // the queue task holding the current state
}

// idemRecord is the value stored under an Idempotency-Key.
type idemRecord struct {
	TaskID    string    `json:"taskId"`
	Hash      string    `json:"hash"`
	CreatedAt time.Time `json:"createdAt"`
}

func (s *Service) bodyLimit() int64 { return 2*s.cfg.MaxHTMLBytes + 1<<20 }

func (s *Service) create(w http.ResponseWriter, r *http.Request) error {
	p, err := s.auth(r)
	if err != nil {
		return err
	}
	var req CreateRequest
	if err := httpapi.DecodeJSON(w, r, s.bodyLimit(), &req); err != nil {
		return err
	}
	opts, err := req.Validate(s.cfg.MaxHTMLBytes)
	if err != nil {
		return err
	}
	idem := r.Header.Get("Idempotency-Key")
	if err := checkIdempotencyKey(idem); err != nil {
		return err
	}
	ctx := r.Context()
	now := s.c.Now().UTC().Truncate(time.Microsecond)
	hash := req.hash(opts)
	id := newID()
	if idem != "" {
		key := "pdf:idem:" + p.scope() + ":" + hashKey(idem)
		val, created, err := s.store.PutIfAbsent(ctx, key, jsonOf(idemRecord{TaskID: id, Hash: hash, CreatedAt: now}), s.cfg.IdempotencyTTL)
		if err != nil {
			return &baton.Error{Code: baton.EUnavailable, Message: "queue store unavailable", Err: err}
		}
		if !created {
			s.m.idemHits.Inc()
			var prev idemRecord
			if err := json.Unmarshal(val, &prev); err != nil {
				return fmt.Errorf("idempotency record: %w", err)
			}
			if prev.Hash != hash {
				return baton.Errorf(baton.EUnprocessable, "Idempotency-Key %q was already used with a different request body", truncate(idem, 64))
			}
			return s.answerRepeat(w, r, p, prev, req, opts)
		}
	}
	conv, pl, err := s.prepare(ctx, p, id, req, opts, hash, now)
	if err != nil {
		return err
	}
	if err := s.insertAndEnqueue(ctx, conv, pl); err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusAccepted, Created{TaskID: id, Status: baton.StatePending, Queue: conv.Queue})
	return nil
}

// prepare builds the ledger record and the queue payload, choosing the lane.
func (s *Service) prepare(ctx context.Context, p principal, id string, req CreateRequest, opts chromiumOptions, hash string, now time.Time) (ledger.ConversionTask, payload, error) {
	lane := ""
	suggested := ""
	if req.Priority != "" {
		lane = "pdf." + req.Priority
	} else {
		sctx, cancel := context.WithTimeout(ctx, s.cfg.SuggestBudget)
		dr := s.analyze(sctx, req, opts)
		cancel()
		suggested = dr.SuggestedQueue
		lane = suggested
	}
	optJSON := jsonOf(opts)
	conv := ledger.ConversionTask{ID: id, APIKeyID: p.keyID, Status: baton.StatePending, SourceType: req.Source.Type,
		Source: req.Source.Content, Options: optJSON, Queue: lane, SuggestedQueue: suggested, RequestHash: hash, CreatedAt: now}
	if req.Callback != nil {
		conv.CallbackURL = req.Callback.URL
	}
	return conv, payload{ConversionID: id, Source: req.Source, Options: opts}, nil
}

// insertAndEnqueue writes the ledger record, then the queue task. Both are
// idempotent on the task id (the record's primary key, the task's dedup
// key), so a repeat after a crash between them completes the creation.
func (s *Service) insertAndEnqueue(ctx context.Context, conv ledger.ConversionTask, pl payload) error {
	if _, _, err := s.db.CreateConversionTask(ctx, conv); err != nil && baton.ErrorCode(err) != baton.EConflict {
		return dbErr(err)
	}
	_, err := s.c.Enqueue(ctx, []queue.NewTask{{ID: conv.ID, Type: TypeRender, Queue: conv.Queue, Payload: jsonOf(pl),
		MaxAttempts: s.cfg.MaxAttempts, LeaseTTL: s.cfg.LeaseTTL, DedupKey: "pdf:" + conv.ID, Notify: true}})
	return err
}

// answerRepeat answers a request whose Idempotency-Key is known with the
// same body: the task and its current status (200).
func (s *Service) answerRepeat(w http.ResponseWriter, r *http.Request, p principal, prev idemRecord, req CreateRequest, opts chromiumOptions) error {
	ctx := r.Context()
	v, err := s.view(ctx, prev.TaskID)
	if baton.ErrorCode(err) == baton.ENotFound {
		// The first request is still creating it — or died between storing
		// the key and creating the task: then complete the creation.
		if s.c.Now().Sub(prev.CreatedAt) < 10*time.Second {
			httpapi.WriteJSON(w, http.StatusOK, Created{TaskID: prev.TaskID, Status: baton.StatePending})
			return nil
		}
		conv, pl, perr := s.prepare(ctx, p, prev.TaskID, req, opts, prev.Hash, prev.CreatedAt)
		if perr != nil {
			return perr
		}
		if perr := s.insertAndEnqueue(ctx, conv, pl); perr != nil {
			return perr
		}
		v, err = s.view(ctx, prev.TaskID)
	}
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, v)
	return nil
}

// view merges the ledger record with the live queue task(s).
func (s *Service) view(ctx context.Context, id string) (TaskView, error) {
	conv, err := s.db.GetConversionTask(ctx, id)
	if err != nil {
		return TaskView{}, dbErr(err)
	}
	return s.viewOf(ctx, conv)
}

func (s *Service) viewOf(ctx context.Context, conv ledger.ConversionTask) (TaskView, error) {
	v := TaskView{TaskID: conv.ID, Type: TypeRender, Status: conv.Status, Queue: conv.Queue, SuggestedQueue: conv.SuggestedQueue,
		Attempts: conv.Attempts, Error: conv.Error, CreatedAt: conv.CreatedAt, SourceType: conv.SourceType,
		CallbackURL: conv.CallbackURL, SHA256: conv.ResultSHA256, Size: conv.ResultSize, conv: conv, queueTask: conv.ID}
	v.StartedAt, v.FinishedAt = timePtr(conv.StartedAt), timePtr(conv.FinishedAt)
	if conv.ResultPath != "" {
		if q, _, ok := cutLast(conv.ResultPath, "/"); ok {
			v.queueTask = q
		}
	}
	ti, err := s.store.Get(ctx, conv.ID)
	switch {
	case err == nil:
		attempts := ti.Attempts
		started := ti.StartedAt
		if d := parseData(ti.Data); d.Kind == kindSlow && ti.Status == baton.StateFailed && ti.Queue != QueueSlow {
			// Moved to pdf.slow: the follow-up holds the state now.
			next, err := s.store.Get(ctx, slowID(conv.ID))
			if err != nil {
				v.Status, v.Queue, v.Attempts = baton.StatePending, QueueSlow, attempts
				break
			}
			ti = next
			attempts += next.Attempts
		}
		v.queueTask = ti.ID
		v.Status, v.Queue, v.Attempts, v.NextAttemptAt = ti.Status, ti.Queue, attempts, ti.NextAttemptAt
		if started != nil {
			v.StartedAt = started
		}
		v.FinishedAt = ti.FinishedAt
		d := parseData(ti.Data)
		v.Refused, v.FailedResources, v.RenderMs = d.Refused, d.FailedResources, d.DurationMs
		switch ti.Status {
		case baton.StateCompleted:
			v.SHA256, v.Size, v.Pages, v.Error = d.SHA256, d.Size, d.Pages, ""
		case baton.StateFailed, baton.StateTimeout:
			v.Error = ti.Error
			if v.Error == "" {
				v.Error = ti.Reason
			}
		case baton.StateCancelled:
			v.Error = "cancelled"
		case baton.StatePending, baton.StateStalled:
			if ti.Attempts > 0 && ti.Reason != "" {
				v.Error = "last attempt: " + ti.Reason
			}
		}
	case baton.ErrorCode(err) == baton.ENotFound:
		// Purged from the store after its retention: the ledger's record.
	default:
		return TaskView{}, &baton.Error{Code: baton.EUnavailable, Message: "queue store unavailable", Err: err}
	}
	if v.Status == baton.StateCompleted {
		v.ResultURL = s.cfg.PublicURL() + "/api/tasks/" + url.PathEscape(conv.ID) + "/result"
	}
	if v.StartedAt != nil && v.FinishedAt != nil {
		d := v.FinishedAt.Sub(*v.StartedAt).Milliseconds()
		v.DurationMs = &d
	}
	return v, nil
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func cutLast(s, sep string) (before, after string, ok bool) {
	for i := len(s) - len(sep); i >= 0; i-- {
		if s[i:i+len(sep)] == sep {
			return s[:i], s[i+len(sep):], true
		}
	}
	return s, "", false
}

// taskHook answers GET/DELETE /api/tasks/{id} for conversions: API keys
// for their own tasks, the admin for all. Other tasks go to the generic route.
func (s *Service) taskHook(w http.ResponseWriter, r *http.Request, role httpapi.Role) (bool, error) {
	if role != httpapi.RoleAdmin && bearer(r) == "" {
		return false, nil
	}
	p, err := s.auth(r)
	if err != nil {
		if baton.ErrorCode(err) == baton.EUnauthorized {
			return false, nil // not an API key: the generic route answers 401/403
		}
		return true, err
	}
	id := r.PathValue("id")
	conv, err := s.db.GetConversionTask(r.Context(), id)
	if err != nil || !p.owns(conv) {
		if p.admin && errors.Is(err, ledger.ErrConversionTaskNotFound) {
			return false, nil // a generic task
		}
		if err == nil || errors.Is(err, ledger.ErrConversionTaskNotFound) {
			return true, ledger.ErrConversionTaskNotFound
		}
		return true, dbErr(err)
	}
	if r.Method == http.MethodDelete {
		return true, s.cancel(w, r, conv)
	}
	v, err := s.viewOf(r.Context(), conv)
	if err != nil {
		return true, err
	}
	httpapi.WriteJSON(w, http.StatusOK, v)
	return true, nil
}

func (s *Service) cancel(w http.ResponseWriter, r *http.Request, conv ledger.ConversionTask) error {
	v, err := s.viewOf(r.Context(), conv)
	if err != nil {
		return err
	}
	if v.Status.Terminal() {
		return baton.Errorf(baton.EConflict, "task %s already ended (%s)", conv.ID, v.Status)
	}
	st, err := s.c.Cancel(r.Context(), v.queueTask)
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, map[string]any{"taskId": conv.ID, "status": st})
	return nil
}

func (s *Service) result(w http.ResponseWriter, r *http.Request) error {
	_, conv, err := s.owned(r)
	if err != nil {
		return err
	}
	wait, err := parseWait(r.URL.Query().Get("wait"))
	if err != nil {
		return err
	}
	v, err := s.waitView(r.Context(), conv, wait)
	if err != nil {
		return err
	}
	if v.Status != baton.StateCompleted || v.SHA256 == "" {
		return baton.Errorf(baton.EConflict, "task %s is %s: the PDF is available once it is completed", conv.ID, v.Status)
	}
	f, size, err := s.arts.Open(r.Context(), v.queueTask, v.SHA256)
	if err != nil {
		return err
	}
	defer f.Close()
	w.Header().Set("Content-Type", "application/pdf")
	w.Header().Set("Content-Disposition", `inline; filename="`+conv.ID+`.pdf"`)
	w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
	w.WriteHeader(http.StatusOK)
	if _, err := io.Copy(w, f); err != nil {
		s.log.Warn("send pdf", "task", conv.ID, "err", err)
	}
	return nil
}

// maxResultWait bounds GET /api/tasks/{id}/result?wait=.
const maxResultWait = 60 * time.Second

func parseWait(q string) (time.Duration, error) {
	if q == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(q)
	if err != nil {
		if n, aerr := strconv.Atoi(q); aerr == nil {
			d, err = time.Duration(n)*time.Second, nil
		}
	}
	if err != nil || d < 0 || d > maxResultWait {
		return 0, baton.Errorf(baton.EInvalid, "wait must be a duration between 0 and %s (\"30s\" or seconds)", maxResultWait)
	}
	return d, nil
}

// waitView reads the task's view; with wait > 0 it long-polls until the
// task ended (any terminal status) or wait passed. It is woken by the
// Advancer when one is configured (after a render's result was applied),
// otherwise it re-reads the store every 100ms.
func (s *Service) waitView(ctx context.Context, conv ledger.ConversionTask, wait time.Duration) (TaskView, error) {
	deadline := time.Now().Add(wait)
	for {
		var woke <-chan struct{}
		if a := s.cfg.Advancer; a != nil {
			woke = a.advisedCh()
		}
		v, err := s.viewOf(ctx, conv)
		if err != nil || v.Status.Terminal() {
			return v, err
		}
		left := time.Until(deadline)
		if left <= 0 {
			return v, nil
		}
		step := 100 * time.Millisecond
		if woke != nil {
			step = time.Second
		}
		t := time.NewTimer(min(step, left))
		select {
		case <-ctx.Done():
			t.Stop()
			return v, ctx.Err()
		case <-woke:
		case <-t.C:
		}
		t.Stop()
	}
}

// CallbackLogView is one logged callback attempt.
type CallbackLogView struct {
	Attempt        int        `json:"attempt"`
	URL            string     `json:"url"`
	RequestBody    string     `json:"requestBody"`
	ResponseStatus int        `json:"responseStatus,omitempty"`
	ResponseBody   string     `json:"responseBody,omitempty"`
	SentAt         time.Time  `json:"sentAt"`
	ResponseAt     *time.Time `json:"responseAt,omitempty"`
	DurationMs     int64      `json:"durationMs"`
	Error          string     `json:"error,omitempty"`
	Replay         bool       `json:"replay"`
}

// Callbacks returns a task's callback attempts, oldest first.
func (s *Service) Callbacks(ctx context.Context, id string) ([]CallbackLogView, error) {
	ls, err := s.db.ListCallbackLogs(ctx, id)
	if err != nil {
		return nil, dbErr(err)
	}
	out := make([]CallbackLogView, 0, len(ls))
	for _, l := range ls {
		out = append(out, CallbackLogView{Attempt: l.Attempt, URL: l.URL, RequestBody: l.RequestBody, ResponseStatus: l.ResponseStatus,
			ResponseBody: l.ResponseBody, SentAt: l.SentAt, ResponseAt: timePtr(l.ResponseAt), DurationMs: l.DurationMs, Error: l.Error, Replay: l.Replay})
	}
	return out, nil
}

func (s *Service) callbacks(w http.ResponseWriter, r *http.Request) error {
	_, conv, err := s.owned(r)
	if err != nil {
		return err
	}
	out, err := s.Callbacks(r.Context(), conv.ID)
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, out)
	return nil
}

// Replay resends a task's last callback payload (with a new sentAt and
// signature), logs it as a replay and returns the outcome.
func (s *Service) Replay(ctx context.Context, conv ledger.ConversionTask, req ReplayRequest) (callback.Outcome, error) {
	if err := req.Validate(); err != nil {
		return callback.Outcome{}, err
	}
	s.m.replays.Inc()
	secret, err := s.secretFor(ctx, conv)
	if err != nil {
		return callback.Outcome{}, err
	}
	d := callback.Delivery{TaskID: conv.ID, Secret: secret, Attempts: req.Attempts, Multiplier: req.BackoffMultiplier, Replay: true}
	last, err := s.db.LastCallbackLog(ctx, conv.ID)
	switch {
	case err == nil:
		if err := json.Unmarshal([]byte(last.RequestBody), &d.Payload); err != nil {
			return callback.Outcome{}, baton.Errorf(baton.EConflict, "the last callback payload cannot be read")
		}
		d.URL, d.FirstAttempt = last.URL, last.Attempt+1
	case errors.Is(err, ledger.ErrNoCallback):
		v, err := s.viewOf(ctx, conv)
		if err != nil {
			return callback.Outcome{}, err
		}
		if conv.CallbackURL == "" || !v.Status.Terminal() {
			return callback.Outcome{}, baton.Errorf(baton.EConflict, "no callback to replay: the task has no callback URL or has not finished")
		}
		d.URL, d.Payload = conv.CallbackURL, s.payloadOf(v)
	default:
		return callback.Outcome{}, dbErr(err)
	}
	return s.send.Deliver(ctx, d), nil
}

func (s *Service) replay(w http.ResponseWriter, r *http.Request) error {
	_, conv, err := s.owned(r)
	if err != nil {
		return err
	}
	var req ReplayRequest
	if r.ContentLength != 0 {
		if err := httpapi.DecodeJSON(w, r, httpapi.DefaultBodyLimit, &req); err != nil {
			return err
		}
	}
	out, err := s.Replay(r.Context(), conv, req)
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, out)
	return nil
}

func (s *Service) payloadOf(v TaskView) callback.Payload {
	p := callback.Payload{TaskID: v.TaskID, Status: string(v.Status), ResultURL: v.ResultURL, Error: v.Error}
	if v.FinishedAt != nil {
		p.FinishedAt = v.FinishedAt.UTC()
	}
	return p
}

// ListTasks returns a page of conversions, newest first, with their live
// status, and the next cursor.
func (s *Service) ListTasks(ctx context.Context, f ledger.ConversionFilter) ([]TaskView, string, error) {
	ts, next, err := s.db.ListConversionTasks(ctx, f)
	if err != nil {
		return nil, "", dbErr(err)
	}
	out := make([]TaskView, 0, len(ts))
	for _, t := range ts {
		v, err := s.viewOf(ctx, t)
		if err != nil {
			return nil, "", err
		}
		out = append(out, v)
	}
	return out, next, nil
}

// Conversion returns a task's ledger record with its live view.
func (s *Service) Conversion(ctx context.Context, id string) (ledger.ConversionTask, TaskView, error) {
	conv, err := s.db.GetConversionTask(ctx, id)
	if err != nil {
		return conv, TaskView{}, dbErr(err)
	}
	v, err := s.viewOf(ctx, conv)
	return conv, v, err
}

// OpenResult opens a completed task's PDF.
func (s *Service) OpenResult(ctx context.Context, id string) (io.ReadCloser, error) {
	_, v, err := s.Conversion(ctx, id)
	if err != nil {
		return nil, err
	}
	if v.Status != baton.StateCompleted || v.SHA256 == "" {
		return nil, baton.Errorf(baton.EConflict, "task %s is %s: no PDF", id, v.Status)
	}
	f, _, err := s.arts.Open(ctx, v.queueTask, v.SHA256)
	return f, err
}

// listTasks is GET /api/pdf/tasks?status=&queue=&limit=&cursor=: a key's
// own tasks, or every task for the admin.
func (s *Service) listTasks(w http.ResponseWriter, r *http.Request) error {
	p, err := s.auth(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	f := ledger.ConversionFilter{Status: baton.State(q.Get("status")), Queue: q.Get("queue"), Cursor: q.Get("cursor"), IDPrefix: q.Get("q")}
	if f.Status != "" && !f.Status.Valid() {
		return baton.Errorf(baton.EInvalid, "status must be one of pending, processing, completed, failed, timeout, cancelled, stalled")
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 500 {
			return baton.Errorf(baton.EInvalid, "limit must be between 1 and 500")
		}
		f.Limit = n
	}
	if !p.admin {
		f.KeyID = p.keyID
	}
	page, next, err := s.ListTasks(r.Context(), f)
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, map[string]any{"tasks": page, "next": next})
	return nil
}
