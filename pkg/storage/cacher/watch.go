// Watch: a watch from the cache at a resourceVersion (waited for, or too old:
// an expired ERROR), with its initial events, and a closed watcher.

package cacher

import (
	"context"
	"fmt"
	"time"

	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/storage"
)

// Watch implements storage.Interface: every watch is served from the cache
// (one etcd watch per resource, fanned out), following the watch table:
//
//   - initial state (RV unset, "0", or sendInitialEvents=true): ADDED
//     events for a snapshot (consistent: the snapshot reaches etcd's
//     current revision; "0": the newest; N: the newest once it reaches
//     N), then, with sendInitialEvents, a BOOKMARK marked
//     k8s.io/initial-events-end, then the events after the snapshot;
//   - from N: the events after N, from the event log (ERROR 410 when the
//     log no longer reaches back to N);
//   - from now (resourceVersionMatch=NotOlderThan, sendInitialEvents=false):
//     after etcd's current revision (RV unset) or the cache's ("0").
//
// A revision the cache has not reached is waited for (at most 3 s, then
// 504). While the cache is not ready the watch is refused with 429 (or,
// without resilient initialization, waits for it).
func (c *Cacher) Watch(ctx context.Context, scope string, opts storage.ListOptions) (storage.Watcher, error) {
	if c.noSharding {
		opts.Shard = nil
	}
	plan, err := storage.PlanWatch(opts)
	if err != nil {
		return nil, err
	}
	if err := opts.CheckScopeAndSelectors(scope, c.store.Schema()); err != nil {
		return nil, err
	}
	if _, err := c.whileNotReady(ctx, readWatch, scope, &opts); err != nil {
		return nil, err
	}
	// The revision to reach before registering, and where the stream
	// starts when there is no initial state.
	var reach, from uint64
	fromNewest := false
	switch {
	case plan.Initial == storage.ReadConsistent || plan.FromNow && opts.ResourceVersion == "":
		if reach, err = c.revisions.currentRevision(ctx); err != nil {
			return nil, err
		}
		from = reach
	case plan.Initial == storage.ReadAny || plan.FromNow:
		fromNewest = true
	default: // ReadNotOlderThan N, or from N
		reach, from = plan.RV, plan.RV
	}
	if err := c.waitFor(ctx, reach); err != nil {
		return nil, err
	}
	wctx, cancel := context.WithCancel(ctx)
	w := &cacheWatcher{
		c:         c,
		scope:     scope,
		opts:      opts,
		filter:    opts.Filtered(),
		bookmarks: plan.Bookmarks,
		cancel:    cancel,
		done:      make(chan struct{}),
	}
	c.indexWatcher(w)
	if deadline, ok := ctx.Deadline(); ok {
		w.deadline = deadline
	}
	w.nextBookmark = time.Now().Add(c.bookmarkInterval)

	// Registration, the initial snapshot and the backlog are taken under
	// watchMu, which the dispatcher holds while it logs and dispatches a
	// revision: the watcher gets every event after its start exactly once.
	c.watchMu.Lock()
	if !c.ready.Load() {
		// The cache started listing again while this watch waited: its
		// state and log are about to be replaced. Start over, as a watch
		// arriving now would (429, or a wait without resilient
		// initialization).
		c.watchMu.Unlock()
		cancel()
		return c.Watch(ctx, scope, opts)
	}
	var initial *snapshot
	if plan.Initial != 0 {
		initial = c.newest.Load()
		from = initial.rv
	} else if fromNewest {
		from = c.dispatchRV
	}
	backlog, ok := c.events.after(from)
	if !ok {
		c.watchMu.Unlock()
		cancel()
		return expiredWatch(from, c.events.start), nil
	}
	backlog = append([]*logEvent(nil), backlog...)
	w.result = make(chan storage.Event, watcherBufferSize(w.indexed, c.events.since(time.Now().Add(-time.Second))))
	c.addWatcherLocked(w)
	c.watchMu.Unlock()

	var items []*object.Object
	if initial != nil {
		items = initial.list(scope, "", 0, &opts).items
	}
	// A client that goes away without Stop frees its watcher too.
	context.AfterFunc(wctx, func() {
		c.watchMu.Lock()
		c.removeWatcherLocked(w)
		c.watchMu.Unlock()
	})
	go w.sendInitial(wctx, items, plan.InitialEventsEnd, from, backlog)
	return w, nil
}

// expiredWatch is a watch that only says its start is too old: an ERROR
// event with 410 Expired, as clients expect, then the end.
func expiredWatch(rv, oldest uint64) storage.Watcher {
	ch := make(chan storage.Event, 1)
	ch <- storage.Event{Type: storage.EventError, Err: storage.NewExpired(rv,
		fmt.Sprintf("the watch cache's history starts after revision %d", oldest))}
	close(ch)
	return closedWatcher(ch)
}

// closedWatcher is a watcher whose events are all in its channel already.
type closedWatcher chan storage.Event

func (w closedWatcher) ResultChan() <-chan storage.Event { return w }
func (w closedWatcher) Stop()                            {}
