package cacher

import (
	"context"
	"time"

	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/storage"
)

// Outcomes of a consistency check (the status label of
// apiserver_storage_consistency_checks_total).
const (
	checkSuccess = "success"
	checkFailure = "failure"
	checkError   = "error"
)

// checkConsistencyEvery runs the inconsistency detector of KEP-2340 every
// interval until ctx ends.
func (c *Cacher) checkConsistencyEvery(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if c.ready.Load() {
			c.metrics.ConsistencyChecked(c.resource, c.checkConsistency(ctx))
		}
	}
}

// checkConsistency compares the cache's newest snapshot with etcd's state
// at the same revision (an Exact list, paged), object by object (key and
// resourceVersion). On a difference it logs the first differing key, stops
// serving consistent and exact-revision reads from this cache (they go to
// etcd) and makes the cache list again; reads return to the cache once the
// new list is in.
func (c *Cacher) checkConsistency(ctx context.Context) string {
	sn := c.newest.Load()
	rv := storage.FormatResourceVersion(sn.rv)
	opts := storage.ListOptions{ResourceVersion: rv, ResourceVersionMatch: "Exact", Limit: listPageSize}
	var diff string
	cached := make([]*object.Object, 0, sn.objects.Len())
	sn.objects.Ascend(func(o *object.Object) bool {
		cached = append(cached, o)
		return true
	})
	i := 0
	for {
		list, err := c.store.GetList(ctx, "", opts)
		if err != nil {
			// Compacted meanwhile, or etcd trouble: no verdict.
			return checkError
		}
		for _, o := range list.Items {
			if i >= len(cached) || cached[i].Key() != o.Key() || cached[i].ResourceVersion() != o.ResourceVersion() {
				diff = firstDifference(cached, i, o)
				break
			}
			i++
		}
		if diff != "" || list.Continue == "" {
			break
		}
		opts = storage.ListOptions{Continue: list.Continue, Limit: listPageSize}
	}
	if diff == "" && i < len(cached) {
		diff = "etcd has no " + cached[i].String()
	}
	if diff == "" {
		return checkSuccess
	}
	c.log.Error("watch cache is inconsistent with etcd; serving consistent and exact reads from etcd and listing again",
		"resourceVersion", sn.rv, "firstDifference", diff)
	c.inconsistent.Store(true)
	c.relist()
	return checkFailure
}

// firstDifference describes where the cache's objects (from index i) and
// etcd's object o first disagree.
func firstDifference(cached []*object.Object, i int, o *object.Object) string {
	switch {
	case i >= len(cached):
		return "the cache has no " + o.String()
	case cached[i].Key() == o.Key():
		return "the cache has " + cached[i].String() + ", etcd has " + o.String()
	case cached[i].Key() < o.Key():
		return "etcd has no " + cached[i].String()
	default:
		return "the cache has no " + o.String()
	}
}
