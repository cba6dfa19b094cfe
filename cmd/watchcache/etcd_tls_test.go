package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// TestEtcdTLSCluster runs `watchcache etcd` as a cluster the way docs/ha.md
// does on three machines: certificates made with openssl by
// testdata/etcd-certs.sh, peers and clients over https, client
// certificates required both ways. Three members form the cluster, a
// fourth is added (MemberAdd, then --initial-cluster-state existing) and
// catches up, and a watchcache server runs on the cluster with
// --etcd-cafile, --etcd-certfile and --etcd-keyfile.
func TestEtcdTLSCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts four etcd members and a server as processes")
	}
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Skip("the certificates are made with openssl, as docs/ha.md makes them:", err)
	}
	dir := t.TempDir()
	certs := filepath.Join(dir, "certs")
	names := []string{"m0", "m1", "m2", "m3"}
	makeCerts(t, certs, names[:3]...)
	peerURLs, clientURLs := make([]string, len(names)), make([]string, len(names))
	var initial []string
	for i, name := range names {
		peerURLs[i] = fmt.Sprintf("https://127.0.0.1:%d", freeLoopbackPort(t))
		clientURLs[i] = fmt.Sprintf("https://127.0.0.1:%d", freeLoopbackPort(t))
		initial = append(initial, name+"="+peerURLs[i])
	}
	member := func(i int, cluster, state string) *child {
		cert, key, ca := filepath.Join(certs, names[i]+".crt"), filepath.Join(certs, names[i]+".key"), filepath.Join(certs, "ca.crt")
		return etcdMember("--name", names[i], "--data-dir", filepath.Join(dir, names[i]),
			"--initial-cluster", cluster, "--initial-cluster-state", state, "--initial-cluster-token", "tls",
			"--listen-peer-urls", peerURLs[i], "--initial-advertise-peer-urls", peerURLs[i],
			"--listen-client-urls", clientURLs[i], "--advertise-client-urls", clientURLs[i],
			"--cert-file", cert, "--key-file", key, "--trusted-ca-file", ca, "--client-cert-auth",
			"--peer-cert-file", cert, "--peer-key-file", key, "--peer-trusted-ca-file", ca, "--peer-client-cert-auth",
			"--heartbeat-interval", "50", "--election-timeout", "500", "--unsafe-no-fsync")
	}
	var children []*child
	t.Cleanup(func() {
		for _, c := range children {
			c.stop(syscall.SIGKILL)
		}
	})
	for i := range 3 {
		children = append(children, member(i, strings.Join(initial[:3], ","), "new"))
	}
	startAll(t, children...)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tlsConfig, err := transport.TLSInfo{CertFile: filepath.Join(certs, "watchcache.crt"), KeyFile: filepath.Join(certs, "watchcache.key"),
		TrustedCAFile: filepath.Join(certs, "ca.crt")}.ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	client := func(endpoints ...string) *clientv3.Client {
		c, err := clientv3.New(clientv3.Config{Endpoints: endpoints, TLS: tlsConfig, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	all := client(clientURLs[:3]...)
	if list, err := all.MemberList(ctx); err != nil || len(list.Members) != 3 {
		t.Fatalf("member list: %v, %v", list, err)
	}
	var leader uint64
	for _, e := range clientURLs[:3] {
		status, err := all.Status(ctx, e)
		if err != nil || status.Leader == 0 || (leader != 0 && status.Leader != leader) {
			t.Fatalf("status of %s: %v, %v; leader so far %x", e, status, err, leader)
		}
		leader = status.Leader
	}
	if _, err := all.Put(ctx, "/tls", "1"); err != nil {
		t.Fatal(err)
	}
	for _, e := range clientURLs[:3] {
		getFrom(ctx, t, client(e), "/tls", "1")
	}
	// Without a certificate, a member refuses a client, and a peer.
	noCert, err := transport.TLSInfo{TrustedCAFile: filepath.Join(certs, "ca.crt")}.ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	anonymous, err := clientv3.New(clientv3.Config{Endpoints: clientURLs[:1], TLS: noCert, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err == nil {
		short, cancelShort := context.WithTimeout(ctx, 2*time.Second)
		_, err = anonymous.Get(short, "/tls")
		cancelShort()
		anonymous.Close()
	}
	if err == nil {
		t.Fatal("a member served a client without a certificate")
	}
	for _, c := range []struct {
		tls   *tls.Config
		serve bool
	}{{tlsConfig, true}, {noCert, false}} {
		// etcd's peer handler lists the members at /members.
		resp, err := (&http.Client{Transport: &http.Transport{TLSClientConfig: c.tls}}).Get(peerURLs[0] + "/members")
		if err == nil {
			resp.Body.Close()
		}
		if served := err == nil && resp.StatusCode == http.StatusOK; served != c.serve {
			t.Fatalf("a peer with a client certificate (%t) served: %v, %v", c.serve, resp, err)
		}
	}

	// A fourth member: added through the API, then started to join.
	makeCerts(t, certs, names[3])
	addMember(ctx, t, all, peerURLs[3])
	children = append(children, member(3, strings.Join(initial, ","), "existing"))
	startAll(t, children[3])
	m3 := client(clientURLs[3])
	if got, err := m3.Get(ctx, "/tls", clientv3.WithSerializable()); err != nil || len(got.Kvs) != 1 || string(got.Kvs[0].Value) != "1" {
		t.Fatalf("local read on the new member: %v, %v", got, err)
	}
	if list, err := m3.MemberList(ctx); err != nil || len(list.Members) != 4 {
		t.Fatalf("member list after the join: %v, %v", list, err)
	}
	if _, err := m3.Put(ctx, "/tls", "2"); err != nil {
		t.Fatal(err)
	}
	getFrom(ctx, t, client(clientURLs[0]), "/tls", "2")

	// A server on the cluster, over TLS with its client certificate.
	dataDir := filepath.Join(dir, "server")
	server := &child{serving: "watchcache is serving the Kubernetes API on ", args: []string{
		"--data-dir", dataDir, "--secure-port", fmt.Sprint(freeLoopbackPort(t)),
		"--etcd-servers", strings.Join(clientURLs, ","), "--etcd-cafile", filepath.Join(certs, "ca.crt"),
		"--etcd-certfile", filepath.Join(certs, "watchcache.crt"), "--etcd-keyfile", filepath.Join(certs, "watchcache.key"),
	}}
	children = append(children, server)
	startAll(t, server)
	config, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dataDir, "kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	kube := kubernetes.NewForConfigOrDie(config)
	for {
		if _, err := kube.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx); err == nil {
			break
		} else if ctx.Err() != nil {
			t.Fatalf("the server is not ready: %v\n%s", err, server.stderr)
		}
		time.Sleep(50 * time.Millisecond)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "tls"}, Data: map[string]string{"k": "v"}}
	if _, err := kube.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, err := kube.CoreV1().ConfigMaps("default").Get(ctx, "tls", metav1.GetOptions{}); err != nil || got.Data["k"] != "v" {
		t.Fatalf("get: %v, %v", got, err)
	}
	if got, err := m3.Get(ctx, "/registry/configmaps/default/tls"); err != nil || len(got.Kvs) != 1 {
		t.Fatalf("the config map in etcd: %v, %v", got, err)
	}
}

// makeCerts runs testdata/etcd-certs.sh in dir for members on 127.0.0.1.
func makeCerts(t *testing.T, dir string, members ...string) {
	t.Helper()
	args := []string{"testdata/etcd-certs.sh", dir}
	for _, m := range members {
		args = append(args, m+"=127.0.0.1")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("sh", args...).CombinedOutput(); err != nil {
		t.Fatalf("etcd-certs.sh: %v\n%s", err, out)
	}
}

// addMember adds a member with peerURL through c, retrying while etcd
// refuses for a cluster whose members have not all been connected for
// five seconds.
func addMember(ctx context.Context, t *testing.T, c *clientv3.Client, peerURL string) {
	t.Helper()
	for {
		_, err := c.MemberAdd(ctx, []string{peerURL})
		if err == nil {
			return
		}
		if !errors.Is(err, rpctypes.ErrUnhealthy) || ctx.Err() != nil {
			t.Fatalf("member add: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// getFrom reads key through c (a linearizable read) and wants value.
func getFrom(ctx context.Context, t *testing.T, c *clientv3.Client, key, value string) {
	t.Helper()
	got, err := c.Get(ctx, key)
	if err != nil || len(got.Kvs) != 1 || string(got.Kvs[0].Value) != value {
		t.Fatalf("get %s through %v: %v, %v, want %q", key, c.Endpoints(), got, err, value)
	}
}
