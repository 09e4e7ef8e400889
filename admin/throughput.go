package admin

import (
	"context"
	"sync"
	"time"
)

// throughputMetric is the counter the throughput chart follows: results the
// controller accepted (every outcome: pass, reject, black_hit, retry), per
// task type. Its per-minute increase is "tasks finished or retried per
// minute" as seen by this controller.
const throughputMetric = "baton_task_outcomes_total"

// throughput is a ring buffer of per-minute counts over the last n minutes.
type throughput struct {
	mu     sync.Mutex
	counts []int64
	minute []int64 // the Unix minute each slot holds
	last   float64 // the counter's previous reading
	primed bool
}

func newThroughput(n int) *throughput {
	return &throughput{counts: make([]int64, n), minute: make([]int64, n)}
}

// observe takes a reading of the cumulative counter at time at and adds its
// increase since the previous reading to at's minute. The first reading
// only sets the baseline; a counter that went down (a restart) counts from
// zero.
func (t *throughput) observe(at time.Time, total float64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.primed {
		t.primed, t.last = true, total
		return
	}
	d := total - t.last
	if d < 0 {
		d = total
	}
	t.last = total
	t.add(at, int64(d+0.5))
}

func (t *throughput) add(at time.Time, n int64) {
	m := at.Unix() / 60
	i := int(m % int64(len(t.counts)))
	if t.minute[i] != m {
		t.minute[i], t.counts[i] = m, 0
	}
	t.counts[i] += n
}

// point is one minute of the chart.
type point struct {
	Minute time.Time
	Count  int64
}

// series returns the last n minutes up to now's minute, oldest first;
// minutes with no reading count zero.
func (t *throughput) series(now time.Time) []point {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(t.counts)
	cur := now.Unix() / 60
	out := make([]point, n)
	for k := 0; k < n; k++ {
		m := cur - int64(n-1-k)
		i := int(((m % int64(n)) + int64(n)) % int64(n))
		p := point{Minute: time.Unix(m*60, 0).UTC()}
		if t.minute[i] == m {
			p.Count = t.counts[i]
		}
		out[k] = p
	}
	return out
}

// sampleLoop reads the counter every SampleEvery until ctx ends.
func (u *UI) sampleLoop(ctx context.Context) {
	if u.cfg.Metrics == nil {
		return
	}
	tick := time.NewTicker(u.cfg.SampleEvery)
	defer tick.Stop()
	for {
		u.sample()
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// sample sums the throughput counter over its labels.
func (u *UI) sample() {
	mfs, err := u.cfg.Metrics.Gather()
	if err != nil {
		u.log.Warn("gather metrics for throughput", "err", err)
	}
	var total float64
	for _, mf := range mfs {
		if mf.GetName() != throughputMetric {
			continue
		}
		for _, m := range mf.GetMetric() {
			total += m.GetCounter().GetValue()
		}
	}
	u.tp.observe(u.cfg.Clock(), total)
}
