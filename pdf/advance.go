package pdf

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	baton "github.com/batonhq/baton"
	"github.com/batonhq/baton/controller"
	"github.com/batonhq/baton/queue"
)

// Result kinds a render reports in its data ("kind").
const (
	kindOK      = "ok"
	kindTimeout = "timeout"
	kindSlow    = "slow" // ran past the lane's budget: moved to pdf.slow
	kindCrashed = "crashed"
	kindHung    = "hung"
)

// RenderData is the data of a render's result.
type RenderData struct {
	Kind   string `json:"kind"`
	SHA256 string `json:"sha256,omitempty"`
	Size   int64  `json:"size,omitempty"`
	Pages  int    `json:"pages,omitempty"`
	// DurationMs is the render's own duration (browser work, not queueing).
	DurationMs int64 `json:"durationMs"`
	// Refused lists the sub-resources (and redirects) the egress proxy
	// refused; they were dropped from the page.
	Refused []Refusal `json:"refused,omitempty"`
	// FailedResources lists sub-resources that failed for other reasons.
	FailedResources []string `json:"failedResources,omitempty"`
	FinalURL        string   `json:"finalUrl,omitempty"`
}

// Refusal is a request the egress proxy refused.
type Refusal struct {
	Target string `json:"target"`
	Reason string `json:"reason"`
	Count  int    `json:"count"`
}

func parseData(b json.RawMessage) RenderData {
	var d RenderData
	if len(b) > 0 {
		_ = json.Unmarshal(b, &d)
	}
	return d
}

// Advancer maps a render's result to the task's end (controller.Advancer
// for the "pdf." task types): timeout → timeout; a render past the lane's
// budget → a follow-up on pdf.slow; a browser crash or hang → retry, except
// on the second one in a row (poison) → failed; other rejections → failed.
type Advancer struct {
	metrics *Metrics
	store   queue.Store

	mu      sync.Mutex
	advised chan struct{} // closed and replaced after every applied result
}

// advisedCh returns a channel closed after the next applied result of a
// render (GET .../result?wait= waits on it).
func (a *Advancer) advisedCh() <-chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.advised == nil {
		a.advised = make(chan struct{})
	}
	return a.advised
}

// Applied implements controller.AppliedNotifier: the result of a render
// was applied, so a long-polling GET .../result?wait= re-reads its task.
func (a *Advancer) Applied(string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.advised != nil {
		close(a.advised)
		a.advised = nil
	}
}

var (
	_ controller.Advancer        = (*Advancer)(nil)
	_ controller.AppliedNotifier = (*Advancer)(nil)
)

// NewAdvancer returns the PDF advancer; m may be nil. store is read for
// the previous attempt's result when the controller hands Advance a task
// view without it (a task it claimed itself); it may be nil.
func NewAdvancer(m *Metrics, store queue.Store) *Advancer { return &Advancer{metrics: m, store: store} }

// Advance implements controller.Advancer.
func (a *Advancer) Advance(ctx context.Context, t baton.TaskInfo, res baton.Result) (controller.Plan, error) {
	d := parseData(res.Data)
	switch res.Outcome {
	case baton.OutcomePass:
		return controller.Plan{FinalState: baton.StateCompleted}, nil
	case baton.OutcomeRetry:
		if d.Kind != kindCrashed && d.Kind != kindHung {
			return controller.Plan{}, nil
		}
		if a.metrics != nil {
			a.metrics.stalledCounter()
		}
		prevData := t.Data
		if len(prevData) == 0 && a.store != nil {
			// A read only: the current result is not applied yet, so the
			// stored data is the previous attempt's.
			if ti, err := a.store.Get(ctx, t.ID); err == nil {
				prevData = ti.Data
			}
		}
		prev := parseData(prevData)
		if prev.Kind == kindCrashed || prev.Kind == kindHung {
			return controller.Plan{Outcome: baton.OutcomeReject, FinalState: baton.StateFailed,
				Reason: fmt.Sprintf("the page stalled the browser on two attempts in a row (%s, then %s); not retried: %s", prev.Kind, d.Kind, res.Reason)}, nil
		}
		return controller.Plan{}, nil
	case baton.OutcomeReject:
		switch d.Kind {
		case kindTimeout:
			return controller.Plan{FinalState: baton.StateTimeout}, nil
		case kindSlow:
			if t.Queue == QueueSlow || strings.HasSuffix(t.ID, "-slow") {
				return controller.Plan{FinalState: baton.StateTimeout}, nil
			}
			return controller.Plan{FinalState: baton.StateFailed, FollowUps: []queue.NewTask{{
				ID: slowID(t.ID), Type: t.Type, Queue: QueueSlow, Payload: t.Payload,
				MaxAttempts: t.MaxAttempts, LeaseTTL: t.LeaseTTL, DedupKey: "pdf:" + slowID(t.ID), Notify: true,
			}}}, nil
		}
		return controller.Plan{FinalState: baton.StateFailed}, nil
	}
	return controller.Plan{FinalState: baton.StateFailed}, nil
}

// slowID names the pdf.slow task continuing queue task id.
func slowID(id string) string { return id + "-slow" }
