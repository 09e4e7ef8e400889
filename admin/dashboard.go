package admin

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	baton "github.com/batonhq/baton"
	"github.com/batonhq/baton/pipeline"
	"github.com/batonhq/baton/queue"
)

type dashboardData struct {
	*base
	Live *liveData
}

// liveData is the part of the dashboard that refreshes itself.
type liveData struct {
	*base
	Queues     []queueRow
	Workers    []workerRow
	Funnel     []funnelRow
	Throughput throughputChart
	At         time.Time
}

type queueRow struct {
	queue.QueueStat
	Label  string // the step's name for domain.<step> queues
	Oldest string
}

type workerRow struct {
	queue.WorkerInfo
	Ago   string
	Stale bool
}

// funnelRow is one step of the funnel chart; the bar widths are in percent
// of the widest step (SVG user units on a 0–100 axis).
type funnelRow struct {
	Step     string
	Label    string
	Reached  int64
	Passed   int64
	Rejected int64
	BlackHit int64
	Failed   int64
	Open     int64 // reached but no verdict yet (running, retrying)
	Bars     []bar
}

type bar struct {
	X, W  float64
	Class string
	Title string
}

type throughputChart struct {
	Bars  []bar // x, w in 0..600; heights folded into Y/H
	Max   int64
	Total int64
	Cols  []column
}

type column struct {
	X, Y, W, H float64
	Title      string
}

func (u *UI) dashboard(w http.ResponseWriter, r *http.Request, ss *session) error {
	b := u.base(r, ss, "dashboard", "dashboard")
	live, err := u.liveData(r, b)
	if err != nil {
		return err
	}
	u.render(w, r, http.StatusOK, "dashboard", &dashboardData{base: b, Live: live})
	return nil
}

// live answers the dashboard's refresh with the live fragment.
func (u *UI) live(w http.ResponseWriter, r *http.Request, ss *session) error {
	b := u.partialBase(r, ss, "dashboard", "dashboard")
	live, err := u.liveData(r, b)
	if err != nil {
		return err
	}
	u.renderTemplate(w, r, http.StatusOK, "dashboard", "live", live)
	return nil
}

func (u *UI) liveData(r *http.Request, b *base) (*liveData, error) {
	ctx := r.Context()
	now := u.cfg.Clock()
	d := &liveData{base: b, At: now}
	qs, err := u.cfg.Controller.Queues(ctx)
	if err != nil {
		return nil, err
	}
	for _, q := range qs {
		row := queueRow{QueueStat: q, Oldest: humanMs(q.OldestAgeMs)}
		if s := pipeline.StepOf(q.Name); s != "" {
			row.Label = stepLabel(b.Lang, s)
		}
		d.Queues = append(d.Queues, row)
	}
	ws, err := u.cfg.Controller.Workers(ctx)
	if err != nil {
		return nil, err
	}
	for _, wk := range ws {
		age := now.Sub(wk.LastSeen)
		d.Workers = append(d.Workers, workerRow{WorkerInfo: wk, Ago: humanMs(age.Milliseconds()), Stale: age > 2*time.Minute})
	}
	cfg := u.cfg.Pipeline.Config().Get()
	steps := cfg.Enabled()
	f, err := u.cfg.DB.Funnel(ctx, steps)
	if err != nil {
		return nil, err
	}
	var widest int64
	for _, s := range f {
		widest = max(widest, s.Reached)
	}
	for _, s := range f {
		row := funnelRow{Step: s.Step, Label: stepLabel(b.Lang, s.Step), Reached: s.Reached, Passed: s.Passed,
			Rejected: s.Rejected, BlackHit: s.BlackHit, Failed: s.Failed}
		row.Open = max(0, s.Reached-s.Passed-s.Rejected-s.BlackHit-s.Failed)
		if widest > 0 {
			x := 0.0
			for _, part := range []struct {
				n     int64
				class string
				key   string
			}{{s.Passed, "pass", "passed"}, {s.Rejected, "reject", "rejected"}, {s.BlackHit, "black", "blackHit"},
				{s.Failed, "failed", "failed"}, {row.Open, "open", "inProgress"}} {
				if part.n == 0 {
					continue
				}
				wd := float64(part.n) * 100 / float64(widest)
				row.Bars = append(row.Bars, bar{X: x, W: wd, Class: part.class, Title: fmt.Sprintf("%s: %d", b.T(part.key), part.n)})
				x += wd
			}
		}
		d.Funnel = append(d.Funnel, row)
	}
	d.Throughput = chartOf(u.tp.series(now), b)
	return d, nil
}

// chartOf lays the per-minute counts out on a 600×100 SVG.
func chartOf(ps []point, b *base) throughputChart {
	var c throughputChart
	for _, p := range ps {
		c.Max = max(c.Max, p.Count)
		c.Total += p.Count
	}
	if len(ps) == 0 {
		return c
	}
	w := 600.0 / float64(len(ps))
	for i, p := range ps {
		h := 0.0
		if c.Max > 0 {
			h = float64(p.Count) * 96 / float64(c.Max)
		}
		c.Cols = append(c.Cols, column{X: float64(i)*w + 0.5, W: w - 1, Y: 100 - h, H: h,
			Title: fmt.Sprintf("%s UTC: %d", p.Minute.Format("15:04"), p.Count)})
	}
	return c
}

// stepLabel is a step's name in lang.
func stepLabel(lang, step string) string {
	l, ok := pipeline.Labels[step]
	if !ok {
		return step
	}
	if lang == "zh" {
		return l[0]
	}
	return l[1]
}

// humanMs shows a duration in milliseconds briefly: 850ms, 12s, 5m, 3h, 2d.
func humanMs(ms int64) string {
	switch {
	case ms <= 0:
		return "–"
	case ms < 1000:
		return fmt.Sprintf("%dms", ms)
	case ms < 60_000:
		return fmt.Sprintf("%.1fs", float64(ms)/1000)
	case ms < 3_600_000:
		return fmt.Sprintf("%dm%02ds", ms/60_000, ms%60_000/1000)
	case ms < 48*3_600_000:
		return fmt.Sprintf("%dh%02dm", ms/3_600_000, ms%3_600_000/60_000)
	}
	return fmt.Sprintf("%dd", ms/86_400_000)
}

// queueAction pauses or resumes a queue.
func (u *UI) queueAction(w http.ResponseWriter, r *http.Request, ss *session) error {
	name := r.PathValue("name")
	var paused bool
	switch r.PathValue("action") {
	case "pause":
		paused = true
	case "resume":
	default:
		return baton.Errorf(baton.ENotFound, "no such queue action")
	}
	if _, err := u.cfg.Controller.PauseQueue(r.Context(), name, paused); err != nil {
		return err
	}
	key := "flashResumed"
	if paused {
		key = "flashPaused"
	}
	u.redirect(w, r, ss, "/ui/", key, name)
	return nil
}

// stepOfError returns the step an EInvalid message of the pipeline
// configuration names ("step wayback: ..."), or "".
func stepOfError(msg string) string {
	for _, s := range pipeline.Steps {
		if strings.HasPrefix(msg, "step "+s+":") || strings.Contains(msg, "step \""+s+"\"") {
			return s
		}
	}
	return ""
}
