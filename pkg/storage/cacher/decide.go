// The table that decides whether a get or a list is served from the cache or
// from etcd, by the read's kind and the cache's state.

package cacher

import "github.com/watchcache/watchcache/pkg/storage"

// source says where a read is served from.
type source int

const (
	// fromEtcd delegates the read to the wrapped store.
	fromEtcd source = iota + 1
	// fromNewest serves the newest snapshot, after waiting (at most
	// freshnessTimeout) until the cache reaches the requested revision.
	fromNewest
	// fromHistory serves the snapshot holding the state at exactly the
	// requested revision; etcd when that snapshot is no longer kept.
	fromHistory
	// fromConsistent reads etcd's current revision (one read shared by
	// concurrent reads), waits until the cache reaches it, and serves the
	// newest snapshot (KEP-2340).
	fromConsistent
)

// decisionRow is one row of the cache-or-etcd table.
type decisionRow struct {
	read storage.ReadKind
	src  source
	why  string
}

// decisions is the table that decides where gets and lists are served
// (docs/design.md, "Where the cache serves a read"). The read kind comes
// from the semantics tables (storage.PlanGet, storage.PlanList), which
// have already turned resourceVersion × resourceVersionMatch × continue ×
// limit into one of these kinds.
var decisions = []decisionRow{
	{storage.ReadConsistent, fromConsistent,
		"resourceVersion unset must reflect every write acknowledged before the read: once the cache has reached etcd's current revision, its newest snapshot does (KEP-2340); with the feature gate off, etcd"},
	{storage.ReadAny, fromNewest,
		`resourceVersion "0" allows any state: the newest snapshot, with limit and continue honoured (upstream ignores the limit)`},
	{storage.ReadNotOlderThan, fromNewest,
		"a state at revision ≥ N: wait until the cache reaches N, then the newest snapshot"},
	{storage.ReadExact, fromHistory,
		"exactly revision N (Exact, legacy limit+N, continue tokens): the snapshot holding it, so pages of one list share one snapshot"},
}

// cacheState is what decide needs to know about the cache.
type cacheState struct {
	// ready: the cache's list is complete and its watch running.
	ready bool
	// consistentFromCache: the feature gate for this kind of read is on.
	consistentFromCache bool
	// inconsistent: the detector found the cache differs from etcd; until
	// it has listed again, consistent and exact reads go to etcd.
	inconsistent bool
}

// decide returns where to serve a read of the given kind. A cache that is
// not ready (initializing or re-listing) delegates everything to etcd;
// consistent reads go to etcd when their feature gate is off, and
// consistent and exact reads when the cache was found inconsistent.
func decide(read storage.ReadKind, st cacheState) source {
	if !st.ready {
		return fromEtcd
	}
	for _, row := range decisions {
		if row.read != read {
			continue
		}
		switch {
		case row.src == fromConsistent && (!st.consistentFromCache || st.inconsistent):
			return fromEtcd
		case row.src == fromHistory && st.inconsistent:
			return fromEtcd
		}
		return row.src
	}
	return fromEtcd
}
