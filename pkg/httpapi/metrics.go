// The request metrics named as kube-apiserver's (apiserver_request_total,
// apiserver_request_duration_seconds) and the /metrics handler.

package httpapi

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are the server's request metrics, named as kube-apiserver's.
type metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	watchers *prometheus.GaugeVec
}

func newMetrics(reg *prometheus.Registry) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_request_total",
			Help: "Requests served, by verb, group, resource and HTTP code.",
		}, []string{"verb", "group", "resource", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "apiserver_request_duration_seconds",
			Help:    "Time to serve a request (for watches: the whole stream), by verb, group and resource.",
			Buckets: []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"verb", "group", "resource"}),
		watchers: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "apiserver_longrunning_requests",
			Help: "Watches being served, by group and resource.",
		}, []string{"group", "resource"}),
	}
	reg.MustRegister(m.requests, m.duration, m.watchers,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

func (m *metrics) observe(req *request, code int, elapsed time.Duration) {
	m.requests.WithLabelValues(req.verb, req.res.Group, req.res.Plural, strconv.Itoa(code)).Inc()
	m.duration.WithLabelValues(req.verb, req.res.Group, req.res.Plural).Observe(elapsed.Seconds())
}

func metricsHandler(reg *prometheus.Registry) http.Handler {
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
}
