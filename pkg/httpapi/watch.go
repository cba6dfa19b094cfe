// Watch: a watch request's stream of events, flushed when the watcher has
// nothing queued, ended by its timeout or the client.

package httpapi

import (
	"context"
	"math/rand/v2"
	"net/http"
	"runtime"
	"time"

	"github.com/watchcache/watchcache/pkg/apistatus"
	"github.com/watchcache/watchcache/pkg/encoding"
	"github.com/watchcache/watchcache/pkg/storage"
)

// watch streams events as newline-separated JSON, flushed whenever the
// watcher has nothing more queued. The stream ends cleanly (the client
// re-watches from its last resourceVersion) when the timeout passes, the
// client goes away or the server shuts down.
func (s *Server) watch(w http.ResponseWriter, r *http.Request, req *request, store storage.Interface) {
	p, aerr := parseListParams(r.URL.Query(), req.res, s.sharding)
	if aerr != nil {
		apistatus.Write(w, aerr, req.res.Subject(""))
		return
	}
	opts := p.opts
	if req.name != "" {
		opts = withNameSelector(opts, req.name)
	}
	timeout := time.Duration(p.timeoutSeconds) * time.Second
	if timeout == 0 {
		timeout = s.minWatch + time.Duration(rand.Int64N(int64(s.minWatch)))
	}
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	watcher, err := store.Watch(ctx, req.scope(), opts)
	if err != nil {
		apistatus.Write(w, err, req.res.Subject(req.name))
		return
	}
	defer watcher.Stop()
	enc := encoding.NewEventEncoder(req.res, req.format)
	flusher, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", enc.ContentType())
	w.WriteHeader(http.StatusOK)
	if flusher != nil {
		flusher.Flush()
	}
	s.metrics.watchers.WithLabelValues(req.res.Group, req.res.Plural).Inc()
	defer s.metrics.watchers.WithLabelValues(req.res.Group, req.res.Plural).Dec()
	events := watcher.ResultChan()
	initialized := watchInitialized(r.Context())
	defer initialized()
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				return
			}
			line, err := enc.Line(ev)
			if err != nil {
				// An object that does not encode: the stream cannot go
				// on without it; the client re-watches from its last
				// event and meets it again in a list's answer.
				if s.log != nil {
					s.log.Error("watch event failed to encode; ending the watch", "resource", req.res.String(), "err", err)
				}
				return
			}
			if _, err := w.Write(line); err != nil {
				return // the client went away
			}
			if ev.Type == storage.EventError {
				return
			}
			if drained(events) {
				if flusher != nil {
					flusher.Flush()
				}
				initialized()
			}
		case <-ctx.Done():
			return
		}
	}
}

type watchInitializedKey struct{}

// WithWatchInitialized returns ctx carrying done, which a watch calls once
// it has written the events it had at its start (its initial events: the
// first time its queue drains) and again when it ends: the filter that
// counts its initialization as work (package flowcontrol) releases its
// seats then. done must be safe to call more than once.
func WithWatchInitialized(ctx context.Context, done func()) context.Context {
	return context.WithValue(ctx, watchInitializedKey{}, done)
}

// watchInitialized is ctx's WithWatchInitialized function, or one that does
// nothing.
func watchInitialized(ctx context.Context) func() {
	if done, ok := ctx.Value(watchInitializedKey{}).(func()); ok {
		return done
	}
	return func() {}
}

// drained reports whether a watch has no event waiting. If none is, it
// first yields the processor once: under a burst, the dispatcher queues more
// events meanwhile and one write then carries several of them, instead of a
// system call per event per watcher; when idle, the yield returns at once.
func drained(events <-chan storage.Event) bool {
	if len(events) > 0 {
		return false
	}
	runtime.Gosched()
	return len(events) == 0
}
