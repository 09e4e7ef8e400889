package admin

import (
	"bytes"
	"encoding/json"
	"html"
	"html/template"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"

	baton "github.com/batonhq/baton"
	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/ledger"
	"github.com/batonhq/baton/pipeline"
)

// Domain import limits.
const (
	importChunk        = 2000 // entries per ledger.ImportDomains call
	maxInvalidReported = 1000 // invalid lines listed on the page
)

var statuses = []ledger.Status{ledger.StatusPending, ledger.StatusRunning, ledger.StatusPassed, ledger.StatusRejected,
	ledger.StatusReview, ledger.StatusBlacklisted, ledger.StatusFailed}

type domainsData struct {
	*base
	Q, Status, Step string
	Statuses        []ledger.Status
	Steps           []stepOption
	Domains         []ledger.Domain
	Next            string
	NextURL         string
	Import          *importResult
	Pasted          string
}

type stepOption struct{ Name, Label string }

// importResult is what the page shows after an import: the same figures as
// POST /api/domains.
type importResult struct {
	Added, Duplicates, InvalidCount int
	Invalid                         []invalidLine
	Error                           string
}

type invalidLine struct {
	Line   int
	Name   string
	Reason string
}

func (u *UI) domainsPage(w http.ResponseWriter, r *http.Request, ss *session) error {
	d, err := u.domainsData(r, ss)
	if err != nil {
		return err
	}
	u.render(w, r, http.StatusOK, "domains", d)
	return nil
}

func (u *UI) domainsData(r *http.Request, ss *session) (*domainsData, error) {
	b := u.base(r, ss, "domains", "domains")
	q := r.URL.Query()
	d := &domainsData{base: b, Q: strings.TrimSpace(q.Get("q")), Status: q.Get("status"), Step: q.Get("step"), Statuses: statuses}
	for _, s := range pipeline.Steps {
		d.Steps = append(d.Steps, stepOption{Name: s, Label: stepLabel(b.Lang, s)})
	}
	f := ledger.Filter{Status: ledger.Status(d.Status), Step: d.Step, Query: strings.ToLower(d.Q), Cursor: q.Get("cursor"), Limit: 50}
	if f.Status != "" && !f.Status.Valid() {
		return nil, baton.Errorf(baton.EInvalid, "unknown status %q", d.Status)
	}
	if f.Step != "" {
		if _, ok := pipeline.Labels[f.Step]; !ok {
			return nil, baton.Errorf(baton.EInvalid, "unknown step %q", d.Step)
		}
	}
	page, next, err := u.cfg.DB.ListDomains(r.Context(), f)
	if err != nil {
		return nil, err
	}
	d.Domains, d.Next = page, next
	if next != "" {
		v := url.Values{"q": {d.Q}, "status": {d.Status}, "step": {d.Step}, "cursor": {next}}
		d.NextURL = "/ui/domains?" + v.Encode()
	}
	return d, nil
}

// importDomains imports a pasted list or an uploaded file exactly as POST
// /api/domains does for text/plain (domain.Reader line by line, then
// ledger.ImportDomains in chunks) and shows the figures and every invalid
// line with its number and reason.
func (u *UI) importDomains(w http.ResponseWriter, r *http.Request, ss *session) error {
	var src io.Reader = strings.NewReader(r.PostFormValue("domains"))
	if r.MultipartForm != nil {
		if fh := r.MultipartForm.File["file"]; len(fh) > 0 && fh[0].Size > 0 {
			f, err := fh[0].Open()
			if err != nil {
				return baton.Errorf(baton.EInvalid, "cannot read the uploaded file")
			}
			defer f.Close()
			src = f
		}
	}
	res := &importResult{}
	var batch []domain.Entry
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		added, dups, err := u.cfg.DB.ImportDomains(r.Context(), batch)
		if err != nil {
			return err
		}
		res.Added += added
		res.Duplicates += dups
		batch = batch[:0]
		return nil
	}
	rd := domain.NewReader(src)
	for rd.Next() {
		ln := rd.Line()
		if ln.Err != nil {
			res.InvalidCount++
			if len(res.Invalid) < maxInvalidReported {
				name := ln.Raw
				if len(name) > 256 {
					name = name[:256]
				}
				res.Invalid = append(res.Invalid, invalidLine{Line: ln.Num, Name: name, Reason: baton.ErrorMessage(ln.Err)})
			}
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
		return baton.Errorf(baton.EInvalid, "reading the import: %v", err)
	}
	if err := flush(); err != nil {
		return err
	}
	if res.Added > 0 {
		u.kickScan()
	}
	d, err := u.domainsData(r, ss)
	if err != nil {
		return err
	}
	d.Import = res
	if res.InvalidCount > 0 {
		d.Pasted = r.PostFormValue("domains")
	}
	u.render(w, r, http.StatusOK, "domains", d)
	return nil
}

type domainData struct {
	*base
	D     ledger.Domain
	Steps []stepView
	Runs  []runView
}

type stepView struct {
	Name     string
	Label    string
	Enabled  bool
	Has      bool
	R        ledger.StepResult
	Evidence string // pretty-printed JSON
	Snaps    []snapView
	Hits     []hitView
}

type runView struct {
	ledger.Run
	Steps []string
}

// evidence is the part of a step's data the page renders specially: the
// Wayback check's sampled snapshots and word hits (check/wayback.Evidence).
type evidence struct {
	Sampled []struct {
		Timestamp  string `json:"timestamp"`
		URL        string `json:"url"`
		HTTPStatus int    `json:"httpStatus"`
		Title      string `json:"title"`
		Hits       []hit  `json:"hits"`
		Error      string `json:"error"`
	} `json:"sampled"`
	Black   *hit  `json:"black"`
	Signals []hit `json:"signals"`
}

type hit struct {
	Timestamp string `json:"timestamp"`
	URL       string `json:"url"`
	Field     string `json:"field"`
	Word      string `json:"word"`
	Category  string `json:"category"`
	Black     bool   `json:"black"`
}

type snapView struct {
	Timestamp string
	Link      string
	URL       string
	Status    int
	Title     template.HTML // escaped, hit words in <mark>
	Error     string
}

type hitView struct {
	hit
	Link string
}

// waybackBase is where snapshot links point. The evidence records the
// capture's timestamp and original URL; the public archive serves it at
// <base>/web/<timestamp>/<url>.
const waybackBase = "https://web.archive.org"

func snapshotLink(ts, u string) string {
	if ts == "" || u == "" {
		return ""
	}
	return waybackBase + "/web/" + url.PathEscape(ts) + "/" + u
}

func (u *UI) domainPage(w http.ResponseWriter, r *http.Request, ss *session) error {
	name, err := domain.Normalize(r.PathValue("name"))
	if err != nil {
		return baton.Errorf(baton.ENotFound, "domain not found (%s)", baton.ErrorMessage(err))
	}
	dm, err := u.cfg.DB.GetDomain(r.Context(), name)
	if err != nil {
		return err
	}
	b := u.base(r, ss, "domains", "domain")
	cfg := u.cfg.Pipeline.Config().Get()
	d := &domainData{base: b, D: dm}
	for _, s := range pipeline.Steps {
		sc, _ := cfg.Step(s)
		v := stepView{Name: s, Label: stepLabel(b.Lang, s), Enabled: sc.Enabled}
		if res, ok := dm.Steps[s]; ok {
			v.Has, v.R = true, res
			v.Evidence = prettyJSON(res.Data)
			v.Snaps, v.Hits = evidenceViews(res.Data)
		}
		d.Steps = append(d.Steps, v)
	}
	for _, run := range dm.Runs {
		d.Runs = append(d.Runs, runView{Run: run, Steps: run.Steps})
	}
	u.render(w, r, http.StatusOK, "domain", d)
	return nil
}

func prettyJSON(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		return string(raw)
	}
	return buf.String()
}

// evidenceViews extracts the snapshots and word hits of a step's evidence;
// evidence of another shape gives none (the JSON is shown regardless).
func evidenceViews(raw json.RawMessage) ([]snapView, []hitView) {
	if len(raw) == 0 {
		return nil, nil
	}
	var ev evidence
	if err := json.Unmarshal(raw, &ev); err != nil {
		return nil, nil
	}
	var snaps []snapView
	for _, s := range ev.Sampled {
		words := make([]string, 0, len(s.Hits))
		for _, h := range s.Hits {
			if h.Field == "title" {
				words = append(words, h.Word)
			}
		}
		snaps = append(snaps, snapView{Timestamp: s.Timestamp, URL: s.URL, Link: snapshotLink(s.Timestamp, s.URL),
			Status: s.HTTPStatus, Title: highlight(s.Title, words), Error: s.Error})
	}
	var hits []hitView
	seen := map[hit]bool{}
	add := func(h hit) {
		if h.Word == "" || seen[h] {
			return
		}
		seen[h] = true
		hits = append(hits, hitView{hit: h, Link: snapshotLink(h.Timestamp, h.URL)})
	}
	if ev.Black != nil {
		add(*ev.Black)
	}
	for _, h := range ev.Signals {
		add(h)
	}
	for _, s := range ev.Sampled {
		for _, h := range s.Hits {
			add(h)
		}
	}
	return snaps, hits
}

// highlight escapes text and wraps each occurrence of words in <mark>
// (case-insensitive for ASCII letters).
func highlight(text string, words []string) template.HTML {
	sort.Slice(words, func(i, j int) bool { return len(words[i]) > len(words[j]) })
	lower := strings.ToLower(text)
	if len(lower) != len(text) {
		lower = text // a case change altered byte lengths: match exactly
	}
	var sb strings.Builder
	for i := 0; i < len(text); {
		matched := ""
		for _, w := range words {
			if w != "" && strings.HasPrefix(lower[i:], strings.ToLower(w)) && len(strings.ToLower(w)) == len(w) {
				matched = text[i : i+len(w)]
				break
			}
		}
		if matched != "" {
			sb.WriteString("<mark>" + html.EscapeString(matched) + "</mark>")
			i += len(matched)
			continue
		}
		j := i + 1
		for j < len(text) && !utf8Start(text[j]) {
			j++
		}
		sb.WriteString(html.EscapeString(text[i:j]))
		i = j
	}
	return template.HTML(sb.String()) // every piece above is escaped
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }
