package etcdembed

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/watchcache/watchcache/pkg/pki"
	"go.etcd.io/etcd/client/pkg/v3/transport"
)

// TestRestartKeepsAcknowledgedWrites writes, closes etcd gracefully, starts
// it again on the same data dir and reads the write back.
func TestRestartKeepsAcknowledgedWrites(t *testing.T) {
	dir := t.TempDir()
	s, err := Start(Config{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.NewClient()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	put, err := c.Put(ctx, "/k", "v")
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	s.Close()

	s2, err := Start(Config{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	c2, err := s2.NewClient()
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	got, err := c2.Get(ctx, "/k")
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Kvs) != 1 || string(got.Kvs[0].Value) != "v" || got.Kvs[0].ModRevision != put.Header.Revision {
		t.Fatalf("after restart got %v, want v at revision %d", got.Kvs, put.Header.Revision)
	}
}

// TestNoPeerListener: the one member listens for clients only.
func TestNoPeerListener(t *testing.T) {
	s, err := Start(Config{DataDir: t.TempDir(), UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if len(s.etcd.Peers) != 0 || len(s.etcd.Clients) != 1 {
		t.Fatalf("%d peer and %d client listeners, want 0 and 1", len(s.etcd.Peers), len(s.etcd.Clients))
	}
}

// TestSnapshotCatchUpEntries checks the raft entries kept for followers: 100
// for a single member, which has none, etcd's default for a member of a
// cluster, and what is given for either.
func TestSnapshotCatchUpEntries(t *testing.T) {
	cluster := Config{DataDir: "d", Name: "a", InitialCluster: "a=http://127.0.0.1:2380"}
	given := cluster
	given.SnapshotCatchUpEntries = 7
	for _, c := range []struct {
		name string
		cfg  Config
		want uint64
	}{
		{"single member", Config{DataDir: "d"}, singleCatchUpEntries},
		{"member of a cluster", cluster, 5000},
		{"given", given, 7},
	} {
		ec, err := c.cfg.embedConfig(2379)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if ec.SnapshotCatchUpEntries != c.want {
			t.Errorf("%s: SnapshotCatchUpEntries %d, want %d", c.name, ec.SnapshotCatchUpEntries, c.want)
		}
	}
}

// TestTLSClientPortIsGRPCOnly: over TLS, the client port is gRPC's own
// server (an HTTPS request there is not answered as HTTP: etcd's /health
// is not served on it), and etcd's HTTP endpoints answer on a port of
// their own, with the same client certificates.
func TestTLSClientPortIsGRPCOnly(t *testing.T) {
	certs, err := pki.Ensure(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Start(Config{DataDir: t.TempDir(), UnsafeNoFsync: true,
		ClientTLS: transport.TLSInfo{CertFile: certs.EtcdServerCert, KeyFile: certs.EtcdServerKey,
			TrustedCAFile: certs.CACert, ClientCertAuth: true},
		ClientCert: certs.EtcdClientCert, ClientKey: certs.EtcdClientKey})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c, err := s.NewClient()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.Put(ctx, "/k", "v"); err != nil {
		t.Fatalf("a put over gRPC: %v", err)
	}

	httpURLs := s.etcd.Config().ListenClientHttpUrls
	if len(httpURLs) != 1 || httpURLs[0].Host == strings.TrimPrefix(s.Endpoint, "https://") {
		t.Fatalf("HTTP URLs %v, want one besides the client endpoint %s", httpURLs, s.Endpoint)
	}
	tlsConfig, err := transport.TLSInfo{CertFile: certs.EtcdClientCert, KeyFile: certs.EtcdClientKey, TrustedCAFile: certs.CACert}.ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsConfig}, Timeout: 10 * time.Second}
	resp, err := hc.Get(httpURLs[0].String() + "/health")
	if err != nil {
		t.Fatalf("/health on %s: %v", httpURLs[0].String(), err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/health on %s: %s, want 200", httpURLs[0].String(), resp.Status)
	}
	if resp, err := hc.Get(s.Endpoint + "/health"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Fatalf("/health on the client endpoint %s answered 200: HTTP is still served there", s.Endpoint)
		}
	}
}
