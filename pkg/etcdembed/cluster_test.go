package etcdembed

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	"go.etcd.io/etcd/client/pkg/v3/types"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/watchcache/watchcache/pkg/pki"
)

// Short raft ticks for the clusters of the tests; elections take a few
// hundred milliseconds, even under -race.
const testHeartbeat, testElection = 20 * time.Millisecond, 200 * time.Millisecond

// clusterConfigs returns the configs of n members of one new cluster on free
// loopback ports, their peers over TLS with client certificates.
func clusterConfigs(t *testing.T, n int) []Config {
	t.Helper()
	certs, err := pki.Ensure(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	// pki's etcd certificate covers 127.0.0.1 and serves both ways: each
	// member's peer server and client certificate.
	peerTLS := transport.TLSInfo{CertFile: certs.EtcdServerCert, KeyFile: certs.EtcdServerKey,
		TrustedCAFile: certs.CACert, ClientCertAuth: true}
	var initial []string
	cfgs := make([]Config, n)
	for i := range cfgs {
		peer, client := mustFreePort(t), mustFreePort(t)
		name := fmt.Sprintf("m%d", i)
		peerURL := fmt.Sprintf("https://127.0.0.1:%d", peer)
		initial = append(initial, name+"="+peerURL)
		cfgs[i] = Config{
			DataDir: filepath.Join(t.TempDir(), name), Name: name, UnsafeNoFsync: true,
			ListenPeerURLs: []string{peerURL}, PeerTLS: peerTLS,
			ListenClientURLs:  []string{fmt.Sprintf("http://127.0.0.1:%d", client)},
			HeartbeatInterval: testHeartbeat, ElectionTimeout: testElection,
			InitialClusterToken: "test-" + t.Name(),
		}
	}
	for i := range cfgs {
		cfgs[i].InitialCluster = strings.Join(initial, ",")
	}
	return cfgs
}

func mustFreePort(t *testing.T) int {
	t.Helper()
	p, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// startAll starts the members at once: each is ready only once a quorum is.
func startAll(t *testing.T, cfgs []Config) []*Server {
	t.Helper()
	type result struct {
		i   int
		s   *Server
		err error
	}
	results := make(chan result)
	for i, cfg := range cfgs {
		go func() {
			s, err := Start(cfg)
			results <- result{i, s, err}
		}()
	}
	servers := make([]*Server, len(cfgs))
	var errs []error
	for range cfgs {
		r := <-results
		servers[r.i] = r.s
		if r.err != nil {
			errs = append(errs, r.err)
		}
	}
	if errs != nil {
		closeAll(servers)
		t.Fatal(errs)
	}
	return servers
}

// closeAll closes the servers, one by one: closed at once, they hold each
// other up longer.
func closeAll(servers []*Server) {
	for _, s := range servers {
		if s != nil {
			s.Close()
		}
	}
}

func newClient(t *testing.T, s *Server) *clientv3.Client {
	t.Helper()
	c, err := s.NewClient()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// putEventually writes through c, retrying while the cluster elects a
// leader.
func putEventually(ctx context.Context, t *testing.T, c *clientv3.Client, key, value string) {
	t.Helper()
	for {
		attempt, cancel := context.WithTimeout(ctx, time.Second)
		_, err := c.Put(attempt, key, value)
		cancel()
		if err == nil {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("put %s through %v: %v", key, c.Endpoints(), err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// getLinearizable reads key through c (a linearizable read: it waits for
// the member to apply everything committed before it) and wants value.
func getLinearizable(ctx context.Context, t *testing.T, c *clientv3.Client, key, value string) {
	t.Helper()
	got, err := c.Get(ctx, key)
	if err != nil {
		t.Fatalf("get %s through %v: %v", key, c.Endpoints(), err)
	}
	if len(got.Kvs) != 1 || string(got.Kvs[0].Value) != value {
		t.Fatalf("get %s through %v: %v, want %q", key, c.Endpoints(), got.Kvs, value)
	}
}

// TestThreeMemberCluster forms a cluster of three members with peer TLS,
// loses its leader, and has it rejoin from its data dir.
func TestThreeMemberCluster(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfgs := clusterConfigs(t, 3)
	servers := startAll(t, cfgs)
	t.Cleanup(func() { closeAll(servers) }) // after the clients' cleanups
	for i, s := range servers {
		if len(s.etcd.Peers) != 1 || s.Endpoint != cfgs[i].ListenClientURLs[0] {
			t.Fatalf("member %d: %d peer listeners and endpoint %s, want 1 and %s", i, len(s.etcd.Peers), s.Endpoint, cfgs[i].ListenClientURLs[0])
		}
	}
	clients := make([]*clientv3.Client, 3)
	for i, s := range servers {
		clients[i] = newClient(t, s)
	}

	members, err := clients[0].MemberList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(members.Members) != 3 {
		t.Fatalf("%d members, want 3: %v", len(members.Members), members.Members)
	}
	for i, s := range servers {
		if got := s.etcd.Server.Cluster().ID(); got != servers[0].etcd.Server.Cluster().ID() {
			t.Fatalf("member %d is in cluster %s, member 0 in %s", i, got, servers[0].etcd.Server.Cluster().ID())
		}
	}
	putEventually(ctx, t, clients[0], "/a", "1")
	getLinearizable(ctx, t, clients[1], "/a", "1")
	getLinearizable(ctx, t, clients[2], "/a", "1")

	// Lose the leader: the other two still form a quorum.
	leader := -1
	for i, s := range servers {
		if s.etcd.Server.MemberID() == s.etcd.Server.Leader() {
			leader = i
		}
	}
	if leader < 0 {
		t.Fatal("no member is the leader")
	}
	clients[leader].Close()
	servers[leader].Close()
	servers[leader] = nil
	a, b := (leader+1)%3, (leader+2)%3
	putEventually(ctx, t, clients[a], "/b", "2")
	getLinearizable(ctx, t, clients[b], "/b", "2")
	putEventually(ctx, t, clients[b], "/c", "3")

	// It rejoins from its data dir with the same config (its
	// --initial-cluster-state new is ignored) and catches up.
	s, err := Start(cfgs[leader])
	if err != nil {
		t.Fatal(err)
	}
	servers[leader] = s
	c := newClient(t, s)
	getLinearizable(ctx, t, c, "/b", "2")
	getLinearizable(ctx, t, c, "/c", "3")
	if got, err := c.Get(ctx, "/c", clientv3.WithSerializable()); err != nil || len(got.Kvs) != 1 {
		t.Fatalf("local read after catching up: %v, %v", got, err)
	}
	putEventually(ctx, t, c, "/d", "4")
	getLinearizable(ctx, t, clients[a], "/d", "4")
	if members, err := c.MemberList(ctx); err != nil || len(members.Members) != 3 {
		t.Fatalf("after the restart: %v, %v", members, err)
	}
}

// TestClusterConfig: the peer and client URLs a member gets from etcd's
// flags, their defaults, and the errors naming the flag at fault.
func TestClusterConfig(t *testing.T) {
	base := Config{DataDir: t.TempDir(), Name: "b",
		InitialCluster:   "a=http://127.0.0.1:2380,b=http://127.0.0.1:2480,c=http://127.0.0.1:2580",
		ListenClientURLs: []string{"http://127.0.0.1:2479"}, ClientPort: 2379}
	ec, err := base.embedConfig(base.ClientPort)
	if err != nil {
		t.Fatal(err)
	}
	urls := func(us []url.URL) string { return types.URLs(us).String() }
	if urls(ec.ListenPeerUrls) != "http://127.0.0.1:2480" || urls(ec.AdvertisePeerUrls) != "http://127.0.0.1:2480" ||
		urls(ec.ListenClientUrls) != "http://127.0.0.1:2479" || urls(ec.AdvertiseClientUrls) != "http://127.0.0.1:2479" ||
		ec.TickMs != 100 || ec.ElectionMs != 1000 || ec.ClusterState != "new" || ec.InitialCluster != base.InitialCluster {
		t.Fatalf("defaults from --initial-cluster: peers %v %v, clients %v %v, ticks %d/%d, %s %s", ec.ListenPeerUrls, ec.AdvertisePeerUrls,
			ec.ListenClientUrls, ec.AdvertiseClientUrls, ec.TickMs, ec.ElectionMs, ec.ClusterState, ec.InitialCluster)
	}
	single, err := Config{DataDir: t.TempDir()}.embedConfig(2379)
	if err != nil || len(single.ListenPeerUrls) != 0 || single.TickMs != 10 || single.InitialCluster != "watchcache=http://127.0.0.1:2380" {
		t.Fatalf("single member: %v, %v, %d, %s", err, single.ListenPeerUrls, single.TickMs, single.InitialCluster)
	}
	for _, tc := range []struct {
		change func(*Config)
		want   string
	}{
		{func(c *Config) { c.Name = "d" }, `--name "d" is not in --initial-cluster`},
		{func(c *Config) { c.InitialCluster = "b=127.0.0.1:2480" }, "--initial-cluster"},
		{func(c *Config) { c.AdvertisePeerURLs = []string{"http://127.0.0.1:9"} }, "--initial-advertise-peer-urls"},
		{func(c *Config) { c.ListenPeerURLs = []string{"http://127.0.0.1"} }, "--listen-peer-urls"},
		{func(c *Config) { c.ListenClientURLs = []string{"http://127.0.0.1:0"} }, "--listen-client-urls"},
		{func(c *Config) { c.ListenClientURLs = []string{"http://0.0.0.0:2479"} }, "--advertise-client-urls is required"},
		{func(c *Config) { c.InitialClusterState = "old" }, "--initial-cluster-state"},
		{func(c *Config) { c.PeerTLS.CertFile = "x" }, "--peer-cert-file and --peer-key-file"},
		{func(c *Config) { c.PeerTLS.ClientCertAuth = true }, "--peer-client-cert-auth need --peer-cert-file"},
		{func(c *Config) { c.PeerTLS.CertFile, c.PeerTLS.KeyFile = "x", "y" }, "is http, but --peer-cert-file is given"},
		{func(c *Config) { c.ListenClientURLs = []string{"https://127.0.0.1:2479"} }, "needs --cert-file"},
		{func(c *Config) { c.HeartbeatInterval, c.ElectionTimeout = time.Second, time.Second }, "--election-timeout"},
	} {
		c := base
		tc.change(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("got %v, want an error with %q", err, tc.want)
		}
	}
}
