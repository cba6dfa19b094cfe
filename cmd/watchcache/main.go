// Command watchcache serves the Kubernetes API storage layer: Kubernetes
// REST over HTTPS for kubectl and client-go, objects in etcd (embedded unless
// --etcd-servers is given).
//
// Two subcommands: `watchcache bench` runs the benchmark of the watch cache
// against etcd (see docs/bench), and `watchcache etcd` runs only the
// embedded etcd, which the benchmark uses to run etcd in its own process.
//
// Started under the name kube-apiserver or etcd (a copy or a link of the
// binary), it acts as that program, with its flags: a folder holding it under
// both names is a KUBEBUILDER_ASSETS for controller-runtime's envtest
// (kubeapiserver.go).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/watchcache/watchcache/pkg/app"
	"github.com/watchcache/watchcache/pkg/controller"
)

// parseFlags parses the server's flags as watchcache's.
func parseFlags(args []string) (app.Config, error) { return parseFlagsAs("watchcache", args) }

// parseFlagsAs parses the server's flags for the program it acts as:
// watchcache, or kube-apiserver (see addKubeAPIServerFlags).
func parseFlagsAs(name string, args []string) (app.Config, error) {
	var c app.Config
	var servers string
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.StringVar(&c.DataDir, "data-dir", "watchcache-data", "where the embedded etcd keeps its data, and where the kubeconfig is written")
	fs.StringVar(&servers, "etcd-servers", "", "comma-separated etcd client URLs; empty runs an embedded etcd")
	var overrides string
	fs.StringVar(&overrides, "etcd-servers-overrides", "", "per-resource etcd servers, comma-separated group/resource#servers (servers separated by ';', /events#... for core events)")
	fs.StringVar(&c.EtcdCAFile, "etcd-cafile", "", "CA bundle to verify the etcd servers")
	fs.StringVar(&c.EtcdCertFile, "etcd-certfile", "", "client certificate for etcd")
	fs.StringVar(&c.EtcdKeyFile, "etcd-keyfile", "", "client key for etcd")
	fs.StringVar(&c.EtcdPrefix, "etcd-prefix", "/registry", "the prefix of every key this server writes in etcd")
	fs.IntVar(&c.EtcdClientPort, "etcd-client-port", 2379, "loopback port of the embedded etcd (0: any free port)")
	fs.DurationVar(&c.CompactionInterval, "etcd-compaction-interval", 5*time.Minute, "how often to compact etcd's history (0: never)")
	fs.StringVar(&c.BindAddress, "bind-address", "127.0.0.1", "address to serve HTTPS on (0.0.0.0 or :: for every interface)")
	fs.IntVar(&c.SecurePort, "secure-port", 6443, "port to serve HTTPS on (0: any free port)")
	fs.StringVar(&c.AdvertiseAddress, "advertise-address", "", "IP address the kubernetes Service's Endpoints list for this server (empty: the bind address, or the host's first non-loopback address when it is 0.0.0.0; a loopback address gets no Endpoints)")
	fs.StringVar(&c.ServiceClusterIPRange, "service-cluster-ip-range", app.DefaultServiceClusterIPRange, "CIDR of Service cluster IPs (two, comma-separated, one per IP family, for dual-stack): the default ServiceCIDR; the kubernetes Service gets its first IP")
	fs.StringVar(&c.ServiceNodePortRange, "service-node-port-range", app.DefaultServiceNodePortRange, "range of Service node ports (low-high, base+offset or one port): NodePort and LoadBalancer Services get free ones of it, requested ones must be in it")
	fs.Func("tls-san", "extra DNS name or IP address of the generated serving certificate (comma-separated, repeatable)", listFlag(&c.TLSSANs))
	fs.StringVar(&c.TLSCertFile, "tls-cert-file", "", "serving certificate (PEM) replacing the generated one; its issuer is not written to the kubeconfig")
	fs.StringVar(&c.TLSPrivateKeyFile, "tls-private-key-file", "", "key of --tls-cert-file")
	fs.StringVar(&c.ClientCAFile, "client-ca-file", "", "CA bundle (PEM) that client certificates must chain to, replacing the generated CA")
	addSecurityFlags(fs, &c)
	fs.BoolVar(&c.Profiling, "profiling", true, "serve Go's profiles under /debug/pprof/ (as kube-apiserver's --profiling)")
	fs.BoolVar(&c.LeaderElect, "leader-elect", true, "run the controllers of kube-controller-manager's role (namespaces, garbage collection) only on the server holding the Lease kube-system/watchcache-controller-manager, for servers sharing an etcd")
	fs.DurationVar(&c.LeaderElectLeaseDuration, "leader-elect-lease-duration", 15*time.Second, "how long the other servers wait after the leader's last renewal before taking over")
	fs.DurationVar(&c.LeaderElectRenewDeadline, "leader-elect-renew-deadline", 10*time.Second, "how long the leader tries to renew its Lease before it stops its controllers; less than the lease duration")
	fs.DurationVar(&c.LeaderElectRetryPeriod, "leader-elect-retry-period", 2*time.Second, "how long the servers wait between attempts to acquire or renew the Lease")
	fs.Func("controllers", "kube-controller-manager's controllers to run, as its --controllers: '*' (all on by default), 'name', '-name' (its names or aliases; comma-separated, repeatable; empty: none). watchcache runs "+
		strings.Join(controller.Implemented, ", ")+"; other kube-controller-manager names are accepted and left to it (default *)", func(v string) error {
		if c.Controllers == nil {
			c.Controllers = []string{}
		}
		c.Controllers = append(c.Controllers, csvItems(v)...)
		return nil
	})
	fs.DurationVar(&c.ResourceQuotaSyncPeriod, "resource-quota-sync-period", 5*time.Minute, "how often the quota controller recomputes every ResourceQuota's usage")
	fs.StringVar(&c.ClusterSigningCertFile, "cluster-signing-cert-file", "", "CA certificate (PEM) that signs approved CertificateSigningRequests, as kube-controller-manager's flag (empty: the generated CA)")
	fs.StringVar(&c.ClusterSigningKeyFile, "cluster-signing-key-file", "", "key of --cluster-signing-cert-file")
	fs.DurationVar(&c.ClusterSigningDuration, "cluster-signing-duration", 365*24*time.Hour, "longest validity of a signed certificate; a CertificateSigningRequest's spec.expirationSeconds may ask for less")
	fs.StringVar(&c.ResourcesFile, "resources", "", "YAML file of custom resources to serve")
	fs.BoolVar(&c.WatchCache, "watch-cache", true, "serve reads from a watch cache in front of etcd")
	fs.DurationVar(&c.WatchCacheHistoryWindow, "watch-cache-history-window", 75*time.Second, "how far back the watch cache keeps events and snapshots for watches and exact-revision lists")
	var gates []string
	fs.Func("feature-gates", "comma-separated Gate=true|false: ConsistentListFromCache, ConsistentGetFromCache, ResilientWatchCacheInitialization, ShardedListAndWatch (all default true)", func(v string) error {
		gates = append(gates, strings.Split(v, ",")...)
		return nil
	})
	fs.DurationVar(&c.RequestTimeout, "request-timeout", time.Minute, "how long a request other than a watch may take; then it is answered 504 Timeout (0: no bound)")
	fs.DurationVar(&c.EventTTL, "event-ttl", time.Hour, "how long an Event is kept after its last write (0: forever)")
	fs.DurationVar(&c.EtcdHealthcheckTimeout, "etcd-healthcheck-timeout", 2*time.Second, "how long the etcd check of /livez and /healthz may take")
	fs.DurationVar(&c.EtcdReadycheckTimeout, "etcd-readycheck-timeout", 2*time.Second, "how long the etcd-readiness check of /readyz may take")
	fs.DurationVar(&c.ShutdownDelay, "shutdown-delay-duration", 0, "on SIGTERM, how long to keep serving with /readyz failing (so that load balancers stop sending requests) before stopping")
	fs.BoolVar(&c.ShutdownSendRetryAfter, "shutdown-send-retry-after", false, "on SIGTERM, after --shutdown-delay-duration keep listening until the requests in flight have drained, answering new ones 429 with Retry-After and Connection: close")
	fs.DurationVar(&c.ShutdownWatchTerminationGracePeriod, "shutdown-watch-termination-grace-period", 0, "on SIGTERM, spread the ends of the open watches over this long once new requests are refused (0: end them at once)")
	fs.IntVar(&c.MaxRequestsInflight, "max-requests-inflight", 400, "read-only requests served at once (watches excluded); more get 429 (0: no cap); with API Priority and Fairness, the sum of the two limits is the seats its priority levels share")
	fs.IntVar(&c.MaxMutatingRequestsInflight, "max-mutating-requests-inflight", 200, "mutating requests served at once; more get 429 (0: no cap)")
	fs.BoolFunc("enable-priority-and-fairness", "API Priority and Fairness: classify requests by FlowSchema, queue them fairly per priority level (default true; false: the two in-flight caps instead)", func(v string) error {
		on, err := strconv.ParseBool(v)
		c.DisablePriorityAndFairness = !on
		return err
	})
	fs.DurationVar(&c.StorageInitializationTimeout, "storage-initialization-timeout", time.Minute, "how long /readyz waits at start for the built-in resources' watch caches")
	fs.DurationVar(&c.ConsistencyCheckInterval, "consistency-check-interval", 5*time.Minute, "how often to compare each watch cache with etcd at the same revision (0: never)")
	var fallback string
	fs.StringVar(&fallback, "consistent-read-fallback", "none", "when the watch cache cannot catch up in time for a consistent read: none (answer 429 with Retry-After) or etcd (read etcd)")
	var sizes string
	fs.StringVar(&sizes, "watch-cache-sizes", "", "per-resource watch cache history capacity, e.g. pods#1000,widgets.example.com#0 (0 turns the cache off for that resource)")
	finishKubeAPIServerFlags := addKubeAPIServerFlags(fs, &c) // last: the flags above win
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if err := finishKubeAPIServerFlags(); err != nil {
		return c, err
	}
	if _, err := controller.ParseControllers(c.Controllers); err != nil {
		return c, fmt.Errorf("--controllers: %w", err)
	}
	var err error
	if c.WatchCacheSizes, err = parseCacheSizes(sizes); err != nil {
		return c, err
	}
	if err := applyFeatureGates(&c, gates); err != nil {
		return c, err
	}
	switch fallback {
	case "none":
	case "etcd":
		c.ConsistentReadFallback = true
	default:
		return c, fmt.Errorf("--consistent-read-fallback=%q: must be none or etcd", fallback)
	}
	if overrides != "" {
		c.EtcdServersOverrides = []string{overrides}
	}
	if servers != "" {
		c.EtcdServers = strings.Split(servers, ",")
	}
	if c.EventTTL < 0 {
		return c, fmt.Errorf("--event-ttl %v must not be negative (0: Events are kept forever)", c.EventTTL)
	}
	if !strings.HasPrefix(c.EtcdPrefix, "/") || strings.HasSuffix(c.EtcdPrefix, "/") {
		return c, fmt.Errorf("--etcd-prefix %q must start with / and not end with /", c.EtcdPrefix)
	}
	if (c.EtcdCertFile == "") != (c.EtcdKeyFile == "") {
		return c, errors.New("--etcd-certfile and --etcd-keyfile go together")
	}
	if (c.TLSCertFile == "") != (c.TLSPrivateKeyFile == "") {
		return c, errors.New("--tls-cert-file and --tls-private-key-file go together")
	}
	return c, nil
}

func main() {
	name := actingAs(os.Args[0])
	if name == asEtcd {
		runSubcommand("etcd", os.Args[1:])
		return
	}
	if name == "watchcache" && len(os.Args) > 1 && (os.Args[1] == "bench" || os.Args[1] == "etcd") {
		runSubcommand(os.Args[1], os.Args[2:])
		return
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	cfg, err := parseFlagsAs(name, os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "watchcache:", err)
		os.Exit(2)
	}
	cfg.Log = log
	if err := run(cfg); err != nil {
		log.Error("watchcache failed", "err", err)
		os.Exit(1)
	}
}

// runSubcommand runs `watchcache bench` or `watchcache etcd` and exits.
func runSubcommand(name string, args []string) {
	run := runBench
	if name == "etcd" {
		run = runEtcd
	}
	err := run(args)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "watchcache %s: %v\n", name, err)
		os.Exit(1)
	}
}

// run serves until SIGINT or SIGTERM, then shuts down gracefully
// (--shutdown-delay-duration).
func run(cfg app.Config) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	a, err := app.Start(cfg)
	if err != nil {
		return withPortHint(err, cfg)
	}
	served := make(chan error, 1)
	go func() { served <- a.Wait() }()
	// The line users look for comes last, after the caches' log lines.
	if a.WaitInitialized(ctx) == nil {
		fmt.Printf("watchcache is serving the Kubernetes API on %s; point kubectl at it with: export KUBECONFIG=%s\n", a.URL, a.Kubeconfig)
	}
	select {
	case <-ctx.Done():
		// A second signal ends the process at once, as kube-apiserver's.
		stop()
		cfg.Log.Info("shutting down")
	case err := <-served:
		a.Close()
		return err
	}
	return a.Shutdown()
}

// withPortHint adds to the error of a start that found a port taken (by
// another watchcache, or a kube-apiserver or etcd) the flag that moves it.
func withPortHint(err error, cfg app.Config) error {
	if !errors.Is(err, syscall.EADDRINUSE) && !strings.Contains(err.Error(), "address already in use") {
		return err
	}
	api := fmt.Sprintf("--secure-port for the API (now %d)", cfg.SecurePort)
	etcd := fmt.Sprintf("--etcd-client-port for the embedded etcd (now %d)", cfg.EtcdClientPort)
	var hint string
	switch {
	case strings.Contains(err.Error(), fmt.Sprintf(":%d:", cfg.SecurePort)):
		hint = api
	case len(cfg.EtcdServers) == 0 && strings.Contains(err.Error(), fmt.Sprintf(":%d:", cfg.EtcdClientPort)):
		hint = etcd
	case len(cfg.EtcdServers) == 0:
		hint = api + ", " + etcd
	default:
		hint = api
	}
	return fmt.Errorf("%w; a port is in use: choose another with %s, or 0 for any free port", err, hint)
}

// parseCacheSizes parses --watch-cache-sizes: resource#size, comma-separated.
func parseCacheSizes(s string) (map[string]int, error) {
	sizes := map[string]int{}
	if s == "" {
		return sizes, nil
	}
	for _, item := range strings.Split(s, ",") {
		res, n, ok := strings.Cut(item, "#")
		size, err := strconv.Atoi(n)
		if !ok || res == "" || err != nil || size < 0 {
			return nil, fmt.Errorf("--watch-cache-sizes: %q is not resource#size", item)
		}
		sizes[res] = size
	}
	return sizes, nil
}

// applyFeatureGates sets the feature gates: all on by default, then as
// given on the command line (Gate=bool, later ones win).
func applyFeatureGates(c *app.Config, given []string) error {
	resilient, sharded := true, true
	c.ConsistentListFromCache, c.ConsistentGetFromCache = true, true
	gates := map[string]*bool{
		"ConsistentListFromCache":           &c.ConsistentListFromCache,
		"ConsistentGetFromCache":            &c.ConsistentGetFromCache,
		"ResilientWatchCacheInitialization": &resilient,
		"ShardedListAndWatch":               &sharded,
	}
	for _, item := range given {
		if item == "" {
			continue
		}
		name, value, _ := strings.Cut(item, "=")
		gate, ok := gates[name]
		if !ok {
			return fmt.Errorf("--feature-gates: unknown gate %q", name)
		}
		on, err := strconv.ParseBool(value)
		if err != nil {
			return fmt.Errorf("--feature-gates: %s=%q is not true or false", name, value)
		}
		*gate = on
		if name == "ConsistentListFromCache" || name == "ConsistentGetFromCache" {
			c.ConsistentReadsExplicit = true // the etcd version safeguard is strict then
		}
	}
	c.WaitWhileInitializing = !resilient
	c.DisableShardedListAndWatch = !sharded
	return nil
}

// csvItems are the comma-separated items of v, trimmed, as a pflag string
// slice reads them ("": none).
func csvItems(v string) []string {
	var items []string
	for _, item := range strings.Split(v, ",") {
		if item = strings.TrimSpace(item); item != "" {
			items = append(items, item)
		}
	}
	return items
}
