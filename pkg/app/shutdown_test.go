package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/watchcache/watchcache/pkg/pki"
	"github.com/watchcache/watchcache/pkg/storage"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// TestShutdownDelay: during --shutdown-delay-duration, /readyz fails its
// shutdown check while requests are still served and /livez passes; then
// the server stops.
func TestShutdownDelay(t *testing.T) {
	const delay = 5 * time.Second
	a, err := Start(Config{DataDir: t.TempDir(), EtcdPrefix: "/registry", EtcdUnsafeNoFsync: true, WatchCache: true,
		ShutdownDelay: delay, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	rc, err := clientcmd.BuildConfigFromFlags("", a.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(rc)
	ctx := context.Background()
	get := func(path string) (string, error) {
		body, err := cs.Discovery().RESTClient().Get().AbsPath(path).DoRaw(ctx)
		return string(body), err
	}
	if body, err := get("/readyz/shutdown"); err != nil || body != "ok" {
		t.Fatalf("/readyz/shutdown before: %q %v", body, err)
	}
	stopped := make(chan error, 1)
	began := time.Now()
	go func() { stopped <- a.Shutdown() }()
	for {
		body, err := get("/readyz")
		if apierrors.IsInternalError(err) && strings.Contains(body, "[-]shutdown failed: reason withheld") {
			break
		}
		if time.Since(began) > delay {
			t.Fatalf("/readyz while shutting down: %q %v", body, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if body, err := get("/readyz/shutdown"); !strings.Contains(body, "process is shutting down") {
		t.Errorf("/readyz/shutdown while shutting down: %q %v", body, err)
	}
	if body, err := get("/livez"); err != nil || body != "ok" {
		t.Errorf("/livez while shutting down: %q %v", body, err)
	}
	if _, err := cs.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err != nil {
		t.Errorf("a request while shutting down: %v", err)
	}
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	if took := time.Since(began); took < delay {
		t.Errorf("stopped %v after Shutdown began, before the %v delay", took, delay)
	}
	if _, err := get("/livez"); err == nil {
		t.Error("/livez answered after Shutdown returned")
	}
}

// TestTerminationFilter: negative durations are refused with
// kube-apiserver's messages; once the server no longer accepts new requests,
// kube-apiserver's answers (recorded from its filters, 1.37): with
// --shutdown-send-retry-after every request but health checks and metrics
// gets 429 "The apiserver is shutting down, please try again later." in
// plain text with Retry-After: 5 and Connection: close; without it, a
// request that still arrives (on a connection open before the listener
// closed) gets a 503 Status "apiserver is shutting down" with
// Retry-After: 1, and so does a new watch; health checks are served.
func TestTerminationFilter(t *testing.T) {
	for cfg, want := range map[*Config]string{
		{ShutdownDelay: -time.Second}:                       "--shutdown-delay-duration can not be negative value",
		{ShutdownWatchTerminationGracePeriod: -time.Second}: "shutdown-watch-termination-grace-period, if provided, can not be a negative value",
	} {
		if _, err := newTermination(*cfg); err == nil || err.Error() != want {
			t.Errorf("%+v: %v, want %q", cfg, err, want)
		}
	}
	served := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "served") })
	for _, sendRetryAfter := range []bool{false, true} {
		term, err := newTermination(Config{ShutdownSendRetryAfter: sendRetryAfter, Log: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		h := term.handler(served)
		do := func(path string) *httptest.ResponseRecorder {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
			return w
		}
		if w := do("/api/v1/namespaces/default/configmaps"); w.Body.String() != "served" {
			t.Fatalf("before shutdown: %d %q", w.Code, w.Body)
		}
		term.notAcceptingNewRequest.fire()
		term.drain()
		for _, path := range []string{"/api/v1/namespaces/default/configmaps", "/api/v1/configmaps?watch=true"} {
			w := do(path)
			if sendRetryAfter {
				if w.Code != http.StatusTooManyRequests || w.Body.String() != "The apiserver is shutting down, please try again later.\n" ||
					w.Header().Get("Retry-After") != "5" || w.Header().Get("Connection") != "close" ||
					w.Header().Get("Content-Type") != "text/plain; charset=utf-8" {
					t.Errorf("send-retry-after, %s: %d %v %q", path, w.Code, w.Header(), w.Body)
				}
				continue
			}
			var st metav1.Status
			if err := json.Unmarshal(w.Body.Bytes(), &st); err != nil || w.Code != http.StatusServiceUnavailable ||
				st.Reason != metav1.StatusReasonServiceUnavailable || st.Message != "apiserver is shutting down" ||
				w.Header().Get("Retry-After") != "1" {
				t.Errorf("%s: %d %v %q", path, w.Code, w.Header(), w.Body)
			}
		}
		for _, path := range []string{"/readyz", "/livez", "/healthz/etcd", "/metrics"} {
			if w := do(path); w.Body.String() != "served" {
				t.Errorf("send-retry-after=%v, %s: %d %q", sendRetryAfter, path, w.Code, w.Body)
			}
		}
	}
}

// TestShutdownDrainsInFlight: a request held in etcd when SIGTERM comes
// is answered in full before the server stops, however long it takes;
// meanwhile /readyz fails its shutdown check, an open watch ends cleanly
// (its body ends, not broken) and new requests are refused: with
// --shutdown-send-retry-after 429 on a new connection while the listener
// stays open until the drain is done, else connection refused at once.
func TestShutdownDrainsInFlight(t *testing.T) {
	for _, sendRetryAfter := range []bool{false, true} {
		t.Run(fmt.Sprintf("send-retry-after=%v", sendRetryAfter), func(t *testing.T) {
			entered, gate := make(chan string, 1), make(chan struct{})
			a, err := Start(Config{DataDir: t.TempDir(), EtcdPrefix: "/registry", EtcdUnsafeNoFsync: true,
				ShutdownSendRetryAfter: sendRetryAfter, Log: slog.New(slog.DiscardHandler),
				WrapStore: func(resource string, s storage.Interface) storage.Interface {
					if resource != "configmaps" {
						return s
					}
					return gatedStore{Interface: s, entered: entered, gate: gate}
				}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { a.Close() })
			rc, cs := adminClient(t, a)
			ctx := context.Background()
			if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "slow"}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			watch, err := cs.CoreV1().RESTClient().Get().AbsPath("/api/v1/namespaces/default/configmaps").Param("watch", "true").Stream(ctx)
			if err != nil {
				t.Fatal(err)
			}
			watchEnd := make(chan error, 1)
			go func() {
				_, err := io.Copy(io.Discard, watch)
				watchEnd <- err
			}()
			type answer struct {
				list *corev1.ConfigMapList
				err  error
			}
			held := make(chan answer, 1)
			go func() {
				list, err := cs.CoreV1().ConfigMaps("slow").List(ctx, metav1.ListOptions{})
				held <- answer{list, err}
			}()
			<-entered

			began := time.Now()
			stopped := make(chan error, 1)
			go func() { stopped <- a.Shutdown() }()
			// A client of its own, HTTP/1.1: a new connection per request
			// while the listener is open, and the Connection header seen.
			tlsConfig, err := rest.TLSConfigFor(rc)
			if err != nil {
				t.Fatal(err)
			}
			fresh := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsConfig, DisableKeepAlives: true}}
			get := func(path string) (*http.Response, string, error) {
				req, _ := http.NewRequest(http.MethodGet, a.URL+path, nil)
				req.Header.Set("Authorization", "Bearer "+rc.BearerToken)
				resp, err := fresh.Do(req)
				if err != nil {
					return nil, "", err
				}
				defer resp.Body.Close()
				body, _ := io.ReadAll(resp.Body)
				return resp, string(body), nil
			}
			select {
			case err := <-watchEnd:
				if err != nil {
					t.Errorf("the watch ended broken: %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the watch did not end")
			}
			if sendRetryAfter {
				if resp, body, err := get("/readyz"); err != nil || resp.StatusCode != http.StatusInternalServerError ||
					!strings.Contains(body, "[-]shutdown failed: reason withheld") {
					t.Errorf("/readyz while draining: %v %q", err, body)
				}
				resp, body, err := get("/api/v1/namespaces/default/configmaps")
				if err != nil || resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "5" || !resp.Close {
					t.Errorf("a request while draining: %v %v %q", err, resp, body)
				}
			} else {
				host := strings.TrimPrefix(a.URL, "https://")
				for {
					c, err := net.Dial("tcp", host)
					if err != nil {
						if !errors.Is(err, syscall.ECONNREFUSED) {
							t.Errorf("a new connection: %v, want connection refused", err)
						}
						break
					}
					c.Close()
					if time.Since(began) > 5*time.Second {
						t.Fatal("still accepting connections 5s after shutdown began")
					}
					time.Sleep(10 * time.Millisecond)
				}
			}
			select {
			case err := <-stopped:
				t.Fatalf("Shutdown returned (%v) with a request in flight", err)
			case <-time.After(500 * time.Millisecond):
			}
			close(gate)
			if ans := <-held; ans.err != nil || ans.list == nil {
				t.Errorf("the request in flight: %v", ans.err)
			}
			if err := <-stopped; err != nil {
				t.Fatal(err)
			}
			if took := time.Since(began); took > 10*time.Second {
				t.Errorf("Shutdown took %v", took)
			}
		})
	}
}

// TestShutdownUnderLoad: two replicas on one etcd and a client of both
// (it dials the first and, refused or seen not ready, the second, as a
// load balancer with a readiness check routes new connections) looping
// GETs, LISTs and creates while watchers follow
// the creates. The first replica, which leads the controllers, is shut down
// (SIGTERM's path): it reports not ready at once and, within the delay,
// its IP leaves the kubernetes Endpoints and the second takes the Lease; it
// stops within the delay + 10 s. No request fails (client-go retries the
// 429s and 503s with Retry-After, as it does by itself), and every watch
// ends cleanly; resumed from its last resourceVersion on the other
// replica, each watcher sees every create once, in order.
func TestShutdownUnderLoad(t *testing.T) {
	for _, mode := range []struct {
		sendRetryAfter bool
		watchGrace     time.Duration
	}{{false, 0}, {true, time.Second}} {
		t.Run(fmt.Sprintf("send-retry-after=%v,watch-grace=%v", mode.sendRetryAfter, mode.watchGrace), func(t *testing.T) {
			shutdownUnderLoad(t, mode.sendRetryAfter, mode.watchGrace)
		})
	}
}

func shutdownUnderLoad(t *testing.T, sendRetryAfter bool, watchGrace time.Duration) {
	const delay = 2 * time.Second
	dirs := []string{t.TempDir(), t.TempDir()}
	etcd := sharedEtcd(t, dirs[0])
	if err := os.CopyFS(filepath.Join(dirs[1], "pki"), os.DirFS(filepath.Join(dirs[0], "pki"))); err != nil {
		t.Fatal(err)
	}
	start := func(i int) *App {
		own := pki.FilesIn(filepath.Join(dirs[i], "pki"))
		a, err := Start(Config{DataDir: dirs[i], EtcdServers: []string{etcd.Endpoint},
			EtcdCAFile: own.CACert, EtcdCertFile: own.EtcdClientCert, EtcdKeyFile: own.EtcdClientKey,
			EtcdPrefix: "/registry", WatchCache: true, ConsistentListFromCache: true, ConsistentGetFromCache: true,
			AdvertiseAddress: fmt.Sprintf("192.0.2.%d", i+1), LeaderElect: true, LeaderElectRetryPeriod: 250 * time.Millisecond,
			ShutdownDelay: delay, ShutdownSendRetryAfter: sendRetryAfter, ShutdownWatchTerminationGracePeriod: watchGrace,
			Log: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { a.Close() })
		return a
	}
	first := start(0)
	waitFor(t, 10*time.Second, "the first replica leads", first.elector.Leading)
	second := start(1)
	_, direct := adminClient(t, first)
	_, viaSecond := adminClient(t, second)
	ctx := context.Background()
	endpoints := func() string {
		ep, err := viaSecond.CoreV1().Endpoints("default").Get(ctx, "kubernetes", metav1.GetOptions{})
		if err != nil || len(ep.Subsets) == 0 {
			return fmt.Sprint(err)
		}
		var ips []string
		for _, a := range ep.Subsets[0].Addresses {
			ips = append(ips, a.IP)
		}
		return strings.Join(ips, ",")
	}
	waitFor(t, 15*time.Second, "both replicas in the kubernetes Endpoints", func() bool { return endpoints() == "192.0.2.1,192.0.2.2" })

	rc, _ := adminClient(t, first)
	rc.QPS = -1
	hosts := []string{strings.TrimPrefix(first.URL, "https://"), strings.TrimPrefix(second.URL, "https://")}
	// firstNotReady is set once the first replica's /readyz has failed: a
	// load balancer sends no new connection to it from then on. Without
	// that, a connection dialled as the listener closes (after the drain)
	// waits in the kernel's accept queue and is reset with it: a create on
	// it fails, and client-go retries no write after a reset. kube-apiserver
	// closes its listener the same way.
	var firstNotReady atomic.Bool
	rc.Dial = func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		var err error
		for i, host := range hosts {
			if i == 0 && firstNotReady.Load() {
				continue
			}
			var c net.Conn
			if c, err = d.DialContext(ctx, network, host); err == nil {
				return c, nil
			}
		}
		return nil, err
	}
	// refused counts the answers client-go retried: 429 and 503.
	var refused atomic.Int64
	rc.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(req)
			if err == nil && (resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable) {
				refused.Add(1)
			}
			return resp, err
		})
	}
	cs := kubernetes.NewForConfigOrDie(rc)
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "load"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ConfigMaps("load").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "fixed"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	list, err := cs.CoreV1().ConfigMaps("load").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	var failures []string
	fail := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		failures = append(failures, fmt.Sprintf(format, args...))
	}
	created := map[int64]bool{}
	var served atomic.Int64
	stop := make(chan struct{})
	var loops sync.WaitGroup
	loop := func(what string, n int, request func(i, j int) error) {
		for i := range n {
			loops.Go(func() {
				for j := 0; ; j++ {
					select {
					case <-stop:
						return
					default:
					}
					if err := request(i, j); err != nil {
						fail("%s: %v", what, err)
					}
					served.Add(1)
				}
			})
		}
	}
	loop("get", 3, func(int, int) error {
		_, err := cs.CoreV1().ConfigMaps("load").Get(ctx, "fixed", metav1.GetOptions{})
		return err
	})
	loop("list", 2, func(int, int) error {
		_, err := cs.CoreV1().ConfigMaps("load").List(ctx, metav1.ListOptions{})
		return err
	})
	loop("create", 2, func(i, j int) error {
		cm, err := cs.CoreV1().ConfigMaps("load").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("w-%d-%d", i, j)}},
			metav1.CreateOptions{})
		if err == nil {
			rv, _ := strconv.ParseInt(cm.ResourceVersion, 10, 64)
			mu.Lock()
			created[rv] = true
			mu.Unlock()
		}
		return err
	})
	// A watcher follows the creates from the list's resourceVersion,
	// re-watching from its last one whenever a watch ends.
	watchCtx, endWatches := context.WithCancel(ctx)
	defer endWatches()
	const watchers = 3
	seen := make([][]int64, watchers)
	var watching sync.WaitGroup
	for w := range watchers {
		watching.Go(func() {
			rv := list.ResourceVersion
			for watchCtx.Err() == nil {
				body, err := cs.CoreV1().RESTClient().Get().AbsPath("/api/v1/namespaces/load/configmaps").SetHeader("Accept", "application/json").
					Param("watch", "true").Param("resourceVersion", rv).Param("allowWatchBookmarks", "true").Stream(watchCtx)
				if err != nil {
					if watchCtx.Err() == nil {
						fail("watch from %s: %v", rv, err)
						time.Sleep(100 * time.Millisecond)
					}
					continue
				}
				dec := json.NewDecoder(body)
				for {
					var ev struct {
						Type   string
						Object metav1.PartialObjectMetadata
					}
					if err := dec.Decode(&ev); err != nil {
						if err != io.EOF && watchCtx.Err() == nil {
							fail("a watch from %s ended broken: %v", rv, err)
						}
						break
					}
					if ev.Type == "ERROR" {
						fail("watch from %s: error event %v", rv, ev.Object)
						break
					}
					rv = ev.Object.ResourceVersion
					if ev.Type == "ADDED" && strings.HasPrefix(ev.Object.Name, "w-") {
						n, _ := strconv.ParseInt(rv, 10, 64)
						mu.Lock()
						seen[w] = append(seen[w], n)
						mu.Unlock()
					}
				}
				body.Close()
			}
		})
	}

	time.Sleep(1500 * time.Millisecond)
	servedBefore := served.Load()
	began := time.Now()
	stopped := make(chan error, 1)
	go func() { stopped <- first.Shutdown() }()
	waitFor(t, time.Second, "the first replica not ready", func() bool {
		body, err := direct.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err != nil && strings.Contains(string(body), "[-]shutdown failed: reason withheld")
	})
	firstNotReady.Store(true)
	waitFor(t, delay, "the second replica leads", second.elector.Leading)
	waitFor(t, delay, "the first replica out of the kubernetes Endpoints", func() bool { return endpoints() == "192.0.2.2" })
	if err := <-stopped; err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	took := time.Since(began)
	if took > delay+10*time.Second {
		t.Errorf("Shutdown took %v, more than the delay %v + 10s", took, delay)
	}
	servedDuring := served.Load() - servedBefore
	time.Sleep(1500 * time.Millisecond)
	close(stop)
	loops.Wait()
	mu.Lock()
	want := len(created)
	mu.Unlock()
	caughtUp := func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, s := range seen {
			if len(s) < want {
				return false
			}
		}
		return true
	}
	deadline := time.Now().Add(15 * time.Second)
	for !caughtUp() && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	endWatches()
	watching.Wait()
	t.Logf("%d requests, %d of them while the first replica shut down (%v), %d answers 429 or 503 retried; %d creates",
		served.Load(), servedDuring, took.Round(time.Millisecond), refused.Load(), want)
	for _, f := range failures {
		t.Error(f)
	}
	if servedDuring == 0 || want == 0 {
		t.Errorf("no load: %d requests during the shutdown, %d creates", servedDuring, want)
	}
	for w, s := range seen {
		for i, rv := range s {
			if !created[rv] || i > 0 && rv <= s[i-1] {
				t.Errorf("watcher %d: event %d at %d, not a create's or out of order", w, i, rv)
				break
			}
		}
		if len(s) != want {
			t.Errorf("watcher %d saw %d creates of %d", w, len(s), want)
		}
	}
}

// waitFor polls cond until it holds, failing the test after timeout.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
