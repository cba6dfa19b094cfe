package ha

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// cluster is etcd members and watchcache replicas, each a process of the
// watchcache binary, on loopback.
type cluster struct {
	dir      string
	exe      string
	members  []*member
	replicas []*replica
	// etcd is a client of every member, for the test's own checks.
	etcd *clientv3.Client
	// admin is the administrator's rest.Config of the first replica; the
	// replicas share credentials, so it works on every one with Host
	// changed.
	admin *rest.Config
}

// member is an etcd member: `watchcache etcd` with etcd's cluster flags.
type member struct {
	*process
	clientURL string
}

// replica is a watchcache server.
type replica struct {
	*process
	url string
	// proxies, if any, are the TCP proxies between this replica and the
	// members.
	proxies []*proxy
	client  *kubernetes.Clientset
}

var (
	etcdServing    = regexp.MustCompile(`^etcd is serving on `)
	replicaServing = regexp.MustCompile(`^watchcache is serving the Kubernetes API on `)
)

// startCluster starts members etcd members and then replicas servers on
// them; the replicas listed in proxied reach etcd through a TCP proxy per
// member.
func startCluster(t testing.TB, exe string, members, replicas int, proxied ...int) *cluster {
	t.Helper()
	c := &cluster{dir: t.TempDir(), exe: exe}
	t.Cleanup(func() { // runs last: the processes' logs explain a failure
		if t.Failed() {
			for _, p := range c.processes() {
				t.Logf("log of %s:\n%s", p.name, p.logTail())
			}
		}
	})
	ports := freePorts(t, 2*members+replicas)
	var initial, clientURLs []string
	for i := range members {
		initial = append(initial, fmt.Sprintf("m%d=http://127.0.0.1:%d", i, ports[2*i+1]))
		clientURLs = append(clientURLs, fmt.Sprintf("http://127.0.0.1:%d", ports[2*i]))
	}
	for i := range members {
		peerURL := fmt.Sprintf("http://127.0.0.1:%d", ports[2*i+1])
		m := &member{clientURL: clientURLs[i], process: &process{
			name: fmt.Sprintf("etcd-m%d", i), exe: exe, logPath: filepath.Join(c.dir, fmt.Sprintf("m%d.log", i)), serving: etcdServing,
			args: []string{"etcd", "--name", fmt.Sprintf("m%d", i), "--data-dir", filepath.Join(c.dir, fmt.Sprintf("m%d", i)),
				"--listen-client-urls", clientURLs[i], "--advertise-client-urls", clientURLs[i],
				"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
				"--initial-cluster", strings.Join(initial, ","), "--initial-cluster-state", "new",
				"--heartbeat-interval", "50", "--election-timeout", "500", "--unsafe-no-fsync"},
		}}
		c.members = append(c.members, m)
	}
	// A new member serves once a quorum is up: start them together.
	done := make(chan struct{}, members)
	for _, m := range c.members {
		go func() {
			defer func() { done <- struct{}{} }()
			m.start(t)
		}()
	}
	for range members {
		<-done
	}
	t.Cleanup(func() {
		for _, m := range c.members {
			if m.running() {
				m.kill()
			}
		}
	})
	var err error
	c.etcd, err = clientv3.New(clientv3.Config{Endpoints: clientURLs, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.etcd.Close() })
	for i := range replicas {
		servers := clientURLs
		r := &replica{}
		if slices.Contains(proxied, i) {
			servers = nil
			for _, u := range clientURLs {
				p := startProxy(t, strings.TrimPrefix(u, "http://"))
				r.proxies = append(r.proxies, p)
				servers = append(servers, "http://"+p.addr())
			}
		}
		dataDir := filepath.Join(c.dir, fmt.Sprintf("r%d", i))
		if err := os.MkdirAll(dataDir, 0o700); err != nil {
			t.Fatal(err)
		}
		if i > 0 { // replicas share the first one's credentials
			if err := os.CopyFS(filepath.Join(dataDir, "pki"), os.DirFS(filepath.Join(c.dir, "r0", "pki"))); err != nil {
				t.Fatal(err)
			}
		}
		port := ports[2*members+i]
		r.url = fmt.Sprintf("https://127.0.0.1:%d", port)
		r.process = &process{name: fmt.Sprintf("replica-r%d", i), exe: exe, logPath: filepath.Join(c.dir, fmt.Sprintf("r%d.log", i)), serving: replicaServing,
			args: []string{"--data-dir", dataDir, "--secure-port", fmt.Sprint(port), "--etcd-servers", strings.Join(servers, ","),
				"--etcd-compaction-interval", "5s", "--request-timeout", "10s", "--consistency-check-interval", "3s",
				"--leader-elect-lease-duration", "4s", "--leader-elect-renew-deadline", "3s", "--leader-elect-retry-period", "500ms"},
		}
		r.start(t)
		t.Cleanup(func() {
			if r.running() {
				r.stop()
			}
		})
		if i == 0 {
			c.admin, err = clientcmd.BuildConfigFromFlags("", filepath.Join(dataDir, "kubeconfig"))
			if err != nil {
				t.Fatal(err)
			}
		}
		r.client = kubernetes.NewForConfigOrDie(c.configFor(r))
		c.replicas = append(c.replicas, r)
	}
	for _, r := range c.replicas {
		c.waitReady(t, r, time.Minute)
	}
	return c
}

// configFor is the administrator's config for replica r, with a timeout
// longer than the replicas' request timeout.
func (c *cluster) configFor(r *replica) *rest.Config {
	cfg := rest.CopyConfig(c.admin)
	cfg.Host = r.url
	cfg.Timeout = 15 * time.Second
	cfg.QPS, cfg.Burst = -1, 0 // no client-side rate limit
	return cfg
}

// ready reports whether r's /readyz answers 200.
func (c *cluster) ready(r *replica) bool {
	client, err := rest.HTTPClientFor(c.configFor(r))
	if err != nil {
		return false
	}
	client.Timeout = 8 * time.Second
	resp, err := client.Get(r.url + "/readyz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// waitReady waits until r is ready.
func (c *cluster) waitReady(t testing.TB, r *replica, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !c.ready(r) {
		if time.Now().After(deadline) {
			t.Fatalf("%s not ready after %v; log:\n%s", r.name, timeout, r.logTail())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// leader returns the etcd member that is raft's leader now.
func (c *cluster) leader(t testing.TB) *member {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		for _, m := range c.members {
			if !m.running() {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			st, err := c.etcd.Status(ctx, m.clientURL)
			cancel()
			if err == nil && st.Leader == st.Header.MemberId {
				return m
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("no etcd leader within 30s")
	return nil
}

// follower returns a running member that is not the leader.
func (c *cluster) follower(t testing.TB) *member {
	t.Helper()
	l := c.leader(t)
	for _, m := range c.members {
		if m != l && m.running() {
			return m
		}
	}
	t.Fatal("no follower")
	return nil
}

// stop ends every replica and member (before the test's cleanup, which
// then has nothing left to do).
func (c *cluster) stop() {
	for _, r := range c.replicas {
		if r.running() {
			r.kill()
		}
	}
	for _, m := range c.members {
		if m.running() {
			m.kill()
		}
	}
}

// processes are the members' and the replicas' processes.
func (c *cluster) processes() []*process {
	var out []*process
	for _, m := range c.members {
		out = append(out, m.process)
	}
	for _, r := range c.replicas {
		out = append(out, r.process)
	}
	return out
}
