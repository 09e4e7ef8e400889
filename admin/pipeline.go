package admin

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	baton "github.com/batonhq/baton"
	"github.com/batonhq/baton/pipeline"
)

type pipelineData struct {
	*base
	Steps     []stepForm
	Version   int64
	UpdatedAt *time.Time
	Error     string
	ErrorStep string
}

// stepForm is one step's settings as the form shows them (strings, so that
// a refused value is shown back as typed).
type stepForm struct {
	Name        string
	Zh, En      string
	Enabled     bool
	MaxAttempts string
	LeaseTTLMs  string
	RatePerMin  string
	OnReject    string
	Params      string
	Decide      string
	Error       string
}

func formOf(c *pipeline.Config) []stepForm {
	out := make([]stepForm, 0, len(c.Steps))
	for _, s := range c.Steps {
		l := pipeline.Labels[s.Name]
		out = append(out, stepForm{
			Name: s.Name, Zh: l[0], En: l[1], Enabled: s.Enabled,
			MaxAttempts: strconv.Itoa(s.MaxAttempts), LeaseTTLMs: strconv.FormatInt(s.LeaseTTLMs, 10),
			RatePerMin: strconv.Itoa(s.RatePerMin), OnReject: s.OnReject,
			Params: formatParams(s.Rules.Params), Decide: s.Rules.Decide,
		})
	}
	return out
}

// formatParams writes rule parameters one per line, "name = value", sorted.
func formatParams(p map[string]float64) string {
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var sb strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&sb, "%s = %s\n", k, strconv.FormatFloat(p[k], 'g', -1, 64))
	}
	return sb.String()
}

// parseParams reads "name = value" lines (blank lines and # comments
// skipped).
func parseParams(step, s string) (map[string]float64, error) {
	out := map[string]float64{}
	for i, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			k, v, ok = strings.Cut(line, ":")
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || k == "" || len(k) > 64 || strings.ContainsAny(k, " \t") {
			return nil, baton.Errorf(baton.EInvalid, "step %s: rules.params line %d must be name = number", step, i+1)
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, baton.Errorf(baton.EInvalid, "step %s: rules.params %s must be a number (got %q)", step, k, v)
		}
		out[k] = f
	}
	if len(out) > 64 {
		return nil, baton.Errorf(baton.EInvalid, "step %s: rules.params has more than 64 entries", step)
	}
	return out, nil
}

func (u *UI) pipelinePage(w http.ResponseWriter, r *http.Request, ss *session) error {
	c := u.cfg.Pipeline.Config().Get()
	d := &pipelineData{base: u.base(r, ss, "pipeline", "pipeline"), Steps: formOf(c), Version: c.Version, UpdatedAt: c.UpdatedAt}
	u.render(w, r, http.StatusOK, "pipeline", d)
	return nil
}

// savePipeline builds a configuration from the form and saves it through
// the pipeline's ConfigHolder.Put — the same validation as PUT
// /api/pipeline. A refused configuration is shown back with the error next
// to its step; nothing is saved.
func (u *UI) savePipeline(w http.ResponseWriter, r *http.Request, ss *session) error {
	holder := u.cfg.Pipeline.Config()
	cur := holder.Get()
	forms := make([]stepForm, 0, len(cur.Steps))
	next := pipeline.Config{}
	var firstErr error
	for _, s := range cur.Steps {
		l := pipeline.Labels[s.Name]
		f := stepForm{
			Name: s.Name, Zh: l[0], En: l[1], Enabled: r.PostFormValue("enabled_"+s.Name) != "",
			MaxAttempts: strings.TrimSpace(r.PostFormValue("maxAttempts_" + s.Name)),
			LeaseTTLMs:  strings.TrimSpace(r.PostFormValue("leaseTtlMs_" + s.Name)),
			RatePerMin:  strings.TrimSpace(r.PostFormValue("ratePerMin_" + s.Name)),
			OnReject:    r.PostFormValue("onReject_" + s.Name),
			Params:      r.PostFormValue("params_" + s.Name),
			Decide:      strings.TrimSpace(r.PostFormValue("decide_" + s.Name)),
		}
		forms = append(forms, f)
		sc := s // keeps the label and anything the form does not show
		sc.Enabled = f.Enabled
		sc.OnReject = f.OnReject
		sc.Rules.Decide = f.Decide
		err := func() error {
			n, err := strconv.Atoi(f.MaxAttempts)
			if err != nil {
				return baton.Errorf(baton.EInvalid, "step %s: maxAttempts must be a whole number", s.Name)
			}
			sc.MaxAttempts = n
			if sc.LeaseTTLMs, err = strconv.ParseInt(f.LeaseTTLMs, 10, 64); err != nil {
				return baton.Errorf(baton.EInvalid, "step %s: leaseTtlMs must be a whole number of milliseconds", s.Name)
			}
			if sc.RatePerMin, err = strconv.Atoi(f.RatePerMin); err != nil {
				return baton.Errorf(baton.EInvalid, "step %s: ratePerMin must be a whole number (0 = no limit)", s.Name)
			}
			if sc.Rules.Params, err = parseParams(s.Name, f.Params); err != nil {
				return err
			}
			return nil
		}()
		if err != nil && firstErr == nil {
			firstErr = err
		}
		next.Steps = append(next.Steps, sc)
	}
	ver, _ := strconv.ParseInt(r.PostFormValue("version"), 10, 64)
	if firstErr == nil {
		saved, err := holder.Put(r.Context(), next, ver)
		if err == nil {
			u.kickScan()
			u.redirect(w, r, ss, "/ui/pipeline", "flashSaved", strconv.FormatInt(saved.Version, 10))
			return nil
		}
		firstErr = err
	}
	code := baton.ErrorCode(firstErr)
	if code != baton.EInvalid && code != baton.EConflict {
		return firstErr
	}
	msg := baton.ErrorMessage(firstErr)
	d := &pipelineData{base: u.base(r, ss, "pipeline", "pipeline"), Steps: forms, Version: ver, UpdatedAt: cur.UpdatedAt,
		Error: msg, ErrorStep: stepOfError(msg)}
	for i := range d.Steps {
		if d.Steps[i].Name == d.ErrorStep {
			d.Steps[i].Error = msg
		}
	}
	status := http.StatusBadRequest
	if code == baton.EConflict {
		status = http.StatusConflict
		d.Error = d.T("configConflict") + " (" + msg + ")"
	}
	u.render(w, r, status, "pipeline", d)
	return nil
}

// scan runs the dispatcher now (the same as POST /api/pipeline/scan).
func (u *UI) scan(w http.ResponseWriter, r *http.Request, ss *session) error {
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Minute)
	defer cancel()
	st, err := u.cfg.Pipeline.Dispatcher().Scan(ctx)
	if err != nil {
		return err
	}
	back := localPath(r.PostFormValue("back"))
	u.redirect(w, r, ss, back, "flashScanned", strconv.Itoa(st.Enqueued))
	return nil
}

// kickScan runs one dispatcher scan in the background (after an import or
// a saved configuration), as the API's routes do, so that new work starts
// without waiting for the scan interval.
func (u *UI) kickScan() {
	if u.runCtx.Err() != nil {
		return
	}
	u.wg.Add(1)
	go func() {
		defer u.wg.Done()
		ctx, cancel := context.WithTimeout(u.runCtx, 5*time.Minute)
		defer cancel()
		if _, err := u.cfg.Pipeline.Dispatcher().Scan(ctx); err != nil && ctx.Err() == nil {
			u.log.Warn("scan after admin change", "err", err)
		}
	}()
}
