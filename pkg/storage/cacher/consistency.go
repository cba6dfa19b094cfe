// KEP-2340's inconsistency detector: the cache's newest snapshot compared
// with etcd's list at the same revision, periodically, and the first
// difference described.

package cacher

import (
	"context"
	"errors"
	"time"

	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/storage"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
// at the same revision, object by object (key and resourceVersion). On a
// difference it logs the first differing key, stops serving consistent and
// exact-revision reads from this cache (they go to etcd) and makes the
// cache list again; reads return to the cache once the new list is in.
func (c *Cacher) checkConsistency(ctx context.Context) string {
	sn := c.newest.Load()
	diff, err := c.firstDifference(ctx, sn)
	switch {
	case err != nil:
		// Compacted meanwhile, or etcd trouble: no verdict.
		return checkError
	case diff == "":
		return checkSuccess
	}
	c.log.Error("watch cache is inconsistent with etcd; serving consistent and exact reads from etcd and listing again",
		"resourceVersion", sn.rv, "firstDifference", diff)
	c.inconsistent.Store(true)
	c.relist()
	return checkFailure
}

// errDifferent stops the reading of etcd's list at the first difference.
var errDifferent = errors.New("different")

// firstDifference describes the first object in key order where sn and
// etcd's state at sn's revision differ ("" if they agree). etcd's state is
// read as a streamed list (an Exact list without a limit, in chunks at that
// revision) and each chunk is compared with the snapshot's objects over the
// same keys as it comes, so that the check holds one chunk of etcd's
// objects at a time, however large the resource.
func (c *Cacher) firstDifference(ctx context.Context, sn *snapshot) (string, error) {
	list, err := c.store.GetList(ctx, "", storage.ListOptions{ResourceVersion: storage.FormatResourceVersion(sn.rv),
		ResourceVersionMatch: metav1.ResourceVersionMatchExact, Stream: true})
	if err != nil {
		return "", err
	}
	var diff string
	from := "" // the snapshot's objects before this key are compared
	var cached []*object.Object
	err = list.Chunks(func(chunk []*object.Object) error {
		// The snapshot's objects up to the chunk's last key.
		last := chunk[len(chunk)-1].Key()
		cached = cached[:0]
		sn.objects.AscendGreaterOrEqual(keyProbe(from), func(o *object.Object) bool {
			if o.Key() > last {
				return false
			}
			cached = append(cached, o)
			return true
		})
		from = last + "\x00"
		if diff = compareObjects(cached, chunk); diff != "" {
			return errDifferent
		}
		return nil
	})
	if diff != "" {
		return diff, nil
	}
	if err != nil {
		return "", err
	}
	sn.objects.AscendGreaterOrEqual(keyProbe(from), func(o *object.Object) bool {
		diff = "etcd has no " + o.String()
		return false
	})
	return diff, nil
}

// compareObjects describes the first difference between the cache's and
// etcd's objects over the same range of keys, both in key order.
func compareObjects(cached, etcd []*object.Object) string {
	for i, o := range etcd {
		switch {
		case i >= len(cached):
			return "the cache has no " + o.String()
		case cached[i].Key() == o.Key() && cached[i].ResourceVersion() == o.ResourceVersion():
			continue
		case cached[i].Key() == o.Key():
			return "the cache has " + cached[i].String() + ", etcd has " + o.String()
		case cached[i].Key() < o.Key():
			return "etcd has no " + cached[i].String()
		default:
			return "the cache has no " + o.String()
		}
	}
	if len(cached) > len(etcd) {
		return "etcd has no " + cached[len(etcd)].String()
	}
	return ""
}
