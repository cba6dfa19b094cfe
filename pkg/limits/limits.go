// Package limits bounds what requests may take, as kube-apiserver's
// filters do: a deadline for every request but watches
// (--request-timeout, answered 504 Timeout when it passes), and caps on
// the requests served at once (--max-requests-inflight,
// --max-mutating-requests-inflight), the excess answered at once with 429
// and Retry-After. Watches, health checks and system:masters are never
// limited, so that neither the cluster's own checks nor its
// administrators are starved.
package limits

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/watchcache/watchcache/pkg/apistatus"
	"github.com/watchcache/watchcache/pkg/auth/user"
	"github.com/watchcache/watchcache/pkg/requestinfo"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// longRunning reports whether a request is not bounded: a watch.
func longRunning(r *http.Request) bool { return requestinfo.From(r).Verb == "watch" }

// isHealthCheck reports whether a request is /healthz, /livez or /readyz
// (or below them).
func isHealthCheck(r *http.Request) bool {
	for _, p := range []string{"/healthz", "/livez", "/readyz"} {
		if r.URL.Path == p || strings.HasPrefix(r.URL.Path, p+"/") {
			return true
		}
	}
	return false
}

// mutating are the verbs --max-mutating-requests-inflight counts.
var mutating = map[string]bool{"create": true, "update": true, "patch": true, "delete": true, "deletecollection": true, "post": true,
	"put": true}

// WithMaxInFlight serves at most maxReadOnly read-only and maxMutating
// mutating requests at once (0: no cap) and answers the excess 429 with
// Retry-After: 1, as kube-apiserver's max-in-flight filter. The user must
// be in the request's context (it runs inside authentication). The server
// uses it when API Priority and Fairness (package flowcontrol) is off.
func WithMaxInFlight(next http.Handler, maxReadOnly, maxMutating int) http.Handler {
	readOnly, writes := semaphore(maxReadOnly), semaphore(maxMutating)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if longRunning(r) || isHealthCheck(r) {
			next.ServeHTTP(w, r)
			return
		}
		if u := user.From(r.Context()); u != nil && u.InGroup("system:masters") {
			next.ServeHTTP(w, r)
			return
		}
		sem := readOnly
		if mutating[requestinfo.From(r).Verb] {
			sem = writes
		}
		if sem != nil {
			select {
			case sem <- struct{}{}:
				defer func() { <-sem }()
			default:
				apistatus.Write(w, apierrors.NewTooManyRequests("Too many requests, please try again later.", 1), apistatus.Subject{})
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// semaphore is a channel of n slots; nil for no cap.
func semaphore(n int) chan struct{} {
	if n <= 0 {
		return nil
	}
	return make(chan struct{}, n)
}

// WithRequestTimeout bounds every request but watches to timeout (or to
// the shorter timeout its ?timeout= asks): its context ends then, and if
// it has not started answering, the client gets kube-apiserver's 504
// Timeout Status at once while the handler finishes in the background
// (whatever it still writes is dropped). An answer that has started is
// aborted (http.ErrAbortHandler: net/http closes an HTTP/1.1 connection
// without the final chunk, resets an HTTP/2 stream) once the write under
// way, if any, returns, as kube-apiserver's timeout filter does: a list
// still being sent at the deadline, from etcd or from the cache, however
// much of it was sent, reaches the client as a broken transfer, never as
// an answer that ends cleanly but incomplete (kube-apiserver 1.37,
// recorded: a 27 MB list read at 1 MB/s with ?timeout=2s gets all its
// bytes, then a reset). The handler goes on in the background until it
// sees its context end; what it writes is dropped. A handler that
// returned by the deadline has answered whole. 0: no bound.
//
// A ?timeout= that is not a duration is a 400, as kube-apiserver's
// (watches ignore it).
func WithRequestTimeout(next http.Handler, timeout time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if longRunning(r) {
			next.ServeHTTP(w, r)
			return
		}
		d := timeout
		if value := r.URL.Query().Get("timeout"); value != "" {
			asked, err := time.ParseDuration(value)
			if err != nil {
				apistatus.Write(w, apistatus.BadRequest("invalid timeout specified in the request URL - %v", err), apistatus.Subject{})
				return
			}
			if asked > 0 && asked < d {
				d = asked
			}
		}
		if d <= 0 {
			next.ServeHTTP(w, r)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), d)
		defer cancel()
		tw := &timeoutWriter{w: w, h: make(http.Header), ctx: ctx}
		done := make(chan struct{})
		panicked := make(chan any, 1)
		go func() {
			defer close(done)
			defer func() {
				if p := recover(); p != nil {
					panicked <- p
				}
			}()
			next.ServeHTTP(tw, r.WithContext(ctx))
		}()
		select {
		case <-done:
		case <-ctx.Done():
			if started, finished := tw.timeOut(done); !finished {
				if started {
					panic(http.ErrAbortHandler)
				}
				err := apierrors.NewTimeoutError(fmt.Sprintf("request did not complete within requested timeout - %v", ctx.Err()), 0)
				apistatus.Write(w, err, apistatus.Subject{})
				return
			}
		}
		// The handler returned: its answer is whole, or it aborted it.
		select {
		case p := <-panicked:
			panic(p)
		default:
		}
	})
}

// timeoutWriter passes a handler's response on once it starts writing,
// until the deadline: then everything it writes is dropped, and the filter
// answers 504 or aborts the answer begun.
type timeoutWriter struct {
	w   http.ResponseWriter
	h   http.Header
	ctx context.Context // the request's, with its deadline

	mu       sync.Mutex
	started  bool // the handler wrote its header: it answers
	timedOut bool // the 504 was (or is being) written: drop the rest
}

func (t *timeoutWriter) Header() http.Header { return t.h }

// timeOut marks the response as timed out, so that the handler's writes
// from now on are dropped, unless the handler has returned (done is
// closed) after starting its answer: then it was written whole, and
// finished is true. It waits for a write under way to return. started
// says whether the handler had started answering.
func (t *timeoutWriter) timeOut(done <-chan struct{}) (started, finished bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.started {
		select {
		case <-done:
			return true, true
		default:
		}
	}
	t.timedOut = true
	return t.started, false
}

func (t *timeoutWriter) WriteHeader(code int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ctx.Err() != nil && !t.started {
		t.timedOut = true // too late to start: the 504 answers
	}
	if t.timedOut || t.started {
		return
	}
	t.started = true
	for k, v := range t.h {
		t.w.Header()[k] = v
	}
	t.w.WriteHeader(code)
}

func (t *timeoutWriter) Write(p []byte) (int, error) {
	t.WriteHeader(http.StatusOK)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.timedOut {
		return 0, http.ErrHandlerTimeout
	}
	return t.w.Write(p)
}

// Flush passes a flush on once the handler answers.
func (t *timeoutWriter) Flush() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if f, ok := t.w.(http.Flusher); ok && t.started && !t.timedOut {
		f.Flush()
	}
}
