// The write-path scenario: issue 29's table with watchcache alone. Pods
// created by 32 clients, then a kubelet-like pods/status merge patch each;
// throughput, latency per verb, the server's CPU per write and its memory
// and etcd's after the load, split into parts per pod.

package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/watchcache/watchcache/pkg/benchdata"
)

// writePathClients is how many clients create and patch at once, as in
// issue 29's comparison with kube-apiserver.
const writePathClients = 32

// writePathProfileSeconds is how long each phase's CPU profile runs (from
// the phase's start) when Config.WritePathProfiles is set.
const writePathProfileSeconds = 10

// writePathPhase is what one phase (creates or status patches) measured.
type writePathPhase struct {
	verb string // plural, e.g. "creates"
	o    *outcome
	cpu  cpuUsage
}

// writePathListClients is how many kubelet-like clients list their node's
// pods at once after the writes, as in issue 29's table.
const writePathListClients = 16

// writePathListAllPasses is how many times one client lists all pods after
// the writes.
const writePathListAllPasses = 5

// writePath is the writepath scenario: WritePathPods pods created through a
// new etcd and cache-on server (or the running server of
// Config.WritePathServer) by writePathClients clients, then given a
// pods/status merge patch each; the server's memory after them; then its
// consistent LISTs of a node's pods and of all pods.
func (b *bench) writePath(ctx context.Context) error {
	s, etcd, stop, err := b.writePathServer(ctx)
	if err != nil {
		return err
	}
	defer stop()
	if err := b.createPodNamespaces(ctx, s); err != nil {
		return err
	}
	if b.cfg.WritePathServer != "" {
		// A server without kube-controller-manager (kube-apiserver alone)
		// has no default ServiceAccount, which pods need to be admitted.
		if _, _, err := b.writeAll(ctx, "service accounts", b.cfg.Namespaces, func(ctx context.Context, i int) (int64, error) {
			n, err := s.create(ctx, "/api/v1/namespaces/"+benchdata.Namespace(i, b.cfg.Namespaces)+"/serviceaccounts", []byte(`{"metadata":{"name":"default"}}`))
			if statusOf(err) == http.StatusConflict {
				err = nil // made meanwhile by the server's own controller
			}
			return n, err
		}); err != nil {
			return err
		}
	}
	n, namespaces, nodes := b.cfg.WritePathPods, b.cfg.Namespaces, b.cfg.Nodes
	ownerUIDs, err := createPodOwners(ctx, s.apiClient, n, namespaces)
	if err != nil {
		return err
	}
	path := func(i int) (ns, name string) { return benchdata.Namespace(i, namespaces), fmt.Sprintf("pod-%06d", i) }
	create := writePathPhase{verb: "creates"}
	patch := writePathPhase{verb: "status patches"}
	for _, phase := range []struct {
		p  *writePathPhase
		op func(ctx context.Context, i int) error
	}{
		{&create, func(ctx context.Context, i int) error {
			ns, _ := path(i)
			owner, _ := benchdata.Owner(i)
			_, err := s.create(ctx, "/api/v1/namespaces/"+ns+"/pods", benchdata.PodOwnedBy(i, namespaces, nodes, ownerUIDs[ns+"/"+owner]))
			return err
		}},
		{&patch, func(ctx context.Context, i int) error {
			ns, name := path(i)
			_, err := s.do(ctx, http.MethodPatch, "/api/v1/namespaces/"+ns+"/pods/"+name+"/status", "application/merge-patch+json", kubeletStatusPatch(i))
			return err
		}},
	} {
		p := phase.p
		stopProfile := b.profileWritePath(ctx, s, p.verb)
		b.bar.start(p.verb, n)
		p.cpu, err = cpuDuring(s.process, etcd, func() error {
			p.o = closedLoop(ctx, writePathClients, forCount(n), func(ctx context.Context, _, i int) error {
				defer b.bar.add(1)
				return phase.op(ctx, i)
			})
			return ctx.Err()
		})
		b.bar.finish()
		if err := stopProfile(); err != nil {
			return err
		}
		if err != nil {
			return err
		}
	}
	mem, err := s.memoryAfterGC(ctx)
	if err != nil {
		return err
	}
	if etcd != nil {
		if mem.etcd, err = etcd.residentSet(); err != nil {
			return err
		}
	}
	if err := b.saveHeapProfile(ctx, s); err != nil {
		return err
	}
	byNode := closedLoop(ctx, writePathListClients, forDuration(writePathListClients, b.cfg.Duration, 1), func(ctx context.Context, client, i int) error {
		return s.listNodePods(ctx, n, nodes, client*7919+i*31)
	})
	all := closedLoop(ctx, 1, forCount(writePathListAllPasses), func(ctx context.Context, _, _ int) error {
		return s.listAtLeast(ctx, "/api/v1/pods", int64(n)*1000)
	})
	if err := s.alive(); err != nil {
		return err
	}
	return b.finish(writePathScenario(b.cfg, create, patch, mem, byNode, all))
}

// writePathServer starts a new etcd and a cache-on server for the
// writepath scenario, or, with Config.WritePathServer, attaches to the
// running server it names and to the processes of Config.WritePathPIDs.
// etcd is nil when etcd runs in the server's process; stop stops what was
// started.
func (b *bench) writePathServer(ctx context.Context) (s *server, etcd *process, stop func(), err error) {
	if b.cfg.WritePathServer == "" {
		const etcdDir = "etcd-writepath"
		if err := b.startEtcd(ctx, etcdDir); err != nil {
			return nil, nil, nil, err
		}
		s, err := b.startServerAs(ctx, "writepath", true)
		stop := func() { b.stopOwn(s, etcdDir) }
		if err != nil {
			stop()
			return nil, nil, nil, err
		}
		return s, b.etcd, stop, nil
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", b.cfg.WritePathServer)
	if err != nil {
		return nil, nil, nil, err
	}
	client, err := newAPIClient(cfg.Host, b.cfg.WritePathServer)
	if err != nil {
		return nil, nil, nil, err
	}
	p, err := attachProcess("server", b.cfg.WritePathPIDs[0])
	if err != nil {
		return nil, nil, nil, err
	}
	if len(b.cfg.WritePathPIDs) > 1 {
		if etcd, err = attachProcess("etcd", b.cfg.WritePathPIDs[1]); err != nil {
			return nil, nil, nil, err
		}
	}
	s = &server{process: p, apiClient: client, watchCache: true, label: "server"}
	return s, etcd, func() {}, s.waitReady(ctx)
}

// profileWritePath fetches a CPU profile of s's first seconds of a phase
// into Config.WritePathProfiles/writepath-<verb>.pprof, if that is set;
// the function it returns waits for the profile.
func (b *bench) profileWritePath(ctx context.Context, s *server, verb string) func() error {
	if b.cfg.WritePathProfiles == "" {
		return func() error { return nil }
	}
	done := make(chan error, 1)
	go func() {
		resp, err := s.send(ctx, http.MethodGet, fmt.Sprintf("/debug/pprof/profile?seconds=%d", writePathProfileSeconds), "", nil)
		if err != nil {
			done <- err
			return
		}
		defer resp.Body.Close()
		f, err := os.Create(filepath.Join(b.cfg.WritePathProfiles, "writepath-"+strings.ReplaceAll(verb, " ", "-")+".pprof"))
		if err == nil {
			_, err = io.Copy(f, resp.Body)
			err = errors.Join(err, f.Close())
		}
		done <- err
	}()
	return func() error { return <-done }
}

// saveHeapProfile fetches s's heap profile after the load into
// Config.WritePathProfiles/writepath-heap.pprof, if that is set: what the
// live heap of the report holds.
func (b *bench) saveHeapProfile(ctx context.Context, s *server) error {
	if b.cfg.WritePathProfiles == "" {
		return nil
	}
	resp, err := s.send(ctx, http.MethodGet, "/debug/pprof/heap", "", nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	f, err := os.Create(filepath.Join(b.cfg.WritePathProfiles, "writepath-heap.pprof"))
	if err != nil {
		return err
	}
	_, err = io.Copy(f, resp.Body)
	return errors.Join(err, f.Close())
}

// kubeletStatusPatch is pod i's status as its kubelet reports it, about
// 1.5 KB of merge patch: conditions, addresses and the container's state.
func kubeletStatusPatch(i int) []byte {
	const t = "2026-11-01T10:00:05Z"
	conditions := make([]string, 0, 5)
	for _, c := range []string{"PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled"} {
		conditions = append(conditions, fmt.Sprintf(`{"type":%q,"status":"True","lastProbeTime":null,"lastTransitionTime":%q}`, c, t))
	}
	ip, host := fmt.Sprintf("10.%d.%d.%d", i%256, (i/256)%256, i%200+1), fmt.Sprintf("192.168.%d.%d", (i/1000)%256, i%250+1)
	return fmt.Appendf(nil, `{"status":{"phase":"Running","conditions":[%s],"hostIP":%q,"hostIPs":[{"ip":%q}],"podIP":%q,"podIPs":[{"ip":%q}],"startTime":"2026-11-01T10:00:01Z",`+
		`"containerStatuses":[{"name":"main","state":{"running":{"startedAt":"2026-11-01T10:00:04Z"}},"lastState":{},"ready":true,"restartCount":0,"image":"registry.example.com/team/app:v1.2.3",`+
		`"imageID":"registry.example.com/team/app@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef","containerID":"containerd://%064d","started":true,`+
		`"allocatedResources":{"cpu":"100m","memory":"128Mi"},"resources":{"requests":{"cpu":"100m","memory":"128Mi"},"limits":{"cpu":"500m","memory":"256Mi"}},`+
		`"volumeMounts":[{"name":"kube-api-access","mountPath":"/var/run/secrets/kubernetes.io/serviceaccount","readOnly":true,"recursiveReadOnly":"Disabled"}]}],"qosClass":"Burstable"}}`,
		strings.Join(conditions, ","), host, host, ip, ip, i)
}

// writePathScenario reports the two phases, the memory after them and the
// LISTs.
func writePathScenario(cfg Config, create, patch writePathPhase, mem memory, byNode, all *outcome) Scenario {
	server, side := "a new cache-on server", "watchcache"
	if cfg.WritePathServer != "" {
		server, side = "the server of "+cfg.WritePathServer, "server"
	}
	var rows []Row
	notes := map[string]*outcome{}
	for _, p := range []writePathPhase{create, patch} {
		notes[p.verb] = p.o
		m := percentileMetrics(p.o, p.o, "p50", "p99")
		m = append(m,
			Metric{Name: p.verb + " per second", Unit: PerSecond, Cache: p.o.throughput(), HigherIsBetter: true},
			Metric{Name: "server CPU", Unit: CPUSeconds, Cache: p.cpu.server},
			Metric{Name: "server CPU per write", Unit: Seconds, Cache: p.cpu.server / float64(max(p.o.ops, 1))},
			Metric{Name: "etcd CPU per write", Unit: Seconds, Cache: p.cpu.etcd / float64(max(p.o.ops, 1))})
		rows = append(rows, Row{Label: fmt.Sprintf("%s, %d clients", p.verb, writePathClients), Metrics: m})
	}
	perPod := func(v int64) float64 { return float64(v) / float64(max(cfg.WritePathPods, 1)) }
	after := []Metric{
		{Name: "server CPU, creates + patches", Unit: CPUSeconds, Cache: create.cpu.server + patch.cpu.server},
		{Name: "RSS", Unit: Bytes, Cache: float64(mem.resident)},
		{Name: "live heap", Unit: Bytes, Cache: float64(mem.heap)},
	}
	// Where the memory goes, per pod: each part as the OS and Go's runtime
	// count it (see docs/performance.md, "Where the memory goes").
	parts := []Metric{
		{Name: "server live heap", Unit: Bytes, Cache: perPod(mem.heap)},
		{Name: "server heap in use − live", Unit: Bytes, Cache: perPod(mem.heapInuse - mem.heap)},
		{Name: "server anonymous RSS", Unit: Bytes, Cache: perPod(mem.anon)},
		{Name: "server file-backed RSS", Unit: Bytes, Cache: perPod(mem.file)},
	}
	if mem.etcd.total > 0 { // etcd in a process of its own
		after = append(after,
			Metric{Name: "etcd CPU, creates + patches", Unit: CPUSeconds, Cache: create.cpu.etcd + patch.cpu.etcd},
			Metric{Name: "etcd RSS", Unit: Bytes, Cache: float64(mem.etcd.total)},
			Metric{Name: "RSS, server + etcd", Unit: Bytes, Cache: float64(mem.resident + mem.etcd.total)})
		parts = append(parts,
			Metric{Name: "etcd anonymous RSS", Unit: Bytes, Cache: perPod(mem.etcd.anon)},
			Metric{Name: "etcd file-backed RSS (bbolt's mapped pages)", Unit: Bytes, Cache: perPod(mem.etcd.file)})
	}
	rows = append(rows, Row{Label: "after the load", Metrics: after}, Row{Label: "memory per pod after the load", Metrics: parts})
	byNodeMetrics := percentileMetrics(byNode, byNode, "p50", "p99")
	byNodeMetrics = append(byNodeMetrics, Metric{Name: "throughput", Unit: PerSecond, Cache: byNode.throughput(), HigherIsBetter: true})
	rows = append(rows,
		Row{Label: fmt.Sprintf("consistent LIST by node, %d clients", writePathListClients), Metrics: byNodeMetrics, Incomplete: failures(map[string]*outcome{side: byNode})},
		Row{Label: "LIST all pods, resourceVersion unset", Metrics: percentileMetrics(all, all, "p50", "max"), Incomplete: failures(map[string]*outcome{side: all})})
	for _, row := range rows {
		for i := range row.Metrics {
			row.Metrics[i].FirstOnly = true
		}
	}
	rows[0].Incomplete = failures(notes)
	return Scenario{
		ID:    "writepath",
		Title: "The write path: creates and pods/status patches",
		Workload: fmt.Sprintf("%s pods of about 2.3 KB in %d namespaces on %s nodes created through %s by %d clients (JSON over HTTPS, the administrator's credentials), "+
			"then a pods/status merge patch of about 1.5 KB each, as kubelets report status, by as many clients (issue 29's workload). "+
			"CPU is the server's process alone over each phase; etcd's is reported per write beside it (0 when etcd runs in the server's process). "+
			"After the writes and the memory reading, %d clients LIST their node's pods by spec.nodeName, consistently, for %s, then one client LISTs all pods with resourceVersion unset %d times.",
			FormatValue(Count, float64(cfg.WritePathPods)), cfg.Namespaces, FormatValue(Count, float64(cfg.Nodes)), server, writePathClients,
			writePathListClients, cfg.Duration, writePathListAllPasses),
		Sides: []string{side},
		Rows:  rows,
	}
}

// createPodOwners creates the ReplicaSets (scaled to zero) that own the
// first n pods and returns their uids by namespace/name. Pods naming owners
// that do not exist would each be marked for deletion by watchcache's
// garbage collector, a write per pod that kube-apiserver without
// kube-controller-manager does not make.
func createPodOwners(ctx context.Context, s *apiClient, n, namespaces int) (map[string]string, error) {
	uids := map[string]string{}
	for i := range n {
		ns := benchdata.Namespace(i, namespaces)
		owner, _ := benchdata.Owner(i)
		if _, ok := uids[ns+"/"+owner]; ok {
			continue
		}
		var created struct {
			Metadata struct {
				UID string `json:"uid"`
			} `json:"metadata"`
		}
		if err := s.doJSON(ctx, http.MethodPost, "/apis/apps/v1/namespaces/"+ns+"/replicasets", "application/json",
			benchdata.ReplicaSet(ns, owner), &created); err != nil {
			return nil, err
		}
		uids[ns+"/"+owner] = created.Metadata.UID
	}
	return uids, nil
}
