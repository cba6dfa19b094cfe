// The nodes scenario: a cluster's load on one cache-on server, and its report
// of each SLI's p99 against its SLO.

package bench

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/watchcache/watchcache/pkg/benchdata"
)

// nodes is the nodes scenario: a cluster of ClusterNodes nodes on one
// cache-on server. PodsPerNode pods per node are written straight into a
// new etcd; the server starts over them; the benchmark creates the
// namespaces and the Nodes (with their status) over HTTP. Then a
// scheduler-like and a controller-like client list and watch all pods, and
// every node's kubelet starts (see cluster.kubelet). Once all have, for
// ClusterDuration, the kubelets renew their Leases and patch their nodes'
// status, ChurnRate pods a second are created and as many deleted, and the
// controller-like client LISTs a namespace's pods namespaceListRate times
// a second. Only the cache-on server is measured: the cache-off one would
// serve each of the thousands of watches from an etcd watch of its own.
func (b *bench) nodes(ctx context.Context) error {
	n := b.cfg.ClusterNodes
	pods := n * b.cfg.PodsPerNode
	watchers := 2*n + 2
	if err := ensureFileLimit(uint64(n) + 1000); err != nil {
		return err
	}
	const etcdDir = "etcd-nodes"
	if err := b.startEtcd(ctx, etcdDir); err != nil {
		return err
	}
	var s *server
	defer func() { b.stopOwn(s, etcdDir) }()
	loaded, err := b.putPods(ctx, 0, pods, b.cfg.Namespaces, n)
	if err != nil {
		return err
	}
	if s, err = b.startServerAs(ctx, "nodes", true); err != nil {
		return err
	}
	ready := time.Since(s.started)
	if err := b.createPodNamespaces(ctx, s); err != nil {
		return err
	}
	for _, rbac := range [][2]string{{"clusterroles", nodesRole}, {"clusterrolebindings", nodesBinding}} {
		if _, err := s.create(ctx, "/apis/rbac.authorization.k8s.io/v1/"+rbac[0], []byte(rbac[1])); err != nil {
			return err
		}
	}
	if _, _, err := b.writeAll(ctx, "nodes and their status", n, func(ctx context.Context, i int) (int64, error) {
		name := benchdata.Node(i, n)
		if _, err := s.create(ctx, "/api/v1/nodes", nodeObject(name, i)); err != nil {
			return 0, err
		}
		return s.do(ctx, http.MethodPatch, "/api/v1/nodes/"+name+"/status", "application/merge-patch+json", nodeStatus(name, i, time.Now()))
	}); err != nil {
		return err
	}
	c := &cluster{cfg: &b.cfg, s: s, bar: b.bar, nodes: n, namespaces: b.cfg.Namespaces, pods: pods, steady: make(chan struct{})}
	before, err := s.memoryAfterGC(ctx)
	if err != nil {
		return err
	}

	clients, stopClients := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		stopClients()
		wg.Wait()
	}()
	startedAt := time.Now()
	for range 2 { // the scheduler-like and the controller-like informer
		r := &reflector{client: s.ownConnection(&c.retried), path: "/api/v1/pods", lists: &c.calls.informerLists,
			events: &c.calls.informerEvents, failed: &c.calls.watchErrors, clock: &c.clock, watching: func() { c.watchers.Add(1) }}
		wg.Go(func() { r.run(clients) })
	}
	b.bar.start("starting kubelets", n)
	slots := make(chan struct{}, kubeletStarts)
	for i := range n {
		wg.Go(func() { c.kubelet(clients, i, slots) })
	}
	err = c.waitForWatchers(ctx, watchers)
	b.bar.finish()
	if err != nil {
		return err
	}
	startup := time.Since(startedAt)
	with, err := s.memoryAfterGC(ctx)
	if err != nil {
		return err
	}

	close(c.steady)
	self0, err := cpuSecondsOf(os.Getpid(), "benchmark")
	if err != nil {
		return err
	}
	b.bar.start("cluster load (seconds)", int(b.cfg.ClusterDuration.Seconds()))
	ticking := make(chan struct{})
	go b.tickSeconds(ticking)
	var elapsed time.Duration
	cpu, err := b.cpuDuring(s, func() error {
		writer, lister := s.ownConnection(&c.retried), s.ownConnection(&c.retried)
		began := time.Now()
		var loads sync.WaitGroup
		loads.Go(func() {
			c.calls.podCreates = openLoop(clients, b.cfg.ChurnRate, b.cfg.ClusterDuration, func(ctx context.Context) error { return c.createPod(ctx, writer) })
		})
		loads.Go(func() {
			c.calls.podDeletes = openLoop(clients, b.cfg.ChurnRate, b.cfg.ClusterDuration, func(ctx context.Context) error { return c.deletePod(ctx, writer) })
		})
		loads.Go(func() {
			var k int
			var mu sync.Mutex
			c.calls.namespaceLists = openLoop(clients, namespaceListRate, b.cfg.ClusterDuration, func(ctx context.Context) error {
				mu.Lock()
				k++
				ns := benchdata.Namespace(k, b.cfg.Namespaces)
				mu.Unlock()
				_, err := lister.do(ctx, http.MethodGet, "/api/v1/namespaces/"+ns+"/pods", "", nil)
				return err
			})
		})
		loads.Wait()
		elapsed = time.Since(began)
		return nil
	})
	close(ticking)
	b.bar.finish()
	if err != nil {
		return err
	}
	self1, err := cpuSecondsOf(os.Getpid(), "benchmark")
	if err != nil {
		return err
	}
	end, err := s.memoryAfterGC(ctx)
	if err != nil {
		return err
	}
	stopClients()
	wg.Wait()
	if err := s.alive(); err != nil {
		return err
	}
	return b.finish(c.scenario(clusterFigures{
		loaded: loaded, ready: ready, startup: startup, elapsed: elapsed, watchers: watchers,
		before: before, with: with, end: end, cpu: cpu, selfCPU: self1 - self0,
	}))
}

// waitForWatchers waits until every watch has begun, or the server has
// exited, or 10 minutes have passed.
func (c *cluster) waitForWatchers(ctx context.Context, watchers int) error {
	deadline := time.Now().Add(10 * time.Minute)
	for int(c.watchers.Load()) < watchers {
		if err := c.s.alive(); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("only %d of %d watches began in 10 minutes", c.watchers.Load(), watchers)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}

// clusterFigures are what the nodes scenario measured besides the calls'
// latencies.
type clusterFigures struct {
	loaded                  directLoad
	ready, startup, elapsed time.Duration
	watchers                int
	before, with, end       memory
	cpu                     cpuUsage
	selfCPU                 float64
}

// scenario reports the nodes scenario: each SLI's p99 against its SLO,
// then the load achieved and what the server used.
func (c *cluster) scenario(f clusterFigures) Scenario {
	calls := &c.calls
	p99 := func(name string, o *outcome, slo time.Duration) Metric {
		return Metric{Name: name, Unit: Seconds, Cache: o.latency.percentile(0.99).Seconds(), Etcd: slo.Seconds()}
	}
	only := func(name string, u Unit, v float64) Metric {
		return Metric{Name: name, Unit: u, Cache: v, FirstOnly: true}
	}
	rate := func(o *outcome) float64 { return float64(o.ops) / f.elapsed.Seconds() }
	perWatcher := func(before, with int64) float64 { return float64(with-before) / float64(f.watchers) }
	seconds := f.elapsed.Seconds()
	reads := []Metric{p99("node GET, resourceVersion=0", &calls.nodeGet.o, sloSingleObject)}
	if calls.leaseGet.o.ops+calls.leaseGet.o.failures > 0 {
		reads = append(reads, p99("Lease GET after a conflict", &calls.leaseGet.o, sloSingleObject))
	}
	all := map[string]*outcome{
		"Lease create": &calls.leaseCreate.o, "Lease renewal": &calls.leaseRenew.o, "Lease GET": &calls.leaseGet.o,
		"node status": &calls.nodeStatus.o, "node GET": &calls.nodeGet.o, "pod create": calls.podCreates, "pod delete": calls.podDeletes,
		"kubelet pod LIST": &calls.kubeletPodLists.o, "kubelet node LIST": &calls.kubeletNodeLists.o, "informer LIST": &calls.informerLists.o,
		"namespace LIST": calls.namespaceLists, "watch": &calls.watchErrors.o,
	}
	sc := Scenario{
		ID:    "nodes",
		Title: fmt.Sprintf("A %s-node cluster on one cache-on server: SLIs against Kubernetes' SLOs", FormatValue(Count, float64(c.nodes))),
		Workload: fmt.Sprintf("%s; then the cache-on server started over them (ready in %s), and the benchmark created %d namespaces and %s Nodes with their status over HTTP. "+
			"A scheduler-like and a controller-like informer (the administrator, as the pod churn) LIST all pods (resourceVersion=0) and watch them; %s kubelet-like clients, %d starting at a time, each on an HTTP/2 connection of its own "+
			"(as real kubelets), each as its node's kubelet user (a bearer token of --token-auth-file, in group system:nodes, allowed by RBAC through one ClusterRoleBinding; "+
			"so, unlike the administrator, subject to --max-requests-inflight and --max-mutating-requests-inflight), create their Lease in %s, LIST (resourceVersion=0) and watch (allowWatchBookmarks) their node's pods (fieldSelector spec.nodeName) "+
			"and their Node (fieldSelector metadata.name): %s watches, all begun in %s. Then, for %s: every kubelet renews its Lease (PUT) every %s and every %s GETs its Node "+
			"(resourceVersion=0) and patches its status' heartbeats (strategic merge patch of status.conditions on nodes/<node>/status); %g pods a second are created on nodes round robin "+
			"and %g deleted (gracePeriodSeconds=0); the controller-like client LISTs a namespace's %s pods (consistently) %d times a second. "+
			"Watch latency is from the acknowledgement of a pod's create or delete (its response, by name and resourceVersion) to the receipt of its event by the kubelet of its node, "+
			"or by either informer. A kubelet's Lease create is its first request: its connection's TLS handshake is in its latency. Requests answered 429 (the server's --max-requests-inflight) are retried after Retry-After, as client-go does, the wait counted in their latency. "+
			"**margin** is SLO ÷ measured p99 (the target is ≥ 100×); the SLOs are Kubernetes' (p99 ≤ 1 s for mutating and single-object calls, ≤ 5 s for namespace LISTs, "+
			"≤ 30 s for cluster-scoped ones; the kubelets' LISTs with a field selector are cluster-scoped) and the project's < 100 ms for watch events. "+
			"Only the cache-on server runs this scenario: the cache-off one would serve each of these watches from an etcd watch of its own. "+
			"Memory per watcher is the server's growth (after a forced GC) from before the clients started to once every watch had begun, divided by the watches "+
			"(the kubelets' connections, one per two watches, included). "+
			"CPU is processor time over the run's %s from /proc, in cores; the benchmark's own process (every client) runs on the same cores.",
			f.loaded.describe(), f.ready.Round(time.Millisecond), c.namespaces, FormatValue(Count, float64(c.nodes)),
			FormatValue(Count, float64(c.nodes)), kubeletStarts, leaseNamespace, FormatValue(Count, float64(f.watchers)), f.startup.Round(time.Millisecond),
			c.cfg.ClusterDuration, c.cfg.LeaseInterval, c.cfg.NodeStatusInterval, c.cfg.ChurnRate, c.cfg.ChurnRate,
			FormatValue(Count, float64(c.pods/c.namespaces)), namespaceListRate, f.elapsed.Round(time.Second)),
		Sides: []string{"measured", "SLO"},
		Ratio: "margin",
		Rows: []Row{
			{Label: "mutating calls, p99", Metrics: []Metric{
				p99("Lease create", &calls.leaseCreate.o, sloSingleObject),
				p99("Lease renewal (PUT)", &calls.leaseRenew.o, sloSingleObject),
				p99("node status (PATCH)", &calls.nodeStatus.o, sloSingleObject),
				p99("pod create", calls.podCreates, sloSingleObject),
				p99("pod delete", calls.podDeletes, sloSingleObject),
			}},
			{Label: "single-object reads, p99", Metrics: reads},
			{Label: "namespace LISTs, p99", Metrics: []Metric{
				p99(fmt.Sprintf("a namespace's pods (%s), consistent", FormatValue(Count, float64(c.pods/c.namespaces))), calls.namespaceLists, sloNamespaceList),
			}},
			{Label: "cluster-scoped LISTs, p99", Metrics: []Metric{
				p99("kubelet: its node's pods", &calls.kubeletPodLists.o, sloClusterList),
				p99("kubelet: its Node", &calls.kubeletNodeLists.o, sloClusterList),
				p99("informer: all pods", &calls.informerLists.o, sloClusterList),
			}},
			{Label: "watch events, p99", Metrics: []Metric{
				p99("kubelet: its node's pods", &calls.kubeletEvents.o, sloWatch),
				p99("informers: all pods", &calls.informerEvents.o, sloWatch),
			}},
			{Label: "load", Metrics: []Metric{
				only("Lease renewals", PerSecond, rate(&calls.leaseRenew.o)),
				only("node status patches", PerSecond, rate(&calls.nodeStatus.o)),
				only("pod creates", PerSecond, rate(calls.podCreates)),
				only("pod deletes", PerSecond, rate(calls.podDeletes)),
				only("events timed, kubelets", Count, float64(calls.kubeletEvents.o.ops)),
				only("events timed, informers", Count, float64(calls.informerEvents.o.ops)),
				only("watches", Count, float64(f.watchers)),
				only("start-up, every client", Seconds, f.startup.Seconds()),
				only("requests retried after 429", Count, float64(c.retried.Load())),
			}},
			{Label: "server", Metrics: []Metric{
				only("server CPU", Cores, f.cpu.server/seconds),
				only("etcd CPU", Cores, f.cpu.etcd/seconds),
				only("benchmark (clients) CPU", Cores, f.selfCPU/seconds),
				only("resident memory, before the clients", Bytes, float64(f.before.resident)),
				only("resident memory, every watch begun", Bytes, float64(f.with.resident)),
				only("resident memory, at the end", Bytes, float64(f.end.resident)),
				only("Go heap after GC, at the end", Bytes, float64(f.end.heap)),
				only("resident memory per watcher", Bytes, perWatcher(f.before.resident, f.with.resident)),
				only("Go heap per watcher", Bytes, perWatcher(f.before.heap, f.with.heap)),
			}},
		},
	}
	sc.Rows[len(sc.Rows)-1].Incomplete = failures(all)
	return sc
}
