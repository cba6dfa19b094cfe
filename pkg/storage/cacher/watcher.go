package cacher

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/storage"
)

// Watcher buffers: a watcher selecting by an indexed field (a kubelet
// watching its node's pods) sees few events, others may see every event of
// the resource; bursts beyond the buffer cost the dispatcher its blocking
// budget, and then the watcher.
const (
	indexedWatcherBuffer = 10
	watcherBuffer        = 100
)

// defaultBookmarkInterval is how often a watcher that allows bookmarks
// gets one (kube-apiserver: about a minute), and bookmarkBeforeDeadline how
// long before the watch's deadline it gets a last one, so that the client
// resumes from a recent revision.
const (
	defaultBookmarkInterval = time.Minute
	bookmarkBeforeDeadline  = 2 * time.Second
)

// cacheWatcher is one client's watch served from the cache. The
// dispatcher pushes events into input (under Cacher.watchMu); the
// watcher's goroutine first sends the initial events, then forwards input
// to result.
type cacheWatcher struct {
	c      *Cacher
	scope  string
	opts   storage.ListOptions
	filter bool // opts has a selector
	// indexValue is the value of the indexed field the selector requires
	// (when indexed).
	indexed    bool
	indexValue string
	bookmarks  bool

	input  chan storage.Event
	result chan storage.Event

	// Guarded by Cacher.watchMu.
	closed       bool
	nextBookmark time.Time
	deadline     time.Time // zero: none

	cancel   context.CancelFunc
	done     chan struct{}
	stopOnce sync.Once
}

// ResultChan implements storage.Watcher.
func (w *cacheWatcher) ResultChan() <-chan storage.Event { return w.result }

// Stop implements storage.Watcher: it deregisters the watcher and waits for
// its goroutine to end.
func (w *cacheWatcher) Stop() {
	w.stopOnce.Do(func() {
		w.cancel()
		w.c.watchMu.Lock()
		w.c.removeWatcherLocked(w)
		w.c.watchMu.Unlock()
	})
	<-w.done
}

// matches reports whether obj is in the watcher's scope and selectors.
func (w *cacheWatcher) matches(obj *object.Object) bool {
	return strings.HasPrefix(obj.Key(), w.scope) && (!w.filter || w.opts.Matches(obj))
}

// convert turns a log event into what this watcher sees, if anything: an
// object entering its selection is ADDED, one leaving it DELETED with its
// last state.
func (w *cacheWatcher) convert(e *logEvent, shared *storage.SharedEncoding) (storage.Event, bool) {
	ev := storage.Event{ResourceVersion: e.rv, Shared: shared}
	if e.typ == storage.EventDeleted {
		ev.Type, ev.Object = storage.EventDeleted, e.obj
		return ev, w.matches(e.obj)
	}
	cur := w.matches(e.obj)
	old := e.prev != nil && w.matches(e.prev)
	switch {
	case cur && old:
		ev.Type, ev.Object = storage.EventModified, e.obj
	case cur:
		ev.Type, ev.Object = storage.EventAdded, e.obj
	case old:
		ev.Type, ev.Object = storage.EventDeleted, e.prev
	default:
		return ev, false
	}
	return ev, true
}

// run sends the initial events (the state at the start, then the log's
// events after it), then forwards the dispatched events, until the watch
// ends: Stop, the client's context, or the dispatcher closing input.
func (w *cacheWatcher) run(ctx context.Context, initial []*object.Object, initialEnd bool, startRV uint64, backlog []*logEvent) {
	defer close(w.done)
	defer close(w.result)
	defer func() { // the client may be gone without calling Stop
		w.c.watchMu.Lock()
		w.c.removeWatcherLocked(w)
		w.c.watchMu.Unlock()
	}()
	send := func(ev storage.Event) bool {
		select {
		case w.result <- ev:
			return true
		case <-ctx.Done():
			return false
		}
	}
	for _, obj := range initial {
		if !send(storage.Event{Type: storage.EventAdded, Object: obj, ResourceVersion: obj.ResourceVersion()}) {
			return
		}
	}
	if initialEnd && !send(storage.Event{Type: storage.EventBookmark, ResourceVersion: startRV, InitialEventsEnd: true}) {
		return
	}
	for _, e := range backlog {
		if ev, ok := w.convert(e, nil); ok && !send(ev) {
			return
		}
	}
	for {
		select {
		case ev, ok := <-w.input:
			if !ok || !send(ev) {
				return
			}
		case <-ctx.Done():
			return
		}
	}
}
