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
// (DESIGN.md §3). The read kind comes from the semantics tables
// (storage.PlanGet, storage.PlanList), which have already turned
// resourceVersion × resourceVersionMatch × continue × limit into one of
// these kinds.
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

// decide returns where to serve a read of the given kind. A cache that is
// not ready (initializing or re-listing) delegates everything to etcd, and
// consistent reads go to etcd when the feature gate for them is off
// (consistentFromCache false).
func decide(read storage.ReadKind, ready, consistentFromCache bool) source {
	if !ready {
		return fromEtcd
	}
	for _, row := range decisions {
		if row.read == read {
			if row.src == fromConsistent && !consistentFromCache {
				return fromEtcd
			}
			return row.src
		}
	}
	return fromEtcd
}
