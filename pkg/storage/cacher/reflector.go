package cacher

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/watchcache/watchcache/pkg/storage"
)

// listPageSize is the page size of the initial list from etcd.
const listPageSize = 10000

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
		c.ready.Store(false)
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

// listAndWatch lists the resource in pages at one revision, publishes it,
// and applies the watch from that revision until it fails.
func (c *Cacher) listAndWatch(ctx context.Context) error {
	start := time.Now()
	st := newState(c.indexed)
	opts := storage.ListOptions{Limit: listPageSize}
	for {
		list, err := c.store.GetList(ctx, "", opts)
		if err != nil {
			return err
		}
		for _, obj := range list.Items {
			st.put(obj)
		}
		st.rv = list.ResourceVersion
		if list.Continue == "" {
			break
		}
		opts.Continue = list.Continue
	}
	sn := st.snapshot()
	c.history.reset(sn, time.Now())
	c.newest.Store(sn)
	c.fresh.advance(sn.rv)
	c.metrics.ResourceVersion(c.resource, sn.rv)
	c.ready.Store(true)
	c.metrics.Initialized(c.resource, time.Since(start).Seconds())
	c.log.Info("watch cache initialized", "objects", st.objects.Len(), "resourceVersion", sn.rv, "took", time.Since(start))

	w, err := c.store.Watch(ctx, "", storage.ListOptions{ResourceVersion: storage.FormatResourceVersion(st.rv), AllowWatchBookmarks: true})
	if err != nil {
		return err
	}
	defer w.Stop()
	return c.apply(w.ResultChan(), st)
}

// apply applies watch events to st in revision order. A snapshot is
// published once all events of a revision are applied: before the first
// event of a later revision, or when no event is queued.
func (c *Cacher) apply(events <-chan storage.Event, st *state) error {
	dirty := false
	for {
		var ev storage.Event
		var ok bool
		if dirty {
			select {
			case ev, ok = <-events:
			default:
				c.publish(st)
				dirty = false
				continue
			}
		} else {
			ev, ok = <-events
		}
		if !ok {
			return errWatchClosed
		}
		if dirty && ev.ResourceVersion > st.rv {
			c.publish(st)
			dirty = false
		}
		switch ev.Type {
		case storage.EventAdded, storage.EventModified:
			st.put(ev.Object)
		case storage.EventDeleted:
			st.remove(ev.Object)
		case storage.EventBookmark:
			// Progress: the state is unchanged up to ev.ResourceVersion.
			if ev.ResourceVersion > st.rv {
				st.rv = ev.ResourceVersion
				c.newest.Store(c.newest.Load().withRV(st.rv))
				c.fresh.advance(st.rv)
				c.metrics.ResourceVersion(c.resource, st.rv)
			}
			continue
		case storage.EventError:
			return ev.Err
		}
		c.metrics.EventReceived(c.resource)
		st.rv = ev.ResourceVersion
		dirty = true
	}
}

// publish makes st's current state visible to readers: snapshot, history,
// then the revision (so a reader that sees the revision finds the
// snapshot).
func (c *Cacher) publish(st *state) {
	sn := st.snapshot()
	now := time.Now()
	c.history.add(sn, now)
	c.newest.Store(sn)
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
