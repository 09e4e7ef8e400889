package controller

import (
	"context"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	baton "github.com/batonhq/baton"
	"github.com/batonhq/baton/queue"
)

// Metrics are the engine's Prometheus measurements.
type Metrics struct {
	created      prometheus.Counter
	claimLatency *prometheus.HistogramVec
	claimed      *prometheus.CounterVec
	taskDuration *prometheus.HistogramVec
	outcomes     *prometheus.CounterVec
	leaseExpired *prometheus.CounterVec
	leaseLost    prometheus.Counter
	pdfStalled   prometheus.Counter
	reapFailed   *prometheus.CounterVec

	queueGauges *queueCollector
}

// NewMetrics creates the engine metrics and registers them on reg (a fresh
// registry when nil).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	m := &Metrics{
		created: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "baton_tasks_created_total", Help: "Tasks enqueued through this controller.",
		}),
		claimLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "baton_claim_duration_seconds",
			Help:    "Time a claim request spent in the controller, including its long-poll wait; result=tasks|empty.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 5, 30, 60},
		}, []string{"result"}),
		claimed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "baton_tasks_claimed_total", Help: "Tasks handed to workers, per queue.",
		}, []string{"queue"}),
		taskDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "baton_task_duration_seconds",
			Help:    "Time from claim to accepted result, per queue (results reaching the controller that handed the task out).",
			Buckets: prometheus.ExponentialBuckets(0.001, 2.5, 14),
		}, []string{"queue"}),
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "baton_task_outcomes_total", Help: "Accepted results per task type (a pipeline step) and outcome, counted by the controller that handed the task out.",
		}, []string{"type", "outcome"}),
		leaseExpired: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "baton_lease_expired_total", Help: "Leases that expired and were reaped, per queue.",
		}, []string{"queue"}),
		leaseLost: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "baton_lease_lost_total", Help: "Results refused because their lease token was not current.",
		}),
		pdfStalled: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "conversion_tasks_stalled_total", Help: "PDF conversion tasks that stalled (lease expired or browser lost).",
		}),
		reapFailed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "baton_tasks_reaped_total", Help: "Reaped tasks per result: stalled (requeued) or failed (attempts spent).",
		}, []string{"result"}),
		queueGauges: &queueCollector{
			ready:   prometheus.NewDesc("baton_queue_ready", "Tasks claimable now.", []string{"queue"}, nil),
			running: prometheus.NewDesc("baton_queue_processing", "Tasks processing under a lease.", []string{"queue"}, nil),
			retry:   prometheus.NewDesc("baton_queue_retry", "Tasks waiting for a retry or a later run time.", []string{"queue"}, nil),
			dead:    prometheus.NewDesc("baton_queue_dead", "Failed tasks within retention.", []string{"queue"}, nil),
			paused:  prometheus.NewDesc("baton_queue_paused", "1 when the queue is paused.", []string{"queue"}, nil),
			oldest:  prometheus.NewDesc("baton_queue_oldest_age_seconds", "Age of the oldest claimable task.", []string{"queue"}, nil),
			fast:    prometheus.NewDesc("queue_fast_length", "Tasks waiting in pdf.fast (ready + retry).", nil, nil),
			slow:    prometheus.NewDesc("queue_slow_length", "Tasks waiting in pdf.slow (ready + retry).", nil, nil),
		},
	}
	reg.MustRegister(m.created, m.claimLatency, m.claimed, m.taskDuration, m.outcomes,
		m.leaseExpired, m.leaseLost, m.pdfStalled, m.reapFailed, m.queueGauges)
	return m
}

func (m *Metrics) attach(c *Controller) { m.queueGauges.c = c }

// StalledPDF counts a PDF task that stalled outside the reaper (a browser
// crash reported by a worker).
func (m *Metrics) StalledPDF() { m.pdfStalled.Inc() }

func (m *Metrics) observeClaim(d time.Duration, tasks []baton.Task) {
	if len(tasks) == 0 {
		m.claimLatency.WithLabelValues("empty").Observe(d.Seconds())
		return
	}
	m.claimLatency.WithLabelValues("tasks").Observe(d.Seconds())
	for i := range tasks {
		m.claimed.WithLabelValues(tasks[i].Queue).Inc()
	}
}

// observeResult records an accepted result of a task claimed here.
func (m *Metrics) observeResult(c *claimed, o baton.Outcome) {
	m.taskDuration.WithLabelValues(c.task.Queue).Observe(time.Since(c.at).Seconds())
	m.outcomes.WithLabelValues(c.task.Type, string(o)).Inc()
}

func (m *Metrics) observeReap(st queue.ReapStats) {
	if st.Stalled > 0 {
		m.reapFailed.WithLabelValues("stalled").Add(float64(st.Stalled))
	}
	if st.Failed > 0 {
		m.reapFailed.WithLabelValues("failed").Add(float64(st.Failed))
	}
	for _, q := range st.Queues {
		m.leaseExpired.WithLabelValues(q).Inc()
		if strings.HasPrefix(q, "pdf.") {
			m.pdfStalled.Inc()
		}
	}
}

// queueCollector reads queue sizes from the store at scrape time.
type queueCollector struct {
	c                                                       *Controller
	ready, running, retry, dead, paused, oldest, fast, slow *prometheus.Desc
}

func (q *queueCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{q.ready, q.running, q.retry, q.dead, q.paused, q.oldest, q.fast, q.slow} {
		ch <- d
	}
}

func (q *queueCollector) Collect(ch chan<- prometheus.Metric) {
	if q.c == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	stats, err := q.c.store.Queues(ctx, q.c.now())
	if err != nil {
		return
	}
	var fast, slow float64
	for _, s := range stats {
		ch <- prometheus.MustNewConstMetric(q.ready, prometheus.GaugeValue, float64(s.Ready), s.Name)
		ch <- prometheus.MustNewConstMetric(q.running, prometheus.GaugeValue, float64(s.Running), s.Name)
		ch <- prometheus.MustNewConstMetric(q.retry, prometheus.GaugeValue, float64(s.Retry), s.Name)
		ch <- prometheus.MustNewConstMetric(q.dead, prometheus.GaugeValue, float64(s.Dead), s.Name)
		p := 0.0
		if s.Paused {
			p = 1
		}
		ch <- prometheus.MustNewConstMetric(q.paused, prometheus.GaugeValue, p, s.Name)
		ch <- prometheus.MustNewConstMetric(q.oldest, prometheus.GaugeValue, float64(s.OldestAgeMs)/1000, s.Name)
		switch s.Name {
		case "pdf.fast":
			fast = float64(s.Ready + s.Retry)
		case "pdf.slow":
			slow = float64(s.Ready + s.Retry)
		}
	}
	ch <- prometheus.MustNewConstMetric(q.fast, prometheus.GaugeValue, fast)
	ch <- prometheus.MustNewConstMetric(q.slow, prometheus.GaugeValue, slow)
}
