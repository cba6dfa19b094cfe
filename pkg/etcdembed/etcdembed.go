// Package etcdembed runs an etcd server inside the current process, for the
// watchcache binary and for tests: by default a single member on loopback,
// or one member of a multi-member cluster.
//
// A single member (no InitialCluster and no peer URLs, the default) has no
// peer listener: it never talks to a peer, so its peer URL is only
// advertised (raft needs one in the member list) and nothing listens on it.
// A member of a cluster listens for its peers on ListenPeerURLs, over TLS
// with PeerTLS, and is formed and joined with etcd's own bootstrap settings
// (InitialCluster, InitialClusterState, InitialClusterToken), which etcd
// ignores once the data dir holds a member: restarting on the same data dir
// with the same Config rejoins the cluster.
//
// Clients are served over TLS when ClientTLS names a certificate, and then,
// with ClientTLS.ClientCertAuth, only to clients whose certificate the
// trusted CA signed.
package etcdembed

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	"go.etcd.io/etcd/client/pkg/v3/types"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// Config says how to run the embedded etcd. The zero value is not usable:
// DataDir is required. Fields named after an etcd flag have that flag's
// meaning.
type Config struct {
	// DataDir holds etcd's data; it is created if missing.
	DataDir string
	// ClientPort is the loopback port served to clients; 0 picks a free one.
	// Unused when ListenClientURLs is given.
	ClientPort int
	// UnsafeNoFsync turns off fsync. Only for tests: a crash loses writes.
	UnsafeNoFsync bool
	// ProgressNotifyInterval is the period of etcd's own watch progress
	// notifications; 0 keeps etcd's default (10 minutes).
	ProgressNotifyInterval time.Duration
	// QuotaBackendBytes is the size at which etcd refuses writes; 0 keeps
	// etcd's default (2 GiB).
	QuotaBackendBytes int64
	// Logger receives etcd's logs; nil discards them.
	Logger *zap.Logger
	// ClientTLS, when its CertFile is set, serves clients over HTTPS (etcd's
	// --cert-file, --key-file, --trusted-ca-file, --client-cert-auth).
	// NewClient then connects with ClientCert.
	ClientTLS transport.TLSInfo
	// ClientCert is the client certificate NewClient presents (with
	// ClientTLS.TrustedCAFile to verify the server); used only with
	// ClientTLS.
	ClientCert, ClientKey string
	// PeerTLS is etcd's peer TLS (--peer-cert-file, --peer-key-file,
	// --peer-trusted-ca-file, --peer-client-cert-auth): peers are served and
	// dialed with it, over https peer URLs. A single member only advertises
	// an https peer URL with it.
	PeerTLS transport.TLSInfo

	// Name is the member's name (etcd's --name); empty means "watchcache".
	Name string
	// InitialCluster is etcd's --initial-cluster: comma-separated
	// name=peerURL pairs naming every member of a new cluster (a name may
	// repeat, once per peer URL). Empty with peer URLs given: this member
	// alone, with them. Empty with no peer URLs either: a single member
	// without a peer listener.
	InitialCluster string
	// InitialClusterState is etcd's --initial-cluster-state: "new" (or
	// empty) to form a cluster, "existing" to join one that already added
	// this member (etcdctl member add).
	InitialClusterState string
	// InitialClusterToken is etcd's --initial-cluster-token; empty means
	// etcd's "etcd-cluster".
	InitialClusterToken string
	// ListenPeerURLs is etcd's --listen-peer-urls; empty in a cluster means
	// AdvertisePeerURLs.
	ListenPeerURLs []string
	// AdvertisePeerURLs is etcd's --initial-advertise-peer-urls; empty
	// means this member's URLs in InitialCluster, or else ListenPeerURLs.
	AdvertisePeerURLs []string
	// ListenClientURLs is etcd's --listen-client-urls; given, it replaces
	// ClientPort.
	ListenClientURLs []string
	// AdvertiseClientURLs is etcd's --advertise-client-urls; empty means
	// ListenClientURLs. The first one is the Server's Endpoint.
	AdvertiseClientURLs []string
	// HeartbeatInterval and ElectionTimeout are etcd's --heartbeat-interval
	// and --election-timeout (whole milliseconds). Zero means etcd's 100ms
	// and 1s for a member of a cluster, and 10ms and 100ms for a single
	// member, which then elects itself within tens of milliseconds.
	HeartbeatInterval, ElectionTimeout time.Duration
	// SnapshotCount is etcd's --snapshot-count; 0 keeps etcd's default
	// (10,000 applied entries between snapshots to disk). It does not bound
	// the raft log in memory: etcd 3.7 snapshots to memory every 100
	// entries and then keeps SnapshotCatchUpEntries of the log.
	SnapshotCount uint64
	// SnapshotCatchUpEntries is etcd's --snapshot-catchup-entries: the raft
	// entries kept in memory, values included, for a slow follower to
	// catch up from. 0 means etcd's default (5,000) for a member of a
	// cluster, and singleCatchUpEntries for a single member, which has no
	// follower to keep them for.
	SnapshotCatchUpEntries uint64
	// ReadyTimeout bounds how long Start waits for the member to serve; 0
	// means 1 minute for a single member and 10 minutes for a member of a
	// cluster, which serves only once a quorum of members is up.
	ReadyTimeout time.Duration
}

// Server is a running embedded etcd.
type Server struct {
	etcd *embed.Etcd
	// Endpoint is the client URL, e.g. http://127.0.0.1:2379, or
	// https://127.0.0.1:2379 with ClientTLS: the first advertised one.
	Endpoint string
	// clientTLS is how NewClient connects (nil: plain).
	clientTLS *tls.Config
}

// startAttempts bounds retries when a free port picked for etcd is taken by
// someone else before etcd binds it.
const startAttempts = 5

// Default ticks and ready timeouts (see Config).
const (
	singleHeartbeat, singleElection         = 10 * time.Millisecond, 100 * time.Millisecond
	clusterHeartbeat, clusterElection       = 100 * time.Millisecond, time.Second
	singleReadyTimeout, clusterReadyTimeout = time.Minute, 10 * time.Minute
)

// singleCatchUpEntries is a single member's default SnapshotCatchUpEntries.
// etcd keeps 5,000 entries for followers, whole values included: with
// issue 29's pods (creates of 2.3 KB, status patches that make them 3.8 KB)
// about 20 MB that a member without followers never reads. Deliberately
// not etcd's default; a member of a cluster keeps etcd's.
const singleCatchUpEntries = 100

// Start launches etcd and waits until it serves requests.
func Start(cfg Config) (*Server, error) {
	return StartContext(context.Background(), cfg)
}

// StartContext is Start, giving up when ctx ends: a member of a new cluster
// waits for a quorum of its peers.
func StartContext(ctx context.Context, cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("etcdembed: %w", err)
	}
	var lastErr error
	for attempt := 0; attempt < startAttempts; attempt++ {
		s, err := start(ctx, cfg)
		if err == nil {
			return s, nil
		}
		lastErr = err
		if cfg.ClientPort != 0 || len(cfg.ListenClientURLs) > 0 || cfg.clustered() || ctx.Err() != nil {
			break
		}
	}
	return nil, lastErr
}

// Validate reports a Config etcd would refuse or misread, naming the etcd
// flag at fault: a bad URL, a Name missing from InitialCluster, a TLS
// certificate without its key, https URLs without a certificate.
func (c Config) Validate() error {
	if c.DataDir == "" {
		return errors.New("DataDir is required")
	}
	port := c.ClientPort
	if port == 0 {
		port = 1 // any port, to check the rest
	}
	ec, err := c.embedConfig(port)
	if err != nil {
		return err
	}
	ec.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	return ec.Validate()
}

// clustered says whether c asks for a member of a cluster rather than the
// default single member without a peer listener.
func (c Config) clustered() bool {
	return c.InitialCluster != "" || len(c.ListenPeerURLs) > 0 || len(c.AdvertisePeerURLs) > 0
}

// embedConfig checks c and turns it into etcd's configuration, serving
// clients on clientPort unless ListenClientURLs is given.
func (c Config) embedConfig(clientPort int) (*embed.Config, error) {
	if err := checkTLSFlags(c.ClientTLS, ""); err != nil {
		return nil, err
	}
	if err := checkTLSFlags(c.PeerTLS, "peer-"); err != nil {
		return nil, err
	}
	ec := embed.NewConfig()
	ec.Name = c.Name
	if ec.Name == "" {
		ec.Name = "watchcache"
	}
	ec.Dir = c.DataDir
	ec.WalDir = filepath.Join(c.DataDir, "wal")
	ec.ClientTLSInfo = c.ClientTLS
	ec.PeerTLSInfo = c.PeerTLS
	if c.InitialClusterToken != "" {
		ec.InitialClusterToken = c.InitialClusterToken
	}
	switch c.InitialClusterState {
	case "", embed.ClusterStateFlagNew:
		ec.ClusterState = embed.ClusterStateFlagNew
	case embed.ClusterStateFlagExisting:
		if c.InitialCluster == "" {
			return nil, errors.New("--initial-cluster-state existing needs --initial-cluster")
		}
		ec.ClusterState = embed.ClusterStateFlagExisting
	default:
		return nil, fmt.Errorf("--initial-cluster-state %q: must be new or existing", c.InitialClusterState)
	}

	// Clients.
	if len(c.ListenClientURLs) > 0 {
		var err error
		if ec.ListenClientUrls, err = parseURLs("--listen-client-urls", c.ListenClientURLs, c.ClientTLS, ""); err != nil {
			return nil, err
		}
		advertise := c.AdvertiseClientURLs
		if len(advertise) == 0 {
			for _, u := range ec.ListenClientUrls {
				if ip := net.ParseIP(u.Hostname()); ip != nil && ip.IsUnspecified() {
					return nil, fmt.Errorf("--advertise-client-urls is required when --listen-client-urls has %s", u.Host)
				}
			}
			advertise = c.ListenClientURLs
		}
		if ec.AdvertiseClientUrls, err = parseURLs("--advertise-client-urls", advertise, c.ClientTLS, ""); err != nil {
			return nil, err
		}
	} else {
		if len(c.AdvertiseClientURLs) > 0 {
			return nil, errors.New("--advertise-client-urls needs --listen-client-urls")
		}
		u := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", clientPort)}
		if c.ClientTLS.CertFile != "" {
			u.Scheme = "https"
		}
		ec.ListenClientUrls = []url.URL{u}
		ec.AdvertiseClientUrls = []url.URL{u}
	}

	// Peers.
	if !c.clustered() {
		ec.ListenPeerUrls = nil
		u := url.URL{Scheme: "http", Host: "127.0.0.1:2380"}
		if c.PeerTLS.CertFile != "" {
			u.Scheme = "https"
		}
		ec.AdvertisePeerUrls = []url.URL{u}
		ec.InitialCluster = ec.InitialClusterFromName(ec.Name)
	} else {
		var err error
		var members types.URLsMap
		if c.InitialCluster != "" {
			if members, err = types.NewURLsMap(c.InitialCluster); err != nil {
				return nil, fmt.Errorf("--initial-cluster %q: %w", c.InitialCluster, err)
			}
			for name, urls := range members {
				if name == "" {
					return nil, fmt.Errorf("--initial-cluster %q: a member without a name", c.InitialCluster)
				}
				if err := checkScheme("--initial-cluster", urls, c.PeerTLS, "peer-"); err != nil {
					return nil, err
				}
			}
			if _, ok := members[ec.Name]; !ok {
				return nil, fmt.Errorf("--name %q is not in --initial-cluster %q", ec.Name, c.InitialCluster)
			}
		}
		advertise, listen := c.AdvertisePeerURLs, c.ListenPeerURLs
		if len(advertise) == 0 && members != nil {
			advertise = members[ec.Name].StringSlice()
		}
		if len(advertise) == 0 {
			advertise = listen
		}
		if len(listen) == 0 {
			listen = advertise
		}
		if ec.AdvertisePeerUrls, err = parseURLs("--initial-advertise-peer-urls", advertise, c.PeerTLS, "peer-"); err != nil {
			return nil, err
		}
		if ec.ListenPeerUrls, err = parseURLs("--listen-peer-urls", listen, c.PeerTLS, "peer-"); err != nil {
			return nil, err
		}
		for _, u := range ec.AdvertisePeerUrls {
			if ip := net.ParseIP(u.Hostname()); ip != nil && ip.IsUnspecified() {
				return nil, fmt.Errorf("--initial-advertise-peer-urls: %s is not an address peers can reach", u.Host)
			}
		}
		if members == nil {
			ec.InitialCluster = ec.InitialClusterFromName(ec.Name)
		} else {
			ec.InitialCluster = c.InitialCluster
			own := types.URLs(slices.Clone(ec.AdvertisePeerUrls))
			own.Sort()
			if own.String() != members[ec.Name].String() {
				return nil, fmt.Errorf("--initial-cluster has %s=%s but --initial-advertise-peer-urls is %s", ec.Name, members[ec.Name], own)
			}
		}
	}

	// Raft timing and the rest.
	heartbeat, election := singleHeartbeat, singleElection
	if c.clustered() {
		heartbeat, election = clusterHeartbeat, clusterElection
	}
	if c.HeartbeatInterval != 0 {
		heartbeat = c.HeartbeatInterval
	}
	if c.ElectionTimeout != 0 {
		election = c.ElectionTimeout
	}
	if heartbeat < 0 || election < 0 {
		return nil, errors.New("--heartbeat-interval and --election-timeout must be positive")
	}
	ec.TickMs = uint(heartbeat / time.Millisecond)
	ec.ElectionMs = uint(election / time.Millisecond)
	if c.SnapshotCount > 0 {
		ec.SnapshotCount = c.SnapshotCount
	}
	switch {
	case c.SnapshotCatchUpEntries > 0:
		ec.SnapshotCatchUpEntries = c.SnapshotCatchUpEntries
	case !c.clustered():
		ec.SnapshotCatchUpEntries = singleCatchUpEntries
	}
	ec.UnsafeNoFsync = c.UnsafeNoFsync
	if c.ProgressNotifyInterval > 0 {
		ec.WatchProgressNotifyInterval = c.ProgressNotifyInterval
	}
	ec.MaxRequestBytes = maxRequestBytes
	ec.QuotaBackendBytes = c.QuotaBackendBytes
	if c.Logger != nil {
		ec.ZapLoggerBuilder = embed.NewZapLoggerBuilder(c.Logger)
	} else {
		ec.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	}
	return ec, nil
}

// checkTLSFlags checks that a certificate comes with its key, and that a
// trusted CA and client certificate authentication come with a certificate.
func checkTLSFlags(info transport.TLSInfo, prefix string) error {
	if (info.CertFile == "") != (info.KeyFile == "") {
		return fmt.Errorf("--%scert-file and --%skey-file go together", prefix, prefix)
	}
	if info.CertFile == "" && (info.TrustedCAFile != "" || info.ClientCertAuth) {
		return fmt.Errorf("--%strusted-ca-file and --%sclient-cert-auth need --%scert-file", prefix, prefix, prefix)
	}
	return nil
}

// parseURLs parses the URLs of flag, which must be http without a
// certificate in info and https with one, and name a port.
func parseURLs(flag string, in []string, info transport.TLSInfo, prefix string) ([]url.URL, error) {
	urls, err := types.NewURLs(in)
	if err != nil {
		return nil, fmt.Errorf("%s %q: %w", flag, strings.Join(in, ","), err)
	}
	return urls, checkScheme(flag, urls, info, prefix)
}

// checkScheme: see parseURLs.
func checkScheme(flag string, urls types.URLs, info transport.TLSInfo, prefix string) error {
	for _, u := range urls {
		switch {
		case u.Scheme != "http" && u.Scheme != "https":
			return fmt.Errorf("%s: %s: the scheme must be http or https", flag, u.String())
		case u.Port() == "0":
			return fmt.Errorf("%s: %s: name a port, not 0 (peers and clients are told it)", flag, u.String())
		case u.Scheme == "https" && info.CertFile == "":
			return fmt.Errorf("%s: %s is https: it needs --%scert-file", flag, u.String(), prefix)
		case u.Scheme == "http" && info.CertFile != "":
			return fmt.Errorf("%s: %s is http, but --%scert-file is given: use https", flag, u.String(), prefix)
		}
	}
	return nil
}

func start(ctx context.Context, cfg Config) (*Server, error) {
	clientPort := cfg.ClientPort
	if clientPort == 0 && len(cfg.ListenClientURLs) == 0 {
		p, err := freePort()
		if err != nil {
			return nil, err
		}
		clientPort = p
	}
	ec, err := cfg.embedConfig(clientPort)
	if err != nil {
		return nil, fmt.Errorf("etcdembed: %w", err)
	}
	if len(cfg.ListenClientURLs) == 0 && ec.ListenClientUrls[0].Scheme == "https" {
		// Over TLS, etcd serves gRPC on a client URL that also serves its
		// HTTP endpoints (/health, /metrics, /version) through net/http's
		// HTTP/2 server and grpc-go's ServeHTTP transport, which serializes
		// a connection's frames in one writer: under a cluster's write load
		// hundreds of requests waited there (2 s p99 for creates). With the
		// HTTP endpoints on a port of their own (etcd's
		// --listen-client-http-urls) the client port is gRPC's own server.
		p, err := freePort()
		if err != nil {
			return nil, err
		}
		ec.ListenClientHttpUrls = []url.URL{{Scheme: "https", Host: fmt.Sprintf("127.0.0.1:%d", p)}}
	}
	endpoint := ec.AdvertiseClientUrls[0]
	var clientTLS *tls.Config
	if endpoint.Scheme == "https" {
		info := transport.TLSInfo{CertFile: cfg.ClientCert, KeyFile: cfg.ClientKey, TrustedCAFile: cfg.ClientTLS.TrustedCAFile}
		if clientTLS, err = info.ClientConfig(); err != nil {
			return nil, fmt.Errorf("etcdembed: client TLS: %w", err)
		}
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("etcdembed: %w", err)
	}
	e, err := embed.StartEtcd(ec)
	if err != nil {
		return nil, fmt.Errorf("etcdembed: start: %w", err)
	}
	wait := cfg.ReadyTimeout
	if wait <= 0 {
		wait = singleReadyTimeout
		if cfg.clustered() {
			wait = clusterReadyTimeout
		}
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return nil, fmt.Errorf("etcdembed: %w", err)
	case <-e.Server.StopNotify():
		e.Close()
		return nil, errors.New("etcdembed: etcd stopped before it was ready")
	case <-ctx.Done():
		e.Close()
		return nil, fmt.Errorf("etcdembed: waiting for etcd to be ready: %w", ctx.Err())
	case <-timer.C:
		e.Close()
		if cfg.clustered() {
			return nil, fmt.Errorf("etcdembed: etcd did not become ready within %s (is a quorum of the cluster's members up?)", wait)
		}
		return nil, fmt.Errorf("etcdembed: etcd did not become ready within %s", wait)
	}
	return &Server{etcd: e, Endpoint: endpoint.String(), clientTLS: clientTLS}, nil
}

// NewClient returns a client of this server. The caller closes it, before
// calling Close on the server (etcd waits for live watch streams to end).
func (s *Server) NewClient() (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{
		Endpoints:   []string{s.Endpoint},
		TLS:         s.clientTLS,
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
		// The member takes requests up to MaxRequestBytes; gRPC's
		// default would refuse those over 2 MiB on the client's side.
		MaxCallSendMsgSize: maxRequestBytes,
	})
}

// maxRequestBytes is the largest request the member takes: over the API's
// largest body (3 MiB) with room for its key and transaction.
const maxRequestBytes = 4 << 20

// Err reports an error that stops the member serving, such as a listener
// failing.
func (s *Server) Err() <-chan error {
	return s.etcd.Err()
}

// StopNotify is closed once the member's server has stopped: after Close,
// or on its own, as when the member is removed from its cluster.
func (s *Server) StopNotify() <-chan struct{} {
	return s.etcd.Server.StopNotify()
}

// Close stops etcd gracefully: in-flight requests finish and every write
// acknowledged to a client is on disk (unless UnsafeNoFsync) before it
// returns. A leader hands leadership to another member first.
func (s *Server) Close() {
	s.etcd.Close()
}

// freePort asks the kernel for a loopback port nobody listens on.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("etcdembed: find free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
