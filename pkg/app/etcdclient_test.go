package app

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/watchcache/watchcache/pkg/etcdembed"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// startExternalEtcd starts an etcd member for a test, on a port of its
// own, and returns it with its configuration (to restart it on that port).
func startExternalEtcd(t *testing.T) (*etcdembed.Server, etcdembed.Config) {
	t.Helper()
	cfg := etcdembed.Config{DataDir: t.TempDir(), UnsafeNoFsync: true}
	etcd, err := etcdembed.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(etcd.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ClientPort, err = strconv.Atoi(u.Port()); err != nil {
		t.Fatal(err)
	}
	return etcd, cfg
}

// TestLargeObjects: an object near the API's body limit (a 2.5 MiB config
// map) is stored and read back, on an external etcd and on the embedded
// one (gRPC's 2 MiB default refused it: "trying to send message larger
// than max"), and a body over the limit (3.5 MiB) is 413.
func TestLargeObjects(t *testing.T) {
	etcd, _ := startExternalEtcd(t)
	defer etcd.Close()
	for name, cfg := range map[string]Config{
		"external": {EtcdServers: []string{etcd.Endpoint}},
		"embedded": {},
	} {
		t.Run(name, func(t *testing.T) {
			cfg.DataDir, cfg.EtcdPrefix, cfg.WatchCache, cfg.Log = t.TempDir(), "/registry", true, slog.New(slog.DiscardHandler)
			a, err := Start(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			_, cs := adminClient(t, a)
			cms := cs.CoreV1().ConfigMaps("default")
			ctx := context.Background()
			value := strings.Repeat("x", 5<<19) // 2.5 MiB
			if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "large"}, Data: map[string]string{"v": value}}, metav1.CreateOptions{}); err != nil {
				t.Fatalf("a 2.5 MiB config map: %v", err)
			}
			got, err := cms.Get(ctx, "large", metav1.GetOptions{})
			if err != nil || got.Data["v"] != value {
				t.Fatalf("reading the 2.5 MiB config map back: %v (%d bytes)", err, len(got.Data["v"]))
			}
			_, err = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "too-large"}, Data: map[string]string{"v": value + value[:1<<20]}}, metav1.CreateOptions{})
			if !apierrors.IsRequestEntityTooLargeError(err) {
				t.Fatalf("a 3.5 MiB config map: %v, want 413", err)
			}
		})
	}
}

// TestDiagnoseEtcd: why an etcd endpoint does not answer, as a start
// reports it: nothing listening, TLS the client cannot verify, https
// without a CA, TLS behind an http:// URL, or a member that connects but
// does not answer.
func TestDiagnoseEtcd(t *testing.T) {
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := closed.Addr().String()
	closed.Close()
	tlsServer := httptest.NewTLSServer(http.NotFoundHandler())
	defer tlsServer.Close()
	tlsAddr := strings.TrimPrefix(tlsServer.URL, "https://")
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			defer c.Close() // holds the connection, says nothing
		}
	}()
	pool := x509.NewCertPool()
	pool.AddCert(tlsServer.Certificate())
	trusting := &tls.Config{RootCAs: pool}
	for _, c := range []struct {
		endpoint string
		tls      *tls.Config
		want     string
	}{
		{"http://" + closedAddr, nil, "connection refused"},
		{"https://" + tlsAddr, &tls.Config{}, "certificate signed by unknown authority"},
		{"https://" + tlsAddr, nil, "no --etcd-cafile is given"},
		{"http://" + tlsAddr, nil, "serves TLS: use https://"},
		{"http://" + silent.Addr().String(), nil, "does not answer"},
		{"127.0.0.1:2379", nil, "is not a URL"},
	} {
		if err := diagnoseEtcd(c.endpoint, c.tls); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want it to say %q", c.endpoint, err, c.want)
		}
	}
	if err := diagnoseEtcd("https://"+tlsAddr, trusting); err == nil || !strings.Contains(err.Error(), "does not answer") {
		t.Errorf("a verified TLS endpoint that is no etcd: %v", err)
	}
}

// TestUnreachableEtcdReported: a start on an etcd that is not there logs
// the cause (connection refused) and the flag to change within 5 seconds
// (it used to say only "etcd did not answer in time" after 35).
func TestUnreachableEtcdReported(t *testing.T) {
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	endpoint := "http://" + closed.Addr().String()
	closed.Close()
	client, err := newEtcdClient([]string{endpoint}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	var buf syncBuffer
	start := time.Now()
	reportUnreachableEtcd(client, []string{endpoint}, nil, slog.New(slog.NewTextHandler(&buf, nil)))
	if took, logged := time.Since(start), buf.String(); took > etcdProbeTimeout+3*time.Second ||
		!strings.Contains(logged, "connection refused") || !strings.Contains(logged, "--etcd-servers") {
		t.Fatalf("after %v the log says %q; want the cause and the flag within 5s", took, logged)
	}
}

// syncBuffer is a bytes.Buffer safe for a logger and a reader.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestBusySecurePortFailsFirst: a start whose --secure-port is taken fails
// at once, before it starts the embedded etcd (it used to fail only after
// etcd, the caches and the controllers had started).
func TestBusySecurePortFailsFirst(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	dir := t.TempDir()
	start := time.Now()
	_, err = Start(Config{DataDir: dir, SecurePort: busy.Addr().(*net.TCPAddr).Port, WatchCache: true, Log: slog.New(slog.DiscardHandler)})
	if err == nil || !strings.Contains(err.Error(), "address already in use") || time.Since(start) > 5*time.Second {
		t.Fatalf("start on a busy port: %v after %v", err, time.Since(start))
	}
	if _, err := os.Stat(filepath.Join(dir, "etcd")); !os.IsNotExist(err) {
		t.Errorf("the embedded etcd started before the port was found busy (%v)", err)
	}
}

// TestReadySoonAfterEtcdReturns: after a 70 s etcd outage the server is
// ready again within 5 seconds of etcd's return (the client's reconnect
// back-off is short and bounded; gRPC's default grows towards two
// minutes: with it this test found the server unready 30 s after etcd's
// return, as users had seen). A shorter outage does not tell the two
// back-offs apart; WATCHCACHE_ETCD_OUTAGE (a duration) changes it.
func TestReadySoonAfterEtcdReturns(t *testing.T) {
	outage := 70 * time.Second
	if d, err := time.ParseDuration(os.Getenv("WATCHCACHE_ETCD_OUTAGE")); err == nil {
		outage = d
	}
	etcd, etcdCfg := startExternalEtcd(t)
	defer func() { etcd.Close() }()
	a, err := Start(Config{DataDir: t.TempDir(), EtcdServers: []string{etcd.Endpoint}, EtcdPrefix: "/registry", WatchCache: true,
		ConsistentListFromCache: true, ConsistentGetFromCache: true, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	_, cs := adminClient(t, a)
	ready := func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err == nil
	}
	waitUntil(t, 30*time.Second, ready)
	etcd.Close()
	waitUntil(t, 30*time.Second, func() bool { return !ready() })
	time.Sleep(outage)
	if etcd, err = etcdembed.Start(etcdCfg); err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	waitUntil(t, 30*time.Second, ready)
	if took := time.Since(back); took > 5*time.Second {
		t.Errorf("ready %v after etcd returned, want within 5s", took)
	}
}

// waitUntil polls cond every 100ms until it holds, failing the test after
// timeout.
func waitUntil(t *testing.T, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not so after %v", timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
