// Graceful termination, kube-apiserver's sequence (its genericapiserver's
// RunWithContext and filters, 1.37), so that a replica leaves a load-balanced
// group without failed requests:
//
//  1. ShutdownInitiated (SIGTERM or SIGINT): /readyz fails its "shutdown"
//     check; the pre-shutdown hooks run: this replica's masterlease is
//     deleted (its IP leaves the kubernetes Endpoints) and, if it leads, the
//     controllers stop and their Lease is released.
//  2. AfterShutdownDelayDuration (--shutdown-delay-duration later), once the
//     hooks are done: NotAcceptingNewRequest. Watches end cleanly (spread
//     over --shutdown-watch-termination-grace-period, if set), so their
//     clients re-watch elsewhere from their last resourceVersion. New
//     requests are refused: with --shutdown-send-retry-after, 429 with
//     Retry-After and Connection: close while the listener stays open until
//     the drain is done; without it the listener closes now (and HTTP/2
//     clients get GOAWAY) and a request still arriving on an open
//     connection gets 503 with Retry-After.
//  3. InFlightRequestsDrained: every request but watches in flight has been
//     answered (bounded by --request-timeout) and the watches have ended.
//  4. HTTPServerStoppedListening (with --shutdown-send-retry-after, now;
//     HTTP/2 GOAWAY sent); connections still open 2 s after the drain are
//     closed; then the caches, the etcd client and the embedded etcd.

package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/watchcache/watchcache/pkg/apistatus"
	"github.com/watchcache/watchcache/pkg/requestinfo"
	"golang.org/x/time/rate"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/waitgroup"
)

// signal is a lifecycle event of the termination: fired once, by name.
type signal struct {
	name string
	context.Context
	fire context.CancelFunc
}

func newSignal(name string) *signal {
	ctx, fire := context.WithCancel(context.Background())
	return &signal{name: name, Context: ctx, fire: fire}
}

func (s *signal) fired() bool { return s.Err() != nil }

// termination is the server's graceful termination: its lifecycle signals,
// the requests and watches in flight, and the filter that refuses new ones
// once the server no longer accepts them.
type termination struct {
	delay, watchGrace, requestTimeout time.Duration
	sendRetryAfter                    bool
	log                               *slog.Logger
	// began is when Shutdown began.
	began time.Time

	shutdownInitiated, afterShutdownDelay, notAcceptingNewRequest, inFlightRequestsDrained,
	httpServerStoppedListening *signal

	// requests are the requests in flight that are not watches; watches
	// the watches, whose ends Wait spreads over the grace period.
	requests waitgroup.SafeWaitGroup
	watches  waitgroup.RateLimitedSafeWaitGroup
}

// httpShutdownTimeout is how long the HTTP server's Shutdown may wait for
// connections to go idle once the requests have drained (kube-apiserver's
// with --shutdown-send-retry-after: net/http waits 1 s for the peer to
// answer a GOAWAY); connections still open then are closed.
const httpShutdownTimeout = 2 * time.Second

// newTermination checks cfg's shutdown settings, with kube-apiserver's
// messages.
func newTermination(cfg Config) (*termination, error) {
	if cfg.ShutdownDelay < 0 {
		return nil, errors.New("--shutdown-delay-duration can not be negative value")
	}
	if cfg.ShutdownWatchTerminationGracePeriod < 0 {
		return nil, errors.New("shutdown-watch-termination-grace-period, if provided, can not be a negative value")
	}
	requestTimeout := cfg.RequestTimeout
	if requestTimeout <= 0 {
		requestTimeout = time.Minute
	}
	return &termination{delay: cfg.ShutdownDelay, watchGrace: cfg.ShutdownWatchTerminationGracePeriod, requestTimeout: requestTimeout,
		sendRetryAfter: cfg.ShutdownSendRetryAfter, log: cfg.Log,
		shutdownInitiated:          newSignal("ShutdownInitiated"),
		afterShutdownDelay:         newSignal("AfterShutdownDelayDuration"),
		notAcceptingNewRequest:     newSignal("NotAcceptingNewRequest"),
		inFlightRequestsDrained:    newSignal("InFlightRequestsDrained"),
		httpServerStoppedListening: newSignal("HTTPServerStoppedListening"),
	}, nil
}

// signal fires s and logs it with the time since Shutdown began.
func (t *termination) signal(s *signal) {
	s.fire()
	t.log.Info("graceful termination", "event", s.name, "after", time.Since(t.began).Round(time.Millisecond))
}

// readyCheck is /readyz's "shutdown" check: failing from ShutdownInitiated.
func (t *termination) readyCheck(context.Context) error {
	if t.shutdownInitiated.fired() {
		return errors.New("process is shutting down")
	}
	return nil
}

// exemptFromRetryAfter reports whether a request is served even once the
// server no longer accepts new requests: health checks and metrics
// scraping, kube-apiserver's list. (kube-apiserver also exempts its own
// loopback client by its user agent; watchcache has none.)
func exemptFromRetryAfter(r *http.Request) bool {
	for _, prefix := range []string{"/readyz", "/livez", "/healthz", "/metrics"} {
		if strings.HasPrefix(r.URL.Path, prefix) {
			return true
		}
	}
	return false
}

// handler counts the requests in flight and, from NotAcceptingNewRequest,
// refuses new ones as kube-apiserver's WithRetryAfter, WithWaitGroup and
// WithWatchTerminationDuringShutdown filters do, and ends the watches.
func (t *termination) handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		exempt := exemptFromRetryAfter(r)
		if t.sendRetryAfter && t.notAcceptingNewRequest.fired() && !exempt {
			// kube-apiserver's answer, plain text. On HTTP/2, Go's server
			// takes Connection: close for a GOAWAY, so the client's next
			// request opens a connection (to another replica).
			w.Header().Set("Connection", "close")
			w.Header().Set("Retry-After", "5")
			http.Error(w, "The apiserver is shutting down, please try again later.", http.StatusTooManyRequests)
			return
		}
		if requestinfo.From(r).Verb == "watch" {
			if t.notAcceptingNewRequest.fired() || t.watches.Add(1) != nil {
				writeShuttingDown(w)
				return
			}
			defer t.watches.Done() // after the handler: spreads the watches' ends once Wait began
			// Deliberately unlike kube-apiserver without a grace period,
			// which leaves watches open until its HTTP server's shutdown
			// timeout and then cuts them: here every watch ends cleanly.
			ctx, cancel := context.WithCancel(r.Context())
			defer cancel()
			defer context.AfterFunc(t.notAcceptingNewRequest, cancel)()
			next.ServeHTTP(w, r.WithContext(ctx))
			return
		}
		if t.requests.Add(1) != nil {
			if exempt {
				next.ServeHTTP(w, r)
				return
			}
			writeShuttingDown(w)
			return
		}
		defer t.requests.Done()
		next.ServeHTTP(w, r)
	})
}

// writeShuttingDown answers a request that arrived once the server no
// longer accepts any, on a connection still open, as kube-apiserver's
// WithWaitGroup does: 503 "apiserver is shutting down", Retry-After: 1.
func writeShuttingDown(w http.ResponseWriter) {
	w.Header().Set("Retry-After", "1")
	apistatus.Write(w, apierrors.NewServiceUnavailable("apiserver is shutting down"), apistatus.Subject{})
}

// drain waits until the requests in flight have been answered (at most
// the request timeout) and the watches have ended: with a grace period,
// their ends spread over it, at least 200 a second (kube-apiserver's
// floor); without, at once.
func (t *termination) drain() {
	var wg sync.WaitGroup
	wg.Go(func() {
		drained := make(chan struct{})
		go func() {
			t.requests.Wait()
			close(drained)
		}()
		select {
		case <-drained:
		case <-time.After(t.requestTimeout):
			t.log.Warn("graceful termination: requests still in flight after the request timeout", "timeout", t.requestTimeout)
		}
	})
	wg.Go(func() {
		before, after, err := t.watches.Wait(func(count int) (waitgroup.RateLimiter, context.Context, context.CancelFunc) {
			if t.watchGrace <= 0 {
				ctx, cancel := context.WithTimeout(context.Background(), httpShutdownTimeout)
				return rate.NewLimiter(rate.Inf, 1), ctx, cancel
			}
			ctx, cancel := context.WithTimeout(context.Background(), t.watchGrace)
			return rate.NewLimiter(rate.Limit(max(float64(count)/t.watchGrace.Seconds(), 200)), 1), ctx, cancel
		})
		t.log.Info("graceful termination: watches ended", "active", before, "remaining", after, "err", err)
	})
	wg.Wait()
}

// stoppedListening is a listener that fires HTTPServerStoppedListening
// once closed.
type stoppedListening struct {
	net.Listener
	t *termination
}

func (l stoppedListening) Close() error {
	err := l.Listener.Close()
	if l.t.shutdownInitiated.fired() {
		l.t.signal(l.t.httpServerStoppedListening)
	}
	return err
}

// Shutdown stops the server gracefully, kube-apiserver's sequence (see
// the top of this file), and then closes it.
func (a *App) Shutdown() error {
	t := a.term
	t.began = time.Now()
	t.signal(t.shutdownInitiated)
	hooks := make(chan struct{})
	go func() {
		defer close(hooks)
		a.preShutdownHooks()
	}()
	if t.delay > 0 {
		t.log.Info("graceful termination: /readyz fails, serving on", "delay", t.delay)
		time.Sleep(t.delay)
	}
	t.signal(t.afterShutdownDelay)
	<-hooks
	t.signal(t.notAcceptingNewRequest)

	stopCtx, stop := context.WithCancel(context.Background())
	defer stop()
	httpStopped := make(chan error, 1)
	stopHTTP := func() { go func() { httpStopped <- a.http.Shutdown(stopCtx) }() }
	if !t.sendRetryAfter {
		stopHTTP()
	}
	t.drain()
	t.signal(t.inFlightRequestsDrained)
	if t.sendRetryAfter {
		stopHTTP()
	}
	timer := time.AfterFunc(httpShutdownTimeout, stop)
	defer timer.Stop()
	if err := <-httpStopped; err != nil {
		t.log.Warn("graceful termination: closing connections still active", "err", err)
		a.http.Close()
	}
	err := a.Close()
	t.log.Info("graceful termination: done", "after", time.Since(t.began).Round(time.Millisecond))
	return err
}

// preShutdownHooks are kube-apiserver's pre-shutdown hooks' counterparts,
// run as shutdown begins: this replica's masterlease is deleted, so that its
// IP leaves the kubernetes Endpoints at once (kube-apiserver's waits at most
// twice the endpoint interval), and the controllers stop and release their
// Lease, so that another replica takes them over at once rather than once
// the Lease expires.
func (a *App) preShutdownHooks() {
	var wg sync.WaitGroup
	wait := func(stop context.CancelFunc, done <-chan struct{}, what string) {
		if stop == nil {
			return
		}
		stop()
		wg.Go(func() {
			select {
			case <-done:
			case <-time.After(2 * endpointInterval):
				a.log.Warn(fmt.Sprintf("graceful termination: %s did not end in %v", what, 2*endpointInterval))
			}
		})
	}
	wait(a.stopEndpoints, a.endpointsDone, "removing this server from the kubernetes Endpoints")
	wait(a.stopElection, a.electionDone, "stopping the controllers and releasing their Lease")
	wg.Wait()
}
