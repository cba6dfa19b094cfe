package limits

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/watchcache/watchcache/pkg/auth/user"
	"github.com/watchcache/watchcache/pkg/requestinfo"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// serve runs a request through h as the pipeline would: with its request
// info and, if given, a user.
func serve(h http.Handler, method, path string, u *user.Info) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, path, nil)
	if u != nil {
		r = r.WithContext(user.WithUser(r.Context(), u))
	}
	w := httptest.NewRecorder()
	requestinfo.WithRequestInfo(h).ServeHTTP(w, r)
	return w
}

func status(t *testing.T, w *httptest.ResponseRecorder) metav1.Status {
	var s metav1.Status
	if err := json.Unmarshal(w.Body.Bytes(), &s); err != nil {
		t.Fatalf("not a Status: %v: %s", err, w.Body)
	}
	return s
}

// A full cap answers the excess 429 with Retry-After at once; watches,
// health checks, system:masters and the other kind of request are not
// held back.
func TestMaxInFlight(t *testing.T) {
	release := make(chan struct{})
	var started sync.WaitGroup
	h := WithMaxInFlight(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Hold") != "" {
			started.Done()
			<-release
		}
		w.WriteHeader(http.StatusOK)
	}), 1, 1)
	alice := &user.Info{Name: "alice"}
	started.Add(2)
	var wg sync.WaitGroup
	for _, method := range []string{http.MethodGet, http.MethodPost} {
		wg.Go(func() {
			r := httptest.NewRequest(method, "/api/v1/namespaces/a/configmaps", nil)
			r.Header.Set("X-Hold", "1")
			requestinfo.WithRequestInfo(h).ServeHTTP(httptest.NewRecorder(), r.WithContext(user.WithUser(r.Context(), alice)))
		})
	}
	started.Wait() // one read and one write hold both caps
	for _, method := range []string{http.MethodGet, http.MethodPost} {
		w := serve(h, method, "/api/v1/namespaces/a/configmaps", alice)
		if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != "1" || status(t, w).Reason != metav1.StatusReasonTooManyRequests {
			t.Errorf("%s over the cap: %d %v %s", method, w.Code, w.Header(), w.Body)
		}
	}
	for _, tc := range []struct {
		path string
		u    *user.Info
	}{
		{"/readyz", alice},
		{"/healthz", nil},
		{"/api/v1/namespaces/a/configmaps?watch=true", alice},
		{"/api/v1/namespaces/a/configmaps", &user.Info{Name: "admin", Groups: []string{"system:masters"}}},
	} {
		if w := serve(h, http.MethodGet, tc.path, tc.u); w.Code != http.StatusOK {
			t.Errorf("%s (%v) with the caps full: %d", tc.path, tc.u, w.Code)
		}
	}
	close(release)
	wg.Wait()
	if w := serve(h, http.MethodGet, "/api/v1/namespaces/a/configmaps", alice); w.Code != http.StatusOK {
		t.Errorf("after the others finished: %d", w.Code)
	}
}

// A request past its deadline is answered 504 Timeout at once, with its
// context ended; a shorter ?timeout= is honored; watches are not bounded.
func TestRequestTimeout(t *testing.T) {
	ended := make(chan error, 1)
	h := WithRequestTimeout(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
			ended <- r.Context().Err()
			w.Write([]byte("late")) // dropped
		case <-time.After(2 * time.Second):
			w.WriteHeader(http.StatusOK)
		}
	}), time.Second)
	start := time.Now()
	w := serve(h, http.MethodPost, "/api/v1/namespaces/a/configmaps?timeout=100ms", nil)
	took := time.Since(start)
	if s := status(t, w); w.Code != http.StatusGatewayTimeout || s.Reason != metav1.StatusReasonTimeout || took > time.Second {
		t.Errorf("a request past ?timeout=100ms: %d %+v after %v", w.Code, s, took)
	}
	if err := <-ended; err == nil {
		t.Error("the handler's context did not end")
	}
	if w := serve(h, http.MethodGet, "/api/v1/namespaces/a/configmaps?watch=true", nil); w.Code != http.StatusOK {
		t.Errorf("a watch: %d, want it unbounded", w.Code)
	}
	// A handler that returns as soon as its deadline passes, its answer
	// dropped, leaves the 504 to the filter (never an empty 200), whichever
	// of the two sees the deadline first.
	quick := WithRequestTimeout(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
		w.WriteHeader(http.StatusInternalServerError) // dropped
	}), 10*time.Millisecond)
	for range 50 {
		if w := serve(quick, http.MethodPut, "/api/v1/namespaces/a/configmaps/b", nil); w.Code != http.StatusGatewayTimeout {
			t.Fatalf("a handler that returned at its deadline: %d %q, want 504", w.Code, w.Body)
		}
	}
}

// TestRequestTimeoutAbortsAnAnswerBegun: an answer still being written at
// the deadline by a handler that does not look at its context (a list from
// the cache to a slow client) is aborted at the deadline, as kube-apiserver
// does: the client sees a broken transfer, not a clean end.
func TestRequestTimeoutAbortsAnAnswerBegun(t *testing.T) {
	stopped := make(chan error, 1)
	h := WithRequestTimeout(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"kind":"PodList","items":[`))
		for range 500 { // 5 s, then a clean end
			w.(http.Flusher).Flush()
			time.Sleep(10 * time.Millisecond)
			if _, err := w.Write([]byte(`{},`)); err != nil {
				stopped <- err
				return
			}
		}
		w.Write([]byte(`{}]}`))
		stopped <- nil
	}), 300*time.Millisecond)
	server := httptest.NewServer(requestinfo.WithRequestInfo(h))
	defer server.Close()
	began := time.Now()
	resp, err := http.Get(server.URL + "/api/v1/pods")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if took := time.Since(began); resp.StatusCode != http.StatusOK || err == nil || took > 4*time.Second {
		t.Fatalf("status %d, %d bytes read with error %v after %v; want 200 and a failed read at the deadline", resp.StatusCode, len(body), err, took)
	}
	if err := <-stopped; !errors.Is(err, http.ErrHandlerTimeout) {
		t.Errorf("the handler's write after the deadline: %v, want http.ErrHandlerTimeout", err)
	}
}

// TestRequestTimeoutKeepsAnAbort: a handler that started answering, then
// saw its deadline pass and aborted its answer (http.ErrAbortHandler, as
// a list cut midway does), reaches the client as a broken transfer, not
// as a 200 whose body ends cleanly but incomplete.
func TestRequestTimeoutKeepsAnAbort(t *testing.T) {
	h := WithRequestTimeout(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		w.Write([]byte(`{"kind":"PodList","items":[`))
		w.(http.Flusher).Flush()
		<-r.Context().Done() // the deadline cuts the list's reading
		panic(http.ErrAbortHandler)
	}), 200*time.Millisecond)
	server := httptest.NewServer(requestinfo.WithRequestInfo(h))
	defer server.Close()
	resp, err := http.Get(server.URL + "/api/v1/pods")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || err == nil {
		t.Fatalf("status %d, body %q read with error %v; want 200 and a failed read", resp.StatusCode, body, err)
	}
}
