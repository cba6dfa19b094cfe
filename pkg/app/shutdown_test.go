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
	"strings"
	"syscall"
	"testing"
	"time"

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

// TestTerminationFilter: once the server no longer accepts new requests,
// kube-apiserver's answers (recorded from its filters, 1.37): with
// --shutdown-send-retry-after every request but health checks and metrics
// gets 429 "The apiserver is shutting down, please try again later." in
// plain text with Retry-After: 5 and Connection: close; without it, a
// request that still arrives (on a connection open before the listener
// closed) gets a 503 Status "apiserver is shutting down" with
// Retry-After: 1, and so does a new watch; health checks are served.
func TestTerminationFilter(t *testing.T) {
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
