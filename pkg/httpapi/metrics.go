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
	"github.com/watchcache/watchcache/pkg/encoding"
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
			Help: "Requests served, by verb (as kube-apiserver's: GET, LIST, WATCH, POST, PUT, PATCH, APPLY, DELETE), group, resource and HTTP code.",
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

// metricVerbs are kube-apiserver's verb labels of the requests' verbs:
// the HTTP method, with LIST and WATCH apart (and APPLY, see metricVerb),
// so that its dashboards and SLO queries (verb!~"WATCH|CONNECT") read
// ours.
var metricVerbs = map[string]string{
	"get": "GET", "list": "LIST", "watch": "WATCH", "create": "POST", "update": "PUT", "patch": "PATCH",
	"delete": "DELETE", "deletecollection": "DELETE",
}

// metricVerb is the verb label of req: a PATCH of an apply patch is APPLY,
// as kube-apiserver labels it.
func metricVerb(req *request, r *http.Request) string {
	verb, ok := metricVerbs[req.verb]
	if !ok {
		verb = r.Method
	}
	if verb == "PATCH" && encoding.MediaType(r) == encoding.ApplyPatchType {
		verb = "APPLY"
	}
	return verb
}

func (m *metrics) observe(req *request, r *http.Request, code int, elapsed time.Duration) {
	verb := metricVerb(req, r)
	m.requests.WithLabelValues(verb, req.res.Group, req.res.Plural, strconv.Itoa(code)).Inc()
	m.duration.WithLabelValues(verb, req.res.Group, req.res.Plural).Observe(elapsed.Seconds())
}

func metricsHandler(reg *prometheus.Registry) http.Handler {
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
}
