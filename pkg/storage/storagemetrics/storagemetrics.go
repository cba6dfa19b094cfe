// Package storagemetrics holds the storage layer's Prometheus metrics:
// those of the etcd3 stores (objects fetched and returned by lists) and of
// the watch caches (initializations, events received and dispatched,
// watchers, consistent reads, snapshots), as kube-apiserver's
// k8s.io/apiserver/pkg/storage/etcd3/metrics and
// k8s.io/apiserver/pkg/storage/cacher/metrics, named as kube-apiserver's
// where the meaning is the same (docs/design.md lists them). A nil
// *Storage is valid and records nothing, so stores need no metrics in
// tests.
package storagemetrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// Storage are the metrics of the etcd3 stores and the watch caches.
type Storage struct {
	listFetched       *prometheus.CounterVec
	listReturned      *prometheus.CounterVec
	eventsReceived    *prometheus.CounterVec
	resourceVersion   *prometheus.GaugeVec
	initializations   *prometheus.CounterVec
	initDuration      *prometheus.HistogramVec
	initErrors        *prometheus.CounterVec
	readWait          *prometheus.HistogramVec
	snapshotsRetained *prometheus.GaugeVec
	eventsDispatched  *prometheus.CounterVec
	dispatchLatency   *prometheus.HistogramVec
	terminated        *prometheus.CounterVec
	watchers          *prometheus.GaugeVec
	consistentReads   *prometheus.CounterVec
	consistencyChecks *prometheus.CounterVec
}

// NewStorage creates the metrics and registers them on reg.
func NewStorage(reg prometheus.Registerer) *Storage {
	m := &Storage{
		listFetched: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_storage_list_fetched_objects_total",
			Help: "Objects read from storage to serve lists (before filtering), by resource and storage (etcd or watchcache).",
		}, []string{"resource", "storage"}),
		listReturned: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_storage_list_returned_objects_total",
			Help: "Objects returned by lists, by resource and storage (etcd or watchcache).",
		}, []string{"resource", "storage"}),
		eventsReceived: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_watch_cache_events_received_total",
			Help: "Events the watch cache received from etcd, by resource.",
		}, []string{"resource"}),
		resourceVersion: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "apiserver_watch_cache_resource_version",
			Help: "The revision the watch cache has reached, by resource.",
		}, []string{"resource"}),
		initializations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_watch_cache_initializations_total",
			Help: "Watch cache initializations (first list and every re-list), by resource.",
		}, []string{"resource"}),
		initDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "apiserver_watch_cache_initialization_duration_seconds",
			Help:    "Time to list a resource from etcd into the watch cache, by resource.",
			Buckets: prometheus.ExponentialBuckets(0.01, 2, 14),
		}, []string{"resource"}),
		initErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_watch_cache_initialization_errors_total",
			Help: "Failed watch cache initializations and broken watches that forced a re-list, by resource.",
		}, []string{"resource"}),
		readWait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "apiserver_watch_cache_read_wait_seconds",
			Help:    "Time reads waited for the watch cache to reach the revision they need, by resource.",
			Buckets: []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 3},
		}, []string{"resource"}),
		snapshotsRetained: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "apiserver_watch_cache_snapshots",
			Help: "Snapshots the watch cache keeps for exact-revision lists and continuations, by resource.",
		}, []string{"resource"}),
		eventsDispatched: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_watch_cache_events_dispatched_total",
			Help: "Events delivered by the watch cache to watchers (one per watcher reached), by resource.",
		}, []string{"resource"}),
		dispatchLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "apiserver_watch_cache_dispatch_duration_seconds",
			Help:    "Time to dispatch one revision's events to every watcher they concern, by resource.",
			Buckets: []float64{0.00001, 0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.25},
		}, []string{"resource"}),
		terminated: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_terminated_watchers_total",
			Help: "Watchers closed because they could not keep up with the events, by resource.",
		}, []string{"resource"}),
		watchers: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "apiserver_watch_cache_watchers",
			Help: "Watchers served by the watch cache, by resource.",
		}, []string{"resource"}),
		consistentReads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_watch_cache_consistent_read_total",
			Help: "Consistent reads the watch cache handled: served (success=true), or, when it could not catch up in time, refused (success=false, fallback=false) or sent to etcd (fallback=true).",
		}, []string{"resource", "success", "fallback"}),
		consistencyChecks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_storage_consistency_checks_total",
			Help: "Comparisons of a watch cache with etcd, by resource and status (success, failure: they differ, error: no verdict).",
		}, []string{"resource", "status"}),
	}
	reg.MustRegister(m.consistencyChecks, m.consistentReads, m.listFetched, m.listReturned, m.eventsReceived, m.resourceVersion,
		m.initializations, m.initDuration, m.initErrors, m.readWait, m.snapshotsRetained,
		m.eventsDispatched, m.dispatchLatency, m.terminated, m.watchers)
	return m
}

// Storage names for list metrics.
const (
	StorageEtcd  = "etcd"
	StorageCache = "watchcache"
)

// ListServed records one list: objects examined and objects returned.
func (m *Storage) ListServed(resource, storage string, fetched, returned int) {
	if m == nil {
		return
	}
	m.listFetched.WithLabelValues(resource, storage).Add(float64(fetched))
	m.listReturned.WithLabelValues(resource, storage).Add(float64(returned))
}

// EventReceived records an event applied to a cache, which has reached rv.
func (m *Storage) EventReceived(resource string) {
	if m == nil {
		return
	}
	m.eventsReceived.WithLabelValues(resource).Inc()
}

// ResourceVersion records the revision a cache has reached.
func (m *Storage) ResourceVersion(resource string, rv uint64) {
	if m == nil {
		return
	}
	m.resourceVersion.WithLabelValues(resource).Set(float64(rv))
}

// Initialized records a cache (re)initialization that took seconds.
func (m *Storage) Initialized(resource string, seconds float64) {
	if m == nil {
		return
	}
	m.initializations.WithLabelValues(resource).Inc()
	m.initDuration.WithLabelValues(resource).Observe(seconds)
}

// InitializationFailed records a failed initialization or a broken watch.
func (m *Storage) InitializationFailed(resource string) {
	if m == nil {
		return
	}
	m.initErrors.WithLabelValues(resource).Inc()
}

// ReadWaited records how long a read waited for freshness.
func (m *Storage) ReadWaited(resource string, seconds float64) {
	if m == nil {
		return
	}
	m.readWait.WithLabelValues(resource).Observe(seconds)
}

// SnapshotsRetained records how many snapshots a cache keeps.
func (m *Storage) SnapshotsRetained(resource string, n int) {
	if m == nil {
		return
	}
	m.snapshotsRetained.WithLabelValues(resource).Set(float64(n))
}

// EventsDispatched records one revision dispatched: events delivered to
// watchers, and the time it took.
func (m *Storage) EventsDispatched(resource string, delivered int, seconds float64) {
	if m == nil {
		return
	}
	m.eventsDispatched.WithLabelValues(resource).Add(float64(delivered))
	m.dispatchLatency.WithLabelValues(resource).Observe(seconds)
}

// WatcherTerminated records a watcher closed for being too slow.
func (m *Storage) WatcherTerminated(resource string) {
	if m == nil {
		return
	}
	m.terminated.WithLabelValues(resource).Inc()
}

// WatchersChanged records watchers added (delta > 0) or removed.
func (m *Storage) WatchersChanged(resource string, delta int) {
	if m == nil {
		return
	}
	m.watchers.WithLabelValues(resource).Add(float64(delta))
}

// ConsistentRead records the outcome of a consistent read from the cache.
func (m *Storage) ConsistentRead(resource string, success, fallback bool) {
	if m == nil {
		return
	}
	m.consistentReads.WithLabelValues(resource, strconv.FormatBool(success), strconv.FormatBool(fallback)).Inc()
}

// ConsistencyChecked records the outcome of a consistency check.
func (m *Storage) ConsistencyChecked(resource, status string) {
	if m == nil {
		return
	}
	m.consistencyChecks.WithLabelValues(resource, status).Inc()
}
