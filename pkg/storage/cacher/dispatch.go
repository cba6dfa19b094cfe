// Dispatching events to watchers: watchers indexed by name or field value,
// delivery of a revision's events, the blocking budget and termination of
// watchers that cannot keep up, and bookmarks.

package cacher

import (
	"context"
	"time"

	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/storage"
)

// watchers is the set of a cache's watchers. Watchers whose selector
// requires one name are filed under that name, and those whose selector
// requires one value of the indexed field under that value, so an event
// reaches only the watchers it can concern (its object's name; its old
// and new values) without scanning the others. Guarded by Cacher.watchMu.
type watchers struct {
	unindexed map[*cacheWatcher]struct{}
	byName    watcherIndex
	byValue   watcherIndex
	count     int
}

// watcherIndex files watchers under a value.
type watcherIndex map[string]map[*cacheWatcher]struct{}

func (ix watcherIndex) add(value string, w *cacheWatcher) {
	set := ix[value]
	if set == nil {
		set = map[*cacheWatcher]struct{}{}
		ix[value] = set
	}
	set[w] = struct{}{}
}

func (ix watcherIndex) remove(value string, w *cacheWatcher) {
	delete(ix[value], w)
	if len(ix[value]) == 0 {
		delete(ix, value)
	}
}

// deliver offers e to the watchers filed under the value of e's object
// and, when it differs, under the value of its previous state (for which
// the object leaves their selection). A watcher is filed once, so it is
// offered e at most once.
func (ix watcherIndex) deliver(e *logEvent, value func(*object.Object) string, deliver func(*cacheWatcher)) {
	v := value(e.obj)
	for w := range ix[v] {
		deliver(w)
	}
	if e.prev != nil {
		if old := value(e.prev); old != v {
			for w := range ix[old] {
				deliver(w)
			}
		}
	}
}

func newWatchers() *watchers {
	return &watchers{unindexed: map[*cacheWatcher]struct{}{}, byName: watcherIndex{}, byValue: watcherIndex{}}
}

// index returns the index w is filed in (nil: unindexed).
func (ws *watchers) index(w *cacheWatcher) watcherIndex {
	switch {
	case !w.indexed:
		return nil
	case w.byName:
		return ws.byName
	default:
		return ws.byValue
	}
}

func (ws *watchers) add(w *cacheWatcher) {
	ws.count++
	if ix := ws.index(w); ix != nil {
		ix.add(w.indexValue, w)
	} else {
		ws.unindexed[w] = struct{}{}
	}
}

func (ws *watchers) remove(w *cacheWatcher) {
	ws.count--
	if ix := ws.index(w); ix != nil {
		ix.remove(w.indexValue, w)
	} else {
		delete(ws.unindexed, w)
	}
}

// forEach calls fn for every watcher.
func (ws *watchers) forEach(fn func(*cacheWatcher)) {
	for w := range ws.unindexed {
		fn(w)
	}
	for _, ix := range []watcherIndex{ws.byName, ws.byValue} {
		for _, set := range ix {
			for w := range set {
				fn(w)
			}
		}
	}
}

// indexWatcher says where the dispatcher files w: under the name its
// selector requires (a watch of one object), else under the value of the
// indexed field it requires (a kubelet's watch of its node's pods), else
// with the watchers offered every event.
func (c *Cacher) indexWatcher(w *cacheWatcher) {
	if name, ok := w.opts.SelectedName(); ok {
		w.indexed, w.byName, w.indexValue = true, true, name
		return
	}
	if len(c.indexed) > 0 && w.opts.Fields != nil {
		w.indexValue, w.indexed = w.opts.Fields.RequiresExactMatch(c.indexed[0])
	}
}

// Blocking budget: a watcher whose buffer is full may hold the dispatcher
// up to the budget left; the budget refills at budgetRefill per second up
// to budgetMax (upstream's refilling time budget). So one slow client
// delays the others by at most budgetMax at once and 10% of the time in
// the long run, and is then closed.
const (
	budgetMax    = 100 * time.Millisecond
	budgetRefill = 100 * time.Millisecond // per second
)

// timeBudget is the dispatcher's blocking budget. Guarded by watchMu.
type timeBudget struct {
	available time.Duration
	last      time.Time
}

// take returns all the budget available now.
func (b *timeBudget) take(now time.Time) time.Duration {
	if !b.last.IsZero() {
		b.available += time.Duration(float64(now.Sub(b.last)) * float64(budgetRefill) / float64(time.Second))
	}
	b.available = min(b.available, budgetMax)
	b.last = now
	got := b.available
	b.available = 0
	return got
}

// giveBack returns what was not used.
func (b *timeBudget) giveBack(d time.Duration) { b.available = min(b.available+d, budgetMax) }

// dispatchLocked delivers the events of one revision to the watchers they
// concern, each event encoded once for all of them.
func (c *Cacher) dispatchLocked(events []*logEvent) {
	if c.watchers.count == 0 {
		return
	}
	start := time.Now()
	delivered := 0
	for _, e := range events {
		shared := &storage.SharedEncoding{}
		deliver := func(w *cacheWatcher) {
			if ev, ok := w.convert(e, shared); ok {
				c.pushLocked(w, ev)
				delivered++
			}
		}
		for w := range c.watchers.unindexed {
			deliver(w)
		}
		if len(c.watchers.byName) > 0 {
			c.watchers.byName.deliver(e, (*object.Object).Name, deliver)
		}
		if len(c.watchers.byValue) > 0 {
			field := c.indexed[0]
			c.watchers.byValue.deliver(e, func(o *object.Object) string { return o.Fields().Get(field) }, deliver)
		}
	}
	c.metrics.EventsDispatched(c.resource, delivered, time.Since(start).Seconds())
}

// pushLocked puts an event into a watcher's buffer, waiting within the
// blocking budget when it is full; a watcher still full is closed (its
// client resumes from the last event it got) and counted.
func (c *Cacher) pushLocked(w *cacheWatcher, ev storage.Event) {
	if w.closed {
		return
	}
	if !w.live {
		if len(w.pending) >= maxPending {
			c.terminateLocked(w)
			return
		}
		w.pending = append(w.pending, ev)
		return
	}
	select {
	case w.result <- ev:
		return
	default:
	}
	now := time.Now()
	if wait := c.budget.take(now); wait > 0 {
		t := time.NewTimer(wait)
		select {
		case w.result <- ev:
			t.Stop()
			c.budget.giveBack(wait - time.Since(now))
			return
		case <-t.C:
		}
	}
	c.terminateLocked(w)
}

// terminateLocked closes a watcher that cannot keep up, and counts it.
func (c *Cacher) terminateLocked(w *cacheWatcher) {
	c.removeWatcherLocked(w)
	c.metrics.WatcherTerminated(c.resource)
	c.log.Info("closed a watcher that could not keep up", "scope", w.scope)
}

// addWatcherLocked registers a watcher for dispatch.
func (c *Cacher) addWatcherLocked(w *cacheWatcher) {
	c.watchers.add(w)
	c.metrics.WatchersChanged(c.resource, 1)
}

// removeWatcherLocked deregisters a watcher; its channel ends after what
// is already buffered (closed here once live, by its initial goroutine
// before). Idempotent.
func (c *Cacher) removeWatcherLocked(w *cacheWatcher) {
	if w.closed {
		return
	}
	w.closed = true
	if w.live {
		close(w.result)
	}
	c.watchers.remove(w)
	c.metrics.WatchersChanged(c.resource, -1)
}

// endAllWatchers closes every watcher cleanly (the cache re-lists: clients
// resume from their last revision).
func (c *Cacher) endAllWatchers() {
	c.watchMu.Lock()
	defer c.watchMu.Unlock()
	var all []*cacheWatcher
	c.watchers.forEach(func(w *cacheWatcher) { all = append(all, w) })
	for _, w := range all {
		c.removeWatcherLocked(w)
	}
}

// sendBookmarks gives watchers that allow bookmarks a BOOKMARK at the
// dispatched revision every BookmarkInterval and just before their
// deadline. Bookmarks go through the same buffer as events, after the
// events of the revisions they cover; a full buffer skips one.
func (c *Cacher) sendBookmarks(ctx context.Context) {
	// Watchers are checked for a due bookmark every tick.
	tick := min(time.Second, c.bookmarkInterval/2)
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			// Not the tick's time: when this goroutine runs late, the next
			// bookmark is due an interval after this one is sent.
			now := time.Now()
			c.watchMu.Lock()
			c.watchers.forEach(func(w *cacheWatcher) {
				if !w.bookmarks || w.closed || !w.live {
					return
				}
				beforeDeadline := !w.deadline.IsZero() && w.deadline.Sub(now) <= bookmarkBeforeDeadline+tick
				if now.Before(w.nextBookmark) && !beforeDeadline {
					return
				}
				select {
				case w.result <- storage.Event{Type: storage.EventBookmark, ResourceVersion: c.dispatchRV}:
					w.nextBookmark = now.Add(c.bookmarkInterval)
					if beforeDeadline {
						w.deadline = time.Time{} // one last bookmark is enough
					}
				default:
				}
			})
			c.watchMu.Unlock()
		}
	}
}
