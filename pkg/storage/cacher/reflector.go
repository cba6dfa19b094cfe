// The reflector: the list and watch of etcd that keeps the cache in step
// (client-go's Reflector in k8s.io/apiserver's cacher), applying events,
// publishing snapshots, backoff, and trimming after compactions.

package cacher

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/storage"
)

// reflectorListKey marks the context of the reflector's list requests.
type reflectorListKey struct{}

// IsReflectorList reports whether a store's GetList call is a watch
// cache's own list from etcd (its initialization), rather than a client's
// list passed through; store wrappers, such as tests' hooks, use it to
// tell them apart.
func IsReflectorList(ctx context.Context) bool { return ctx.Value(reflectorListKey{}) != nil }

// Backoff between failed list-and-watch attempts.
const (
	minBackoff = 100 * time.Millisecond
	maxBackoff = 10 * time.Second
)

var errWatchClosed = errors.New("the etcd watch ended")

// reflect keeps the cache in step with etcd until ctx ends: list, then
// watch from the list's revision; when the watch fails (compaction, etcd
// trouble) the cache stops serving and lists again, with backoff.
func (c *Cacher) reflect(ctx context.Context) {
	backoff := minBackoff
	for {
		start := time.Now()
		err := c.listAndWatch(ctx)
		c.setReady(false)
		// The event stream has a gap now: end every watch cleanly; clients
		// resume from their last revision.
		c.endAllWatchers()
		if ctx.Err() != nil {
			return
		}
		c.metrics.InitializationFailed(c.resource)
		c.log.Warn("watch cache lost its etcd watch; listing again", "err", err, "backoff", backoff)
		if time.Since(start) > maxBackoff {
			backoff = minBackoff // it ran fine for a while
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff/2 + rand.N(backoff/2+1)):
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// listAndWatch lists the resource at one revision, publishes it, and
// applies the watch from that revision until it fails. The list is a
// stream (etcd3 reads it in chunks): each chunk's objects join the state
// as they arrive, so the process holds the cache and one chunk, never the
// whole raw response besides the cache. A failure in the middle (etcd
// compacted the list's revision) fails the attempt, as any list error.
func (c *Cacher) listAndWatch(ctx context.Context) error {
	start := time.Now()
	st := newState(c.indexed)
	st.clusterScoped = c.store.Schema().ClusterScoped()
	list, err := c.store.GetList(context.WithValue(ctx, reflectorListKey{}, true), "", storage.ListOptions{Stream: true})
	if err != nil {
		return err
	}
	if err := list.Each(func(obj *object.Object) error { st.put(obj); return nil }); err != nil {
		return err
	}
	st.rv = list.ResourceVersion
	sn := st.snapshot()
	c.history.reset(sn, time.Now())
	c.watchMu.Lock()
	c.events.reset(sn.rv)
	c.dispatchRV = sn.rv
	c.newest.Store(sn)
	c.watchMu.Unlock()
	c.fresh.advance(sn.rv)
	c.metrics.ResourceVersion(c.resource, sn.rv)
	c.inconsistent.Store(false) // a fresh list from etcd
	c.setReady(true)
	c.metrics.Initialized(c.resource, time.Since(start).Seconds())
	c.log.Info("watch cache initialized", "objects", st.objects.Len(), "resourceVersion", sn.rv, "took", time.Since(start))

	wctx, stop := context.WithCancel(ctx)
	defer stop()
	c.relistMu.Lock()
	c.stopWatch = stop
	c.relistMu.Unlock()
	// The cache holds every object's last state, so deletions need carry
	// only their keys: etcd then reads no previous values for the events.
	w, err := c.store.Watch(wctx, "", storage.ListOptions{ResourceVersion: storage.FormatResourceVersion(st.rv), AllowWatchBookmarks: true, KeyOnlyDeletes: true})
	if err != nil {
		return err
	}
	defer w.Stop()
	return c.apply(w.ResultChan(), st)
}

// apply applies watch events to st in revision order. The events of a
// revision are published together (snapshot, event log, dispatch to
// watchers) before the first event of a later revision, or when no event
// is queued.
func (c *Cacher) apply(events <-chan storage.Event, st *state) error {
	var pending []*logEvent
	for {
		var ev storage.Event
		var ok bool
		if len(pending) > 0 {
			select {
			case ev, ok = <-events:
			default:
				c.publish(st, pending)
				pending = pending[:0]
				continue
			}
		} else {
			ev, ok = <-events
		}
		if !ok {
			return errWatchClosed
		}
		if len(pending) > 0 && ev.ResourceVersion > st.rv {
			c.publish(st, pending)
			pending = pending[:0]
		}
		switch ev.Type {
		case storage.EventAdded, storage.EventModified, storage.EventDeleted:
			e, err := c.change(st, ev)
			if err != nil {
				return err
			}
			pending = append(pending, e)
		case storage.EventBookmark:
			// Progress: the state is unchanged up to ev.ResourceVersion.
			if ev.ResourceVersion > st.rv {
				st.rv = ev.ResourceVersion
				c.watchMu.Lock()
				c.dispatchRV = st.rv
				c.newest.Store(c.newest.Load().withRV(st.rv))
				c.watchMu.Unlock()
				c.fresh.advance(st.rv)
				c.metrics.ResourceVersion(c.resource, st.rv)
			}
		case storage.EventError:
			return ev.Err
		}
	}
}

// change applies one event to st and returns its log entry, with the state
// it replaced (at the event's revision) for watchers whose selection the
// object leaves. A deletion carries only its key (the watch's
// KeyOnlyDeletes): its last state is the one st holds, at the deletion's
// revision. A deletion of a key st does not hold means the cache missed
// an event: an error, so that the cache lists again rather than serve
// a state that differs from etcd's.
func (c *Cacher) change(st *state, ev storage.Event) (*logEvent, error) {
	e := &logEvent{rv: ev.ResourceVersion, typ: ev.Type, obj: ev.Object, at: time.Now()}
	if ev.Type == storage.EventDeleted {
		last, ok := st.remove(ev.Object)
		if !ok {
			return nil, fmt.Errorf("etcd deleted %s at revision %d, which the cache does not hold", ev.Object.Key(), ev.ResourceVersion)
		}
		e.obj = last.WithResourceVersion(ev.ResourceVersion)
	} else {
		if prev, ok := st.objects.Get(ev.Object); ok {
			e.prev = prev.WithResourceVersion(ev.ResourceVersion)
		}
		st.put(ev.Object)
	}
	st.rv = ev.ResourceVersion
	c.metrics.EventReceived(c.resource)
	return e, nil
}

// publish makes the revision st has reached visible: its snapshot (for
// lists), its events (log and watchers), then the revision itself, so that
// a reader that sees the revision finds the snapshot.
func (c *Cacher) publish(st *state, events []*logEvent) {
	sn := st.snapshot()
	c.history.add(sn, events[0].at)
	c.watchMu.Lock()
	for _, e := range events {
		c.events.add(e)
	}
	// The snapshot is visible before any watcher has the events, as
	// kube-apiserver's watch cache updates its store before it dispatches:
	// a client that lists (resourceVersion 0) on an event sees the state
	// the event made, not the one before it.
	c.newest.Store(sn)
	c.dispatchLocked(events)
	c.dispatchRV = sn.rv
	c.watchMu.Unlock()
	c.fresh.advance(sn.rv)
	c.metrics.ResourceVersion(c.resource, sn.rv)
	c.metrics.SnapshotsRetained(c.resource, c.history.len())
}

// defaultCompactionPollInterval is how often the cache checks whether etcd
// compacted the revisions of its oldest snapshots.
const defaultCompactionPollInterval = 10 * time.Second

// trimCompacted drops snapshots of compacted revisions as compactions
// happen, so memory is not held for reads etcd itself would refuse.
func (c *Cacher) trimCompacted(ctx context.Context) {
	t := time.NewTicker(c.compactPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		c.history.trimCompacted(func(rev uint64) bool {
			compacted, err := c.isCompacted(ctx, rev)
			return err == nil && compacted
		})
		c.metrics.SnapshotsRetained(c.resource, c.history.len())
	}
}
