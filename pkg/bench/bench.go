// Package bench is the benchmark behind `watchcache bench`: it starts an
// etcd and two API servers as child processes, one with the watch cache and
// one without (--watch-cache=false), loads them with data over HTTP, and
// measures the same workloads against both, as KEP-2340 did: consistent
// LISTs by collection and object size, the kubelet's LIST by node, a
// selector that selects nothing, a paginated pass, watch fan-out, cache
// initialization and memory, writes, and sharded informers (KEP-5866's
// shardSelector) against an unsharded one.
//
// Three heavier scenarios run only when named (see ScenarioNames), each on
// an etcd and a cache-on server of its own, their pods written straight
// into etcd: nodes, a cluster's load on one server (kubelets, leases, node
// heartbeats, pod churn and informers) measured against Kubernetes' API
// SLOs; curves, what the cache costs at growing numbers of pods; and
// protobuf, JSON and protobuf clients side by side. Two more run only when
// named, on processes of their own: writepath, issue 29's writes, and
// etcdlists, issue 29's large lists read from etcd by a cache-off server,
// one alone and ten at once.
//
// Each server runs in its own process, so its processor time and resident
// memory are read from the OS; while one server is measured the other is
// paused (SIGSTOP), so they never compete for the machine's cores.
package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Config says what to run. DefaultConfig gives the documented defaults.
type Config struct {
	// Executable is the watchcache binary started for etcd and the servers;
	// Env is added to their environment (tests use it to re-run the test
	// binary as watchcache).
	Executable string
	Env        []string
	// WorkDir holds etcd's data and the children's logs; empty makes a
	// temporary one, removed at the end unless Keep is set.
	WorkDir string
	Keep    bool
	// Command is the command line to print in the report.
	Command string
	// Scenarios names the scenarios to run (see ScenarioNames);
	// DefaultConfig's are DefaultScenarios.
	Scenarios []string

	// ListSizes × ObjectSizes is the matrix of consistent LISTs (scenario
	// 1); a cell whose data would exceed MaxListBytes is skipped.
	// MatrixClients clients list each cell for CellDuration.
	ListSizes     []int
	ObjectSizes   []int
	MaxListBytes  int64
	MatrixClients int
	CellDuration  time.Duration

	// Pods on Nodes nodes in Namespaces namespaces are the data of the
	// kubelet, nothing-selector, paginated, initialization and shards
	// scenarios.
	Pods, Nodes, Namespaces int
	// KubeletClients are the numbers of concurrent kubelets listing their
	// node's pods, each for Duration.
	KubeletClients []int
	// Duration is how long each side of the kubelet and write scenarios runs.
	Duration time.Duration

	// NothingRate LISTs per second with a selector matching nothing, for
	// NothingDuration.
	NothingRate     float64
	NothingDuration time.Duration

	// PageLimit is the page size of the paginated pass, repeated Passes times.
	PageLimit int
	Passes    int

	// Watchers watch FanoutObjects objects while FanoutWriters writers make
	// Updates updates; FanoutTimeout bounds the wait for every event.
	Watchers, Updates, FanoutObjects, FanoutWriters int
	FanoutTimeout                                   time.Duration

	// Writers is the number of concurrent writers of the write scenario's
	// closed loop; WriteRate the writes per second of its paced part.
	Writers   int
	WriteRate float64

	// The shards scenario's paced writer makes ShardUpdates updates of
	// pods at ShardRate per second in each of its two watch phases.
	ShardUpdates int
	ShardRate    float64

	// The nodes scenario: ClusterNodes kubelets, each with PodsPerNode pods
	// bound to its node, renewing its Lease every LeaseInterval and
	// patching its node's status every NodeStatusInterval, while ChurnRate
	// pods per second are created and as many deleted; it runs for
	// ClusterDuration once every client has started.
	ClusterNodes, PodsPerNode                          int
	LeaseInterval, NodeStatusInterval, ClusterDuration time.Duration
	ChurnRate                                          float64

	// The curves scenario: the cache's costs over CurveSizes pods
	// (PodsPerNode per node), its fan-out measured with CurveWatchers
	// watchers of all pods and CurveUpdates updates.
	CurveSizes                  []int
	CurveWatchers, CurveUpdates int

	// The protobuf scenario: JSON and protobuf side by side over
	// ProtobufPods pods (PodsPerNode per node), its fan-out measured with
	// ProtobufWatchers watchers of all pods and ProtobufUpdates updates;
	// its kubelets are KubeletClients, each for Duration.
	ProtobufPods, ProtobufWatchers, ProtobufUpdates int

	// The writepath scenario creates WritePathPods pods, then patches each
	// one's status; WritePathProfiles, if not empty, is a directory to
	// write a CPU profile of each phase's first seconds and a heap profile
	// after the load to.
	WritePathPods     int
	WritePathProfiles string
	// WritePathServer, if not empty, is the kubeconfig of a running API
	// server (its current context's server and credentials) the writepath
	// scenario loads instead of starting an etcd and a server of its own:
	// kube-apiserver, for test/cluster's comparison. WritePathPIDs are then
	// the process ids of that server and, if etcd runs apart, of its etcd,
	// whose CPU time and memory the scenario reads from /proc.
	WritePathServer string
	WritePathPIDs   []int

	// The etcdlists scenario writes EtcdListConfigMaps config maps of 4 KB
	// and lists them from etcd; EtcdListsProfiles, if not empty, is a
	// directory to write the server's CPU profile of each phase's first
	// seconds to.
	EtcdListConfigMaps int
	EtcdListsProfiles  string
	// EtcdListsEmbeddedEtcd runs the etcdlists scenario's etcd inside its
	// server's process (the server's default without --etcd-servers).
	EtcdListsEmbeddedEtcd bool

	// Progress receives the progress bars; Output the results, as text,
	// scenario by scenario.
	Progress, Output io.Writer
}

// Validate reports settings the benchmark cannot run with.
func (c *Config) Validate() error {
	var bad []string
	positive := map[string]int{
		"matrix clients": c.MatrixClients, "pods": c.Pods, "nodes": c.Nodes, "namespaces": c.Namespaces, "page limit": c.PageLimit,
		"passes": c.Passes, "watchers": c.Watchers, "updates": c.Updates, "fan-out objects": c.FanoutObjects,
		"fan-out writers": c.FanoutWriters, "writers": c.Writers, "shard updates": c.ShardUpdates, "list sizes": len(c.ListSizes), "object sizes": len(c.ObjectSizes),
		"kubelet client counts": len(c.KubeletClients), "cluster nodes": c.ClusterNodes, "pods per node": c.PodsPerNode,
		"curve sizes": len(c.CurveSizes), "curve watchers": c.CurveWatchers, "curve updates": c.CurveUpdates,
		"protobuf pods": c.ProtobufPods, "protobuf watchers": c.ProtobufWatchers, "protobuf updates": c.ProtobufUpdates,
		"writepath pods": c.WritePathPods, "etcdlists config maps": c.EtcdListConfigMaps,
	}
	for name, v := range positive {
		if v <= 0 {
			bad = append(bad, name+" must be positive")
		}
	}
	if c.WriteRate <= 0 {
		bad = append(bad, "the write rate must be positive")
	}
	if c.ShardRate <= 0 {
		bad = append(bad, "the shard update rate must be positive")
	}
	if c.NothingRate <= 0 || c.NothingDuration <= 0 {
		bad = append(bad, "the nothing-selector rate and duration must be positive")
	}
	if c.Pods < c.Nodes || c.Pods < c.Namespaces {
		bad = append(bad, "pods must be at least as many as nodes and namespaces")
	}
	if c.LeaseInterval <= 0 || c.NodeStatusInterval <= 0 || c.ClusterDuration <= 0 || c.ChurnRate <= 0 {
		bad = append(bad, "the lease and node status intervals, the cluster duration and the churn rate must be positive")
	}
	if n := len(c.WritePathPIDs); (c.WritePathServer != "") != (n > 0) || n > 2 {
		bad = append(bad, "an external writepath server needs its process id and at most its etcd's, and process ids need the server's kubeconfig")
	}
	if len(c.Scenarios) == 0 {
		bad = append(bad, "no scenario to run")
	}
	for _, name := range c.Scenarios {
		if !slices.Contains(ScenarioNames(), name) {
			bad = append(bad, fmt.Sprintf("unknown scenario %q", name))
		}
	}
	if len(bad) > 0 {
		slices.Sort(bad)
		return errors.New(strings.Join(bad, "; "))
	}
	return nil
}

// DefaultConfig is what `watchcache bench` runs without flags; it takes
// under ten minutes on a 2-core machine (see docs/bench).
func DefaultConfig() Config {
	return Config{
		ListSizes:       []int{1, 10, 100, 1000, 10000},
		ObjectSizes:     []int{5000, 25000, 100000},
		MaxListBytes:    250e6,
		MatrixClients:   2,
		CellDuration:    time.Second,
		Pods:            50000,
		Nodes:           1000,
		Namespaces:      100,
		KubeletClients:  []int{2, 16},
		Duration:        5 * time.Second,
		NothingRate:     1,
		NothingDuration: 10 * time.Second,
		PageLimit:       500,
		Passes:          3,
		Watchers:        1000,
		Updates:         10000,
		FanoutObjects:   100,
		FanoutWriters:   16,
		FanoutTimeout:   3 * time.Minute,
		Writers:         16,
		WriteRate:       300,
		ShardUpdates:    2000,
		ShardRate:       200,

		Scenarios:          DefaultScenarios(),
		ClusterNodes:       5000,
		PodsPerNode:        30,
		LeaseInterval:      10 * time.Second,
		NodeStatusInterval: time.Minute,
		ClusterDuration:    2 * time.Minute,
		ChurnRate:          50,
		CurveSizes:         []int{10000, 100000, 1000000},
		CurveWatchers:      100,
		CurveUpdates:       1000,
		ProtobufPods:       50000,
		ProtobufWatchers:   100,
		ProtobufUpdates:    2000,
		WritePathPods:      5000,
		EtcdListConfigMaps: 100000,

		Progress: os.Stderr,
		Output:   os.Stdout,
	}
}

// bench is one run: the processes, their clients and the report so far.
type bench struct {
	cfg    Config
	dir    string
	etcd   *process
	cache  *server
	direct *server // the server with --watch-cache=false, reading etcd
	// allow is the kubelet-auth scenario's baseline: the cache-on server
	// with --authorization-mode=AlwaysAllow, its clients anonymous.
	allow  *server
	report *Report
	loaded loadedData
	cases  int // calls of sides so far
	bar    *progressBar
}

// server is one of the two API servers and a client of it.
type server struct {
	*process
	*apiClient
	watchCache bool
	// label names the server's side in results: "cache", "etcd", or
	// "allow" (the AlwaysAllow server of the kubelet-auth scenario).
	label string
}

var (
	etcdServing   = regexp.MustCompile(`etcd is serving on (\S+)`)
	serverServing = regexp.MustCompile(`serving the Kubernetes API on (\S+?);`)
)

// Run runs every scenario and returns the report; each scenario's results
// are printed to cfg.Output as it finishes. It stops every child process
// before it returns.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	b := &bench{cfg: cfg, report: &Report{Command: cfg.Command, Machine: describeMachine(), Started: time.Now()}}
	b.bar = newProgressBar(cfg.Progress)
	var err error
	if b.dir = cfg.WorkDir; b.dir == "" {
		if b.dir, err = os.MkdirTemp("", "watchcache-bench-"); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(b.dir, 0o700); err != nil {
		return nil, err
	}
	if !cfg.Keep {
		defer os.RemoveAll(b.dir)
	}
	defer b.stopAll()
	if err := b.writeKubeletTokens(); err != nil {
		return nil, err
	}
	var steps []func(context.Context) error
	if cfg.runsShared() {
		// initialization starts the cache-on server, measuring it or not.
		steps = append(steps, b.startEtcdAndDirectServer, b.load, b.initialization)
	}
	scenarios := map[string]func(context.Context) error{
		"matrix": b.matrix, "kubelet": b.kubelet, "kubelet-auth": b.kubeletAuth, "select-nothing": b.selectNothing,
		"paginated": b.paginated, "fanout": b.fanout, "writes": b.writes, "shards": b.shards, "nodes": b.nodes, "curves": b.curves, "protobuf": b.protobuf,
		"writepath": b.writePath, "etcdlists": b.etcdLists,
	}
	sharedRunning := cfg.runsShared()
	for _, name := range cfg.Scenarios {
		if sharedRunning && !sharedScenario(name) {
			// The heavy scenarios have the machine to themselves.
			steps = append(steps, b.stopShared)
			sharedRunning = false
		}
		if step := scenarios[name]; step != nil {
			steps = append(steps, step)
		}
	}
	for _, step := range steps {
		if err := step(ctx); err != nil {
			return nil, err
		}
	}
	b.report.Setup = b.setup()
	b.report.Elapsed = time.Since(b.report.Started)
	return b.report, nil
}

// setup describes, for the report, what the scenarios share.
func (b *bench) setup() []string {
	var setup []string
	if b.cfg.runsShared() {
		setup = b.sharedSetup()
	}
	if b.cfg.runs("nodes") || b.cfg.runs("curves") || b.cfg.runs("protobuf") || b.cfg.runs("writepath") {
		setup = append(setup, "The nodes, curves, protobuf and writepath scenarios run after the others are done and their processes stopped, each on an etcd and a cache-on server of its own "+
			"(the same flags); their pods (but writepath's, which it measures creating) are written straight into etcd by the benchmark's etcd client, "+fmt.Sprint(etcdBatch)+" per transaction, as the server stores them "+
			"(each scenario says how fast: much faster than creating them over HTTP).")
	}
	if b.cfg.runs("etcdlists") {
		where := "in a process of its own"
		if b.cfg.EtcdListsEmbeddedEtcd {
			where = "embedded in the server's process"
		}
		setup = append(setup, "The etcdlists scenario runs last, on an etcd ("+where+") and a --watch-cache=false server of its own (the same flags otherwise); "+
			"its config maps are written straight into etcd, "+fmt.Sprint(etcdBatch)+" per transaction, in protobuf as the server stores them.")
	}
	if b.cfg.runs("writepath") && b.cfg.WritePathServer != "" {
		setup = append(setup, fmt.Sprintf("The writepath scenario loaded a server it did not start, that of %s (process ids %v: the server, then its etcd if apart), on data and flags of its starter's choosing.",
			b.cfg.WritePathServer, b.cfg.WritePathPIDs))
	}
	return setup
}

// sharedSetup describes the setup of the default scenarios.
func (b *bench) sharedSetup() []string {
	return []string{
		"Three processes besides the benchmark's own (which runs the clients): `watchcache etcd` (the embedded etcd " + b.report.Machine.Etcd +
			", fsync off, as in the in-process benchmarks of docs/performance.md) and two API servers on it, `watchcache " + strings.Join(serverArgs("<etcd>", "<dir>", true), " ") +
			"` and the same with `--watch-cache=false`.",
		"Clients speak JSON over HTTPS (HTTP/1.1, TLS 1.3, connections kept alive) on loopback with the administrator's certificate of " +
			"each server's generated kubeconfig, and read every response to the end; in the kubelet-auth scenario, with a kubelet's bearer token " +
			"(every server reads one token per node from --token-auth-file), or with no credentials against a fourth process, the cache-on server with --authorization-mode=AlwaysAllow.",
		"Each side of a scenario runs alone: the other server is paused (SIGSTOP) meanwhile, then resumed and given time to catch up. " +
			"Which side runs first alternates from one case to the next, so that neither always finds the machine warmer.",
		"CPU figures are the processes' whole processor time over a run (from /proc), idle work such as etcd's heartbeats included, divided by the requests.",
		fmt.Sprintf("Data, loaded through the cache-off server before the cache-on one starts: %s objects, %s of JSON.",
			FormatValue(Count, float64(b.loaded.objects)), FormatValue(Bytes, float64(b.loaded.jsonBytes))),
	}
}

// startEtcdAndDirectServer starts etcd and the cache-off server, which
// loads the data.
func (b *bench) startEtcdAndDirectServer(ctx context.Context) error {
	if err := b.startEtcd(ctx, "etcd"); err != nil {
		return err
	}
	var err error
	b.direct, err = b.startServer(ctx, false)
	return err
}

// etcdQuota is etcd's --quota-backend-bytes: room for a million pods of
// about 2.5 KB and their history.
const etcdQuota = int64(8) << 30

// startEtcd starts a new etcd as b.etcd, its data in the work directory's
// subdirectory name and its log in name.log.
func (b *bench) startEtcd(ctx context.Context, name string) error {
	var err error
	b.etcd, err = startProcess(ctx, b.dir, name, b.cfg.Executable, b.cfg.Env, []string{
		"etcd", "--data-dir", filepath.Join(b.dir, name), "--etcd-client-port", "0", "--unsafe-no-fsync",
		"--quota-backend-bytes", fmt.Sprint(etcdQuota),
	}, etcdServing)
	return err
}

// stopShared stops the default scenarios' servers and etcd.
func (b *bench) stopShared(context.Context) error {
	b.stopAll()
	b.cache, b.direct, b.etcd = nil, nil, nil
	return nil
}

// serverArgs are a server's flags: they differ only in --watch-cache (and
// where each keeps its kubeconfig); the kubelet-auth scenario's servers
// add theirs.
func serverArgs(etcdURL, dataDir string, watchCache bool) []string {
	var etcd []string
	if etcdURL != "" { // else the server's embedded etcd
		etcd = []string{"--etcd-servers", etcdURL}
	}
	return append(etcd, "--secure-port", "0", "--data-dir", dataDir,
		fmt.Sprintf("--watch-cache=%t", watchCache), "--token-auth-file", filepath.Join(filepath.Dir(dataDir), kubeletTokensFile),
		// Off by default upstream too; its periodic full etcd reads would
		// land in the middle of measurements.
		"--consistency-check-interval", "0",
	)
}

// sideLabel is the side of the cache-on or the cache-off server.
func sideLabel(watchCache bool) string {
	if watchCache {
		return "cache"
	}
	return "etcd"
}

// startServer starts the cache-on or the cache-off API server and waits
// until /readyz passes.
func (b *bench) startServer(ctx context.Context, watchCache bool) (*server, error) {
	return b.startServerAs(ctx, sideLabel(watchCache), watchCache)
}

// startServerAs starts an API server whose side is label, with the
// standard flags and extra ones, on b.etcd (nil: the server's embedded
// etcd), and waits until /readyz passes.
func (b *bench) startServerAs(ctx context.Context, label string, watchCache bool, extra ...string) (*server, error) {
	name := "server-" + label
	dataDir := b.dir + "/" + name
	etcdURL := ""
	if b.etcd != nil {
		etcdURL = b.etcd.url
	}
	p, err := startProcess(ctx, b.dir, name, b.cfg.Executable, b.cfg.Env,
		append(serverArgs(etcdURL, dataDir, watchCache), extra...), serverServing)
	if err != nil {
		return nil, err
	}
	client, err := newAPIClient(p.url, filepath.Join(dataDir, "kubeconfig"))
	if err != nil {
		p.stop()
		return nil, err
	}
	s := &server{process: p, apiClient: client, watchCache: watchCache, label: label}
	if err := s.waitReady(ctx); err != nil {
		p.stop()
		return nil, err
	}
	return s, nil
}

// waitReady polls /readyz every 5 ms until it passes.
func (s *server) waitReady(ctx context.Context) error {
	deadline := time.Now().Add(5 * time.Minute)
	for {
		if _, err := s.do(ctx, "GET", "/readyz", "", nil); err == nil {
			return nil
		}
		if err := s.alive(); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready after 5 minutes", s.name)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// stopAll stops every child process still running.
func (b *bench) stopAll() {
	for _, s := range []*server{b.cache, b.direct, b.allow} {
		if s != nil {
			s.stop()
		}
	}
	if b.etcd != nil {
		b.etcd.stop()
	}
}

// sides runs measure against each server alone: the other one is paused
// meanwhile. Before measuring, a server that was paused is given time to
// catch up with etcd (see settle). The cache-on server goes first on odd
// calls, the cache-off one on even calls.
func (b *bench) sides(ctx context.Context, measure func(ctx context.Context, s *server) error) error {
	return b.pair(ctx, b.cache, b.direct, measure)
}

// pair runs measure against first and second, each alone, as sides does.
func (b *bench) pair(ctx context.Context, first, second *server, measure func(ctx context.Context, s *server) error) error {
	order := [][2]*server{{first, second}, {second, first}}
	if b.cases++; b.cases%2 == 0 {
		order[0], order[1] = order[1], order[0]
	}
	for _, pair := range order {
		s, other := pair[0], pair[1]
		if err := other.pause(); err != nil {
			return err
		}
		err := s.settle(ctx)
		if err == nil {
			err = measure(ctx, s)
		}
		if resumeErr := other.resume(); err == nil {
			err = resumeErr
		}
		if err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		if err := errors.Join(s.alive(), other.alive()); err != nil {
			return err
		}
	}
	return nil
}

// settle waits until a consistent read succeeds: a cache paused while the
// other server wrote must first catch up with etcd, and that catching up is
// not what the next measurement is about.
func (s *server) settle(ctx context.Context) error {
	var err error
	for range 20 {
		if _, err = s.do(ctx, "GET", "/api/v1/namespaces", "", nil); err == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return err
}
