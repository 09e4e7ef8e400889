package pipeline

import (
	"context"
	"encoding/json"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	baton "github.com/batonhq/baton"
	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/httpapi"
	"github.com/batonhq/baton/ledger"
)

// Import limits.
const (
	// ImportBodyLimit bounds one POST /api/domains body; the CLI streams
	// bigger files in several requests.
	ImportBodyLimit = 32 << 20
	// importChunk is how many entries go to the main DB per statement batch.
	importChunk = 2000
	// maxInvalidReported bounds the invalid lines listed in one answer.
	maxInvalidReported = 1000
)

// Mount adds the pipeline routes to the API server.
func (s *Service) Mount(srv *httpapi.Server) {
	srv.Handle("POST /api/domains", httpapi.RoleAdmin, s.importDomains)
	srv.Handle("GET /api/domains", httpapi.RoleAdmin, s.listDomains)
	srv.Handle("GET /api/domains/{name}", httpapi.RoleAdmin, s.getDomain)
	srv.Handle("GET /api/pipeline", httpapi.RoleAdmin, s.getPipeline)
	srv.Handle("PUT /api/pipeline", httpapi.RoleAdmin, s.putPipeline)
	srv.Handle("POST /api/pipeline/scan", httpapi.RoleAdmin, s.scan)
	srv.Handle("GET /api/pipeline/funnel", httpapi.RoleAdmin, s.funnel)
	srv.Handle("GET /api/pipeline/wordlists", httpapi.RoleAdmin, s.getWordLists)
	srv.Handle("PUT /api/pipeline/wordlists", httpapi.RoleAdmin, s.putWordLists)
	srv.Handle("GET /api/worker/wordlists", httpapi.RoleWorker, s.getWordLists)
	srv.Handle("GET /api/alerts", httpapi.RoleAdmin, s.listAlerts)
	srv.Handle("DELETE /api/alerts/{code}", httpapi.RoleAdmin, s.ackAlert)
}

// InvalidLine reports one refused import line.
type InvalidLine struct {
	Line   int    `json:"line"`
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

// ImportResult answers POST /api/domains.
type ImportResult struct {
	Added      int           `json:"added"`
	Duplicates int           `json:"duplicates"`
	Invalid    []InvalidLine `json:"invalid"`
	// InvalidCount counts every invalid line, also those not listed.
	InvalidCount int `json:"invalidCount"`
}

// ImportEntry is one domain of a JSON import.
type ImportEntry struct {
	Name     string `json:"name"`
	DeleteAt string `json:"deleteAt,omitempty"`
	Source   string `json:"source,omitempty"`
}

func (r *ImportResult) invalid(line int, name string, err error) {
	r.InvalidCount++
	if len(r.Invalid) < maxInvalidReported {
		if len(name) > 256 {
			name = name[:256]
		}
		r.Invalid = append(r.Invalid, InvalidLine{Line: line, Name: name, Reason: baton.ErrorMessage(err)})
	}
}

func (s *Service) importDomains(w http.ResponseWriter, r *http.Request) error {
	res := ImportResult{Invalid: []InvalidLine{}}
	var batch []domain.Entry
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		added, dups, err := s.db.ImportDomains(r.Context(), batch)
		if err != nil {
			return err
		}
		res.Added += added
		res.Duplicates += dups
		batch = batch[:0]
		return nil
	}
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch mt {
	case "text/plain", "text/csv":
		rd := domain.NewReader(http.MaxBytesReader(w, r.Body, ImportBodyLimit))
		for rd.Next() {
			ln := rd.Line()
			if ln.Err != nil {
				res.invalid(ln.Num, ln.Raw, ln.Err)
				continue
			}
			batch = append(batch, ln.Entry)
			if len(batch) == importChunk {
				if err := flush(); err != nil {
					return err
				}
			}
		}
		if err := rd.Err(); err != nil {
			if strings.Contains(err.Error(), "request body too large") {
				return baton.Errorf(baton.ETooLarge, "import body larger than %d bytes: send it in parts (baton domains import does)", ImportBodyLimit)
			}
			return baton.Errorf(baton.EInvalid, "reading import body: %v", err)
		}
	case "application/json", "":
		var body struct {
			Domains []ImportEntry `json:"domains"`
		}
		if err := httpapi.DecodeJSON(w, r, ImportBodyLimit, &body); err != nil {
			return err
		}
		for i, d := range body.Domains {
			name, err := domain.Normalize(d.Name)
			if err != nil {
				res.invalid(i+1, d.Name, err)
				continue
			}
			e := domain.Entry{Name: name, Source: d.Source}
			if d.DeleteAt != "" {
				if e.DeleteAt, err = domain.ParseDeleteAt(d.DeleteAt); err != nil {
					res.invalid(i+1, d.Name, err)
					continue
				}
			}
			if len(e.Source) > 64 {
				res.invalid(i+1, d.Name, baton.Errorf(baton.EInvalid, "source must be at most 64 characters"))
				continue
			}
			batch = append(batch, e)
			if len(batch) == importChunk {
				if err := flush(); err != nil {
					return err
				}
			}
		}
	default:
		return baton.Errorf(baton.EInvalid, "Content-Type must be application/json or text/plain (one domain per line, or CSV name,delete_at[,source])")
	}
	if err := flush(); err != nil {
		return err
	}
	s.dispatcher.kickSoon()
	httpapi.WriteJSON(w, http.StatusOK, res)
	return nil
}

// StepView is one step of a domain as the API shows it.
type StepView struct {
	State      baton.State     `json:"state"`
	Outcome    baton.Outcome   `json:"outcome,omitempty"`
	Reason     string          `json:"reason,omitempty"`
	Data       json.RawMessage `json:"data,omitempty"`
	Attempts   int             `json:"attempts"`
	FinishedAt *time.Time      `json:"finishedAt,omitempty"`
	RunID      string          `json:"runId,omitempty"`
	TaskID     string          `json:"taskId,omitempty"`
}

// RunView is one run of a domain.
type RunView struct {
	ID            string     `json:"id"`
	Status        string     `json:"status"`
	Steps         []string   `json:"steps"`
	StartedAt     *time.Time `json:"startedAt,omitempty"`
	FinishedAt    *time.Time `json:"finishedAt,omitempty"`
	StoppedAtStep string     `json:"stoppedAtStep,omitempty"`
}

// DomainView is GET /api/domains/{name}.
type DomainView struct {
	Name        string              `json:"name"`
	Source      string              `json:"source,omitempty"`
	DeleteAt    *time.Time          `json:"deleteAt,omitempty"`
	Status      ledger.Status       `json:"status"`
	Blacklisted bool                `json:"blacklisted"`
	BlackReason string              `json:"blackReason,omitempty"`
	Steps       map[string]StepView `json:"steps"`
	Runs        []RunView           `json:"runs"`
	CreatedAt   time.Time           `json:"createdAt"`
	UpdatedAt   time.Time           `json:"updatedAt"`
}

func tp(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// View turns a ledger row into its API view.
func View(d ledger.Domain) DomainView {
	v := DomainView{Name: d.Name, Source: d.Source, DeleteAt: tp(d.DeleteAt), Status: d.Status, Blacklisted: d.Blacklisted,
		BlackReason: d.BlackReason, Steps: map[string]StepView{}, Runs: []RunView{}, CreatedAt: d.CreatedAt, UpdatedAt: d.UpdatedAt}
	for name, s := range d.Steps {
		v.Steps[name] = StepView{State: s.State, Outcome: s.Outcome, Reason: s.Reason, Data: s.Data, Attempts: s.Attempts,
			FinishedAt: tp(s.FinishedAt), RunID: s.RunID, TaskID: s.TaskID}
	}
	for _, r := range d.Runs {
		steps := r.Steps
		if steps == nil {
			steps = []string{}
		}
		v.Runs = append(v.Runs, RunView{ID: r.ID, Status: r.Status, Steps: steps, StartedAt: tp(r.StartedAt),
			FinishedAt: tp(r.FinishedAt), StoppedAtStep: r.StoppedAtStep})
	}
	return v
}

func (s *Service) getDomain(w http.ResponseWriter, r *http.Request) error {
	name, err := domain.Normalize(r.PathValue("name"))
	if err != nil {
		return baton.Errorf(baton.ENotFound, "domain not found (%s)", baton.ErrorMessage(err))
	}
	d, err := s.db.GetDomain(r.Context(), name)
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, View(d))
	return nil
}

func (s *Service) listDomains(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	f := ledger.Filter{Status: ledger.Status(q.Get("status")), Step: q.Get("step"), Outcome: baton.Outcome(q.Get("outcome")),
		Query: strings.ToLower(strings.TrimSpace(q.Get("q"))), Cursor: q.Get("cursor")}
	if f.Status != "" && !f.Status.Valid() {
		return baton.Errorf(baton.EInvalid, "status must be one of pending, running, passed, rejected, review, blacklisted, failed")
	}
	if f.Step != "" {
		if _, ok := Labels[f.Step]; !ok {
			return baton.Errorf(baton.EInvalid, "step must be one of %v", Steps)
		}
	}
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > ledger.MaxPage {
			return baton.Errorf(baton.EInvalid, "limit must be between 1 and %d", ledger.MaxPage)
		}
		f.Limit = n
	}
	page, next, err := s.db.ListDomains(r.Context(), f)
	if err != nil {
		return err
	}
	out := struct {
		Domains []DomainView `json:"domains"`
		Next    string       `json:"next,omitempty"`
	}{Domains: make([]DomainView, 0, len(page)), Next: next}
	for _, d := range page {
		out.Domains = append(out.Domains, View(d))
	}
	httpapi.WriteJSON(w, http.StatusOK, out)
	return nil
}

func (s *Service) getPipeline(w http.ResponseWriter, r *http.Request) error {
	httpapi.WriteJSON(w, http.StatusOK, s.cfg.Get())
	return nil
}

func (s *Service) putPipeline(w http.ResponseWriter, r *http.Request) error {
	var c Config
	if err := httpapi.DecodeJSON(w, r, httpapi.DefaultBodyLimit, &c); err != nil {
		return err
	}
	ifVersion := c.Version
	if v := r.Header.Get("If-Match"); v != "" {
		n, err := strconv.ParseInt(strings.Trim(v, `"`), 10, 64)
		if err != nil {
			return baton.Errorf(baton.EInvalid, "If-Match must be a configuration version")
		}
		ifVersion = n
	}
	out, err := s.cfg.Put(r.Context(), c, ifVersion)
	if err != nil {
		return err
	}
	s.dispatcher.kickSoon()
	httpapi.WriteJSON(w, http.StatusOK, out)
	return nil
}

func (s *Service) scan(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Minute)
	defer cancel()
	st, err := s.dispatcher.Scan(ctx)
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, st)
	return nil
}

func (s *Service) funnel(w http.ResponseWriter, r *http.Request) error {
	f, err := s.db.Funnel(r.Context(), Steps)
	if err != nil {
		return err
	}
	cfg := s.cfg.Get()
	type row struct {
		ledger.FunnelStep
		Label   string `json:"label"`
		Enabled bool   `json:"enabled"`
	}
	out := make([]row, 0, len(f))
	for _, fs := range f {
		sc, _ := cfg.Step(fs.Step)
		out = append(out, row{FunnelStep: fs, Label: sc.Label, Enabled: sc.Enabled})
	}
	httpapi.WriteJSON(w, http.StatusOK, map[string]any{"steps": out})
	return nil
}

// getWordLists answers the current word lists ({"lists":[...]}); remote
// workers poll it (GET /api/worker/wordlists) to stay in step.
func (s *Service) getWordLists(w http.ResponseWriter, r *http.Request) error {
	httpapi.WriteJSON(w, http.StatusOK, s.cfg.Get().Words())
	return nil
}

// putWordLists replaces the word lists; a bad list is refused with the reason.
func (s *Service) putWordLists(w http.ResponseWriter, r *http.Request) error {
	var raw json.RawMessage
	if err := httpapi.DecodeJSON(w, r, 8<<20, &raw); err != nil {
		return err
	}
	c, err := s.cfg.SetWordLists(r.Context(), raw)
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, c.Words())
	return nil
}
