// One watcher: its buffer (sized by the recent event rate), bookmark
// interval, selectors, the conversion of log events into what it sees, and
// its initial events.

package cacher

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/storage"
)

// Watcher buffers hold about one second of the resource's events (the
// rate seen in the event log over the last second), so that a client that
// briefly falls behind catches up without costing the dispatcher its
// blocking budget: at least minWatcherBuffer, at most maxWatcherBuffer. A
// watcher selecting by name or by an indexed field (a kubelet watching its
// node's pods) sees a small share of the events and gets
// indexedWatcherBuffer.
const (
	minWatcherBuffer     = 100
	maxWatcherBuffer     = 1000
	indexedWatcherBuffer = 10
)

// watcherBufferSize applies the heuristic above to the recent event rate.
func watcherBufferSize(indexed bool, eventsLastSecond int) int {
	if indexed {
		return indexedWatcherBuffer
	}
	return min(max(eventsLastSecond, minWatcherBuffer), maxWatcherBuffer)
}

// defaultBookmarkInterval is how often a watcher that allows bookmarks
// gets one (kube-apiserver: about a minute), and bookmarkBeforeDeadline how
// long before the watch's deadline it gets a last one, so that the client
// resumes from a recent revision.
const (
	defaultBookmarkInterval = time.Minute
	bookmarkBeforeDeadline  = 2 * time.Second
)

// maxPending bounds the events queued for a watcher that is still
// sending its initial events; beyond it the watcher is closed like a slow
// one.
const maxPending = 10000

// cacheWatcher is one client's watch served from the cache. A goroutine
// first sends the initial events (the state at the start, then the log's
// events after it) into result, while the dispatcher queues newer events
// in pending; once pending is drained the watcher is live and the
// dispatcher sends into result directly (no forwarding goroutine).
//
// Ownership of result: before live, only the initial goroutine sends on
// it and closes it; once live, only holders of Cacher.watchMu do.
type cacheWatcher struct {
	c      *Cacher
	scope  string
	opts   storage.ListOptions
	filter bool // opts has a selector
	// indexed says the dispatcher files the watcher under indexValue: the
	// name the selector requires (byName), or the value of the indexed
	// field it requires (see Cacher.indexWatcher).
	indexed    bool
	byName     bool
	indexValue string
	bookmarks  bool

	result chan storage.Event

	// Guarded by Cacher.watchMu.
	live         bool
	pending      []storage.Event
	closed       bool
	nextBookmark time.Time
	deadline     time.Time // zero: none

	cancel   context.CancelFunc
	done     chan struct{} // the initial goroutine has ended
	stopOnce sync.Once
}

// ResultChan implements storage.Watcher.
func (w *cacheWatcher) ResultChan() <-chan storage.Event { return w.result }

// Stop implements storage.Watcher: it deregisters the watcher, which ends
// its channel, and waits for its initial goroutine.
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

// sendInitial sends the initial events, then what was dispatched
// meanwhile, and makes the watcher live. If the watch ends first (Stop,
// the client's context, termination) it closes result itself.
func (w *cacheWatcher) sendInitial(ctx context.Context, initial []*object.Object, initialEnd bool, startRV uint64, backlog []*logEvent) {
	defer close(w.done)
	send := func(ev storage.Event) bool {
		select {
		case w.result <- ev:
			return true
		case <-ctx.Done():
			return false
		}
	}
	ok := true
	for i := 0; ok && i < len(initial); i++ {
		ok = send(storage.Event{Type: storage.EventAdded, Object: initial[i], ResourceVersion: initial[i].ResourceVersion()})
	}
	if ok && initialEnd {
		ok = send(storage.Event{Type: storage.EventBookmark, ResourceVersion: startRV, InitialEventsEnd: true})
	}
	for i := 0; ok && i < len(backlog); i++ {
		if ev, matched := w.convert(backlog[i], nil); matched {
			ok = send(ev)
		}
	}
	for ok {
		w.c.watchMu.Lock()
		if w.closed {
			break
		}
		batch := w.pending
		w.pending = nil
		if len(batch) == 0 {
			w.live = true
			w.c.watchMu.Unlock()
			return
		}
		w.c.watchMu.Unlock()
		for i := 0; ok && i < len(batch); i++ {
			ok = send(batch[i])
		}
	}
	if !ok {
		w.c.watchMu.Lock()
	}
	w.c.removeWatcherLocked(w)
	w.pending = nil
	w.c.watchMu.Unlock()
	close(w.result)
}
