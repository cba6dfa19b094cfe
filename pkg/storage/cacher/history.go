// The snapshot history: snapshots of recent revisions, for lists at an exact
// or a minimum resourceVersion, trimmed by window, capacity and etcd's
// compactions.

package cacher

import (
	"sort"
	"sync"
	"time"
)

// snapshotHistory keeps recent snapshots by revision, for exact-revision
// lists and list continuations. A snapshot taken at revision S stands for
// every revision from S up to (excluding) the next snapshot's: nothing
// changed in between.
//
// It is written by the reflector goroutine and read by any request; a
// mutex guards the slice (held only for appends, trims and a binary
// search).
type snapshotHistory struct {
	window   time.Duration
	capacity int

	mu      sync.RWMutex
	entries queue[historyEntry] // by ascending revision
}

type historyEntry struct {
	sn    *snapshot
	taken time.Time
}

func newSnapshotHistory(window time.Duration, capacity int) *snapshotHistory {
	return &snapshotHistory{window: window, capacity: capacity}
}

// reset drops every snapshot and starts over from sn (a re-list: the
// history before it is unknown).
func (h *snapshotHistory) reset(sn *snapshot, now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.entries.clear() // release the old snapshots
	h.entries.push(historyEntry{sn, now})
}

// live returns the snapshots kept, oldest first. Guarded by mu.
func (h *snapshotHistory) live() []historyEntry { return h.entries.all() }

// add records the snapshot after an applied event (or progress), trimming
// what fell out of the window or beyond capacity. The newest snapshot is
// always kept.
func (h *snapshotHistory) add(sn *snapshot, now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if live := h.live(); len(live) > 0 && live[len(live)-1].sn.rv == sn.rv {
		live[len(live)-1] = historyEntry{sn, now}
	} else {
		h.entries.push(historyEntry{sn, now})
	}
	live := h.live()
	drop := 0
	for drop < len(live)-1 && (len(live)-drop > h.capacity || now.Sub(live[drop].taken) > h.window) {
		drop++
	}
	h.dropLocked(drop)
}

// trimCompacted drops the oldest snapshots whose revisions etcd has all
// compacted away (compacted(rev) reports whether rev is): etcd can no
// longer serve those revisions either, so there is no point holding them.
// A snapshot stands for the revisions up to the next one's, so it goes when
// the revision just before the next snapshot is compacted. The newest
// snapshot is always kept. Binary search: a handful of calls to compacted,
// made without the lock.
func (h *snapshotHistory) trimCompacted(compacted func(rev uint64) bool) {
	h.mu.RLock()
	live := h.live()
	if len(live) < 2 {
		h.mu.RUnlock()
		return
	}
	oldest := live[0].sn
	lastRevs := make([]uint64, len(live)-1) // lastRevs[i]: last revision live[i] stands for
	for i := range lastRevs {
		lastRevs[i] = live[i+1].sn.rv - 1
	}
	h.mu.RUnlock()
	drop := sort.Search(len(lastRevs), func(i int) bool { return !compacted(lastRevs[i]) })
	h.mu.Lock()
	defer h.mu.Unlock()
	if live := h.live(); len(live) > drop && live[0].sn == oldest {
		h.dropLocked(drop)
	}
}

// dropLocked drops the n oldest snapshots. Guarded by mu.
func (h *snapshotHistory) dropLocked(n int) { h.entries.dropFront(n) }

// at returns the snapshot that holds the state at revision rv: the newest
// one taken at or before rv. ok is false when rv is older than the oldest
// snapshot kept. The caller must know the cache has reached rv.
func (h *snapshotHistory) at(rv uint64) (*snapshot, bool) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	live := h.live()
	i := sort.Search(len(live), func(i int) bool { return live[i].sn.rv > rv })
	if i == 0 {
		return nil, false
	}
	return live[i-1].sn, true
}

// len is the number of snapshots kept.
func (h *snapshotHistory) len() int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return len(h.live())
}
