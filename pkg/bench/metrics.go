// A row's metrics: latency percentiles, failures, CPU per operation of the
// server and etcd, memory after GC, and a series scraped from /metrics.

package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// latencyMetrics are a row's usual figures: p50, p90 and p99 latency and
// throughput, of the cache-on and the cache-off side.
func latencyMetrics(cache, etcd *outcome) []Metric {
	m := percentileMetrics(cache, etcd, "p50", "p90", "p99")
	return append(m, Metric{Name: "throughput", Unit: PerSecond, Cache: cache.throughput(), Etcd: etcd.throughput(), HigherIsBetter: true})
}

// percentiles maps the metric names percentileMetrics knows to quantiles.
var percentiles = map[string]float64{"p50": 0.5, "p90": 0.9, "p99": 0.99, "max": 1}

// percentileMetrics returns the named latency percentiles of both sides.
func percentileMetrics(cache, etcd *outcome, names ...string) []Metric {
	var m []Metric
	for _, name := range names {
		q := percentiles[name]
		m = append(m, Metric{Name: name, Unit: Seconds, Cache: cache.latency.percentile(q).Seconds(), Etcd: etcd.latency.percentile(q).Seconds()})
	}
	return m
}

// failures says which operations failed, or "" if none did: a benchmark
// whose operations fail measures something else, so the report says so.
func failures(sides map[string]*outcome) string {
	var notes []string
	for _, name := range slices.Sorted(maps.Keys(sides)) {
		if o := sides[name]; o != nil && o.failures > 0 {
			notes = append(notes, fmt.Sprintf("%s: %d of %d operations failed, first: %v", name, o.failures, o.failures+o.ops, o.firstErr))
		}
	}
	return strings.Join(notes, "; ")
}

// cpuUsage is the processor time the measured server and etcd used.
type cpuUsage struct{ server, etcd float64 }

// cpuMetrics are the server's and etcd's processor time per successful
// operation ("server CPU per <op>", "etcd CPU per <op>") of both sides.
func cpuMetrics(op string, cpu map[string]cpuUsage, sides map[string]*outcome) []Metric {
	per := func(side string, used float64) float64 { return used / float64(max(sides[side].ops, 1)) }
	return []Metric{
		{Name: "server CPU per " + op, Unit: CPUSeconds, Cache: per("cache", cpu["cache"].server), Etcd: per("etcd", cpu["etcd"].server)},
		{Name: "etcd CPU per " + op, Unit: CPUSeconds, Cache: per("cache", cpu["cache"].etcd), Etcd: per("etcd", cpu["etcd"].etcd)},
	}
}

// cpuDuring runs work and returns the processor time s and etcd used
// meanwhile, read from the OS.
func (b *bench) cpuDuring(s *server, work func() error) (cpuUsage, error) {
	return cpuDuring(s.process, b.etcd, work)
}

// cpuDuring runs work and returns the processor time server and etcd used
// meanwhile, read from the OS; etcd may be nil (etcd in the server's
// process), its time then 0.
func cpuDuring(server, etcd *process, work func() error) (cpuUsage, error) {
	etcdSeconds := func() (float64, error) {
		if etcd == nil {
			return 0, nil
		}
		return etcd.cpuSeconds()
	}
	s0, err1 := server.cpuSeconds()
	e0, err2 := etcdSeconds()
	if err := errors.Join(err1, err2); err != nil {
		return cpuUsage{}, err
	}
	if err := work(); err != nil {
		return cpuUsage{}, err
	}
	s1, err1 := server.cpuSeconds()
	e1, err2 := etcdSeconds()
	return cpuUsage{server: s1 - s0, etcd: e1 - e0}, errors.Join(err1, err2)
}

// memory is a server's resident set (resident: the whole of it, split into
// anon and file as residentSet) and its Go heap: heap is the live objects
// (HeapAlloc, after a collection), heapInuse the spans holding them
// (HeapInuse: heap plus the free room in those spans); and, where etcd runs
// in a process of its own and the caller read it, etcd's resident set.
type memory struct {
	resident, anon, file, heap, heapInuse int64
	etcd                                  residentSet
}

// memoryAfterGC makes s collect garbage (its heap profile with gc=1 does)
// and reads its heap from /metrics and its resident set from the OS.
// It collects twice: buffers in sync.Pools (gRPC's receive buffers) survive
// one collection in the pools' victim cache.
func (s *server) memoryAfterGC(ctx context.Context) (memory, error) {
	for range 2 {
		if _, err := s.do(ctx, http.MethodGet, "/debug/pprof/heap?gc=1", "", nil); err != nil {
			return memory{}, err
		}
	}
	time.Sleep(time.Second) // let the runtime return freed pages to the OS
	heap, err := s.scrape(ctx, "go_memstats_heap_alloc_bytes")
	if err != nil {
		return memory{}, err
	}
	inuse, err := s.scrape(ctx, "go_memstats_heap_inuse_bytes")
	if err != nil {
		return memory{}, err
	}
	r, err := s.residentSet()
	return memory{resident: r.total, anon: r.anon, file: r.file, heap: int64(heap), heapInuse: int64(inuse)}, err
}

// scrape returns the value of one series from /metrics, named as
// Prometheus's text format writes it: name{label="value",...}.
func (s *server) scrape(ctx context.Context, series string) (float64, error) {
	resp, err := s.send(ctx, http.MethodGet, "/metrics", "", nil)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	lines := bufio.NewScanner(resp.Body)
	for lines.Scan() {
		if value, ok := strings.CutPrefix(lines.Text(), series+" "); ok {
			return strconv.ParseFloat(value, 64)
		}
	}
	return 0, fmt.Errorf("%s: no metric %s", s.name, series)
}
