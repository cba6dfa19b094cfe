package rbac

import (
	"context"
	"time"

	"github.com/watchcache/watchcache/pkg/storage"
)

// Backoff between failed lists and watches.
const (
	minBackoff = 100 * time.Millisecond
	maxBackoff = 10 * time.Second
	// healthyWatch is how long a watch must last for the backoff to reset.
	healthyWatch = 10 * time.Second
)

// reflect keeps kind k of the index in step with its store, as an informer
// does: list from the cache (resourceVersion "0"), then watch from the
// list's revision with bookmarks, re-watching when the watch ends and
// re-listing (with backoff) when it fails (410 Expired and the like).
func (a *Authorizer) reflect(ctx context.Context, k kind) {
	store := a.stores.of(k)
	backoff := minBackoff
	for ctx.Err() == nil {
		rv, err := a.list(ctx, k, store)
		if err == nil {
			start := time.Now()
			err = a.watch(ctx, k, store, rv)
			if time.Since(start) > healthyWatch {
				backoff = minBackoff
			}
		}
		if ctx.Err() != nil {
			return
		}
		a.log.Warn("rbac: re-listing after an error", "resource", kindNames[k], "err", err, "backoff", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// list replaces kind k's content with the store's and returns the list's
// revision.
func (a *Authorizer) list(ctx context.Context, k kind, store storage.Interface) (uint64, error) {
	l, err := store.GetList(ctx, "", storage.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return 0, err
	}
	objs := make(map[string]decoded, len(l.Items))
	for _, o := range l.Items {
		d, err := decode(k, o.Stored())
		if err != nil {
			a.log.Error("rbac: skipping an object that does not decode", "resource", kindNames[k], "key", o.Key(), "err", err)
			continue
		}
		objs[o.Key()] = d
	}
	a.mu.Lock()
	a.idx.replace(k, objs)
	a.synced[k] = true
	a.advanceLocked(k, l.ResourceVersion)
	a.mu.Unlock()
	a.changedKind(k)
	return l.ResourceVersion, nil
}

// watch applies kind k's events from revision rv on, re-watching when the
// store ends a watch cleanly. It returns the error that calls for a
// re-list.
func (a *Authorizer) watch(ctx context.Context, k kind, store storage.Interface, rv uint64) error {
	for {
		w, err := store.Watch(ctx, "", storage.ListOptions{ResourceVersion: storage.FormatResourceVersion(rv), AllowWatchBookmarks: true})
		if err != nil {
			return err
		}
		for ev := range w.ResultChan() {
			if ev.Type == storage.EventError {
				w.Stop()
				return ev.Err
			}
			a.apply(k, ev)
			rv = ev.ResourceVersion
		}
		w.Stop()
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

// apply applies one watch event to the index.
func (a *Authorizer) apply(k kind, ev storage.Event) {
	var d decoded
	if ev.Type == storage.EventAdded || ev.Type == storage.EventModified {
		var err error
		if d, err = decode(k, ev.Object.Stored()); err != nil {
			// Dropped: a state the index cannot read grants nothing.
			a.log.Error("rbac: dropping an object that does not decode", "resource", kindNames[k], "key", ev.Object.Key(), "err", err)
		}
	}
	a.mu.Lock()
	if ev.Type != storage.EventBookmark {
		a.idx.put(k, ev.Object.Key(), d)
	}
	a.advanceLocked(k, ev.ResourceVersion)
	a.mu.Unlock()
	if ev.Type != storage.EventBookmark {
		a.changedKind(k)
	}
}

// advanceLocked records that kind k is applied up to rv and wakes WaitFor.
func (a *Authorizer) advanceLocked(k kind, rv uint64) {
	a.applied[k] = rv
	close(a.changed)
	a.changed = make(chan struct{})
}

// changedKind tells the aggregation controller about ClusterRole changes.
func (a *Authorizer) changedKind(k kind) {
	if k != kindClusterRoles {
		return
	}
	select {
	case a.aggregate <- struct{}{}:
	default:
	}
}
