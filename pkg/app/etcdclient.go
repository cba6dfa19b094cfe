// The client of etcd (external, or the embedded member), with
// kube-apiserver's dial and keepalive timings, message sizes that carry
// the largest object the API accepts, a short reconnect back-off, and the
// diagnosis of an etcd that does not answer.

package app

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
)

// Timings of the connections to an external etcd, kube-apiserver's: a
// member that does not answer within the dial timeout is skipped, and a
// connection that carries nothing back for keepaliveTime+keepaliveTimeout
// (a stalled network, a frozen member) is closed so that its watches and
// requests move to another member instead of hanging.
const (
	etcdDialTimeout      = 20 * time.Second
	etcdKeepaliveTime    = 30 * time.Second
	etcdKeepaliveTimeout = 10 * time.Second
)

// etcdMaxSendBytes bounds a request to etcd: the largest body the API
// accepts (encoding.MaxBodyBytes, 3 MiB) stored with its key and the
// transaction around it, under the embedded etcd's 4 MiB request limit.
// gRPC's default, 2 MiB, refused objects the API had accepted. Answers
// (lists of many objects) are not bounded but by etcd.
const etcdMaxSendBytes = 4 << 20

// etcdReconnect is how the client redials a member it lost: soon, and
// never more than two seconds apart, so that a server sees its etcd come
// back within seconds (gRPC's default back-off grows towards two minutes).
var etcdReconnect = grpc.WithConnectParams(grpc.ConnectParams{
	Backoff:           backoff.Config{BaseDelay: 250 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 2 * time.Second},
	MinConnectTimeout: 5 * time.Second,
})

// etcdClientConfig is the configuration of a client of the etcd cluster at
// endpoints (tlsConfig nil: plain HTTP).
func etcdClientConfig(endpoints []string, tlsConfig *tls.Config, dialTimeout time.Duration) clientv3.Config {
	return clientv3.Config{
		Endpoints: endpoints, TLS: tlsConfig, Logger: zap.NewNop(),
		DialTimeout: dialTimeout, DialKeepAliveTime: etcdKeepaliveTime, DialKeepAliveTimeout: etcdKeepaliveTimeout,
		MaxCallSendMsgSize: etcdMaxSendBytes, MaxCallRecvMsgSize: 0, // 0: unbounded
		DialOptions: []grpc.DialOption{etcdReconnect},
	}
}

// newEtcdClient connects to the etcd cluster at endpoints (tlsConfig nil:
// plain HTTP).
func newEtcdClient(endpoints []string, tlsConfig *tls.Config) (*clientv3.Client, error) {
	return clientv3.New(etcdClientConfig(endpoints, tlsConfig, etcdDialTimeout))
}

// etcdProbeTimeout is how long a start waits for etcd to answer before it
// says why it does not.
const etcdProbeTimeout = 5 * time.Second

// reportUnreachableEtcd waits up to etcdProbeTimeout for the cluster to
// answer and, if it does not, logs why for each endpoint (connection
// refused, no such host, a TLS or certificate failure) and the flags that
// change it. It only reports: the start goes on, as kube-apiserver's
// waits for its etcd.
func reportUnreachableEtcd(client *clientv3.Client, endpoints []string, tlsConfig *tls.Config, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), etcdProbeTimeout)
	defer cancel()
	if _, err := client.Get(ctx, "health", clientv3.WithSerializable(), clientv3.WithCountOnly()); err == nil {
		return
	}
	for _, endpoint := range endpoints {
		if cause := diagnoseEtcd(endpoint, tlsConfig); cause != nil {
			log.Error("etcd does not answer: "+cause.Error()+
				"; check --etcd-servers, and --etcd-cafile, --etcd-certfile and --etcd-keyfile for an etcd served over TLS",
				"endpoint", endpoint)
		}
	}
}

// diagnoseEtcd says why an etcd endpoint does not answer: its TCP
// connection's error, its TLS handshake's, TLS where plain HTTP was given,
// or that it connects but does not answer.
func diagnoseEtcd(endpoint string, tlsConfig *tls.Config) error {
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" {
		return fmt.Errorf("%q is not a URL (http://host:port or https://host:port)", endpoint)
	}
	dialer := &net.Dialer{Timeout: 2 * time.Second}
	conn, err := dialer.Dial("tcp", u.Host)
	if err != nil {
		return err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(2 * time.Second))
	answersButSlowly := errors.New("it accepts connections but does not answer (no quorum, or overloaded?)")
	if u.Scheme != "https" {
		if tls.Client(conn, &tls.Config{InsecureSkipVerify: true}).Handshake() == nil { //nolint:gosec // only asks whether it speaks TLS
			return errors.New(endpoint + " serves TLS: use https://, with --etcd-cafile")
		}
		return answersButSlowly
	}
	if tlsConfig == nil {
		return errors.New(endpoint + " is https, and no --etcd-cafile is given")
	}
	cfg := tlsConfig.Clone()
	if cfg.ServerName == "" {
		cfg.ServerName = u.Hostname()
	}
	if err := tls.Client(conn, cfg).Handshake(); err != nil {
		return fmt.Errorf("TLS with %s: %w", endpoint, err)
	}
	return answersButSlowly
}
