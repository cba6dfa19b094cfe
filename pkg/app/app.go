// Package app assembles the server: etcd (embedded or external), one store
// per resource, the HTTP server, the compactor; and takes them down in
// order.
package app

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/watchcache/watchcache/pkg/audit"
	"github.com/watchcache/watchcache/pkg/controller"
	"github.com/watchcache/watchcache/pkg/conversion"
	"github.com/watchcache/watchcache/pkg/crd/crdcontroller"
	"github.com/watchcache/watchcache/pkg/crd/crdfile"
	"github.com/watchcache/watchcache/pkg/encryption"
	"github.com/watchcache/watchcache/pkg/etcdembed"
	"github.com/watchcache/watchcache/pkg/health"
	"github.com/watchcache/watchcache/pkg/httpapi"
	"github.com/watchcache/watchcache/pkg/leaderelect"
	"github.com/watchcache/watchcache/pkg/pki"
	"github.com/watchcache/watchcache/pkg/resource"
	"github.com/watchcache/watchcache/pkg/servicenet"
	"github.com/watchcache/watchcache/pkg/storage"
	"github.com/watchcache/watchcache/pkg/storage/cacher"
	"github.com/watchcache/watchcache/pkg/storage/etcd3"
	"github.com/watchcache/watchcache/pkg/storage/storagemetrics"
	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/uuid"
)

// Config is everything the server needs to start.
type Config struct {
	// DataDir (made mode 0700) holds the embedded etcd's data, the
	// generated certificates (pki/) and the administrator's kubeconfig.
	DataDir string
	// EtcdServers, if set, are the client URLs of an external etcd.
	EtcdServers                           []string
	EtcdCAFile, EtcdCertFile, EtcdKeyFile string
	// EtcdServersOverrides store resources on etcd clusters of their own
	// (--etcd-servers-overrides, kube-apiserver's format:
	// "group/resource#server;server", "/events#..." for the core group);
	// each resource's consistent reads wait on its own cluster's revision.
	EtcdServersOverrides []string
	// EtcdPrefix prefixes every key written.
	EtcdPrefix string
	// EtcdClientPort is the embedded etcd's port (0: any free one).
	EtcdClientPort int
	// EtcdUnsafeNoFsync turns off fsync in the embedded etcd (tests only).
	EtcdUnsafeNoFsync bool
	// EtcdProgressNotifyInterval is the embedded etcd's period of watch
	// progress notifications, which become BOOKMARK events for watches that
	// allow them (0: one minute, as often as kube-apiserver sends bookmarks).
	EtcdProgressNotifyInterval time.Duration
	// CompactionInterval is the compactor's period (0: no compaction).
	CompactionInterval time.Duration
	// BindAddress and SecurePort are where HTTPS is served (empty address:
	// 127.0.0.1; port 0: a free one).
	BindAddress string
	SecurePort  int
	// AdvertiseAddress is the IP the kubernetes Service's Endpoints list
	// for this server (--advertise-address; empty: kube-apiserver's
	// default, see advertiseAddress).
	AdvertiseAddress string
	// ServiceClusterIPRange are the CIDRs of Service cluster IPs, one or
	// two comma-separated (--service-cluster-ip-range; empty:
	// kube-apiserver's 10.0.0.0/24): the default ServiceCIDR's.
	ServiceClusterIPRange string
	// ServiceNodePortRange is the range of Service node ports
	// (--service-node-port-range; empty: kube-apiserver's 30000-32767).
	ServiceNodePortRange string
	// TLSSANs are names the generated serving certificate covers besides
	// localhost, 127.0.0.1, ::1, the bind address and the host name
	// (--tls-san).
	TLSSANs []string
	// TLSCertFile and TLSPrivateKeyFile replace the generated serving
	// certificate (--tls-cert-file, --tls-private-key-file).
	TLSCertFile, TLSPrivateKeyFile string
	// ClientCAFile replaces the generated CA as the one client certificates
	// must chain to (--client-ca-file).
	ClientCAFile string
	// RequestTimeout bounds every request but watches (--request-timeout;
	// 0: none); past it the client gets 504 Timeout.
	RequestTimeout time.Duration
	// EventTTL is how long an Event lives after its last write
	// (--event-ttl; 0: Events never expire, as kube-apiserver's storage
	// attaches no lease for a TTL of 0).
	EventTTL time.Duration
	// EtcdHealthcheckTimeout and EtcdReadycheckTimeout bound the etcd
	// checks of /livez (and /healthz) and of /readyz
	// (--etcd-healthcheck-timeout, --etcd-readycheck-timeout; zero:
	// kube-apiserver's 2 s).
	EtcdHealthcheckTimeout, EtcdReadycheckTimeout time.Duration
	// ShutdownDelay is how long Shutdown keeps serving with /readyz failing
	// its shutdown check before it stops (--shutdown-delay-duration,
	// kube-apiserver's default 0), so that load balancers stop sending
	// requests first.
	ShutdownDelay time.Duration
	// ShutdownSendRetryAfter keeps listening after the delay until the
	// requests in flight have drained, answering new ones 429 with
	// Retry-After and Connection: close (--shutdown-send-retry-after);
	// ShutdownWatchTerminationGracePeriod spreads the watches' ends over
	// that long (--shutdown-watch-termination-grace-period). See shutdown.go.
	ShutdownSendRetryAfter              bool
	ShutdownWatchTerminationGracePeriod time.Duration
	// MaxRequestsInflight and MaxMutatingRequestsInflight cap the
	// read-only and mutating requests served at once
	// (--max-requests-inflight, --max-mutating-requests-inflight; 0: no
	// cap); the excess gets 429 with Retry-After. With API Priority and
	// Fairness their sum is the seats its priority levels share (both 0:
	// 600).
	MaxRequestsInflight, MaxMutatingRequestsInflight int
	// DisablePriorityAndFairness replaces API Priority and Fairness (package
	// flowcontrol, on by default) with the two in-flight caps
	// (--enable-priority-and-fairness=false).
	DisablePriorityAndFairness bool
	// ResourcesFile holds CustomResourceDefinitions (YAML or JSON
	// documents), applied at start through the API; Start returns once
	// they are served (optional).
	ResourcesFile string
	// CustomResourceDefinitions are applied at start as ResourcesFile's.
	CustomResourceDefinitions []*unstructured.Unstructured
	// WatchCache puts a watch cache in front of etcd for every resource
	// (--watch-cache); WatchCacheSizes overrides it per resource
	// ("pods" or "widgets.example.com" → history capacity; 0 turns the
	// cache off for that resource).
	WatchCache      bool
	WatchCacheSizes map[string]int
	// ConsistentListFromCache and ConsistentGetFromCache serve consistent
	// reads from the watch cache (feature gates); ConsistentReadFallback
	// sends them to etcd when the cache cannot catch up in time instead of
	// answering 429.
	ConsistentListFromCache bool
	ConsistentGetFromCache  bool
	ConsistentReadFallback  bool
	// ConsistentReadsExplicit says the gates above were set on the command
	// line: then an etcd with broken progress notifications is an error
	// rather than a reason to turn them off.
	ConsistentReadsExplicit bool
	// WaitWhileInitializing turns resilient watch cache initialization off
	// (gate ResilientWatchCacheInitialization=false): reads wait for a cache
	// that is not ready instead of going to etcd or getting 429.
	WaitWhileInitializing bool
	// StorageInitializationTimeout bounds how long /readyz waits for the
	// built-in resources' caches at start (0: one minute).
	StorageInitializationTimeout time.Duration
	// ConsistencyCheckInterval is how often each cache is compared with
	// etcd (0: never).
	ConsistencyCheckInterval time.Duration
	// WatchCacheHistoryWindow is how far back watches and exact-revision
	// lists can start in the cache (0: the cache's default, 75 s).
	WatchCacheHistoryWindow time.Duration
	// DisableShardedListAndWatch turns the shardSelector parameter of
	// lists and watches off (KEP-5866; gate ShardedListAndWatch=false):
	// it is then ignored, as by a server that does not know it.
	DisableShardedListAndWatch bool
	// MinWatchTimeout is passed to the server (0: its default).
	MinWatchTimeout time.Duration
	// Profiling serves Go's profiles under /debug/pprof/ (--profiling).
	Profiling bool
	// LeaderElect runs the controllers of kube-controller-manager's role
	// (package controller's Manager: namespaces, their ServiceAccount and
	// kube-root-ca.crt, garbage collection) only on the server holding the
	// Lease kube-system/watchcache-controller-manager, for servers sharing
	// an etcd (--leader-elect; the command's default is true; off, they
	// run on every server). The CRD controller runs on every server
	// either way.
	LeaderElect bool
	// LeaderElectLeaseDuration, LeaderElectRenewDeadline and
	// LeaderElectRetryPeriod are the election's timings
	// (--leader-elect-lease-duration, --leader-elect-renew-deadline,
	// --leader-elect-retry-period; 0: kube-controller-manager's 15 s, 10 s
	// and 2 s).
	LeaderElectLeaseDuration, LeaderElectRenewDeadline, LeaderElectRetryPeriod time.Duration
	// Controllers are kube-controller-manager's --controllers: "*" (those
	// on by default), "name", "-name", by its names or their aliases (nil:
	// "*"; empty: none). Of its controllers watchcache runs
	// controller.Implemented; a name it knows that watchcache does not run
	// is accepted and logged, an unknown name is an error. The cluster IP
	// repair and the kubernetes Service's reconciler, kube-apiserver's,
	// always run.
	Controllers []string
	// ResourceQuotaSyncPeriod is how often the quota controller recomputes
	// every quota (--resource-quota-sync-period; 0: kube-controller-manager's
	// 5 min).
	ResourceQuotaSyncPeriod time.Duration
	// ClusterSigningCertFile and ClusterSigningKeyFile are the CA that
	// signs approved CertificateSigningRequests (kube-controller-manager's
	// --cluster-signing-cert-file and --cluster-signing-key-file; empty:
	// the generated CA); ClusterSigningDuration the longest validity it
	// gives (0: a year).
	ClusterSigningCertFile, ClusterSigningKeyFile string
	ClusterSigningDuration                        time.Duration
	// EnableBootstrapTokenAuth accepts bootstrap tokens
	// (--enable-bootstrap-token-auth).
	EnableBootstrapTokenAuth bool

	// AuthorizationModes are the authorizers, asked in order (RBAC, Node,
	// AlwaysAllow, AlwaysDeny; empty: RBAC).
	AuthorizationModes []string
	// EnableAdmissionPlugins and DisableAdmissionPlugins turn admission
	// plugins on and off beside kube-apiserver's defaults
	// (--enable-admission-plugins, --disable-admission-plugins; see
	// admission.SelectPlugins).
	EnableAdmissionPlugins, DisableAdmissionPlugins []string
	// AnonymousAuth serves requests without credentials as
	// system:anonymous (--anonymous-auth; the command's default is true).
	AnonymousAuth bool
	// TokenAuthFile is the static tokens' CSV file (--token-auth-file).
	TokenAuthFile string
	// ServiceAccountSigningKeyFile signs ServiceAccount tokens (empty: a
	// key generated in <data-dir>/pki/sa.key); ServiceAccountKeyFiles
	// verify them too; ServiceAccountIssuers are the accepted issuers, the
	// first issuing; APIAudiences are the audiences a token must be for
	// (empty: the issuers).
	ServiceAccountSigningKeyFile string
	ServiceAccountKeyFiles       []string
	ServiceAccountIssuers        []string
	APIAudiences                 []string
	// EncryptionProviderConfig is the EncryptionConfiguration file of
	// encryption at rest (empty: values stored as they are).
	EncryptionProviderConfig string
	// AuditLogPath is where audit events go ("-": stdout; empty: no audit
	// log), rotated at AuditLogMaxSize megabytes, keeping AuditLogMaxBackups
	// files for AuditLogMaxAge days (0: no limit).
	AuditLogPath                                        string
	AuditLogMaxSize, AuditLogMaxBackups, AuditLogMaxAge int
	// AuditPolicyFile is the audit.k8s.io/v1 Policy deciding each
	// request's level and stages (--audit-policy-file; empty: every
	// request at Metadata, watchcache's default, where kube-apiserver logs
	// nothing).
	AuditPolicyFile string
	// AuditWebhook is the webhook backend (--audit-webhook-*; no
	// ConfigFile: none).
	AuditWebhook audit.WebhookConfig
	Log          *slog.Logger
	// WrapStore, if not nil, wraps each resource's etcd3 store (resource as
	// "configmaps" or "widgets.example.com") before the watch cache is put
	// in front of it. A test hook: tests use it to hold a cache in
	// initialization and to count the reads that reach etcd.
	WrapStore func(resource string, s storage.Interface) storage.Interface
	// ServiceRepairInterval is how often the cluster IP and node port
	// repair passes run (0: every 30 s; no flag, a test hook).
	ServiceRepairInterval time.Duration
}

// App is a running server.
type App struct {
	// nodePorts allocates Service node ports (its record in etcd is
	// shared by the replicas).
	nodePorts *servicenet.NodePorts
	// URL is where the API is served, e.g. https://127.0.0.1:6443.
	URL string
	// Kubeconfig is the administrator's kubeconfig file for URL.
	Kubeconfig string
	// PKI are the paths of the generated certificates in <data-dir>/pki.
	PKI pki.Files
	// ClientCAs are the CAs a client certificate must chain to: the
	// generated CA, or ClientCAFile's. The TLS handshake does not check
	// client certificates; the authenticator must.
	ClientCAs *x509.CertPool

	log    *slog.Logger
	http   *http.Server
	served chan error
	cancel context.CancelFunc
	client *clientv3.Client
	// overrides are the clients of --etcd-servers-overrides' clusters;
	// overrideClusters one of them per distinct set of servers, in the
	// flag's order (their health checks).
	overrides        map[resource.GroupResource]*clientv3.Client
	overrideClusters []*clientv3.Client
	// caches are every watch cache, custom resources' coming and going
	// (cachesMu).
	cachesMu sync.Mutex
	caches   []*cacher.Cacher
	// builtinCaches are the caches /readyz waits for at start.
	builtinCaches []*cacher.Cacher
	etcd          *etcdembed.Server
	// etcdTLS is the client TLS of an external etcd (--etcd-cafile, ...).
	etcdTLS *tls.Config
	etcdLog *zap.Logger
	// audit is the audit log (nil without --audit-log-path or a webhook).
	audit *audit.Log
	// elector is the controllers' leader election (nil without
	// LeaderElect); electionDone is closed once it has ended, its Lease
	// released.
	elector      *leaderelect.Elector
	electionDone chan struct{}
	// endpointsDone is closed once the endpoint reconciler has removed
	// this server from the kubernetes Endpoints.
	endpointsDone chan struct{}
	// stopElection and stopEndpoints end the election and the endpoint
	// reconciler as shutdown begins (nil: not running).
	stopElection, stopEndpoints context.CancelFunc
	// term is the graceful termination (shutdown.go).
	term      *termination
	closeOnce sync.Once
	closeErr  error
	// initialized is /readyz's watch-cache-initialization check, which
	// WaitInitialized waits on too.
	initialized func(context.Context) error
}

// Start starts everything and returns once the API is served.
func Start(cfg Config) (_ *App, err error) {
	a := &App{log: cfg.Log, served: make(chan error, 1)}
	defer func() {
		if err != nil { // undo what started
			a.Close()
		}
	}()
	if a.term, err = newTermination(cfg); err != nil {
		return nil, err
	}
	definitions := cfg.CustomResourceDefinitions
	if cfg.ResourcesFile != "" {
		fromFile, err := crdfile.ReadFile(cfg.ResourcesFile)
		if err != nil {
			return nil, fmt.Errorf("--resources: %w", err)
		}
		definitions = append(fromFile, definitions...)
	}
	registry, err := resource.NewRegistry(resource.Builtins()...)
	if err != nil {
		return nil, err
	}
	if cfg.BindAddress == "" {
		cfg.BindAddress = "127.0.0.1"
	}
	if (cfg.TLSCertFile == "") != (cfg.TLSPrivateKeyFile == "") {
		return nil, errors.New("TLSCertFile and TLSPrivateKeyFile go together")
	}
	if _, err := controller.ParseControllers(cfg.Controllers); err != nil {
		return nil, fmt.Errorf("--controllers: %w", err)
	}
	cidrs, err := serviceCIDRs(cfg.ServiceClusterIPRange)
	if err != nil {
		return nil, err
	}
	if cfg.ServiceNodePortRange == "" {
		cfg.ServiceNodePortRange = servicenet.DefaultNodePortRange
	}
	nodePortRange, err := servicenet.ParsePortRange(cfg.ServiceNodePortRange)
	if err != nil {
		return nil, fmt.Errorf("--service-node-port-range: %w", err)
	}
	advertise, err := advertiseAddress(cfg)
	if err != nil {
		return nil, err
	}
	if err := dataDirReady(cfg.DataDir); err != nil {
		return nil, err
	}
	if a.PKI, err = ensurePKI(cfg); err != nil {
		return nil, err
	}
	tlsConfig, err := servingTLS(cfg, a.PKI)
	if err != nil {
		return nil, err
	}
	if a.ClientCAs, err = clientCAs(cfg, a.PKI); err != nil {
		return nil, err
	}
	// The port first: a busy one fails the start at once, before etcd and
	// the caches start.
	ln, err := net.Listen("tcp", net.JoinHostPort(cfg.BindAddress, strconv.Itoa(cfg.SecurePort)))
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			ln.Close()
		}
	}()
	if a.client, err = a.connectEtcd(cfg); err != nil {
		return nil, err
	}
	if len(cfg.EtcdServers) > 0 {
		reportUnreachableEtcd(a.client, cfg.EtcdServers, a.etcdTLS, a.log)
	}
	if err := a.connectOverrides(cfg); err != nil {
		return nil, err
	}
	if err := applySafeguard(&cfg, a.client, cfg.Log); err != nil {
		return nil, err
	}
	a.nodePorts = nodePortAllocator(a.client, cfg.EtcdPrefix, nodePortRange)
	ctx, cancel := context.WithCancel(context.Background())
	a.cancel = cancel
	promRegistry := prometheus.NewRegistry()
	storageMetrics := storagemetrics.NewStorage(promRegistry)
	var enc *encryption.Config
	if cfg.EncryptionProviderConfig != "" {
		if enc, err = encryption.Load(cfg.EncryptionProviderConfig); err != nil {
			return nil, fmt.Errorf("--encryption-provider-config: %w", err)
		}
	}
	if err := a.migrateLayout(ctx, cfg, registry, enc); err != nil {
		return nil, err
	}
	for _, res := range registry.All() {
		if res.OwnStorage() {
			registry.SetStore(res, a.newStore(cfg, res, storageMetrics, enc))
		}
	}
	for _, res := range registry.All() {
		if res.Stored() && res.StoredWith != nil {
			registry.SetStore(res, conversion.Store(registry.Store(registry.StorageOf(res)), conversion.For(res.Group, res.Version, res.Kind)))
		}
	}
	namespaceStore := registry.Store(registry.Lookup("", "v1", "namespaces"))
	if err := ensureSystemObjects(ctx, registry); err != nil {
		return nil, err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	if err := ensureKubernetesService(ctx, registry, cidrs, port); err != nil {
		return nil, err
	}
	a.endpointsDone = make(chan struct{})
	if advertise.IsLoopback() { // refused by Endpoints validation
		close(a.endpointsDone)
	} else {
		r := &endpointReconciler{client: a.client, prefix: cfg.EtcdPrefix, registry: registry, ip: advertise, port: port}
		endpointsCtx, stop := context.WithCancel(ctx)
		a.stopEndpoints = stop
		go func() {
			defer close(a.endpointsDone)
			r.run(endpointsCtx, a.log.Warn)
		}()
	}
	identity, err := newIdentityLease(registry)
	if err != nil {
		return nil, fmt.Errorf("the API server identity Lease: %w", err)
	}
	go identity.run(ctx, a.log.Warn)
	apiSvcs := &apiServices{registry: registry, log: cfg.Log}
	if err := apiSvcs.ensureBuiltin(ctx); err != nil {
		return nil, err
	}
	registry.OnChange(apiSvcs.changed)
	if cfg.CompactionInterval > 0 {
		go etcd3.NewCompactor(a.client, cfg.EtcdPrefix, cfg.CompactionInterval, cfg.Log).Run(ctx)
		for _, c := range a.overrides {
			go etcd3.NewCompactor(c, cfg.EtcdPrefix, cfg.CompactionInterval, cfg.Log).Run(ctx)
		}
	}
	sec, err := a.startSecurity(ctx, cfg, registry)
	if err != nil {
		return nil, err
	}
	rootCA, err := os.ReadFile(a.PKI.CACert)
	if err != nil {
		return nil, err
	}
	certs, err := a.certificateControllers(cfg, registry, sec.authz)
	if err != nil {
		return nil, err
	}
	if err := a.startControllerManager(ctx, cfg, registry, rootCA, certs, promRegistry); err != nil {
		return nil, err
	}
	if sec.apf, err = startFlowControl(ctx, cfg, registry, promRegistry); err != nil {
		return nil, err
	}
	crds := &crdcontroller.CRDs{Registry: registry, Log: cfg.Log, StopStore: a.stopStore,
		NewStore: func(res *resource.Resource) storage.Interface { return a.newStore(cfg, res, storageMetrics, enc) }}
	crds.Start(ctx)
	a.initialized = a.cachesInitialized(cfg.StorageInitializationTimeout)
	healthChecks := slices.Concat(a.etcdChecks(cfg, namespaceStore),
		[]health.Check{
			{Name: "watch-cache-initialization", ReadyOnly: true, Check: a.initialized},
			{Name: "rbac", ReadyOnly: true, Check: sec.authz.ready}},
		postStartHooks(sec.authz.rbac != nil),
		[]health.Check{{Name: "shutdown", ReadyOnly: true, Check: a.term.readyCheck}})
	writes, err := writePipeline(cfg, registry, sec.authz, a.nodePorts)
	if err != nil {
		return nil, err
	}
	srv := httpapi.New(httpapi.Config{
		Registry: registry, Log: cfg.Log, MinWatchTimeout: cfg.MinWatchTimeout, Metrics: promRegistry, Profiling: cfg.Profiling,
		DisableShardedListAndWatch: cfg.DisableShardedListAndWatch,
		HealthChecks:               healthChecks,
		Actions:                    sec.actions, Pipeline: writes,
	})
	warnIfExposed(ctx, cfg, sec.authz)
	a.URL = kubeconfigServer(ln.Addr())
	// Every request's context ends when the server shuts down, so that
	// watches end cleanly instead of holding Shutdown up.
	a.http = &http.Server{Handler: a.term.handler(sec.handler(srv, cfg)), BaseContext: func(net.Listener) context.Context { return ctx }, ReadHeaderTimeout: 30 * time.Second,
		TLSConfig: tlsConfig}
	// ServeTLS, unlike Serve on a TLS listener, sets HTTP/2 up.
	go func() { a.served <- a.http.ServeTLS(stoppedListening{ln, a.term}, "", "") }()
	if a.Kubeconfig, err = writeKubeconfig(cfg, a.PKI, a.URL, a.ClientCAs, cfg.Log); err != nil {
		return nil, err
	}
	if err = crdfile.Apply(ctx, a.Kubeconfig, definitions, cfg.TLSCertFile); err != nil {
		return nil, fmt.Errorf("--resources: %w", err)
	}
	return a, nil
}

// postStartHooks are the checks of the start-up steps done before the
// server serves that have a counterpart among kube-apiserver's post-start
// hooks, named and ordered as its are: the CRD informer and controller
// (crdcontroller.CRDs.Start, which serves the stored definitions first),
// the system namespaces and priority classes (ensureSystemObjects), the
// identity Lease's renewal and collection (identityLease, started) and,
// with RBAC, its bootstrap policy.
func postStartHooks(rbac bool) []health.Check {
	names := []string{"start-apiextensions-informers", "start-apiextensions-controllers", "crd-informer-synced",
		"start-system-namespaces-controller", "start-kube-apiserver-identity-lease-controller",
		"start-kube-apiserver-identity-lease-garbage-collector", "rbac/bootstrap-roles", "scheduling/bootstrap-system-priority-classes"}
	var checks []health.Check
	for _, name := range names {
		if name != "rbac/bootstrap-roles" || rbac {
			checks = append(checks, health.PostStartHook(name))
		}
	}
	return checks
}

// controllerManagerLease names the Lease of the controllers' leader
// election, in kube-system.
const controllerManagerLease = "watchcache-controller-manager"

// startControllerManager starts the controllers of kube-controller-manager's
// role: at once, or, with cfg.LeaderElect, whenever this server holds the
// Lease. The gauge watchcache_leader says whether they run here.
func (a *App) startControllerManager(ctx context.Context, cfg Config, registry *resource.Registry, rootCA []byte, others []controller.Named,
	prom *prometheus.Registry) error {
	selection, err := controller.ParseControllers(cfg.Controllers)
	if err != nil {
		return fmt.Errorf("--controllers: %w", err)
	}
	if left := selection.NotImplemented(); len(left) > 0 {
		cfg.Log.Info("--controllers: watchcache does not run these kube-controller-manager controllers; run kube-controller-manager for them", "controllers", left)
	}
	manager := controller.Manager{Registry: registry, RootCA: rootCA, NodePorts: a.nodePorts, Controllers: selection,
		QuotaResync: cfg.ResourceQuotaSyncPeriod, RepairInterval: cfg.ServiceRepairInterval, Others: others, Log: cfg.Log}
	running := func() float64 { return 1 }
	if cfg.LeaderElect {
		leases := registry.Lookup("coordination.k8s.io", "v1", "leases")
		e, err := leaderelect.New(leaderelect.Config{
			Store: registry.Store(leases), Namespace: "kube-system", Name: controllerManagerLease,
			Key:           leases.Key("kube-system", controllerManagerLease),
			LeaseDuration: cfg.LeaderElectLeaseDuration, RenewDeadline: cfg.LeaderElectRenewDeadline,
			RetryPeriod: cfg.LeaderElectRetryPeriod, Log: cfg.Log,
		})
		if err != nil {
			return err
		}
		a.elector, a.electionDone = e, make(chan struct{})
		electionCtx, stop := context.WithCancel(ctx)
		a.stopElection = stop
		go func() {
			defer close(a.electionDone)
			e.Run(electionCtx, manager.Run)
		}()
		running = func() float64 {
			if e.Leading() {
				return 1
			}
			return 0
		}
	} else {
		go manager.Run(ctx)
	}
	return prom.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "watchcache_leader",
		Help: "1 while this server runs the controllers of kube-controller-manager's role (it holds their Lease, or leader election is off), else 0."}, running))
}

// etcdChecks are kube-apiserver's health checks of etcd: "etcd" (also of
// /livez and /healthz) and "etcd-readiness" through store, then the same
// for each distinct cluster of --etcd-servers-overrides,
// "etcd-override-<i>" and "etcd-override-readiness-<i>", which ?exclude=etcd
// and ?exclude=etcd-readiness skip too.
func (a *App) etcdChecks(cfg Config, store storage.Interface) []health.Check {
	checks := []health.Check{
		{Name: "etcd", Check: etcdCheck(store.CurrentResourceVersion, cfg.EtcdHealthcheckTimeout)},
		{Name: "etcd-readiness", ReadyOnly: true, Check: etcdCheck(store.CurrentResourceVersion, cfg.EtcdReadycheckTimeout)},
	}
	for i, c := range a.overrideClusters {
		read := clusterRevision(c, cfg.EtcdPrefix)
		checks = append(checks,
			health.Check{Name: fmt.Sprintf("etcd-override-%d", i), Group: "etcd", Check: etcdCheck(read, cfg.EtcdHealthcheckTimeout)},
			health.Check{Name: fmt.Sprintf("etcd-override-readiness-%d", i), Group: "etcd-readiness", ReadyOnly: true,
				Check: etcdCheck(read, cfg.EtcdReadycheckTimeout)})
	}
	return checks
}

// etcdCheck is a health check of etcd: a quorum read of its revision,
// within timeout (kube-apiserver's 2 s when zero).
func etcdCheck(readRevision func(context.Context) (uint64, error), timeout time.Duration) func(context.Context) error {
	if timeout == 0 {
		timeout = 2 * time.Second
	}
	return func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		_, err := readRevision(ctx)
		return err
	}
}

// clusterRevision reads an etcd cluster's current revision as a store's
// CurrentResourceVersion does: a keys-only quorum read under prefix.
func clusterRevision(c *clientv3.Client, prefix string) func(context.Context) (uint64, error) {
	return func(ctx context.Context) (uint64, error) {
		resp, err := c.Get(ctx, prefix, clientv3.WithLimit(1), clientv3.WithKeysOnly())
		if err != nil {
			return 0, err
		}
		return uint64(resp.Header.Revision), nil
	}
}

// cachesInitialized is the /readyz check of KEP-4568: not ready until every
// built-in resource's cache is ready or the timeout has passed since start;
// from then on ready for good (a cache that re-initializes later refuses
// its own requests instead of making the whole server unready).
func (a *App) cachesInitialized(timeout time.Duration) func(context.Context) error {
	if timeout == 0 {
		timeout = time.Minute
	}
	deadline := time.Now().Add(timeout)
	var passed atomic.Bool
	return func(context.Context) error {
		if passed.Load() {
			return nil
		}
		var pending []string
		for _, c := range a.builtinCaches {
			if !c.Ready() {
				pending = append(pending, c.Resource())
			}
		}
		if len(pending) == 0 || time.Now().After(deadline) {
			passed.Store(true)
			return nil
		}
		return fmt.Errorf("watch caches still initializing: %s", strings.Join(pending, ", "))
	}
}

// etcdConfig is the configuration of res's etcd3 store: kube-apiserver's
// key and value layout, values encrypted as enc says.
func (a *App) etcdConfig(cfg Config, res *resource.Resource, m *storagemetrics.Storage, enc *encryption.Config) etcd3.Config {
	etcdConfig := etcd3.Config{Client: a.etcdClient(res), Prefix: res.EtcdPrefix(cfg.EtcdPrefix), Schema: res.Schema(),
		Codec: res.StorageCodec(), Resource: res.String(), Metrics: m, DisableShardedListAndWatch: cfg.DisableShardedListAndWatch}
	if res.Expires {
		etcdConfig.TTL = cfg.EventTTL
	}
	if t := enc.For(res.Group, res.Plural); t != nil {
		etcdConfig.Transformer = t
	}
	return etcdConfig
}

// newStore builds a resource's store: etcd3 (encrypting values as enc
// says), behind a watch cache unless the cache is off for it.
func (a *App) newStore(cfg Config, res *resource.Resource, m *storagemetrics.Storage, enc *encryption.Config) storage.Interface {
	etcdStore := etcd3.New(a.etcdConfig(cfg, res, m, enc))
	var store storage.Interface = etcdStore
	if cfg.WrapStore != nil {
		store = cfg.WrapStore(res.String(), store)
	}
	size, sized := cfg.WatchCacheSizes[res.String()]
	if !cfg.WatchCache && !sized || sized && size == 0 {
		return store
	}
	c := cacher.New(cacher.Config{
		Store: store, Resource: res.String(), IndexedFields: res.IndexedFields,
		HistoryCapacity: size, HistoryWindow: cfg.WatchCacheHistoryWindow,
		ConsistentListFromCache: cfg.ConsistentListFromCache, ConsistentGetFromCache: cfg.ConsistentGetFromCache,
		ConsistentReadFallback: cfg.ConsistentReadFallback, ConsistencyCheckInterval: cfg.ConsistencyCheckInterval,
		WaitWhileInitializing: cfg.WaitWhileInitializing, DisableShardedListAndWatch: cfg.DisableShardedListAndWatch,
		IsCompacted: etcdStore.IsCompacted, Metrics: m, Log: cfg.Log,
	})
	a.cachesMu.Lock()
	a.caches = append(a.caches, c)
	a.cachesMu.Unlock()
	if res.Group == "" {
		a.builtinCaches = append(a.builtinCaches, c)
	}
	return c
}

// stopStore stops a store newStore made that is no longer served (a
// deleted custom resource's).
func (a *App) stopStore(store storage.Interface) {
	c, ok := store.(*cacher.Cacher)
	if !ok {
		return
	}
	a.cachesMu.Lock()
	a.caches = slices.DeleteFunc(a.caches, func(x *cacher.Cacher) bool { return x == c })
	a.cachesMu.Unlock()
	c.Stop()
}

// connectEtcd starts the embedded etcd unless external servers are given,
// and returns a client.
func (a *App) connectEtcd(cfg Config) (*clientv3.Client, error) {
	if len(cfg.EtcdServers) == 0 {
		return a.startEmbeddedEtcd(cfg)
	}
	if cfg.EtcdCertFile != "" || cfg.EtcdCAFile != "" {
		info := transport.TLSInfo{CertFile: cfg.EtcdCertFile, KeyFile: cfg.EtcdKeyFile, TrustedCAFile: cfg.EtcdCAFile}
		var err error
		if a.etcdTLS, err = info.ClientConfig(); err != nil {
			return nil, fmt.Errorf("etcd TLS: %w", err)
		}
	}
	return newEtcdClient(cfg.EtcdServers, a.etcdTLS)
}

// startEmbeddedEtcd starts etcd in <data-dir>/etcd, serving clients over
// TLS to certificates of the generated CA only, and returns a client that
// presents this server's etcd client certificate.
func (a *App) startEmbeddedEtcd(cfg Config) (*clientv3.Client, error) {
	progressInterval := cfg.EtcdProgressNotifyInterval
	if progressInterval == 0 {
		progressInterval = time.Minute
	}
	var err error
	if a.etcdLog, err = etcdLogger(cfg.DataDir); err != nil {
		return nil, err
	}
	serverTLS, clientCert, clientKey := etcdTLS(a.PKI)
	a.etcd, err = etcdembed.Start(etcdembed.Config{DataDir: filepath.Join(cfg.DataDir, "etcd"), ClientPort: cfg.EtcdClientPort,
		UnsafeNoFsync: cfg.EtcdUnsafeNoFsync, Logger: a.etcdLog, ProgressNotifyInterval: progressInterval,
		ClientTLS: serverTLS, ClientCert: clientCert, ClientKey: clientKey})
	if err != nil {
		return nil, err
	}
	a.log.Info("embedded etcd is serving", "endpoint", a.etcd.Endpoint, "log", filepath.Join(cfg.DataDir, "etcd.log"))
	return a.etcd.NewClient()
}

// ensureSystemObjects creates the system namespaces and priority classes
// that do not exist, as kube-apiserver does at start.
func ensureSystemObjects(ctx context.Context, registry *resource.Registry) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	type systemObject struct {
		group, plural string
		obj           metav1.Object
	}
	var objects []systemObject
	for _, name := range httpapi.SystemNamespaces {
		objects = append(objects, systemObject{"", "namespaces", &corev1.Namespace{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelMetadataName: name}},
			Spec:       corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{corev1.FinalizerKubernetes}},
			Status:     corev1.NamespaceStatus{Phase: corev1.NamespaceActive},
		}})
	}
	for _, pc := range httpapi.SystemPriorityClasses {
		pc.Generation = 1
		objects = append(objects, systemObject{"scheduling.k8s.io", "priorityclasses", &pc})
	}
	for _, o := range objects {
		o.obj.SetUID(uuid.NewUUID())
		o.obj.SetCreationTimestamp(metav1.Now())
		data, err := json.Marshal(o.obj)
		if err != nil {
			return err
		}
		res := registry.Lookup(o.group, "v1", o.plural)
		_, err = registry.Store(res).Create(ctx, res.Key("", o.obj.GetName()), data)
		if err != nil && storage.CodeOf(err) != storage.ErrAlreadyExists {
			return fmt.Errorf("%s %s: %w", o.plural, o.obj.GetName(), err)
		}
	}
	return nil
}

// Wait blocks until the HTTP server stops and returns why.
func (a *App) Wait() error {
	err := <-a.served
	a.served <- err
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Close shuts down in order: stop accepting and end every request (watches
// end with a clean close), then the etcd client, then the embedded etcd,
// which flushes every acknowledged write. Only the first call does; later
// ones (after Shutdown) return its error.
func (a *App) Close() error {
	a.closeOnce.Do(func() { a.closeErr = a.close() })
	return a.closeErr
}

func (a *App) close() error {
	if a.cancel != nil {
		a.cancel()
	}
	var errs []error
	if a.http != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		errs = append(errs, a.http.Shutdown(ctx))
		cancel()
	}
	if a.electionDone != nil { // the controllers stop, then the Lease is released
		select {
		case <-a.electionDone:
		case <-time.After(30 * time.Second):
			a.log.Warn("leader election: the controllers did not stop in 30s; the Lease was not released")
		}
	}
	if a.endpointsDone != nil {
		select {
		case <-a.endpointsDone:
		case <-time.After(10 * time.Second):
		}
	}
	a.cachesMu.Lock()
	caches := a.caches
	a.cachesMu.Unlock()
	for _, c := range caches {
		c.Stop()
	}
	errs = append(errs, a.audit.Close())
	for _, c := range a.overrides {
		errs = append(errs, c.Close())
	}
	if a.client != nil {
		errs = append(errs, a.client.Close())
	}
	if a.etcd != nil {
		a.etcd.Close()
	}
	if a.etcdLog != nil {
		a.etcdLog.Sync()
	}
	return errors.Join(errs...)
}

// etcdLogger sends the embedded etcd's warnings and errors to
// <data-dir>/etcd.log, out of the way of this server's own log.
func etcdLogger(dataDir string) (*zap.Logger, error) {
	zc := zap.NewProductionConfig()
	zc.Level = zap.NewAtomicLevelAt(zap.WarnLevel)
	zc.OutputPaths = []string{filepath.Join(dataDir, "etcd.log")}
	zc.ErrorOutputPaths = zc.OutputPaths
	return zc.Build()
}
