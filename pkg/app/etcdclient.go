// The client of an external etcd, with kube-apiserver's dial and keepalive
// timings.

package app

import (
	"crypto/tls"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
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

// newEtcdClient connects to the etcd cluster at endpoints (tlsConfig nil:
// plain HTTP).
func newEtcdClient(endpoints []string, tlsConfig *tls.Config) (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{
		Endpoints: endpoints, TLS: tlsConfig, Logger: zap.NewNop(),
		DialTimeout: etcdDialTimeout, DialKeepAliveTime: etcdKeepaliveTime, DialKeepAliveTimeout: etcdKeepaliveTimeout,
	})
}
