package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/watchcache/watchcache/pkg/app"
	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/storage"
	"github.com/watchcache/watchcache/pkg/storage/cacher"
	"github.com/watchcache/watchcache/pkg/storage/storagetest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// initHook is the test hook of a second server (app.Config.WrapStore): it
// wraps each resource's etcd3 store in an initStore, which can hold the
// cache's list in initialization and counts the reads reaching etcd.
type initHook struct {
	mu     sync.Mutex
	stores map[string]*initStore
	held   map[string]bool // resources held from the start
}

func newInitHook(held ...string) *initHook {
	h := &initHook{stores: map[string]*initStore{}, held: map[string]bool{}}
	for _, r := range held {
		h.held[r] = true
	}
	return h
}

func (h *initHook) wrap(resource string, s storage.Interface) storage.Interface {
	st := &initStore{Interface: s, resource: resource, failWatch: make(chan struct{})}
	if h.held[resource] {
		st.Hold()
	}
	h.mu.Lock()
	h.stores[resource] = st
	h.mu.Unlock()
	return st
}

func (h *initHook) store(resource string) *initStore {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.stores[resource]
}

// initStore is a resource's etcd3 store seen through the hook. While held,
// the first page of the watch cache's list (cacher.IsReflectorList,
// no continue) waits until release; every other read passes and is
// counted. When failWatch is closed, the cache's first watch fails (an
// ERROR event), so that the cache initializes again.
type initStore struct {
	storage.Interface
	resource string

	storagetest.Gate // the cache's lists pass it

	initial  atomic.Int64 // cache lists started
	complete atomic.Int64 // cache lists completed (the cache is ready right after)

	gets atomic.Int64 // gets reaching etcd
	// Lists reaching etcd other than the cache's pages, bounded (limit >
	// 0) or not, while the cache has not completed its first list and after.
	boundedInit, unboundedInit, boundedLater, unboundedLater atomic.Int64

	watches   atomic.Int64
	failWatch chan struct{}
	failOnce  sync.Once
}

// breakWatch makes the cache's etcd watch fail.
func (s *initStore) breakWatch() { s.failOnce.Do(func() { close(s.failWatch) }) }

// waitHeld waits until the cache's list is held (n lists started).
func (s *initStore) waitHeld(t *testing.T, n int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for s.Waiting() != 1 || s.initial.Load() != n {
		if time.Now().After(deadline) {
			t.Fatalf("%s: the cache's list #%d is not held after 10s", s.resource, n)
		}
		time.Sleep(time.Millisecond)
	}
}

func (s *initStore) Get(ctx context.Context, key string, opts storage.GetOptions) (*object.Object, error) {
	s.gets.Add(1)
	return s.Interface.Get(ctx, key, opts)
}

func (s *initStore) GetList(ctx context.Context, scope string, opts storage.ListOptions) (*storage.List, error) {
	cachePage := cacher.IsReflectorList(ctx)
	// Bounded: a page, or a list by name etcd answers with one key.
	byName, _ := opts.LookupByName(scope, s.Schema().ClusterScoped())
	bounded := opts.Limit > 0 || byName.Key != ""
	switch {
	case cachePage && opts.Continue == "":
		s.initial.Add(1)
		if err := s.Pass(ctx); err != nil {
			return nil, err
		}
	case cachePage:
	case s.complete.Load() == 0 && bounded:
		s.boundedInit.Add(1)
	case s.complete.Load() == 0:
		s.unboundedInit.Add(1)
	case bounded:
		s.boundedLater.Add(1)
	default:
		s.unboundedLater.Add(1)
	}
	list, err := s.Interface.GetList(ctx, scope, opts)
	if cachePage && err == nil && list.Continue == "" {
		s.complete.Add(1)
	}
	return list, err
}

func (s *initStore) Watch(ctx context.Context, scope string, opts storage.ListOptions) (storage.Watcher, error) {
	w, err := s.Interface.Watch(ctx, scope, opts)
	if err != nil || s.watches.Add(1) != 1 {
		return w, err
	}
	return storagetest.NewBreakableWatcher(w, s.failWatch), nil
}

// startInitServer starts a second server (the shared testServer cannot be
// held in initialization) whose stores go through hook; cfg's zero fields
// get the values of the shared server.
func startInitServer(t testing.TB, cfg app.Config, hook *initHook) *app.App {
	t.Helper()
	a := startWrappedServer(t, cfg, hook.wrap)
	// Held lists end with the server's context; release them anyway, before
	// the server closes (cleanups run last registered first).
	t.Cleanup(func() {
		hook.mu.Lock()
		for _, s := range hook.stores {
			s.Release()
		}
		hook.mu.Unlock()
	})
	return a
}

// startWrappedServer starts a second server whose etcd3 stores go through
// wrap (app.Config.WrapStore); cfg's zero fields get the values of the
// shared server.
func startWrappedServer(t testing.TB, cfg app.Config, wrap func(resource string, s storage.Interface) storage.Interface) *app.App {
	t.Helper()
	if cfg.DataDir == "" {
		cfg.DataDir = t.TempDir()
	}
	if err := seedCA(cfg.DataDir); err != nil {
		t.Fatal(err)
	}
	cfg.EtcdPrefix = "/registry"
	cfg.EtcdUnsafeNoFsync = true
	cfg.WatchCache = true
	cfg.ConsistentListFromCache = true
	cfg.ConsistentGetFromCache = true
	cfg.BindAddress = "127.0.0.1"
	cfg.ResourcesFile = "testdata/resources.yaml"
	if cfg.EtcdProgressNotifyInterval == 0 {
		cfg.EtcdProgressNotifyInterval = 200 * time.Millisecond
	}
	cfg.Log = slog.New(slog.DiscardHandler)
	cfg.WrapStore = wrap
	a, err := app.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := a.Close(); err != nil {
			t.Errorf("closing the second server: %v", err)
		}
	})
	return a
}

// initAnswer bounds the wait for the answer (the status line) of a request
// sent while a cache initializes. The tests hold their caches until they
// release them explicitly, after their requests, so a request that waits
// for the cache is never answered and fails here; the bound is generous
// because a slow answer on a loaded machine (the whole suite under -race on
// 2 cores) is not what these tests are about.
const initAnswer = 30 * time.Second

// initDo sends a request to a, fails the test if it gets no answer within
// initAnswer, and returns the answer with its body.
func initDo(t testing.TB, a *app.App, method, path string, body []byte) (*http.Response, []byte) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, method, a.URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	// Only a missing answer cancels: a watch's stream must outlive initDo.
	noAnswer := time.AfterFunc(initAnswer, cancel)
	resp, err := htClient.Do(req)
	if !noAnswer.Stop() {
		t.Fatalf("%s %s: no answer in %v: did it wait for the cache?", method, path, initAnswer)
	}
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	if strings.Contains(path, "watch=true") && resp.StatusCode == http.StatusOK {
		return resp, nil // the stream does not end
	}
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the body: %v", method, path, err)
	}
	return resp, data
}

// initExpect sends a request and checks its status code.
func initExpect(t testing.TB, a *app.App, method, path string, body []byte, code int) []byte {
	t.Helper()
	resp, data := initDo(t, a, method, path, body)
	if resp.StatusCode != code {
		t.Errorf("%s %s: %d %s, want %d", method, path, resp.StatusCode, htShort(data), code)
	}
	return data
}

// initTooMany checks a 429 of a cache that initializes: Retry-After header
// and a Status with reason TooManyRequests and details.retryAfterSeconds,
// saying which cache initializes.
func initTooMany(t testing.TB, a *app.App, path, resource string) {
	t.Helper()
	resp, data := initDo(t, a, "GET", path, nil)
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("GET %s: %d %s, want 429", path, resp.StatusCode, htShort(data))
		return
	}
	// Retry-After grows with the time the cache has been down (1 s at
	// first, up to 30 s; the curve is the cacher's unit test): a loaded
	// machine may take long enough to get here to see more than 1.
	ra, err := strconv.Atoi(resp.Header.Get("Retry-After"))
	if err != nil || ra < 1 || ra > 30 {
		t.Errorf("GET %s: Retry-After %q, want 1 to 30 seconds", path, resp.Header.Get("Retry-After"))
	}
	var st metav1.Status
	if err := json.Unmarshal(data, &st); err != nil {
		t.Fatalf("GET %s: the 429 is not a Status: %v: %s", path, err, data)
	}
	if st.Kind != "Status" || st.Status != metav1.StatusFailure || st.Code != http.StatusTooManyRequests || st.Reason != metav1.StatusReasonTooManyRequests ||
		st.Details == nil || int(st.Details.RetryAfterSeconds) != ra || !strings.Contains(st.Message, resource) || !strings.Contains(st.Message, "initializing") {
		t.Errorf("GET %s: Status %s", path, data)
	}
}

// initReadyz reads /readyz?verbose of a.
func initReadyz(t testing.TB, a *app.App) (int, string) {
	t.Helper()
	resp, data := initDo(t, a, "GET", "/readyz?verbose", nil)
	return resp.StatusCode, string(data)
}

// initCachesCheck reads /readyz/watch-cache-initialization of a: the
// check alone, with its reason when it fails (/readyz withholds it).
func initCachesCheck(t testing.TB, a *app.App) (int, string) {
	t.Helper()
	resp, data := initDo(t, a, "GET", "/readyz/watch-cache-initialization", nil)
	return resp.StatusCode, string(data)
}

// initWaitReadyz waits until /readyz of a answers 200.
func initWaitReadyz(t testing.TB, a *app.App, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		code, body := initReadyz(t, a)
		if code == http.StatusOK {
			return time.Since(start)
		}
		if time.Since(start) > within {
			t.Fatalf("/readyz still %d after %v: %s", code, within, body)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func initConfigMap(name string, labels map[string]string) []byte {
	data, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name, "labels": labels}, "data": map[string]string{"k": "v"}})
	return data
}

// TestInitializationHTTP holds the caches of configmaps and pods in
// initialization on a second server: /readyz is 503 naming them; gets and
// lists with a limit and no selector are served (by etcd); every other list
// and every watch is a 429 with Retry-After; nothing waits. Once both are
// released /readyz is 200, and it stays 200 when the configmaps cache
// initializes again later, while configmaps get 429s again.
func TestInitializationHTTP(t *testing.T) {
	hook := newInitHook("configmaps", "pods")
	a := startInitServer(t, app.Config{}, hook)
	cms, pods := hook.store("configmaps"), hook.store("pods")
	cms.waitHeld(t, 1)
	pods.waitHeld(t, 1)

	for _, path := range []string{"/healthz", "/livez"} {
		initExpect(t, a, "GET", path, nil, http.StatusOK)
	}
	initExpect(t, a, "GET", "/readyz", nil, http.StatusInternalServerError)
	code, body := initReadyz(t, a)
	if code != http.StatusInternalServerError || !strings.Contains(body, "[-]watch-cache-initialization failed: reason withheld") ||
		!strings.Contains(body, "[+]etcd ok") || !strings.Contains(body, "[+]etcd-readiness ok") ||
		!strings.Contains(body, "[+]ping ok") || !strings.HasSuffix(body, "readyz check failed\n") {
		t.Errorf("/readyz?verbose while configmaps and pods initialize: %d %q", code, body)
	}
	if code, body := initCachesCheck(t, a); code != http.StatusInternalServerError ||
		!strings.Contains(body, "internal server error: watch caches still initializing: ") || !strings.Contains(body, "configmaps") || !strings.Contains(body, "pods") {
		t.Errorf("/readyz/watch-cache-initialization while configmaps and pods initialize: %d %q", code, body)
	}
	initExpect(t, a, "GET", "/readyz?exclude=watch-cache-initialization", nil, http.StatusOK)

	// Writes go to etcd.
	const base = "/api/v1/namespaces/default/configmaps"
	for i := range 5 {
		initExpect(t, a, "POST", base, initConfigMap(fmt.Sprintf("cm-%d", i), map[string]string{"app": "held"}), http.StatusCreated)
	}

	// Gets, lists with a limit and no selector, lists by name: etcd.
	gets, bounded := cms.gets.Load(), cms.boundedInit.Load()
	var obj htObject
	if err := json.Unmarshal(initExpect(t, a, "GET", base+"/cm-0", nil, http.StatusOK), &obj); err != nil || obj.Metadata.Name != "cm-0" {
		t.Errorf("GET cm-0: %+v, %v", obj, err)
	}
	initExpect(t, a, "GET", base+"/missing", nil, http.StatusNotFound)
	var page htList
	if err := json.Unmarshal(initExpect(t, a, "GET", base+"?limit=2", nil, http.StatusOK), &page); err != nil || len(page.Items) != 2 || page.Metadata.Continue == "" {
		t.Fatalf("LIST limit=2: %+v, %v", page, err)
	}
	var next htList
	if err := json.Unmarshal(initExpect(t, a, "GET", base+"?limit=2&continue="+page.Metadata.Continue, nil, http.StatusOK), &next); err != nil ||
		len(next.Items) != 2 || next.Items[0].Metadata.Name != "cm-2" {
		t.Errorf("LIST limit=2, second page: %+v, %v", next, err)
	}
	initExpect(t, a, "GET", "/api/v1/configmaps?limit=3&resourceVersion=0", nil, http.StatusOK)
	// A list by name in a namespace: etcd reads one key.
	var byName htList
	if err := json.Unmarshal(initExpect(t, a, "GET", base+"?fieldSelector=metadata.name%3Dcm-0&limit=2", nil, http.StatusOK), &byName); err != nil ||
		len(byName.Items) != 1 || byName.Items[0].Metadata.Name != "cm-0" {
		t.Errorf("LIST by name: %+v, %v", byName, err)
	}
	if g, l := cms.gets.Load()-gets, cms.boundedInit.Load()-bounded; g != 2 || l != 4 {
		t.Errorf("%d gets and %d bounded lists reached etcd, want 2 and 4", g, l)
	}

	// Every other list, every watch: 429.
	for _, path := range []string{
		base,
		"/api/v1/configmaps",
		base + "?resourceVersion=0",
		base + "?labelSelector=app%3Dheld&limit=2",
		"/api/v1/configmaps?fieldSelector=metadata.name%3Dcm-0", // one key per namespace
		base + "?watch=true",
		base + "?watch=true&resourceVersion=0",
		base + "?watch=true&resourceVersion=" + page.Metadata.ResourceVersion,
		base + "?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true",
		base + "/cm-0?watch=true", // a watch of one object
		"/api/v1/watch/namespaces/default/configmaps",
	} {
		initTooMany(t, a, path, "configmaps")
	}
	initTooMany(t, a, "/api/v1/pods", "pods")
	initTooMany(t, a, "/api/v1/pods?watch=true", "pods")
	if n := cms.unboundedInit.Load() + pods.unboundedInit.Load(); n != 0 {
		t.Errorf("%d unbounded lists reached etcd while the caches initialize", n)
	}
	// Other resources are served as usual.
	initExpect(t, a, "GET", "/api/v1/namespaces/default/secrets", nil, http.StatusOK)
	initExpect(t, a, "GET", "/api/v1/namespaces", nil, http.StatusOK)

	// One released: /readyz still waits for the other.
	cms.Release()
	deadline := time.Now().Add(10 * time.Second)
	for cms.complete.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the configmaps cache did not list 10s after the release")
		}
		time.Sleep(time.Millisecond)
	}
	var all htList
	for {
		resp, data := initDo(t, a, "GET", base, nil)
		if resp.StatusCode == http.StatusOK {
			if err := json.Unmarshal(data, &all); err != nil || len(all.names()) != 5 {
				t.Errorf("LIST after the release: %v: %s", err, htShort(data))
			}
			break
		}
		if resp.StatusCode != http.StatusTooManyRequests || time.Now().After(deadline) {
			t.Fatalf("LIST after the release: %d %s", resp.StatusCode, htShort(data))
		}
		time.Sleep(time.Millisecond)
	}
	code, body = initCachesCheck(t, a)
	if code != http.StatusInternalServerError || !strings.Contains(body, "pods") || strings.Contains(body, "configmaps") {
		t.Errorf("/readyz/watch-cache-initialization while pods initialize: %d %q", code, body)
	}
	pods.Release()
	t.Logf("/readyz was 200 %v after the last release", initWaitReadyz(t, a, 10*time.Second).Round(time.Millisecond))
	code, body = initReadyz(t, a)
	if code != http.StatusOK || !strings.Contains(body, "[+]watch-cache-initialization ok") {
		t.Errorf("/readyz?verbose once ready: %d %q", code, body)
	}
	initExpect(t, a, "GET", "/api/v1/pods", nil, http.StatusOK)

	// A watch served by the cache, then the cache loses its etcd watch and
	// its list is held again: the watch ends, configmaps get 429s, /readyz
	// stays 200.
	req, _ := http.NewRequest("GET", a.URL+base+"?watch=true&resourceVersion="+all.Metadata.ResourceVersion, nil)
	resp, err := htClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("watch once ready: %v %v", resp, err)
	}
	defer resp.Body.Close()
	watchEnded := make(chan error, 1)
	go func() { _, err := io.Copy(io.Discard, resp.Body); watchEnded <- err }()
	cms.Hold()
	cms.breakWatch()
	cms.waitHeld(t, 2)
	select {
	case err := <-watchEnded:
		if err != nil {
			t.Errorf("the watch ended with %v, want a clean end", err)
		}
	case <-time.After(5 * time.Second):
		t.Error("the watch did not end 5s after its cache lost its etcd watch")
	}
	for range 5 {
		initExpect(t, a, "GET", "/readyz", nil, http.StatusOK)
		time.Sleep(20 * time.Millisecond)
	}
	initTooMany(t, a, base, "configmaps")
	initTooMany(t, a, base+"?watch=true", "configmaps")
	initExpect(t, a, "GET", base+"/cm-0", nil, http.StatusOK)
	initExpect(t, a, "GET", base+"?limit=2", nil, http.StatusOK)
	initExpect(t, a, "GET", "/api/v1/pods", nil, http.StatusOK)
	cms.Release()
	deadline = time.Now().Add(10 * time.Second)
	for {
		resp, data := initDo(t, a, "GET", base, nil)
		if resp.StatusCode == http.StatusOK {
			break
		}
		if resp.StatusCode != http.StatusTooManyRequests || time.Now().After(deadline) {
			t.Fatalf("LIST after the second release: %d %s", resp.StatusCode, htShort(data))
		}
		time.Sleep(time.Millisecond)
	}
	initExpect(t, a, "GET", "/readyz", nil, http.StatusOK)
	if n := cms.unboundedInit.Load() + pods.unboundedInit.Load(); n != 0 {
		t.Errorf("%d unbounded lists reached etcd while the caches initialized", n)
	}
}

// TestInitializationStorageTimeout: with --storage-initialization-timeout
// 1s and the configmaps cache held, /readyz turns 200 after a second (not
// before), and WaitInitialized returns then, while configmaps still get
// 429s.
func TestInitializationStorageTimeout(t *testing.T) {
	hook := newInitHook("configmaps")
	started := time.Now()
	a := startInitServer(t, app.Config{StorageInitializationTimeout: time.Second}, hook)
	cms := hook.store("configmaps")
	cms.waitHeld(t, 1)
	code, body := initCachesCheck(t, a)
	// The timeout runs from a moment after started.
	if code == http.StatusOK && time.Since(started) < 900*time.Millisecond {
		t.Errorf("/readyz/watch-cache-initialization is ok %v after the start, before the timeout: %s", time.Since(started), body)
	}
	if code != http.StatusOK && (!strings.Contains(body, "watch caches still initializing: ") || !strings.Contains(body, "configmaps")) {
		t.Errorf("/readyz/watch-cache-initialization: %d %q", code, body)
	}
	// WaitInitialized (the command prints how to reach the server once it
	// returns) waits on the same check: for the timeout, the cache held.
	if err := a.WaitInitialized(context.Background()); err != nil || time.Since(started) < time.Second {
		t.Errorf("WaitInitialized returned %v %v after the start, before the 1s timeout", err, time.Since(started))
	}
	// The cache stays held, so any 200 is the timeout's doing; how late it
	// comes on a loaded machine is not what the test is about.
	initWaitReadyz(t, a, initAnswer)
	ready := time.Since(started)
	t.Logf("/readyz was 200 %v after the start", ready.Round(time.Millisecond))
	if ready < time.Second {
		t.Errorf("/readyz was 200 %v after the start, before the 1s timeout", ready)
	}
	initTooMany(t, a, "/api/v1/namespaces/default/configmaps", "configmaps")
	initTooMany(t, a, "/api/v1/namespaces/default/configmaps?watch=true", "configmaps")
	time.Sleep(100 * time.Millisecond)
	initExpect(t, a, "GET", "/readyz", nil, http.StatusOK)
	if cms.complete.Load() != 0 {
		t.Error("the configmaps cache listed while held")
	}
}

// TestInitializationKubectl: kubectl against a server whose configmaps
// cache initializes. kubectl get lists in chunks (limit 500, no selector),
// which etcd serves; with a selector, or without chunks, it gets 429s,
// retries them itself (client-go honours Retry-After) and, out of time,
// says clearly why it failed.
func TestInitializationKubectl(t *testing.T) {
	if _, err := os.Stat(kubectlPath); err != nil {
		t.Skipf("kubectl is not installed: %v", err)
	}
	hook := newInitHook("configmaps")
	a := startInitServer(t, app.Config{}, hook)
	cms := hook.store("configmaps")
	cms.waitHeld(t, 1)
	initExpect(t, a, "POST", "/api/v1/namespaces/default/configmaps", initConfigMap("held", map[string]string{"app": "held"}), http.StatusCreated)
	cacheDir := t.TempDir()
	kubectl := func(args ...string) (string, error) {
		// Not kcTimeout: client-go retries 429s ten times, waiting as
		// Retry-After says, which grows with the time the cache has been
		// initializing (past 30 s beside the whole suite under -race;
		// capped at 30 s), so ten retries may take minutes.
		ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
		defer cancel()
		var out bytes.Buffer
		cmd := exec.CommandContext(ctx, kubectlPath, append([]string{"--kubeconfig", a.Kubeconfig, "--cache-dir", cacheDir}, args...)...)
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		return out.String(), err
	}
	// Chunked, no selector: served by etcd.
	out, err := kubectl("get", "configmaps", "--request-timeout=5s")
	if err != nil || !strings.Contains(out, "held") {
		t.Errorf("kubectl get configmaps: %v\n%s", err, out)
	}
	// client-go retries a 429 with Retry-After itself, up to 10 times, so
	// each of these takes about ten seconds on a quiet machine; they run
	// together. Their --request-timeout must outlast the ten retries, else
	// kubectl fails on its own timeout rather than the server's 429 (on a
	// loaded machine Retry-After had reached 6 s when they started).
	var wg sync.WaitGroup
	for _, args := range [][]string{
		{"get", "configmaps", "-l", "app=held"},
		{"get", "configmaps", "--chunk-size=0"},
		{"get", "configmaps", "--watch-only"},
	} {
		wg.Go(func() {
			start := time.Now()
			out, err := kubectl(append(args, "--request-timeout=5m")...)
			took := time.Since(start)
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() == 0 {
				t.Errorf("kubectl %s: %v, want a failure\n%s", strings.Join(args, " "), err, out)
				return
			}
			t.Logf("kubectl %s failed after %v: %s", strings.Join(args, " "), took.Round(time.Millisecond), strings.TrimSpace(out))
			if !strings.Contains(out, "Error from server (TooManyRequests): the watch cache of configmaps is initializing") {
				t.Errorf("kubectl %s does not say clearly why it failed: %s", strings.Join(args, " "), out)
			}
		})
	}
	wg.Wait()
	cms.Release()
	deadline := time.Now().Add(20 * time.Second)
	for {
		out, err := kubectl("get", "configmaps", "-l", "app=held", "--request-timeout=5s")
		if err == nil && strings.Contains(out, "held") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("kubectl get configmaps -l app=held after the release: %v\n%s", err, out)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// initCounter counts a client's requests for configmaps, by kind.
type initCounter struct {
	mu     sync.Mutex
	times  []time.Time
	kinds  map[string]int
	status map[int]int
}

func (c *initCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return cgRoundTripFunc(func(r *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(r)
		if strings.Contains(r.URL.Path, "/configmaps") {
			kind := "list"
			if r.URL.Query().Get("watch") == "true" || strings.Contains(r.URL.Path, "/watch/") {
				kind = "watch"
			}
			c.mu.Lock()
			c.times = append(c.times, time.Now())
			c.kinds[kind]++
			if resp != nil {
				c.status[resp.StatusCode]++
			}
			c.mu.Unlock()
		}
		return resp, err
	})
}

// between counts the requests made in [from, to).
func (c *initCounter) between(from, to time.Time) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, at := range c.times {
		if !at.Before(from) && at.Before(to) {
			n++
		}
	}
	return n
}

func (c *initCounter) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return fmt.Sprintf("%d requests %v, answers %v", len(c.times), c.kinds, c.status)
}

// TestInitializationClientGo starts client-go informers while the
// configmaps cache is held, by watch list (client-go's default) and by
// classic list and watch, each with and without a label selector. Those
// whose every request gets a 429 (watch lists; filtered lists) do not sync
// while held, back off on the 429s without hammering the server, and sync
// once released; the classic unfiltered one lists in pages from
// resourceVersion 0, which etcd serves, so it syncs while held, and backs
// off on its watch's 429s. All follow changes after the release.
func TestInitializationClientGo(t *testing.T) {
	hook := newInitHook("configmaps")
	a := startInitServer(t, app.Config{}, hook)
	cms := hook.store("configmaps")
	cms.waitHeld(t, 1)
	const base = "/api/v1/namespaces/default/configmaps"
	for i := range 20 {
		labels := map[string]string{"app": "other"}
		if i%2 == 0 {
			labels["app"] = "held"
		}
		initExpect(t, a, "POST", base, initConfigMap(fmt.Sprintf("cm-%02d", i), labels), http.StatusCreated)
	}

	type informerCase struct {
		name         string
		classic      bool
		selector     string
		syncWhenHeld bool
		want         int
		count        *initCounter
		informer     cache.SharedIndexInformer
	}
	cases := []*informerCase{
		{name: "watch list, filtered", selector: "app=held", want: 10},
		{name: "watch list", want: 20},
		{name: "list and watch, filtered", classic: true, selector: "app=held", want: 10},
		{name: "list and watch", classic: true, want: 20, syncWhenHeld: true},
	}
	stop := make(chan struct{})
	var factories []informers.SharedInformerFactory
	defer func() {
		close(stop)
		for _, f := range factories {
			f.Shutdown()
		}
	}()
	for _, c := range cases {
		c.count = &initCounter{kinds: map[string]int{}, status: map[int]int{}}
		// No client-side rate limit: the pace is the server's Retry-After
		// and client-go's backoff.
		cfg := restConfig(t, a)
		cfg.WrapTransport = c.count.wrap
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if !c.classic {
			f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace("default"),
				informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = c.selector }))
			factories = append(factories, f)
			c.informer = f.Core().V1().ConfigMaps().Informer()
			f.Start(stop)
			continue
		}
		client := cs.CoreV1().ConfigMaps("default")
		c.informer = cache.NewSharedIndexInformer(cgClassicListWatch{&cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
				opts.LabelSelector = c.selector
				return client.List(ctx, opts)
			},
			WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
				opts.LabelSelector = c.selector
				return client.Watch(ctx, opts)
			},
		}}, &corev1.ConfigMap{}, 0, cache.Indexers{})
		go c.informer.Run(stop)
	}
	started := time.Now()
	const heldFor = 4 * time.Second
	time.Sleep(heldFor)
	released := time.Now()
	for _, c := range cases {
		n := c.count.between(started, released)
		rate := float64(n) / released.Sub(started).Seconds()
		t.Logf("%s informer while held: %s (%.1f/s); synced: %v", c.name, c.count, rate, c.informer.HasSynced())
		if rate >= 10 {
			t.Errorf("the %s informer sent %.1f requests/s while the cache initialized; it should back off", c.name, rate)
		}
		c.count.mu.Lock()
		if c.count.status[http.StatusTooManyRequests] == 0 {
			t.Errorf("the %s informer got no 429", c.name)
		}
		c.count.mu.Unlock()
		if c.informer.HasSynced() != c.syncWhenHeld {
			t.Errorf("the %s informer synced while held: %v, want %v", c.name, c.informer.HasSynced(), c.syncWhenHeld)
		}
	}
	if n := cms.unboundedInit.Load(); n != 0 {
		t.Errorf("%d unbounded lists reached etcd while the cache initialized", n)
	}
	cms.Release()
	for _, c := range cases {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		if !cache.WaitForCacheSync(ctx.Done(), c.informer.HasSynced) {
			t.Fatalf("the %s informer did not sync 20s after the release: %s", c.name, c.count)
		}
		cancel()
		t.Logf("%s informer synced %v after the release", c.name, time.Since(released).Round(time.Millisecond))
		var names []string
		for _, obj := range c.informer.GetStore().List() {
			names = append(names, obj.(*corev1.ConfigMap).Name)
		}
		if got := len(withoutRootCA(names)); got != c.want {
			t.Errorf("the %s informer holds %d configmaps, want %d", c.name, got, c.want)
		}
	}
	// All follow changes (their watches succeed now).
	initExpect(t, a, "POST", base, initConfigMap("after", map[string]string{"app": "held"}), http.StatusCreated)
	for _, c := range cases {
		deadline := time.Now().Add(20 * time.Second)
		for {
			if _, ok, _ := c.informer.GetStore().GetByKey("default/after"); ok {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the %s informer did not see a configmap created after the release: %s", c.name, c.count)
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Logf("%s informer saw a create %v after the release: %s", c.name, time.Since(released).Round(time.Millisecond), c.count)
	}
}
