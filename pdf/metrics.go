package pdf

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/batonhq/baton/pdf/chromium"
)

// Metrics are the PDF service's Prometheus measurements (the seed's names).
// conversion_tasks_stalled_total, queue_fast_length and queue_slow_length
// are the controller's.
type Metrics struct {
	restarts       *prometheus.CounterVec
	memory         prometheus.Histogram
	renders        *prometheus.HistogramVec
	idemHits       prometheus.Counter
	replays        prometheus.Counter
	callbacks      *prometheus.CounterVec
	stalledCounter func()
}

// NewMetrics creates the metrics and registers them on reg (a fresh
// registry when nil). stalled counts a stalled PDF task (the controller's
// Metrics.StalledPDF); nil counts nothing.
func NewMetrics(reg prometheus.Registerer, stalled func()) *Metrics {
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	if stalled == nil {
		stalled = func() {}
	}
	m := &Metrics{
		restarts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "browser_restart_total", Help: "Chromium restarts by reason: max_tasks, memory, unhealthy, crash.",
		}, []string{"reason"}),
		memory: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "browser_memory_rss_bytes",
			Help:    "Memory of each browser's whole process tree (proportional set size, the fair share of RSS), sampled every few seconds.",
			Buckets: prometheus.ExponentialBuckets(64<<20, 1.5, 12),
		}),
		renders: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "pdf_render_duration_seconds",
			Help:    "Duration of one render by its result kind (ok, timeout, navigation, refused, crashed, hung, invalid, canceled, ...).",
			Buckets: []float64{.1, .25, .5, 1, 2, 4, 8, 15, 30, 60, 120},
		}, []string{"kind"}),
		idemHits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "idempotency_hits_total", Help: "PDF task requests answered from an earlier request with the same Idempotency-Key.",
		}),
		replays: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "callback_replay_total", Help: "Callback replays requested (POST /api/tasks/{id}/callback/replay).",
		}),
		callbacks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "callback_attempts_total", Help: "Callback attempts by result: delivered or failed.",
		}, []string{"result"}),
		stalledCounter: stalled,
	}
	reg.MustRegister(m.restarts, m.memory, m.renders, m.idemHits, m.replays, m.callbacks)
	return m
}

// PoolHooks returns chromium hooks feeding the browser metrics.
func (m *Metrics) PoolHooks() chromium.Hooks {
	return chromium.Hooks{
		OnRestart:      func(_ int, reason string) { m.restarts.WithLabelValues(reason).Inc() },
		OnMemorySample: func(_ int, pss int64) { m.memory.Observe(float64(pss)) },
		OnRender: func(d time.Duration, kind chromium.Kind) {
			k := string(kind)
			if k == "" {
				k = "ok"
			}
			m.renders.WithLabelValues(k).Observe(d.Seconds())
		},
	}
}

func (m *Metrics) callbackAttempt(ok bool) {
	if ok {
		m.callbacks.WithLabelValues("delivered").Inc()
	} else {
		m.callbacks.WithLabelValues("failed").Inc()
	}
}
