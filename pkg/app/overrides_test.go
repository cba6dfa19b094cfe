package app

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/watchcache/watchcache/pkg/etcdembed"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestParseEtcdOverrides(t *testing.T) {
	got, err := parseEtcdOverrides([]string{"/events#http://a:1;http://b:2,example.com/widgets#https://c:3"})
	if err != nil || len(got) != 2 || got[0].group != "" || got[0].resource != "events" || len(got[0].servers) != 2 ||
		got[1].group != "example.com" || got[1].resource != "widgets" {
		t.Errorf("parse: %+v %v", got, err)
	}
	for _, bad := range []string{"events#http://a:1", "/events", "/events#", "/#http://a:1"} {
		if _, err := parseEtcdOverrides([]string{bad}); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestEtcdServersOverrides: config maps are stored on an etcd cluster of
// their own, everything else on the main one; consistent reads of each
// wait on its own cluster. The other cluster (named twice, its servers in
// two orders) has kube-apiserver's health checks, once: etcd-override-0
// and etcd-override-readiness-0, skipped by ?exclude=etcd and
// ?exclude=etcd-readiness, failing when it is down.
func TestEtcdServersOverrides(t *testing.T) {
	other, err := etcdembed.Start(etcdembed.Config{DataDir: t.TempDir(), ClientPort: 0, UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	closeOther := sync.OnceFunc(other.Close)
	defer closeOther()
	servers := []string{other.Endpoint, strings.Replace(other.Endpoint, "127.0.0.1", "localhost", 1)}
	a, err := Start(Config{DataDir: t.TempDir(), EtcdPrefix: "/registry", EtcdUnsafeNoFsync: true, WatchCache: true,
		ConsistentListFromCache: true, ConsistentGetFromCache: true,
		EtcdServersOverrides: []string{"/configmaps#" + servers[0] + ";" + servers[1], "/events#" + servers[1] + ";" + servers[0]},
		Log:                  slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	_, cs := adminClient(t, a)
	ctx := context.Background()
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "elsewhere"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "here"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	otherClient, err := other.NewClient()
	if err != nil {
		t.Fatal(err)
	}
	defer otherClient.Close()
	count := func(what string, get func() (int64, error)) int64 {
		n, err := get()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return n
	}
	inOther := count("config map in the other etcd", func() (int64, error) {
		r, err := otherClient.Get(ctx, "/registry/configmaps/default/elsewhere", clientv3.WithCountOnly())
		return r.Count, err
	})
	inMain := count("config map in the main etcd", func() (int64, error) {
		r, err := a.client.Get(ctx, "/registry/configmaps/default/elsewhere", clientv3.WithCountOnly())
		return r.Count, err
	})
	secretInMain := count("secret in the main etcd", func() (int64, error) {
		r, err := a.client.Get(ctx, "/registry/secrets/default/here", clientv3.WithCountOnly())
		return r.Count, err
	})
	if inOther != 1 || inMain != 0 || secretInMain != 1 {
		t.Errorf("config map in the other etcd %d, in the main one %d; secret in the main one %d", inOther, inMain, secretInMain)
	}
	// A consistent list (from the cache, waiting on the other cluster's
	// revision) sees the write at once.
	list, err := cs.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=elsewhere"})
	if err != nil || len(list.Items) != 1 || list.Items[0].Name != "elsewhere" {
		t.Errorf("consistent list of config maps: %+v %v", list, err)
	}

	health := func(path string, wantCode int, want string) {
		t.Helper()
		raw := cs.Discovery().RESTClient().Get().AbsPath(path).Param("verbose", "")
		for _, ex := range []string{"etcd", "etcd-readiness"} {
			if strings.Contains(want, ex+" excluded") {
				raw.Param("exclude", ex)
			}
		}
		var code int
		body, _ := raw.Do(ctx).StatusCode(&code).Raw()
		if code != wantCode || string(body) != want {
			t.Errorf("%s: %d\n%s\nwant %d\n%s", path, code, body, wantCode, want)
		}
	}
	hooks := "[+]poststarthook/start-apiextensions-informers ok\n[+]poststarthook/start-apiextensions-controllers ok\n" +
		"[+]poststarthook/crd-informer-synced ok\n[+]poststarthook/start-system-namespaces-controller ok\n" +
		"[+]poststarthook/start-kube-apiserver-identity-lease-controller ok\n" +
		"[+]poststarthook/start-kube-apiserver-identity-lease-garbage-collector ok\n" +
		"[+]poststarthook/rbac/bootstrap-roles ok\n[+]poststarthook/scheduling/bootstrap-system-priority-classes ok\n"
	health("/livez", 200, "[+]ping ok\n[+]log ok\n[+]etcd ok\n[+]etcd-override-0 ok\n"+hooks+"livez check passed\n")
	health("/healthz", 200, "[+]ping ok\n[+]log ok\n[+]etcd excluded: ok\n[+]etcd-override-0 excluded with etcd: ok\n"+hooks+"healthz check passed\n")
	health("/readyz", 200, "[+]ping ok\n[+]log ok\n[+]etcd ok\n[+]etcd-readiness ok\n[+]etcd-override-0 ok\n[+]etcd-override-readiness-0 ok\n"+
		"[+]watch-cache-initialization ok\n[+]rbac ok\n"+hooks+"[+]shutdown ok\nreadyz check passed\n")
	closeOther()
	health("/livez", 500, "[+]ping ok\n[+]log ok\n[+]etcd ok\n[-]etcd-override-0 failed: reason withheld\n"+hooks+"livez check failed\n")
	health("/readyz", 500, "[+]ping ok\n[+]log ok\n[+]etcd ok\n[+]etcd-readiness ok\n[-]etcd-override-0 failed: reason withheld\n"+
		"[-]etcd-override-readiness-0 failed: reason withheld\n[+]watch-cache-initialization ok\n[+]rbac ok\n"+hooks+"[+]shutdown ok\nreadyz check failed\n")
	health("/readyz", 200, "[+]ping ok\n[+]log ok\n[+]etcd excluded: ok\n[+]etcd-readiness excluded: ok\n[+]etcd-override-0 excluded with etcd: ok\n"+
		"[+]etcd-override-readiness-0 excluded with etcd-readiness: ok\n[+]watch-cache-initialization ok\n[+]rbac ok\n"+hooks+"[+]shutdown ok\nreadyz check passed\n")
}
