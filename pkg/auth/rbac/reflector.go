// Keeping the index in step with the stores, as an informer would: a list,
// then watch events, with the revision applied so far for WaitFor.

package rbac

import (
	"context"

	"github.com/watchcache/watchcache/pkg/informer"
	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/storage"
)

// reflect keeps kind k of the index in step with its store, as an informer
// does (see package informer).
func (a *Authorizer) reflect(ctx context.Context, k kind) {
	informer.Run(ctx, a.stores.of(k), informer.Handler{
		Replace: func(items []*object.Object, rv uint64) { a.replace(k, items, rv) },
		Apply:   func(ev storage.Event) { a.apply(k, ev) },
	}, "rbac "+kindNames[k], a.log)
}

// replace replaces kind k's content with a list's, at revision rv.
func (a *Authorizer) replace(k kind, items []*object.Object, rv uint64) {
	objs := make(map[string]decoded, len(items))
	for _, o := range items {
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
	a.advanceLocked(k, rv)
	a.mu.Unlock()
	a.changedKind(k)
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
