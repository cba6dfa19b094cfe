// The write-path scenario: issue 29's table with watchcache alone. Pods
// created by 32 clients, then a kubelet-like pods/status merge patch each;
// throughput, latency per verb, the server's CPU per write and its memory
// after the load.

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

// writePath is the writepath scenario: a new etcd and cache-on server,
// WritePathPods pods created through it by writePathClients clients, then
// given a pods/status merge patch each.
func (b *bench) writePath(ctx context.Context) error {
	const etcdDir = "etcd-writepath"
	if err := b.startEtcd(ctx, etcdDir); err != nil {
		return err
	}
	var s *server
	defer func() { b.stopOwn(s, etcdDir) }()
	var err error
	if s, err = b.startServerAs(ctx, "writepath", true); err != nil {
		return err
	}
	if err := b.createPodNamespaces(ctx, s); err != nil {
		return err
	}
	n, namespaces, nodes := b.cfg.WritePathPods, b.cfg.Namespaces, b.cfg.Nodes
	path := func(i int) (ns, name string) { return benchdata.Namespace(i, namespaces), fmt.Sprintf("pod-%06d", i) }
	create := writePathPhase{verb: "creates"}
	patch := writePathPhase{verb: "status patches"}
	for _, phase := range []struct {
		p  *writePathPhase
		op func(ctx context.Context, i int) error
	}{
		{&create, func(ctx context.Context, i int) error {
			ns, _ := path(i)
			_, err := s.create(ctx, "/api/v1/namespaces/"+ns+"/pods", benchdata.Pod(i, namespaces, nodes))
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
		p.cpu, err = b.cpuDuring(s, func() error {
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
	if err := s.alive(); err != nil {
		return err
	}
	return b.finish(writePathScenario(n, namespaces, create, patch, mem))
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

// writePathScenario reports the two phases and the memory after them.
func writePathScenario(pods, namespaces int, create, patch writePathPhase, mem memory) Scenario {
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
		for i := range m {
			m[i].FirstOnly = true
		}
		rows = append(rows, Row{Label: fmt.Sprintf("%s, %d clients", p.verb, writePathClients), Metrics: m})
	}
	rows = append(rows, Row{Label: "after the load", Metrics: []Metric{
		{Name: "server CPU, creates + patches", Unit: CPUSeconds, Cache: create.cpu.server + patch.cpu.server, FirstOnly: true},
		{Name: "RSS", Unit: Bytes, Cache: float64(mem.resident), FirstOnly: true},
		{Name: "live heap", Unit: Bytes, Cache: float64(mem.heap), FirstOnly: true},
	}})
	rows[0].Incomplete = failures(notes)
	return Scenario{
		ID:    "writepath",
		Title: "The write path: creates and pods/status patches",
		Workload: fmt.Sprintf("%s pods of about 2.3 KB in %d namespaces created through a new cache-on server by %d clients (JSON over HTTPS, the administrator's certificate), "+
			"then a pods/status merge patch of about 1.5 KB each, as kubelets report status, by as many clients (issue 29's workload, without kube-apiserver). "+
			"CPU is the server's process alone over each phase; etcd's is reported per write beside it.",
			FormatValue(Count, float64(pods)), namespaces, writePathClients),
		Sides: []string{"watchcache"},
		Rows:  rows,
	}
}
