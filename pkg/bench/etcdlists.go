// The etcdlists scenario: issue 29's large lists read from etcd. Config
// maps of 4 KB written straight into etcd, then LISTs of all of them
// through a server with --watch-cache=false: one alone, then ten at once;
// time, throughput, the server's CPU and its RSS growth.

package bench

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/watchcache/watchcache/pkg/pki"
)

const (
	// etcdListsConcurrent is how many LISTs run at once in the second
	// phase, as in issue 29.
	etcdListsConcurrent = 10
	// etcdListsDataBytes is the size of each config map's data, as in
	// issue 29.
	etcdListsDataBytes = 4096
	// etcdListsNamespaces is how many namespaces the config maps are spread
	// over.
	etcdListsNamespaces = 50
	// etcdListsTimeout bounds each phase: ten lists still running after it
	// are a failure the report shows, not a hang.
	etcdListsTimeout = 10 * time.Minute
	// rssSampleInterval is how often the server's RSS is read while lists
	// run, for its peak.
	rssSampleInterval = 50 * time.Millisecond
)

// configMapsResource is the built-in config maps resource, whose etcd keys
// the scenario writes.
var configMapsResource = builtinResource("", "configmaps")

// etcdListsPhase is what one phase (one list, or ten at once) measured.
type etcdListsPhase struct {
	lists   int
	o       *outcome
	elapsed time.Duration
	// fastest and slowest are the shortest and longest list that succeeded.
	fastest, slowest time.Duration
	bytes            int64 // the lists' bodies, all together
	cpu              cpuUsage
	rss              int64 // the server's peak RSS over its RSS before the phase
}

// etcdLists is the etcdlists scenario: an etcd and a cache-off server of
// its own, EtcdListConfigMaps config maps written straight into etcd (in
// protobuf, as the server stores them), one LIST of all of them alone,
// then etcdListsConcurrent at once, each reading the whole JSON response.
func (b *bench) etcdLists(ctx context.Context) error {
	s, stop, err := b.etcdListsServer(ctx)
	defer stop()
	if err != nil {
		return err
	}
	n := b.cfg.EtcdListConfigMaps
	load, err := b.putConfigMaps(ctx, n)
	if err != nil {
		return err
	}
	json := s.accepting("application/json")
	min := int64(n) * etcdListsDataBytes
	var phases []etcdListsPhase
	for _, lists := range []int{1, etcdListsConcurrent} {
		if _, err := s.memoryAfterGC(ctx); err != nil {
			return err
		}
		stopProfile := b.profileEtcdLists(ctx, s, lists)
		etcd := b.etcd
		if b.cfg.EtcdListsEmbeddedEtcd {
			etcd = nil // its CPU is the server's
		}
		p, err := measureLists(ctx, s, etcd, lists, func(ctx context.Context) (int64, error) {
			n, err := json.do(ctx, http.MethodGet, "/api/v1/configmaps", "", nil)
			if err == nil && n < min {
				err = fmt.Errorf("GET /api/v1/configmaps: %d bytes, expected at least %d", n, min)
			}
			return n, err
		})
		if err := errors.Join(err, stopProfile()); err != nil {
			return err
		}
		phases = append(phases, p)
	}
	if err := s.alive(); err != nil {
		return err
	}
	return b.finish(etcdListsScenario(n, load, phases))
}

// etcdListsServer starts the scenario's cache-off server and its etcd: a
// process of its own, or, with Config.EtcdListsEmbeddedEtcd, the server's
// embedded etcd on a free loopback port, which b.etcd then names (its url
// only: the server's process is etcd's). stop stops both.
func (b *bench) etcdListsServer(ctx context.Context) (s *server, stop func(), err error) {
	const etcdDir = "etcd-etcdlists"
	if !b.cfg.EtcdListsEmbeddedEtcd {
		if err := b.startEtcd(ctx, etcdDir); err != nil {
			return nil, func() {}, err
		}
		s, err = b.startServerAs(ctx, "etcdlists", false)
		return s, func() { b.stopOwn(s, etcdDir) }, err
	}
	port, err := freePort()
	if err != nil {
		return nil, func() {}, err
	}
	s, err = b.startServerAs(ctx, "etcdlists", false, "--etcd-client-port", fmt.Sprint(port))
	b.etcd = &process{name: "etcd (embedded)", url: fmt.Sprintf("https://127.0.0.1:%d", port)}
	return s, func() {
		b.etcd = nil
		if s != nil {
			s.stop()
		}
	}, err
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// measureLists runs lists LISTs at once, each with list, and measures them:
// their time, bytes, the CPU of server and etcd, and the server's peak RSS
// over its RSS before they began.
func measureLists(ctx context.Context, s *server, etcd *process, lists int, list func(ctx context.Context) (int64, error)) (etcdListsPhase, error) {
	p := etcdListsPhase{lists: lists, o: &outcome{}, fastest: etcdListsTimeout}
	before, err := s.residentSet()
	if err != nil {
		return p, err
	}
	peak := peakRSS(s.process, before.total)
	ctx, cancel := context.WithTimeout(ctx, etcdListsTimeout)
	defer cancel()
	var mu sync.Mutex
	began := time.Now()
	p.cpu, err = cpuDuring(s.process, etcd, func() error {
		var wg sync.WaitGroup
		for range lists {
			wg.Go(func() {
				var n int64
				d, err := timed(func() (err error) { n, err = list(ctx); return err })
				mu.Lock()
				defer mu.Unlock()
				p.o.add(d, err)
				p.bytes += n
				if err == nil {
					p.fastest, p.slowest = min(p.fastest, d), max(p.slowest, d)
				}
			})
		}
		wg.Wait()
		return nil
	})
	p.elapsed = time.Since(began)
	p.o.elapsed = p.elapsed
	if p.o.ops == 0 {
		p.fastest = 0
	}
	p.rss = peak() - before.total
	return p, err
}

// peakRSS samples p's RSS every rssSampleInterval until the function it
// returns is called, which returns the highest RSS seen (at least from).
func peakRSS(p *process, from int64) func() int64 {
	stop, done := make(chan struct{}), make(chan int64)
	go func() {
		peak := from
		tick := time.NewTicker(rssSampleInterval)
		defer tick.Stop()
		for {
			if r, err := p.residentSet(); err == nil {
				peak = max(peak, r.total)
			}
			select {
			case <-stop:
				done <- peak
				return
			case <-tick.C:
			}
		}
	}()
	return func() int64 {
		close(stop)
		return <-done
	}
}

// profileEtcdLists fetches a CPU profile of s's first seconds of the phase
// of lists LISTs into Config.EtcdListsProfiles/etcdlists-<lists>.pprof, if
// that is set; the function it returns waits for the profile.
func (b *bench) profileEtcdLists(ctx context.Context, s *server, lists int) func() error {
	if b.cfg.EtcdListsProfiles == "" {
		return func() error { return nil }
	}
	return profileCPU(ctx, s, writePathProfileSeconds, filepath.Join(b.cfg.EtcdListsProfiles, fmt.Sprintf("etcdlists-%d.pprof", lists)))
}

// profileCPU fetches a CPU profile of s's next seconds into path; the
// function it returns waits for it.
func profileCPU(ctx context.Context, s *server, seconds int, path string) func() error {
	done := make(chan error, 1)
	go func() {
		resp, err := s.send(ctx, http.MethodGet, fmt.Sprintf("/debug/pprof/profile?seconds=%d", seconds), "", nil)
		if err != nil {
			done <- err
			return
		}
		defer resp.Body.Close()
		f, err := os.Create(path)
		if err == nil {
			_, err = io.Copy(f, resp.Body)
			err = errors.Join(err, f.Close())
		}
		done <- err
	}()
	return func() error { return <-done }
}

// storedConfigMap returns the etcd key and the JSON of config map i as the
// server would store it: kind and apiVersion first, etcdListsDataBytes of
// data.
func storedConfigMap(i int) (key string, value []byte) {
	ns, name := fmt.Sprintf("etcdlists-%02d", i%etcdListsNamespaces), fmt.Sprintf("cm-%06d", i)
	value = fmt.Appendf(nil, `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":%q,"namespace":%q,"uid":"00000000-0000-4000-8000-%012d","creationTimestamp":"2026-11-28T08:00:00Z"},"data":{"filler":%q}}`,
		name, ns, i, strings.Repeat("x", etcdListsDataBytes))
	return configMapsResource.EtcdPrefix(defaultEtcdPrefix) + "/" + configMapsResource.Key(ns, name), value
}

// putConfigMaps writes n config maps (storedConfigMap) straight into
// b.etcd, as the server stores them (see putStored).
func (b *bench) putConfigMaps(ctx context.Context, n int) (directLoad, error) {
	cfg := clientv3.Config{Endpoints: []string{b.etcd.url}, DialTimeout: 10 * time.Second, Context: ctx}
	if b.cfg.EtcdListsEmbeddedEtcd {
		// The embedded etcd takes the server's own client certificate.
		files := pki.FilesIn(filepath.Join(b.dir, "server-etcdlists", "pki"))
		cert, err := tls.LoadX509KeyPair(files.EtcdClientCert, files.EtcdClientKey)
		if err != nil {
			return directLoad{}, err
		}
		ca, err := os.ReadFile(files.CACert)
		if err != nil {
			return directLoad{}, err
		}
		roots := x509.NewCertPool()
		roots.AppendCertsFromPEM(ca)
		cfg.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: roots}
	}
	client, err := clientv3.New(cfg)
	if err != nil {
		return directLoad{}, err
	}
	defer client.Close()
	label := fmt.Sprintf("%s config maps into etcd (txns)", FormatValue(Count, float64(n)))
	return b.putStored(ctx, client, label, n, configMapsResource.StorageCodec(), storedConfigMap)
}

// etcdListsScenario reports the two phases.
func etcdListsScenario(n int, load directLoad, phases []etcdListsPhase) Scenario {
	one := phases[0]
	var rows []Row
	for _, p := range phases {
		label := "one LIST alone"
		if p.lists > 1 {
			label = fmt.Sprintf("%d LISTs at once", p.lists)
		}
		metrics := []Metric{
			{Name: "all done", Unit: Seconds, Cache: p.elapsed.Seconds()},
			{Name: "fastest list", Unit: Seconds, Cache: p.fastest.Seconds()},
			{Name: "slowest list", Unit: Seconds, Cache: p.slowest.Seconds()},
			{Name: "throughput, all lists", Unit: MBPerSecond, Cache: float64(p.bytes) / 1e6 / p.elapsed.Seconds(), HigherIsBetter: true},
			{Name: "response size, all lists", Unit: Bytes, Cache: float64(p.bytes)},
			{Name: "server CPU", Unit: CPUSeconds, Cache: p.cpu.server},
			{Name: "etcd CPU", Unit: CPUSeconds, Cache: p.cpu.etcd},
			{Name: "server peak RSS growth", Unit: Bytes, Cache: float64(p.rss)},
		}
		if p.lists > 1 && one.elapsed > 0 {
			metrics = append(metrics, Metric{Name: fmt.Sprintf("time ÷ (%d × one alone)", p.lists), Unit: Count,
				Cache: p.elapsed.Seconds() / (float64(p.lists) * one.elapsed.Seconds())})
		}
		for i := range metrics {
			metrics[i].FirstOnly = true
		}
		rows = append(rows, Row{Label: label, Metrics: metrics, Incomplete: failures(map[string]*outcome{"watchcache": p.o})})
	}
	return Scenario{
		ID:    "etcdlists",
		Title: "Large lists from etcd under concurrency",
		Workload: fmt.Sprintf("%s config maps of %s of data (%s of JSON) in %d namespaces, written straight into etcd in %s, LISTed across all namespaces through a server with --watch-cache=false "+
			"(JSON over HTTPS, HTTP/1.1, a connection per list, each response read to the end): one LIST alone, then %d at once (issue 29). "+
			"RSS growth is the server's peak RSS, sampled every %s, over its RSS before the phase (after a collection).",
			FormatValue(Count, float64(n)), FormatValue(Bytes, etcdListsDataBytes), FormatValue(Bytes, float64(load.jsonBytes)), etcdListsNamespaces,
			load.took.Round(10*time.Millisecond), etcdListsConcurrent, rssSampleInterval),
		Sides: []string{"watchcache"},
		Rows:  rows,
	}
}
