// The subcommands besides the server: `watchcache etcd` (only the embedded
// etcd, with etcd's own flags) and `watchcache bench` (the benchmark), and
// their flag parsers.

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/watchcache/watchcache/pkg/bench"
	"github.com/watchcache/watchcache/pkg/etcdembed"
)

// runEtcd is `watchcache etcd`: only the embedded etcd, until SIGINT or
// SIGTERM. The benchmark runs etcd this way, in its own process; with etcd's
// cluster flags, several of them form a cluster.
func runEtcd(args []string) error {
	cfg, err := parseEtcdFlags(args)
	if err != nil {
		return err
	}
	if actingAs(os.Args[0]) == asEtcd {
		throwawayMemberTicks(&cfg)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	e, err := etcdembed.StartContext(ctx, cfg)
	if err != nil {
		return err
	}
	defer e.Close()
	fmt.Printf("etcd is serving on %s\n", e.Endpoint)
	select {
	case <-ctx.Done():
	case err := <-e.Err():
		return err
	case <-e.StopNotify():
		return errors.New("etcd stopped")
	}
	return nil
}

// parseEtcdFlags parses `watchcache etcd`'s flags, which are etcd's own
// (names and meanings) but for --etcd-client-port and the defaults of a
// single member: loopback, and short raft ticks unless given.
func parseEtcdFlags(args []string) (etcdembed.Config, error) {
	var cfg etcdembed.Config
	fs := flag.NewFlagSet("watchcache etcd", flag.ContinueOnError)
	fs.StringVar(&cfg.DataDir, "data-dir", "watchcache-data", "where etcd keeps its data")
	fs.IntVar(&cfg.ClientPort, "etcd-client-port", 2379, "loopback port to serve clients on (0: any free port); --listen-client-urls replaces it")
	fs.BoolVar(&cfg.UnsafeNoFsync, "unsafe-no-fsync", false, "do not fsync writes (a crash loses acknowledged writes; for benchmarks)")
	fs.Int64Var(&cfg.QuotaBackendBytes, "quota-backend-bytes", 0, "size at which etcd refuses writes (0: etcd's default, 2 GiB)")
	// etcd's own TLS flags, with its names and meanings.
	fs.StringVar(&cfg.ClientTLS.CertFile, "cert-file", "", "certificate (PEM) to serve clients over HTTPS")
	fs.StringVar(&cfg.ClientTLS.KeyFile, "key-file", "", "key of --cert-file")
	fs.StringVar(&cfg.ClientTLS.TrustedCAFile, "trusted-ca-file", "", "CA bundle client certificates must chain to (implies --client-cert-auth)")
	fs.BoolVar(&cfg.ClientTLS.ClientCertAuth, "client-cert-auth", false, "require a client certificate")
	fs.StringVar(&cfg.PeerTLS.CertFile, "peer-cert-file", "", "certificate (PEM) to serve peers and to dial them with, over https peer URLs")
	fs.StringVar(&cfg.PeerTLS.KeyFile, "peer-key-file", "", "key of --peer-cert-file")
	fs.StringVar(&cfg.PeerTLS.TrustedCAFile, "peer-trusted-ca-file", "", "CA bundle peer certificates must chain to")
	fs.BoolVar(&cfg.PeerTLS.ClientCertAuth, "peer-client-cert-auth", false, "require a peer certificate")
	// etcd's own clustering flags.
	fs.StringVar(&cfg.Name, "name", "watchcache", "member name")
	fs.StringVar(&cfg.InitialCluster, "initial-cluster", "", "the members of a new cluster, name=peerURL,...; empty with no peer URLs: a single member without a peer listener")
	fs.StringVar(&cfg.InitialClusterState, "initial-cluster-state", "new", "new (form the cluster) or existing (join it); ignored once the data dir holds a member")
	fs.StringVar(&cfg.InitialClusterToken, "initial-cluster-token", "etcd-cluster", "token of the cluster, unique to it, while it forms")
	fs.Func("listen-peer-urls", "comma-separated URLs to listen on for peers (default: --initial-advertise-peer-urls)", urlList(&cfg.ListenPeerURLs))
	fs.Func("initial-advertise-peer-urls", "comma-separated peer URLs of this member (default: its URLs in --initial-cluster)", urlList(&cfg.AdvertisePeerURLs))
	fs.Func("listen-client-urls", "comma-separated URLs to listen on for clients (default: 127.0.0.1 on --etcd-client-port)", urlList(&cfg.ListenClientURLs))
	fs.Func("advertise-client-urls", "comma-separated client URLs of this member (default: --listen-client-urls)", urlList(&cfg.AdvertiseClientURLs))
	heartbeat := fs.Uint("heartbeat-interval", 100, "time (ms) of a heartbeat interval; a single member without cluster flags uses 10 unless given")
	election := fs.Uint("election-timeout", 1000, "time (ms) of an election timeout; a single member without cluster flags uses 100 unless given")
	fs.Uint64Var(&cfg.SnapshotCount, "snapshot-count", 0, "committed transactions that trigger a snapshot to disk (0: etcd's default, 10000)")
	fs.Uint64Var(&cfg.SnapshotCatchUpEntries, "snapshot-catchup-entries", 0, "raft entries kept in memory for slow followers to catch up from (0: etcd's default, 5000, for a member of a cluster; 100 for a single member, which has no followers)")
	fs.Usage = func() { printFlags(fs) } // as etcd's --help, which envtest reads
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if flagGiven(fs, "heartbeat-interval") || flagGiven(fs, "election-timeout") {
		// Given one, the other is etcd's default too.
		cfg.HeartbeatInterval = time.Duration(*heartbeat) * time.Millisecond
		cfg.ElectionTimeout = time.Duration(*election) * time.Millisecond
		if cfg.HeartbeatInterval == 0 || cfg.ElectionTimeout == 0 {
			return cfg, errors.New("--heartbeat-interval and --election-timeout must be >0")
		}
	}
	return cfg, cfg.Validate()
}

// urlList parses a comma-separated list of URLs into dst, leaving their
// checks to etcdembed.Config.Validate.
func urlList(dst *[]string) func(string) error {
	return func(v string) error {
		*dst = nil
		for _, item := range strings.Split(v, ",") {
			if item = strings.TrimSpace(item); item == "" {
				return fmt.Errorf("an empty URL in %q", v)
			}
			*dst = append(*dst, item)
		}
		return nil
	}
}

// parseBenchFlags parses `watchcache bench`'s flags over the defaults.
func parseBenchFlags(args []string) (cfg bench.Config, out string, err error) {
	cfg = bench.DefaultConfig()
	fs := flag.NewFlagSet("watchcache bench", flag.ContinueOnError)
	fs.StringVar(&out, "out", "", "directory to write results.json, README.md and SVG charts to (e.g. docs/bench)")
	fs.StringVar(&cfg.WorkDir, "work-dir", "", "directory for etcd's data and the servers' logs (default: a temporary one, removed at the end)")
	fs.BoolVar(&cfg.Keep, "keep", false, "keep the work directory")
	large := fs.Bool("large", false, "add collections of 100,000 objects to the LIST matrix and raise --max-list-bytes to 600 MB unless given")
	fs.Func("list-sizes", "comma-separated collection sizes of the LIST matrix (default 1,10,100,1000,10000)", intList(&cfg.ListSizes))
	fs.Func("object-sizes", "comma-separated object sizes in bytes of the LIST matrix (default 5000,25000,100000)", intList(&cfg.ObjectSizes))
	fs.Int64Var(&cfg.MaxListBytes, "max-list-bytes", cfg.MaxListBytes, "skip matrix cells whose collection holds more data than this")
	fs.IntVar(&cfg.MatrixClients, "matrix-clients", cfg.MatrixClients, "concurrent clients per matrix cell")
	fs.DurationVar(&cfg.CellDuration, "cell-duration", cfg.CellDuration, "how long each matrix cell runs per side")
	fs.IntVar(&cfg.Pods, "pods", cfg.Pods, "pods of the kubelet, selector, paginated, memory and shards scenarios")
	fs.IntVar(&cfg.Nodes, "nodes", cfg.Nodes, "nodes the pods are spread over")
	fs.IntVar(&cfg.Namespaces, "namespaces", cfg.Namespaces, "namespaces the pods are spread over")
	fs.Func("kubelet-clients", "comma-separated numbers of concurrent kubelets (default 2,16)", intList(&cfg.KubeletClients))
	fs.DurationVar(&cfg.Duration, "duration", cfg.Duration, "how long each side of the kubelet and write scenarios runs")
	fs.Float64Var(&cfg.NothingRate, "nothing-rate", cfg.NothingRate, "LISTs per second with a selector that selects nothing")
	fs.DurationVar(&cfg.NothingDuration, "nothing-duration", cfg.NothingDuration, "how long the selector-selects-nothing load runs per side")
	fs.IntVar(&cfg.PageLimit, "page-limit", cfg.PageLimit, "page size of the paginated pass")
	fs.IntVar(&cfg.Passes, "passes", cfg.Passes, "paginated passes per side")
	fs.IntVar(&cfg.Watchers, "watchers", cfg.Watchers, "watchers of the fan-out")
	fs.IntVar(&cfg.Updates, "updates", cfg.Updates, "updates of the fan-out")
	fs.IntVar(&cfg.FanoutObjects, "fanout-objects", cfg.FanoutObjects, "objects the fan-out updates")
	fs.IntVar(&cfg.FanoutWriters, "fanout-writers", cfg.FanoutWriters, "concurrent writers of the fan-out")
	fs.DurationVar(&cfg.FanoutTimeout, "fanout-timeout", cfg.FanoutTimeout, "how long each side of the fan-out may take")
	fs.IntVar(&cfg.Writers, "writers", cfg.Writers, "concurrent writers of the write scenario's closed loop")
	fs.Float64Var(&cfg.WriteRate, "write-rate", cfg.WriteRate, "writes per second of the write scenario's paced part, on both sides")
	fs.IntVar(&cfg.ShardUpdates, "shard-updates", cfg.ShardUpdates, "shards scenario: pod updates in each watch phase (unsharded, then sharded)")
	fs.Float64Var(&cfg.ShardRate, "shard-rate", cfg.ShardRate, "shards scenario: pod updates per second, on both sides")
	fs.Func("scenarios", "comma-separated scenarios to run, or all (default: all but nodes, curves and protobuf):\n"+bench.ScenarioHelp(), func(v string) (err error) {
		cfg.Scenarios, err = bench.ParseScenarios(v)
		return err
	})
	fs.IntVar(&cfg.ClusterNodes, "cluster-nodes", cfg.ClusterNodes, "nodes scenario: nodes of the cluster, a kubelet-like client each")
	fs.IntVar(&cfg.PodsPerNode, "pods-per-node", cfg.PodsPerNode, "nodes, curves and protobuf scenarios: pods bound to each node")
	fs.DurationVar(&cfg.ClusterDuration, "cluster-duration", cfg.ClusterDuration, "nodes scenario: how long the load runs once every client has started")
	fs.DurationVar(&cfg.LeaseInterval, "lease-interval", cfg.LeaseInterval, "nodes scenario: how often each kubelet renews its Lease")
	fs.DurationVar(&cfg.NodeStatusInterval, "node-status-interval", cfg.NodeStatusInterval, "nodes scenario: how often each kubelet patches its node's status")
	fs.Float64Var(&cfg.ChurnRate, "churn-rate", cfg.ChurnRate, "nodes scenario: pods created per second, and as many deleted")
	fs.Func("curve-sizes", "curves scenario: comma-separated numbers of pods (default 10000,100000,1000000)", intList(&cfg.CurveSizes))
	fs.IntVar(&cfg.CurveWatchers, "curve-watchers", cfg.CurveWatchers, "curves scenario: watchers of all pods in the fan-out")
	fs.IntVar(&cfg.CurveUpdates, "curve-updates", cfg.CurveUpdates, "curves scenario: updates of the fan-out")
	fs.IntVar(&cfg.ProtobufPods, "protobuf-pods", cfg.ProtobufPods, "protobuf scenario: pods, listed and watched in JSON and in protobuf")
	fs.IntVar(&cfg.ProtobufWatchers, "protobuf-watchers", cfg.ProtobufWatchers, "protobuf scenario: watchers of all pods in the fan-out, per encoding")
	fs.IntVar(&cfg.ProtobufUpdates, "protobuf-updates", cfg.ProtobufUpdates, "protobuf scenario: updates of the fan-out, per encoding")
	fs.IntVar(&cfg.WritePathPods, "writepath-pods", cfg.WritePathPods, "writepath scenario: pods created, then status-patched (issue 29's table: 30000)")
	fs.StringVar(&cfg.WritePathProfiles, "writepath-profiles", "", "writepath scenario: directory to write the server's CPU profile of each phase's first 10 s and its heap profile after the load to")
	fs.StringVar(&cfg.WritePathServer, "writepath-server", "", "writepath scenario: kubeconfig of a running API server to load instead of starting one (needs --writepath-pids)")
	fs.Func("writepath-pids", "writepath scenario: process id of the --writepath-server, then its etcd's if etcd runs apart (comma-separated), for their CPU and memory", intList(&cfg.WritePathPIDs))
	fs.IntVar(&cfg.EtcdListConfigMaps, "etcdlists-configmaps", cfg.EtcdListConfigMaps, "etcdlists scenario: config maps of 4 KB listed from etcd")
	fs.BoolVar(&cfg.EtcdListsEmbeddedEtcd, "etcdlists-embedded-etcd", false, "etcdlists scenario: run etcd inside the server's process (its default without --etcd-servers) rather than in a process of its own")
	fs.StringVar(&cfg.EtcdListsProfiles, "etcdlists-profiles", "", "etcdlists scenario: directory to write the server's CPU profile of each phase's first 10 s to")
	if err := fs.Parse(args); err != nil {
		return cfg, "", err
	}
	if fs.NArg() > 0 {
		return cfg, "", fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if *large {
		cfg.ListSizes = append(cfg.ListSizes, 100000)
		if !flagGiven(fs, "max-list-bytes") {
			cfg.MaxListBytes = 600e6
		}
	}
	return cfg, out, cfg.Validate()
}

// intList parses a comma-separated list of positive integers into dst.
func intList(dst *[]int) func(string) error {
	return func(v string) error {
		*dst = nil
		for _, item := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(item))
			if err != nil || n <= 0 {
				return fmt.Errorf("%q is not a positive integer", item)
			}
			*dst = append(*dst, n)
		}
		return nil
	}
}

func flagGiven(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

// runBench is `watchcache bench`.
func runBench(args []string) error {
	cfg, out, err := parseBenchFlags(args)
	if err != nil {
		return err
	}
	if cfg.Executable, err = os.Executable(); err != nil {
		return err
	}
	cfg.Command = "go run ./cmd/watchcache bench"
	if len(args) > 0 {
		cfg.Command += " " + strings.Join(args, " ")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	began := time.Now()
	report, err := bench.Run(ctx, cfg)
	if err != nil {
		return err
	}
	fmt.Fprintf(cfg.Progress, "done in %s\n", time.Since(began).Round(time.Second))
	if out != "" {
		return bench.WriteOut(out, report)
	}
	return nil
}
