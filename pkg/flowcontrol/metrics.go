// The apiserver_flowcontrol_* metrics, named, labelled and described as
// kube-apiserver's.

package flowcontrol

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	executing, inqueue *prometheus.GaugeVec
	rejectedTotal      *prometheus.CounterVec
	dispatchedTotal    *prometheus.CounterVec
	wait               *prometheus.HistogramVec
	nominal            *prometheus.GaugeVec
}

// newMetrics registers the metrics with reg (nil: not registered).
func newMetrics(reg prometheus.Registerer) *metrics {
	fsLevel := []string{"flow_schema", "priority_level"}
	m := &metrics{
		executing: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "apiserver_flowcontrol_current_executing_requests",
			Help: "[BETA] Number of requests in initial (for a WATCH) or any (for a non-WATCH) execution stage in the API Priority and Fairness subsystem"}, fsLevel),
		inqueue: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "apiserver_flowcontrol_current_inqueue_requests",
			Help: "[BETA] Number of requests currently pending in queues of the API Priority and Fairness subsystem"}, fsLevel),
		rejectedTotal: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "apiserver_flowcontrol_rejected_requests_total",
			Help: "[BETA] Number of requests rejected by API Priority and Fairness subsystem"}, append(fsLevel, "reason")),
		dispatchedTotal: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "apiserver_flowcontrol_dispatched_requests_total",
			Help: "[BETA] Number of requests executed by API Priority and Fairness subsystem"}, fsLevel),
		wait: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "apiserver_flowcontrol_request_wait_duration_seconds",
			Help:    "[BETA] Length of time a request spent waiting in its queue",
			Buckets: []float64{0, 0.005, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30}}, append(fsLevel, "execute")),
		nominal: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "apiserver_flowcontrol_nominal_limit_seats",
			Help: "[BETA] Nominal number of execution seats configured for each priority level"}, []string{"priority_level"}),
	}
	if reg != nil {
		reg.MustRegister(m.executing, m.inqueue, m.rejectedTotal, m.dispatchedTotal, m.wait, m.nominal)
	}
	return m
}

func (m *metrics) nominalLimit(level string, seats int) {
	m.nominal.WithLabelValues(level).Set(float64(seats))
}

func (m *metrics) levelGone(level string) { m.nominal.DeleteLabelValues(level) }

func (m *metrics) inQueue(r *request, delta float64) {
	m.inqueue.WithLabelValues(r.schema, r.level.name).Add(delta)
}

// dispatched counts a request that starts executing, and how long it
// waited.
func (m *metrics) dispatched(r *request) {
	m.dispatchedTotal.WithLabelValues(r.schema, r.level.name).Inc()
	m.executing.WithLabelValues(r.schema, r.level.name).Inc()
	m.wait.WithLabelValues(r.schema, r.level.name, "true").Observe(time.Since(r.arrived).Seconds())
}

func (m *metrics) finished(r *request) { m.executing.WithLabelValues(r.schema, r.level.name).Dec() }

// rejected counts a refused request, and how long it waited.
func (m *metrics) rejected(schema, level, reason string, waited time.Duration) {
	m.rejectedTotal.WithLabelValues(schema, level, reason).Inc()
	m.wait.WithLabelValues(schema, level, "false").Observe(waited.Seconds())
}
