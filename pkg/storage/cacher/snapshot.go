// The cache's store: a B-tree of objects by key with secondary indexes,
// mutable state for the reflector and immutable snapshots for reads, and
// pages of a list.

package cacher

import (
	"strings"

	"github.com/google/btree"
	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/storage"
)

// btreeDegree is the degree of the B-trees: wide nodes keep trees shallow
// (fewer node copies per write while snapshots share structure).
const btreeDegree = 32

// indexEntry is one object in a secondary index, ordered by the indexed
// field's value, then by key.
type indexEntry struct {
	value string
	obj   *object.Object
}

func lessObject(a, b *object.Object) bool { return a.Key() < b.Key() }

func lessEntry(a, b indexEntry) bool {
	if a.value != b.value {
		return a.value < b.value
	}
	return a.obj.Key() < b.obj.Key()
}

// snapshot is an immutable view of the cache at one revision: the objects
// by key and the secondary indexes. It is a copy-on-write clone: taking one
// is O(1), and the writer's next changes copy only the nodes they touch.
// Any number of readers may use a snapshot concurrently.
type snapshot struct {
	rv      uint64
	objects *btree.BTreeG[*object.Object]
	indexes map[string]*btree.BTreeG[indexEntry]
	// clusterScoped is the state's.
	clusterScoped bool
}

// state is the cache's live, mutable store. Only the reflector goroutine
// touches it; readers see it through snapshots.
type state struct {
	rv      uint64
	objects *btree.BTreeG[*object.Object]
	indexes map[string]*btree.BTreeG[indexEntry]
	// clusterScoped says the objects are keyed by name alone (the
	// resource's schema is cluster-scoped): a list by name reads one key.
	clusterScoped bool
}

func newState(indexedFields []string) *state {
	s := &state{objects: btree.NewG(btreeDegree, lessObject), indexes: map[string]*btree.BTreeG[indexEntry]{}}
	for _, f := range indexedFields {
		s.indexes[f] = btree.NewG(btreeDegree, lessEntry)
	}
	return s
}

// put inserts or replaces an object, keeping the indexes in step. An
// entry whose indexed value is unchanged (most updates: a pod rarely
// changes node) is replaced in place, one path of the tree copied rather
// than two.
func (s *state) put(obj *object.Object) {
	old, replaced := s.objects.ReplaceOrInsert(obj)
	for field, idx := range s.indexes {
		value := obj.Fields().Get(field)
		if replaced {
			if oldValue := old.Fields().Get(field); oldValue != value {
				idx.Delete(indexEntry{value: oldValue, obj: old})
			}
		}
		idx.ReplaceOrInsert(indexEntry{value: value, obj: obj})
	}
}

// remove deletes the object under obj's key and returns it; false if
// there is none.
func (s *state) remove(obj *object.Object) (*object.Object, bool) {
	old, ok := s.objects.Delete(obj)
	if !ok {
		return nil, false
	}
	for field, idx := range s.indexes {
		idx.Delete(indexEntry{value: old.Fields().Get(field), obj: old})
	}
	return old, true
}

// snapshot clones the state. Must not run concurrently with put or remove.
func (s *state) snapshot() *snapshot {
	sn := &snapshot{rv: s.rv, objects: s.objects.Clone(), indexes: make(map[string]*btree.BTreeG[indexEntry], len(s.indexes)), clusterScoped: s.clusterScoped}
	for f, idx := range s.indexes {
		sn.indexes[f] = idx.Clone()
	}
	return sn
}

// withRV is the same snapshot at a later revision with no change (a
// progress notification).
func (sn *snapshot) withRV(rv uint64) *snapshot {
	cp := *sn
	cp.rv = rv
	return &cp
}

// get returns the object under key.
func (sn *snapshot) get(key string) (*object.Object, bool) {
	return sn.objects.Get(keyProbe(key))
}

// count is the number of objects under scope ("" for all).
func (sn *snapshot) count(scope string) int {
	if scope == "" {
		return sn.objects.Len()
	}
	n := 0
	sn.objects.AscendGreaterOrEqual(keyProbe(scope), func(obj *object.Object) bool {
		if !strings.HasPrefix(obj.Key(), scope) {
			return false
		}
		n++
		return true
	})
	return n
}

// keyProbe is a stand-in object with only a key, for tree lookups.
func keyProbe(key string) *object.Object { return object.KeyOnly(key) }

// page is one page of a list from a snapshot.
type page struct {
	items []*object.Object
	// next is the key of the first matching object after the page ("" when
	// the list is done): the next page starts there.
	next string
	// remaining counts the objects after the page when nothing is
	// filtered (-1 otherwise).
	remaining int64
	// scanned counts the objects examined (for metrics).
	scanned int
}

// list returns up to limit (0: all) objects under scope from startKey on
// that match opts. A field selector requiring a name is served by key
// lookups (see ascendByName); one requiring an exact value of an indexed
// field from that index: only the matching objects are examined.
func (sn *snapshot) list(scope, startKey string, limit int64, opts *storage.ListOptions) page {
	from := scope
	if startKey > from {
		from = startKey
	}
	p := page{remaining: -1}
	filtered := opts.Filtered()
	visit := func(obj *object.Object) bool {
		if !strings.HasPrefix(obj.Key(), scope) {
			return false
		}
		if p.next != "" {
			p.remaining++ // counting what follows an unfiltered page
			return true
		}
		p.scanned++
		if !opts.Matches(obj) {
			return true
		}
		if limit > 0 && int64(len(p.items)) == limit {
			p.next = obj.Key()
			if filtered {
				return false
			}
			p.remaining = 1
			return true
		}
		p.items = append(p.items, obj)
		return true
	}
	if l, ok := opts.LookupByName(scope, sn.clusterScoped); ok {
		sn.ascendByName(l, from, visit)
		return p
	}
	if value, idx := sn.indexFor(opts); idx != nil {
		idx.AscendGreaterOrEqual(indexEntry{value: value, obj: keyProbe(from)}, func(e indexEntry) bool {
			return e.value == value && visit(e.obj)
		})
		return p
	}
	sn.objects.AscendGreaterOrEqual(keyProbe(from), visit)
	return p
}

// indexFor finds an index that can serve opts' field selector, and the
// value the selector requires.
func (sn *snapshot) indexFor(opts *storage.ListOptions) (string, *btree.BTreeG[indexEntry]) {
	if opts.Fields == nil || opts.Fields.Empty() {
		return "", nil
	}
	for field, idx := range sn.indexes {
		if value, ok := opts.Fields.RequiresExactMatch(field); ok {
			return value, idx
		}
	}
	return "", nil
}
