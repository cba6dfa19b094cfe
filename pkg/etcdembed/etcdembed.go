// Package etcdembed runs an etcd server inside the current process, on
// loopback, for the watchcache binary and for tests.
//
// It has no peer listener: a single member never talks to a peer, so its
// peer URL is only advertised (raft needs one in the member list) and
// nothing listens on it. Clients are served over TLS when ClientTLS names a
// certificate, and then, with ClientTLS.ClientCertAuth, only to clients
// whose certificate the trusted CA signed.
package etcdembed

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// Config says how to run the embedded etcd. The zero value is not usable:
// DataDir is required.
type Config struct {
	// DataDir holds etcd's data; it is created if missing.
	DataDir string
	// ClientPort is the loopback port served to clients; 0 picks a free one.
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
	// PeerTLS is etcd's peer TLS (--peer-cert-file and the others). It is
	// passed on to etcd, though the one member has no peer to talk to.
	PeerTLS transport.TLSInfo
}

// Server is a running embedded etcd.
type Server struct {
	etcd *embed.Etcd
	// Endpoint is the client URL, e.g. http://127.0.0.1:2379, or
	// https://127.0.0.1:2379 with ClientTLS.
	Endpoint string
	// clientTLS is how NewClient connects (nil: plain).
	clientTLS *tls.Config
}

// startAttempts bounds retries when a free port picked for etcd is taken by
// someone else before etcd binds it.
const startAttempts = 5

// Start launches etcd and waits until it serves requests.
func Start(cfg Config) (*Server, error) {
	if cfg.DataDir == "" {
		return nil, errors.New("etcdembed: DataDir is required")
	}
	var lastErr error
	for attempt := 0; attempt < startAttempts; attempt++ {
		s, err := start(cfg)
		if err == nil {
			return s, nil
		}
		lastErr = err
		if cfg.ClientPort != 0 {
			break
		}
	}
	return nil, lastErr
}

func start(cfg Config) (*Server, error) {
	clientPort := cfg.ClientPort
	if clientPort == 0 {
		p, err := freePort()
		if err != nil {
			return nil, err
		}
		clientPort = p
	}
	clientURL := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", clientPort)}
	var clientTLS *tls.Config
	if cfg.ClientTLS.CertFile != "" {
		clientURL.Scheme = "https"
		info := transport.TLSInfo{CertFile: cfg.ClientCert, KeyFile: cfg.ClientKey, TrustedCAFile: cfg.ClientTLS.TrustedCAFile}
		var err error
		if clientTLS, err = info.ClientConfig(); err != nil {
			return nil, fmt.Errorf("etcdembed: client TLS: %w", err)
		}
	}

	ec := embed.NewConfig()
	ec.Name = "watchcache"
	ec.Dir = cfg.DataDir
	ec.WalDir = filepath.Join(cfg.DataDir, "wal")
	ec.ListenClientUrls = []url.URL{clientURL}
	ec.AdvertiseClientUrls = []url.URL{clientURL}
	ec.ClientTLSInfo = cfg.ClientTLS
	ec.ListenPeerUrls = nil
	ec.AdvertisePeerUrls = []url.URL{advertisedPeerURL}
	ec.PeerTLSInfo = cfg.PeerTLS
	ec.InitialCluster = ec.InitialClusterFromName(ec.Name)
	// A single member elects itself; short ticks make that take tens of
	// milliseconds instead of about a second.
	ec.TickMs = 10
	ec.ElectionMs = 100
	ec.UnsafeNoFsync = cfg.UnsafeNoFsync
	if cfg.ProgressNotifyInterval > 0 {
		ec.WatchProgressNotifyInterval = cfg.ProgressNotifyInterval
	}
	ec.MaxRequestBytes = 4 * 1024 * 1024
	ec.QuotaBackendBytes = cfg.QuotaBackendBytes
	if cfg.Logger != nil {
		ec.ZapLoggerBuilder = embed.NewZapLoggerBuilder(cfg.Logger)
	} else {
		ec.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("etcdembed: %w", err)
	}
	e, err := embed.StartEtcd(ec)
	if err != nil {
		return nil, fmt.Errorf("etcdembed: start: %w", err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return nil, fmt.Errorf("etcdembed: %w", err)
	case <-time.After(60 * time.Second):
		e.Close()
		return nil, errors.New("etcdembed: etcd did not become ready within 60s")
	}
	return &Server{etcd: e, Endpoint: clientURL.String(), clientTLS: clientTLS}, nil
}

// advertisedPeerURL is the member's peer URL: never listened on (see the
// package's doc).
var advertisedPeerURL = url.URL{Scheme: "http", Host: "127.0.0.1:2380"}

// NewClient returns a client of this server. The caller closes it, before
// calling Close on the server (etcd waits for live watch streams to end).
func (s *Server) NewClient() (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{
		Endpoints:   []string{s.Endpoint},
		TLS:         s.clientTLS,
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
	})
}

// Close stops etcd gracefully: in-flight requests finish and every write
// acknowledged to a client is on disk (unless UnsafeNoFsync) before it returns.
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
