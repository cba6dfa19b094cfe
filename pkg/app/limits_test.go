package app

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/watchcache/watchcache/pkg/encoding"
	"github.com/watchcache/watchcache/pkg/etcdembed"
	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/storage"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// TestRequestTimeoutEtcdDown: with etcd gone, a create and an update are
// answered 504 Timeout within --request-timeout (they used to hang for as
// long as etcd was down), and /healthz answers at once: 500 for its etcd
// check, ok without it (?exclude=etcd). Once etcd is back, neither write
// is left half done: each object is as before or fully written, the same
// through the API as in etcd, and the server serves writes and reads.
func TestRequestTimeoutEtcdDown(t *testing.T) {
	etcdCfg := etcdembed.Config{DataDir: t.TempDir(), UnsafeNoFsync: true}
	etcd, err := etcdembed.Start(etcdCfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { etcd.Close() }()
	u, err := url.Parse(etcd.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	if etcdCfg.ClientPort, err = strconv.Atoi(u.Port()); err != nil {
		t.Fatal(err)
	}
	a, err := Start(Config{DataDir: t.TempDir(), EtcdServers: []string{etcd.Endpoint}, EtcdPrefix: "/registry", WatchCache: true,
		ConsistentListFromCache: true, ConsistentGetFromCache: true,
		// Long enough for the first create beside the whole suite under
		// -race; short enough that the test's bound proves it.
		RequestTimeout: 5 * time.Second, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	rc, _ := adminClient(t, a)
	rc.Timeout = 30 * time.Second // the client waits longer than the server may take
	cms := kubernetes.NewForConfigOrDie(rc).CoreV1().ConfigMaps("default")
	ctx := context.Background()
	updated, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "updated"}, Data: map[string]string{"v": "1"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	etcd.Close()
	writes := []struct {
		name  string
		write func() error
	}{
		{"create", func() error {
			_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "created"}, Data: map[string]string{"v": "2"}}, metav1.CreateOptions{})
			return err
		}},
		{"update", func() error {
			up := updated.DeepCopy()
			up.Data["v"] = "2"
			_, err := cms.Update(ctx, up, metav1.UpdateOptions{})
			return err
		}},
	}
	for _, w := range writes {
		start := time.Now()
		err := w.write()
		if took := time.Since(start); !apierrors.IsTimeout(err) || took > 10*time.Second {
			t.Errorf("%s with etcd down: %v after %v, want 504 Timeout within about 5s", w.name, err, took)
		}
	}
	// /healthz fails on etcd, as kube-apiserver's does, but answers at once,
	// and without its etcd check it passes.
	raw := kubernetes.NewForConfigOrDie(rc).Discovery().RESTClient()
	if body, err := raw.Get().AbsPath("/healthz").DoRaw(ctx); !apierrors.IsInternalError(err) || !strings.Contains(string(body), "[-]etcd failed: reason withheld") {
		t.Errorf("/healthz with etcd down: %q %v, want 500 naming etcd", body, err)
	}
	if body, err := raw.Get().AbsPath("/healthz").Param("exclude", "etcd").DoRaw(ctx); err != nil || string(body) != "ok" {
		t.Errorf("/healthz?exclude=etcd with etcd down: %q %v", body, err)
	}

	if etcd, err = etcdembed.Start(etcdCfg); err != nil {
		t.Fatal(err)
	}
	for ready := false; !ready; {
		body, err := raw.Get().AbsPath("/readyz").DoRaw(ctx)
		if ready = err == nil && string(body) == "ok"; !ready {
			time.Sleep(100 * time.Millisecond)
		}
	}
	// Each object, read consistently through the API, is its state in etcd
	// and one of the two states the client may assume.
	for name, states := range map[string][]map[string]string{"created": {nil, {"v": "2"}}, "updated": {{"v": "1"}, {"v": "2"}}} {
		var got map[string]string
		rv := ""
		switch cm, err := cms.Get(ctx, name, metav1.GetOptions{}); {
		case apierrors.IsNotFound(err):
		case err != nil:
			t.Fatalf("get %s after etcd is back: %v", name, err)
		default:
			got, rv = cm.Data, cm.ResourceVersion
		}
		stored, err := a.client.Get(ctx, "/registry/configmaps/default/"+name)
		if err != nil {
			t.Fatal(err)
		}
		var inEtcd map[string]string
		etcdRV := ""
		if len(stored.Kvs) == 1 {
			var cm corev1.ConfigMap
			if _, _, err := encoding.ProtobufDecoder.Decode(stored.Kvs[0].Value, nil, &cm); err != nil {
				t.Fatalf("%s in etcd: %v", name, err)
			}
			inEtcd, etcdRV = cm.Data, strconv.FormatInt(stored.Kvs[0].ModRevision, 10)
		}
		if rv != etcdRV || !maps.Equal(got, inEtcd) || !slices.ContainsFunc(states, func(s map[string]string) bool { return maps.Equal(s, got) }) {
			t.Errorf("%s after etcd is back: %v at %q through the API, %v at %q in etcd; want the same, one of %v", name, got, rv, inEtcd, etcdRV, states)
		}
	}
	// The server serves writes and consistent reads again.
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "after"}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create after etcd is back: %v", err)
	}
	if list, err := cms.List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=after"}); err != nil || len(list.Items) != 1 {
		t.Errorf("consistent list after etcd is back: %v %v", list, err)
	}
}

// gatedStore holds the lists of namespace "slow" and the creates of
// objects named held-* (telling entered) until gate is closed: requests
// that stay in flight as long as the test wants. The server's own work
// (the kube-root-ca.crt config map of each namespace) is not held.
type gatedStore struct {
	storage.Interface
	entered chan<- string
	gate    <-chan struct{}
}

func (s gatedStore) hold(ctx context.Context, what string) error {
	s.entered <- what
	select {
	case <-s.gate:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s gatedStore) GetList(ctx context.Context, scope string, opts storage.ListOptions) (*storage.List, error) {
	if scope == "slow/" {
		if err := s.hold(ctx, "list "+scope); err != nil {
			return nil, err
		}
	}
	return s.Interface.GetList(ctx, scope, opts)
}

func (s gatedStore) Create(ctx context.Context, key string, data []byte) (*object.Object, error) {
	if _, name, _ := strings.Cut(key, "/"); strings.HasPrefix(name, "held-") {
		if err := s.hold(ctx, "create "+key); err != nil {
			return nil, err
		}
	}
	return s.Interface.Create(ctx, key, data)
}

// TestMaxInFlight: through the whole server, with --max-requests-inflight
// 2 and --max-mutating-requests-inflight 1 taken by requests held in
// etcd, one more read and one more write are answered 429 at once with
// Retry-After and a Status, while health checks, a system:masters request
// and a watch are served; once the held requests finish, so do the next.
func TestMaxInFlight(t *testing.T) {
	entered, gate := make(chan string), make(chan struct{})
	a, err := Start(Config{DataDir: t.TempDir(), EtcdPrefix: "/registry", EtcdUnsafeNoFsync: true,
		MaxRequestsInflight: 2, MaxMutatingRequestsInflight: 1, AuthorizationModes: []string{ModeAlwaysAllow}, DisablePriorityAndFairness: true,
		WrapStore: func(resource string, s storage.Interface) storage.Interface {
			if resource != "configmaps" {
				return s
			}
			return gatedStore{Interface: s, entered: entered, gate: gate}
		},
		Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	admin, cs := adminClient(t, a)
	ctx := context.Background()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "slow"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// alice is limited; the administrator (system:masters) is not.
	aliceCfg := rest.CopyConfig(admin)
	aliceCfg.Impersonate = rest.ImpersonationConfig{UserName: "alice"}
	alice, err := rest.HTTPClientFor(aliceCfg)
	if err != nil {
		t.Fatal(err)
	}
	adminHTTP, err := rest.HTTPClientFor(admin)
	if err != nil {
		t.Fatal(err)
	}
	var created atomic.Int32
	do := func(c *http.Client, method, path string) (*http.Response, []byte) {
		t.Helper()
		var body io.Reader
		if method == http.MethodPost {
			name := "c" + strconv.Itoa(int(created.Add(1)))
			if strings.Contains(path, "/slow/") {
				name = "held-" + name
			}
			body = strings.NewReader(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"` + name + `"}}`)
		}
		req, err := http.NewRequest(method, a.URL+path, body)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp, data
	}
	const slow, other = "/api/v1/namespaces/slow/configmaps", "/api/v1/namespaces/default/configmaps"
	held := []string{http.MethodGet, http.MethodGet, http.MethodPost}
	codes := make(chan int, len(held))
	for _, method := range held {
		go func() {
			resp, _ := do(alice, method, slow)
			codes <- resp.StatusCode
		}()
	}
	for range held {
		<-entered
	}

	for _, method := range []string{http.MethodGet, http.MethodPost} {
		resp, body := do(alice, method, other)
		var st metav1.Status
		if err := json.Unmarshal(body, &st); resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "1" ||
			err != nil || st.Kind != "Status" || st.Reason != metav1.StatusReasonTooManyRequests || st.Code != http.StatusTooManyRequests {
			t.Errorf("%s over the limit: %d Retry-After %q %s, want 429 with Retry-After 1 and a TooManyRequests Status",
				method, resp.StatusCode, resp.Header.Get("Retry-After"), body)
		}
	}
	for _, path := range []string{"/readyz", "/livez", "/healthz"} {
		if resp, body := do(alice, http.MethodGet, path); resp.StatusCode != http.StatusOK {
			t.Errorf("%s with every slot taken: %d %s", path, resp.StatusCode, body)
		}
	}
	for _, method := range []string{http.MethodGet, http.MethodPost} {
		if resp, body := do(adminHTTP, method, other); resp.StatusCode >= 300 {
			t.Errorf("system:masters %s with every slot taken: %d %s", method, resp.StatusCode, body)
		}
	}
	watchCtx, cancelWatch := context.WithCancel(ctx)
	req, _ := http.NewRequestWithContext(watchCtx, http.MethodGet, a.URL+other+"?watch=1", nil)
	if resp, err := alice.Do(req); err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("a watch with every slot taken: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	cancelWatch()

	close(gate)
	for range held {
		if code := <-codes; code != http.StatusOK && code != http.StatusCreated {
			t.Errorf("a held request ended %d", code)
		}
	}
	for _, method := range []string{http.MethodGet, http.MethodPost} {
		if resp, body := do(alice, method, other); resp.StatusCode >= 300 {
			t.Errorf("%s after the held requests: %d %s", method, resp.StatusCode, body)
		}
	}
}

// adminClient returns the administrator's client configuration and
// clientset for a.
func adminClient(t testing.TB, a *App) (*rest.Config, *kubernetes.Clientset) {
	t.Helper()
	rc, err := clientcmd.BuildConfigFromFlags("", a.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	return rc, kubernetes.NewForConfigOrDie(rc)
}
