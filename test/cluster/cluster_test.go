package cluster

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// apiServer is a kind of API server the scenarios run against: start
// runs it in dir with the cluster's credentials and returns its URL.
type apiServer struct {
	name  string
	start func(t testing.TB, c *cluster) string
}

// servers are the API servers every scenario runs against: kube-apiserver
// first, so that a scenario failing on watchcache alone is watchcache's.
var servers = []apiServer{
	{"kube-apiserver", startKubeAPIServer},
	{"watchcache", startWatchcache},
}

// The servers' Service cluster IP range and the administrator's bearer
// token (system:masters).
const (
	serviceCIDR = "10.96.0.0/16"
	adminToken  = "admin-token"
	// kwokAnnotation marks the nodes kwok manages, with the name of the
	// kwok process that manages them as value.
	kwokAnnotation = "kwok.x-k8s.io/node"
)

// cluster is an API server with kube-controller-manager, kube-scheduler and
// kwok pointed at it, each with its own identity under RBAC.
type cluster struct {
	dir    string
	pki    *pki
	url    string
	server *process
	etcd   *process // kube-apiserver's; watchcache's is in its process
	client kubernetes.Interface
	// nodeLease is the duration of the nodes' Leases, which kwok renews
	// every quarter of it.
	nodeLease time.Duration
}

// startCluster starts server and the components in a temporary directory;
// everything stops when t ends, and the directory, with the components'
// logs, is removed unless t failed or CLUSTER_KEEP_LOGS is set.
//
// Nodes' Leases last nodeLease (kwok renews them every quarter of it);
// kube-controller-manager finds a node NotReady after nodeGrace without a
// renewal.
func startCluster(t testing.TB, server apiServer, nodeLease, nodeGrace time.Duration) *cluster {
	c := newCluster(t, "cluster-"+server.name+"-")
	start := time.Now()
	c.url = server.start(t, c)
	c.waitReady(t)
	t.Logf("%s ready in %.1fs", server.name, time.Since(start).Seconds())

	c.connect(t)

	c.pki.client(t, "kcm", "system:kube-controller-manager")
	startProcess(t, c.dir, "kube-controller-manager", filepath.Join(bin, "kube-controller-manager"),
		"--kubeconfig="+c.pki.kubeconfig(t, "kcm", c.url),
		"--secure-port=0", "--leader-elect=false", "--controllers=*",
		"--use-service-account-credentials",
		"--service-account-private-key-file="+c.pki.path("sa.key"),
		"--root-ca-file="+c.pki.path("ca.crt"),
		"--cluster-signing-cert-file="+c.pki.path("ca.crt"),
		"--cluster-signing-key-file="+c.pki.path("ca.key"),
		"--node-monitor-period=2s", fmt.Sprintf("--node-monitor-grace-period=%v", nodeGrace),
		"--kube-api-qps=100", "--kube-api-burst=200", "-v=1")
	c.pki.client(t, "scheduler", "system:kube-scheduler")
	startProcess(t, c.dir, "kube-scheduler", filepath.Join(bin, "kube-scheduler"),
		"--kubeconfig="+c.pki.kubeconfig(t, "scheduler", c.url),
		"--secure-port=0", "--leader-elect=false",
		"--kube-api-qps=100", "--kube-api-burst=200", "-v=1")
	c.pki.client(t, "kwok", "kwok", "system:masters")
	c.pki.kubeconfig(t, "kwok", c.url)
	c.nodeLease = nodeLease
	c.startKwok(t, "kwok", "10.128.0.1/10")
	return c
}

// newCluster is a cluster not yet started, in a new temporary directory
// named from prefix, with its PKI and the administrator's token; the
// directory, with the processes' logs, is removed when t ends unless t
// failed or CLUSTER_KEEP_LOGS is set.
func newCluster(t testing.TB, prefix string) *cluster {
	dir, err := os.MkdirTemp("", prefix)
	check(t, err)
	t.Cleanup(func() {
		if t.Failed() || os.Getenv("CLUSTER_KEEP_LOGS") != "" {
			t.Logf("logs kept in %s", dir)
		} else {
			os.RemoveAll(dir)
		}
	})
	c := &cluster{dir: dir, pki: newPKI(t, dir)}
	writeFile(t, c.pki.path("tokens.csv"), adminToken+",admin,admin-uid,system:masters\n")
	return c
}

// connect writes admin.kubeconfig for the server at c.url, sets c.client
// from it, and returns its configuration.
func (c *cluster) connect(t testing.TB) *rest.Config {
	writeFile(t, c.pki.path("admin.kubeconfig"), fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q, certificate-authority: %q}}]
users: [{name: admin, user: {token: %s}}]
contexts: [{name: c, context: {cluster: c, user: admin}}]
current-context: c
`, c.url, c.pki.path("ca.crt"), adminToken))
	cfg, err := clientcmd.BuildConfigFromFlags("", c.pki.path("admin.kubeconfig"))
	check(t, err)
	cfg.QPS, cfg.Burst = 200, 400
	c.client = kubernetes.NewForConfigOrDie(cfg)
	return cfg
}

// startKwok starts a kwok managing the nodes annotated kwokAnnotation=name,
// giving their pods IPs from cidr.
func (c *cluster) startKwok(t testing.TB, name, cidr string) *process {
	return startProcess(t, c.dir, name, filepath.Join(bin, "kwok"),
		"--kubeconfig="+c.pki.path("kwok.kubeconfig"),
		"--config="+strings.Join(kwokStages, ","),
		"--manage-nodes-with-annotation-selector="+kwokAnnotation+"="+name,
		"--cidr="+cidr,
		fmt.Sprintf("--node-lease-duration-seconds=%d", int(c.nodeLease.Seconds())))
}

func startKubeAPIServer(t testing.TB, c *cluster) string {
	return c.runKubeAPIServer(t, c.startEtcd(t))
}

// startEtcd starts an etcd (`watchcache etcd`) under c.dir/etcd and
// returns its client URL.
func (c *cluster) startEtcd(t testing.TB) string {
	etcdPort := freePort(t)
	c.etcd = startProcess(t, c.dir, "etcd", filepath.Join(bin, "watchcache"), "etcd",
		// fsync on, as watchcache's embedded etcd.
		"--data-dir="+filepath.Join(c.dir, "etcd"), "--etcd-client-port="+strconv.Itoa(etcdPort))
	return "http://127.0.0.1:" + strconv.Itoa(etcdPort)
}

// runKubeAPIServer starts kube-apiserver on the etcd at etcdURL, with the
// flags extra besides the cluster's, and returns its URL.
func (c *cluster) runKubeAPIServer(t testing.TB, etcdURL string, extra ...string) string {
	port := freePort(t)
	c.server = startProcess(t, c.dir, "kube-apiserver", filepath.Join(bin, "kube-apiserver"), append([]string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port), "--cert-dir=" + filepath.Join(c.dir, "certs"),
		"--tls-cert-file=" + c.pki.path("serving.crt"), "--tls-private-key-file=" + c.pki.path("serving.key"),
		"--client-ca-file=" + c.pki.path("ca.crt"),
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file=" + c.pki.path("sa.key"),
		"--service-account-signing-key-file=" + c.pki.path("sa.key"),
		"--authorization-mode=RBAC", "--token-auth-file=" + c.pki.path("tokens.csv"),
		"--service-cluster-ip-range=" + serviceCIDR,
		"--endpoint-reconciler-type=none", "-v=0"}, extra...)...)
	return "https://127.0.0.1:" + strconv.Itoa(port)
}

func startWatchcache(t testing.TB, c *cluster) string {
	return c.runWatchcache(t, "--etcd-client-port=0",
		// kube-controller-manager runs every controller.
		"--controllers=")
}

// runWatchcache starts watchcache with its data directory (the embedded
// etcd's, unless extra has --etcd-servers) in c.dir/watchcache, with the
// flags extra besides the cluster's, and returns its URL.
func (c *cluster) runWatchcache(t testing.TB, extra ...string) string {
	port := freePort(t)
	c.server = startProcess(t, c.dir, "watchcache", filepath.Join(bin, "watchcache"), append([]string{
		"--data-dir=" + filepath.Join(c.dir, "watchcache"),
		"--secure-port=" + strconv.Itoa(port),
		"--tls-cert-file=" + c.pki.path("serving.crt"), "--tls-private-key-file=" + c.pki.path("serving.key"),
		"--client-ca-file=" + c.pki.path("ca.crt"),
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-signing-key-file=" + c.pki.path("sa.key"),
		"--token-auth-file=" + c.pki.path("tokens.csv"),
		"--service-cluster-ip-range=" + serviceCIDR}, extra...)...)
	return "https://127.0.0.1:" + strconv.Itoa(port)
}

// get sends GET path to the server as the administrator.
func (c *cluster) get(t testing.TB, path string) (*http.Response, error) {
	tlsConfig, err := rest.TLSConfigFor(&rest.Config{TLSClientConfig: rest.TLSClientConfig{CAFile: c.pki.path("ca.crt")}})
	check(t, err)
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsConfig}, Timeout: time.Minute}
	req, err := http.NewRequest("GET", c.url+path, nil)
	check(t, err)
	req.Header.Set("Authorization", "Bearer "+adminToken)
	return hc.Do(req)
}

// waitReady waits until the server answers /readyz with 200.
func (c *cluster) waitReady(t testing.TB) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		resp, err := c.get(t, "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case <-c.server.exited:
			t.Fatalf("%s exited:\n%s", c.server.name, c.server.tail())
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not ready after 2m (%v):\n%s", c.server.name, err, c.server.tail())
		}
	}
}

// createNodes creates n nodes prefix-0..prefix-(n-1) managed by the kwok
// named by manager, labeled pool=pool, with taints.
func (c *cluster) createNodes(t testing.TB, prefix string, n int, manager, pool string, taints []corev1.Taint) []string {
	t.Helper()
	var names []string
	for i := range n {
		name := fmt.Sprintf("%s-%d", prefix, i)
		capacity := corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("32"),
			corev1.ResourceMemory: resource.MustParse("256Gi"),
			corev1.ResourcePods:   resource.MustParse("110"),
		}
		_, err := c.client.CoreV1().Nodes().Create(context.Background(), &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{
				Name:        name,
				Annotations: map[string]string{kwokAnnotation: manager, "node.alpha.kubernetes.io/ttl": "0"},
				Labels: map[string]string{
					"type": "kwok", "pool": pool, "kubernetes.io/hostname": name,
					"kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
				},
			},
			Spec:   corev1.NodeSpec{Taints: taints},
			Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity},
		}, metav1.CreateOptions{})
		check(t, err)
		names = append(names, name)
	}
	return names
}

// kubectl runs /usr/bin/kubectl as the administrator, or skips the check
// where it is absent.
func (c *cluster) kubectl(t *testing.T, args ...string) (string, bool) {
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Log("kubectl not found; its check is skipped")
		return "", false
	}
	out, err := exec.Command("kubectl", append([]string{"--kubeconfig=" + c.pki.path("admin.kubeconfig")}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), true
}
