package main

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/watchcache/watchcache/pkg/bench"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// runMainEnv makes the test binary behave as the watchcache binary, so that
// the benchmark can start it as etcd and as the servers.
const runMainEnv = "WATCHCACHE_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestBenchSmoke runs every scenario of `watchcache bench` at a tiny size
// through the real flags, processes and HTTP, so the command never rots.
func TestBenchSmoke(t *testing.T) {
	cfg, out, err := parseBenchFlags([]string{
		"--scenarios=all",
		"--list-sizes=1,10", "--object-sizes=1000,5000", "--max-list-bytes=20000", "--matrix-clients=1", "--cell-duration=50ms",
		"--pods=100", "--nodes=5", "--namespaces=3", "--kubelet-clients=1,2", "--duration=100ms",
		"--nothing-rate=20", "--nothing-duration=200ms", "--page-limit=30", "--passes=1",
		"--watchers=3", "--updates=20", "--fanout-objects=4", "--fanout-writers=2", "--writers=2",
		// Every pod updated once per watch phase, so that every shard has events.
		"--shard-updates=100", "--shard-rate=1000",
		"--cluster-nodes=5", "--pods-per-node=4", "--cluster-duration=2s", "--lease-interval=300ms", "--node-status-interval=500ms", "--churn-rate=10",
		"--curve-sizes=200,400", "--curve-watchers=2", "--curve-updates=10",
		"--protobuf-pods=120", "--protobuf-watchers=2", "--protobuf-updates=10",
		"--writepath-pods=64",
		"--etcdlists-configmaps=60",
		"--out", filepath.Join(t.TempDir(), "out"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Executable, err = os.Executable(); err != nil {
		t.Fatal(err)
	}
	cfg.Env = []string{runMainEnv + "=1"}
	report, text := benchReport(t, cfg, 5*time.Minute)
	var ids []string
	for _, s := range report.Scenarios {
		ids = append(ids, s.ID)
		for _, row := range s.Rows {
			checkRow(t, s.ID, row)
		}
	}
	want := []string{"initialization", "matrix", "kubelet", "kubelet-auth", "select-nothing", "paginated", "fanout", "writes", "shards", "nodes", "curves", "protobuf", "writepath", "etcdlists"}
	if !slices.Equal(ids, want) {
		t.Errorf("scenarios %v, want %v", ids, want)
	}
	checkNewScenarios(t, report.Scenarios[len(report.Scenarios)-5:len(report.Scenarios)-3])
	checkWritePath(t, report.Scenarios[len(report.Scenarios)-2])
	checkProtobuf(t, report.Scenarios[len(report.Scenarios)-3])
	checkEtcdLists(t, report.Scenarios[len(report.Scenarios)-1], 60)
	checkShards(t, report.Scenarios[slices.IndexFunc(report.Scenarios, func(s bench.Scenario) bool { return s.ID == "shards" })], 100)
	if !strings.Contains(text, "10 × 5 KB") || !strings.Contains(text, "cache advantage") || !strings.Contains(text, "RBAC advantage") {
		t.Errorf("the printed results lack the matrix or the ratio column:\n%s", text)
	}
	if err := bench.WriteOut(out, report); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(out, "README.md"))
	for _, want := range []string{"Watch fan-out", "SLIs against Kubernetes' SLOs", "| margin |", "Cost curves", "](curves-start-to-ready.svg)"} {
		if err != nil || !strings.Contains(string(page), want) {
			t.Errorf("README.md lacks %q: %v\n%s", want, err, page)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "curves-start-to-ready.svg")); err != nil {
		t.Error(err)
	}
}

// checkNewScenarios checks what the nodes and curves scenarios measured:
// each SLI and cost, at the tiny sizes of the smoke test.
func checkNewScenarios(t *testing.T, scenarios []bench.Scenario) {
	t.Helper()
	values := map[string]float64{}
	for _, s := range scenarios {
		for _, row := range s.Rows {
			for _, m := range row.Metrics {
				values[s.ID+"/"+row.Label+"/"+m.Name] = m.Cache
			}
		}
	}
	for _, key := range []string{
		"nodes/mutating calls, p99/Lease create", "nodes/mutating calls, p99/Lease renewal (PUT)", "nodes/mutating calls, p99/node status (PATCH)",
		"nodes/mutating calls, p99/pod create", "nodes/mutating calls, p99/pod delete", "nodes/single-object reads, p99/node GET, resourceVersion=0",
		"nodes/cluster-scoped LISTs, p99/kubelet: its node's pods", "nodes/cluster-scoped LISTs, p99/informer: all pods",
		"nodes/load/events timed, kubelets", "nodes/load/events timed, informers", "nodes/server/server CPU",
		"curves/200 pods/start to ready", "curves/400 pods/LIST all, resourceVersion=0",
		"curves/400 pods/kubelet LIST p99", "curves/400 pods/fan-out p99",
	} {
		if values[key] <= 0 {
			t.Errorf("%s: %v, want > 0", key, values[key])
		}
	}
	// At this tiny size the heap's growth per pod is within the noise of
	// the server's own start (bootstrap objects, APF's state, the identity
	// Lease's first renewals), so it and its ratio may come out negative
	// (and its chart, on a log scale, be left out): they must only be there
	// and finite.
	for _, key := range []string{"curves/400 pods/Go heap per pod", "curves/400 ÷ 200 pods/Go heap per pod"} {
		if v, ok := values[key]; !ok || math.IsNaN(v) || math.IsInf(v, 0) {
			t.Errorf("%s: %v (present: %v), want a finite value", key, v, ok)
		}
	}
	if got := values["nodes/load/watches"]; got != 2*5+2 {
		t.Errorf("%v watches, want 12 (2 per kubelet, 2 informers)", got)
	}
}

// checkEtcdLists checks that the etcdlists scenario read every config map
// in each of its lists (one alone, then ten), with a positive time, and
// CPU for the ten (checkRow checks that no list failed).
func checkEtcdLists(t *testing.T, s bench.Scenario, configMaps int) {
	t.Helper()
	if len(s.Rows) != 2 {
		t.Fatalf("etcdlists rows %+v, want one list alone and ten at once", s.Rows)
	}
	for i, lists := range []int{1, 10} {
		values := map[string]float64{}
		for _, m := range s.Rows[i].Metrics {
			values[m.Name] = m.Cache
		}
		if got, least := values["response size, all lists"], float64(lists*configMaps*4096); got < least {
			t.Errorf("%s: %v bytes, want at least %v", s.Rows[i].Label, got, least)
		}
		for _, name := range []string{"all done", "fastest list", "slowest list", "throughput, all lists", "server CPU"} {
			if values[name] <= 0 && (name != "server CPU" || lists > 1) { // one tiny list may take under a tick of CPU time
				t.Errorf("%s %s: %v, want > 0", s.Rows[i].Label, name, values[name])
			}
		}
	}
}

// checkShards checks that, on both sides, the shards together listed every
// pod and received an event per update (checkRow checks that the union
// checks passed).
func checkShards(t *testing.T, s bench.Scenario, pods float64) {
	t.Helper()
	together := s.Rows[len(s.Rows)-1]
	for _, m := range together.Metrics {
		if (m.Name == "objects" || m.Name == "events") && (m.Cache != pods || m.Etcd != pods) {
			t.Errorf("%s %s: cache %v, etcd %v, want %v", together.Label, m.Name, m.Cache, m.Etcd, pods)
		}
	}
}

func TestBenchScenariosFlag(t *testing.T) {
	for _, c := range []struct {
		args []string
		want []string
		err  string
	}{
		{nil, bench.DefaultScenarios(), ""},
		{[]string{"--scenarios=all"}, bench.ScenarioNames(), ""},
		{[]string{"--scenarios", "nodes, matrix"}, []string{"matrix", "nodes"}, ""},
		{[]string{"--scenarios=curves"}, []string{"curves"}, ""},
		{[]string{"--scenarios=matrix,bogus"}, nil, `unknown scenario "bogus"`},
		{[]string{"--scenarios=fanout,fanout"}, nil, "named twice"},
		{[]string{"--scenarios="}, nil, `unknown scenario ""`},
	} {
		cfg, _, err := parseBenchFlags(c.args)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: error %v, want %q", c.args, err, c.err)
			}
			continue
		}
		if err != nil || !slices.Equal(cfg.Scenarios, c.want) {
			t.Errorf("%q: scenarios %v (error %v), want %v", c.args, cfg.Scenarios, err, c.want)
		}
	}
	if def := bench.DefaultScenarios(); slices.Contains(def, "nodes") || slices.Contains(def, "curves") || len(def) != 9 {
		t.Errorf("the default scenarios %v are not the nine of the shared setup", def)
	}
}

// TestBenchWritePathServer runs the writepath scenario against a running
// server, as test/cluster's BenchmarkWritePath runs it against
// kube-apiserver and watchcache: the benchmark starts nothing, reads the
// server's CPU and memory by its process id, and creates the default
// ServiceAccounts a server without their controller lacks. Its pods'
// owners exist: the garbage collector marks none for deletion (a write
// per pod kube-apiserver alone would not make).
func TestBenchWritePathServer(t *testing.T) {
	s := server(t, "--controllers=garbagecollector")
	startAll(t, s)
	defer s.stop(syscall.SIGKILL)
	kubeconfig := filepath.Join(s.args[1], "kubeconfig")
	cfg, _, err := parseBenchFlags([]string{"--scenarios=writepath", "--writepath-pods=64", "--nodes=5", "--namespaces=3", "--pods=100", "--duration=100ms",
		"--writepath-server=" + kubeconfig, "--writepath-pids=" + strconv.Itoa(s.cmd.Process.Pid)})
	if err != nil {
		t.Fatal(err)
	}
	report, _ := benchReport(t, cfg, 2*time.Minute)
	if len(report.Scenarios) != 1 || !strings.Contains(report.Scenarios[0].Workload, kubeconfig) {
		t.Fatalf("scenarios %+v, want writepath against %s", report.Scenarios, kubeconfig)
	}
	for _, row := range report.Scenarios[0].Rows {
		checkRow(t, "writepath", row)
	}
	checkWritePath(t, report.Scenarios[0])
	config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	pods, err := kubernetes.NewForConfigOrDie(config).CoreV1().Pods("").List(context.Background(), metav1.ListOptions{})
	if err != nil || len(pods.Items) != 64 {
		t.Fatalf("pods after the benchmark: %d, %v", len(pods.Items), err)
	}
	for _, pod := range pods.Items {
		if pod.DeletionTimestamp != nil {
			t.Fatalf("pod %s/%s marked for deletion: its owner %v", pod.Namespace, pod.Name, pod.OwnerReferences)
		}
	}
	if err := s.cmd.Process.Signal(syscall.Signal(0)); err != nil {
		t.Errorf("the benchmark stopped the server it did not start: %v", err)
	}
}

// checkWritePath checks that the writepath scenario made every write and
// measured its throughput, latency, the server's memory and the LISTs after.
func checkWritePath(t *testing.T, s bench.Scenario) {
	t.Helper()
	if len(s.Rows) != 6 {
		t.Fatalf("writepath rows %+v, want creates, status patches, after the load, memory per pod, LIST by node and LIST all", s.Rows)
	}
	for _, row := range s.Rows {
		for _, m := range row.Metrics {
			if m.Unit != bench.CPUSeconds && !strings.Contains(m.Name, "CPU") && m.Cache <= 0 {
				t.Errorf("writepath %s %s: %v", row.Label, m.Name, m.Cache)
			}
		}
	}
}

// checkRow fails unless a row was run to completion (or skipped for its
// size) and measured something on both sides.
func checkRow(t *testing.T, scenario string, row bench.Row) {
	t.Helper()
	if row.Incomplete != "" {
		t.Errorf("%s %s: %s", scenario, row.Label, row.Incomplete)
	}
	if row.Skipped != "" {
		if row.Label != "10 × 5 KB" {
			t.Errorf("%s %s skipped: %s", scenario, row.Label, row.Skipped)
		}
		return
	}
	if len(row.Metrics) == 0 {
		t.Errorf("%s %s: no metrics", scenario, row.Label)
	}
	for _, m := range row.Metrics {
		if m.FirstOnly || scenario == "curves" {
			continue // one server's figures: checkNewScenarios checks them
		}
		if scenario == "protobuf" && strings.Contains(row.Label, "memory") {
			continue // heap deltas of 120 pods are noise, negative at times: checkProtobuf checks the row is there
		}
		// CPU time is read in 10 ms ticks: at this size it, or a ratio of
		// it, may be 0.
		if m.Unit != bench.CPUSeconds && !strings.Contains(m.Name, "CPU") && (m.Cache <= 0 || m.Etcd <= 0) {
			t.Errorf("%s %s %s: cache %v, etcd %v", scenario, row.Label, m.Name, m.Cache, m.Etcd)
		}
	}
}

// checkProtobuf checks the protobuf scenario's rows (checkRow checks that
// both encodings measured every figure): its LIST of all pods, informer
// sync, kubelets, fan-out, memory and a value for each target.
func checkProtobuf(t *testing.T, s bench.Scenario) {
	t.Helper()
	var labels []string
	for _, row := range s.Rows {
		labels = append(labels, row.Label)
	}
	want := []string{"LIST all 120 pods, resourceVersion=0", "informer sync, 120 pods", "kubelets: 1 clients, read to the end", "kubelets: 1 clients, decoded",
		"kubelets: 2 clients, read to the end", "kubelets: 2 clients, decoded", "fan-out: 2 watchers of all pods", "cache memory per pod", "targets"}
	if !slices.Equal(labels, want) {
		t.Fatalf("protobuf rows %q, want %q", labels, want)
	}
	targets := s.Rows[len(s.Rows)-1].Metrics
	if len(targets) != 4 {
		t.Fatalf("%d targets, want 4", len(targets))
	}
	for _, m := range targets {
		// The heap's growth over 120 pods is within the noise of the
		// server's own heap: its ratio must only be finite.
		noise := strings.Contains(m.Name, "heap")
		if noise && (math.IsNaN(m.Cache) || math.IsInf(m.Cache, 0)) || !noise && m.Cache <= 0 {
			t.Errorf("target %s: %v", m.Name, m.Cache)
		}
	}
}

// benchReport runs the benchmark of cfg within timeout and returns its
// report and its printed progress and output, failing t with the latter if
// it does not complete.
func benchReport(t *testing.T, cfg bench.Config, timeout time.Duration) (*bench.Report, string) {
	t.Helper()
	var text bytes.Buffer
	cfg.Progress, cfg.Output = &text, &text
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	report, err := bench.Run(ctx, cfg)
	if err != nil {
		t.Fatalf("%v\n%s", err, text.String())
	}
	return report, text.String()
}
