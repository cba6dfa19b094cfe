package cacher

import (
	"fmt"
	"math/bits"
	"testing"
	"time"
)

// snapAt is a snapshot with only a revision (the history never looks into
// the trees).
func snapAt(rv uint64) *snapshot { return &snapshot{rv: rv} }

// historyRevs lists the revisions of the snapshots kept, oldest first.
func historyRevs(h *snapshotHistory) []uint64 {
	h.mu.RLock()
	defer h.mu.RUnlock()
	out := make([]uint64, len(h.live()))
	for i, e := range h.live() {
		out[i] = e.sn.rv
	}
	return out
}

func checkRevs(t *testing.T, what string, h *snapshotHistory, want ...uint64) {
	t.Helper()
	if got := historyRevs(h); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%s: history holds %v, want %v", what, got, want)
	}
	if h.len() != len(want) {
		t.Fatalf("%s: len %d, want %d", what, h.len(), len(want))
	}
}

// checkAt checks that at(rv) is the snapshot taken at want (0: none).
func checkAt(t *testing.T, h *snapshotHistory, rv, want uint64) {
	t.Helper()
	sn, ok := h.at(rv)
	switch {
	case want == 0 && ok:
		t.Fatalf("at(%d) = snapshot at %d, want none", rv, sn.rv)
	case want != 0 && !ok:
		t.Fatalf("at(%d): none, want the snapshot at %d", rv, want)
	case want != 0 && sn.rv != want:
		t.Fatalf("at(%d) = snapshot at %d, want %d", rv, sn.rv, want)
	}
}

// TestHistoryAt: at(N) is the newest snapshot taken at or before N (it
// stands for every revision up to the next snapshot), none before the
// oldest; reset starts over; add at the newest revision replaces it.
func TestHistoryAt(t *testing.T) {
	h := newSnapshotHistory(time.Hour, 100)
	checkAt(t, h, 5, 0)
	now := time.Now()
	h.reset(snapAt(10), now)
	h.add(snapAt(12), now)
	h.add(snapAt(15), now)
	checkRevs(t, "after adds", h, 10, 12, 15)
	for rv, want := range map[uint64]uint64{0: 0, 1: 0, 9: 0, 10: 10, 11: 10, 12: 12, 14: 12, 15: 15, 16: 15, 1 << 40: 15} {
		checkAt(t, h, rv, want)
	}

	// The same revision again (a snapshot re-published at the newest
	// revision) replaces the newest entry.
	replacement := snapAt(15)
	h.add(replacement, now)
	checkRevs(t, "after re-adding 15", h, 10, 12, 15)
	if sn, _ := h.at(15); sn != replacement {
		t.Fatal("at(15) is not the snapshot added last at 15")
	}

	// A re-list forgets everything before it.
	h.reset(snapAt(20), now)
	checkRevs(t, "after reset", h, 20)
	checkAt(t, h, 15, 0)
	checkAt(t, h, 19, 0)
	checkAt(t, h, 20, 20)
	checkAt(t, h, 25, 20)
}

// TestHistoryWindow: snapshots taken longer than the window before the
// newest add are dropped; the newest is always kept.
func TestHistoryWindow(t *testing.T) {
	h := newSnapshotHistory(10*time.Second, 100)
	t0 := time.Now()
	h.reset(snapAt(1), t0)
	h.add(snapAt(2), t0.Add(5*time.Second))
	h.add(snapAt(3), t0.Add(10*time.Second)) // 1 is exactly 10 s old: kept
	checkRevs(t, "at 10s", h, 1, 2, 3)
	h.add(snapAt(4), t0.Add(12*time.Second)) // 1 is 12 s old
	checkRevs(t, "at 12s", h, 2, 3, 4)
	checkAt(t, h, 1, 0)
	checkAt(t, h, 2, 2)
	h.add(snapAt(5), t0.Add(16*time.Second)) // 2 is 11 s old
	checkRevs(t, "at 16s", h, 3, 4, 5)
	h.add(snapAt(6), t0.Add(time.Hour)) // everything else is old
	checkRevs(t, "an hour later", h, 6)
	h.add(snapAt(7), t0.Add(2*time.Hour))
	checkRevs(t, "two hours later", h, 7)
	checkAt(t, h, 100, 7)
	checkAt(t, h, 6, 0)

	// A zero window keeps only the newest.
	h = newSnapshotHistory(0, 100)
	h.reset(snapAt(1), t0)
	h.add(snapAt(2), t0.Add(time.Nanosecond))
	checkRevs(t, "zero window", h, 2)
}

// TestHistoryCapacity: beyond capacity the oldest snapshots are dropped;
// capacity 1 (and 0) keep the newest.
func TestHistoryCapacity(t *testing.T) {
	now := time.Now()
	h := newSnapshotHistory(time.Hour, 3)
	h.reset(snapAt(1), now)
	for rv := uint64(2); rv <= 10; rv++ {
		h.add(snapAt(rv), now)
	}
	checkRevs(t, "capacity 3", h, 8, 9, 10)
	checkAt(t, h, 7, 0)
	checkAt(t, h, 8, 8)
	for _, capacity := range []int{1, 0} {
		h := newSnapshotHistory(time.Hour, capacity)
		h.reset(snapAt(1), now)
		h.add(snapAt(2), now)
		h.add(snapAt(3), now)
		checkRevs(t, fmt.Sprintf("capacity %d", capacity), h, 3)
	}
}

// compactedBelow is a fake IsCompacted: etcd compacted at c, so every
// revision below c is gone (c itself is readable). It counts its calls.
type compactedBelow struct {
	c     uint64
	calls int
}

func (f *compactedBelow) compacted(rev uint64) bool {
	f.calls++
	return rev < f.c
}

// TestHistoryTrimCompacted: trimCompacted drops exactly the snapshots
// whose revisions (from theirs up to the next snapshot's) are all
// compacted, keeps the newest, and asks about O(log n) revisions.
func TestHistoryTrimCompacted(t *testing.T) {
	now := time.Now()
	const n = 1000
	// Snapshots at 10, 20, ..., 10n: the one at 10i stands for 10i..10i+9.
	build := func() *snapshotHistory {
		h := newSnapshotHistory(time.Hour, 2*n)
		h.reset(snapAt(10), now)
		for i := uint64(2); i <= n; i++ {
			h.add(snapAt(10*i), now)
		}
		return h
	}
	maxCalls := bits.Len(uint(n)) + 1
	for _, tc := range []struct {
		compactedAt uint64
		oldestKept  uint64
	}{
		{0, 10},          // nothing compacted
		{5, 10},          // below the oldest
		{10, 10},         // at the oldest: 10 is readable
		{11, 10},         // 10 is gone, 11..19 are not
		{19, 10},         // 10..18 gone, 19 readable
		{20, 20},         // 10..19 all gone
		{21, 20},         //
		{5555, 5550},     // inside
		{5560, 5560},     // at a snapshot
		{9999, 9990},     // inside the second newest
		{10000, 10000},   // at the newest: only it remains
		{10001, 10000},   // above the newest: it is kept anyway
		{1 << 40, 10000}, //
	} {
		t.Run(fmt.Sprint(tc.compactedAt), func(t *testing.T) {
			h := build()
			f := &compactedBelow{c: tc.compactedAt}
			h.trimCompacted(f.compacted)
			revs := historyRevs(h)
			if revs[0] != tc.oldestKept || revs[len(revs)-1] != 10*n || len(revs) != int((10*n-tc.oldestKept)/10+1) {
				t.Fatalf("compacted at %d: history holds %d snapshots from %d to %d, want from %d to %d", tc.compactedAt, len(revs), revs[0], revs[len(revs)-1], tc.oldestKept, 10*n)
			}
			if f.calls > maxCalls {
				t.Errorf("%d calls to compacted for %d snapshots, want at most %d", f.calls, n, maxCalls)
			}
			// Every revision still answered is not compacted, or is the
			// newest snapshot's; revisions below the oldest are not.
			checkAt(t, h, tc.oldestKept-1, 0)
			checkAt(t, h, max(tc.compactedAt, tc.oldestKept), min(max(tc.compactedAt, tc.oldestKept)/10*10, 10*n))
			// A second trim at the same compaction changes nothing.
			f.calls = 0
			h.trimCompacted(f.compacted)
			if got := historyRevs(h); len(got) != len(revs) {
				t.Errorf("a second trim left %d snapshots, want %d", len(got), len(revs))
			}
		})
	}

	// Adjacent revisions: a snapshot at S followed by one at S+1 stands for
	// S alone.
	h := newSnapshotHistory(time.Hour, 10)
	h.reset(snapAt(1), now)
	for rv := uint64(2); rv <= 5; rv++ {
		h.add(snapAt(rv), now)
	}
	h.trimCompacted((&compactedBelow{c: 3}).compacted)
	checkRevs(t, "adjacent, compacted at 3", h, 3, 4, 5)

	// Fewer than two snapshots: nothing to ask.
	h = newSnapshotHistory(time.Hour, 10)
	f := &compactedBelow{c: 100}
	h.trimCompacted(f.compacted)
	h.reset(snapAt(1), now)
	h.trimCompacted(f.compacted)
	checkRevs(t, "single snapshot", h, 1)
	if f.calls != 0 {
		t.Errorf("%d calls to compacted with fewer than two snapshots", f.calls)
	}
}

// TestHistoryTrimCompactedConcurrentChanges: compacted is called without
// the lock, so the history may change meanwhile. Snapshots appended
// meanwhile are kept; when the oldest snapshots were dropped meanwhile
// (capacity, window, reset) the trim is skipped rather than dropping the
// wrong ones.
func TestHistoryTrimCompactedConcurrentChanges(t *testing.T) {
	now := time.Now()
	build := func(capacity int) *snapshotHistory {
		h := newSnapshotHistory(time.Hour, capacity)
		h.reset(snapAt(10), now)
		for rv := uint64(20); rv <= 100; rv += 10 {
			h.add(snapAt(rv), now)
		}
		return h
	}

	t.Run("appended", func(t *testing.T) {
		h := build(100)
		first := true
		h.trimCompacted(func(rev uint64) bool {
			if first {
				first = false
				h.add(snapAt(110), now)
				h.add(snapAt(120), now)
			}
			return rev < 55
		})
		checkRevs(t, "", h, 50, 60, 70, 80, 90, 100, 110, 120)
	})
	t.Run("oldest dropped by capacity", func(t *testing.T) {
		h := build(10)
		first := true
		h.trimCompacted(func(rev uint64) bool {
			if first {
				first = false
				h.add(snapAt(110), now) // drops 10
			}
			return rev < 55
		})
		revs := historyRevs(h)
		// Skipping is fine; dropping snapshots at or after the one
		// holding 55 is not.
		if revs[0] > 50 || revs[len(revs)-1] != 110 {
			t.Fatalf("history holds %v", revs)
		}
	})
	t.Run("reset", func(t *testing.T) {
		h := build(100)
		first := true
		h.trimCompacted(func(rev uint64) bool {
			if first {
				first = false
				h.reset(snapAt(200), now)
				h.add(snapAt(210), now)
			}
			return rev < 95
		})
		checkRevs(t, "", h, 200, 210)
	})
}

// historyPinned counts the snapshots h no longer keeps but still
// references.
func historyPinned(h *snapshotHistory) int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return pinned(&h.entries)
}

// TestHistoryReleasesDroppedSnapshots: snapshots dropped by trimming are
// released (dropLocked clears their slots).
func TestHistoryReleasesDroppedSnapshots(t *testing.T) {
	now := time.Now()
	h := newSnapshotHistory(time.Hour, 10)
	h.reset(snapAt(1), now)
	for rv := uint64(2); rv <= 100; rv++ {
		h.add(snapAt(rv), now)
	}
	if n := historyPinned(h); n != 0 {
		t.Errorf("%d snapshots dropped by capacity are still referenced", n)
	}
	h.trimCompacted((&compactedBelow{c: 98}).compacted)
	checkRevs(t, "trimmed", h, 98, 99, 100)
	if n := historyPinned(h); n != 0 {
		t.Errorf("%d snapshots dropped for compaction are still referenced", n)
	}
}

// TestHistoryResetReleasesSnapshots: after reset (a re-list) the old
// snapshots are no longer referenced. It fails: reset truncates the slice
// in place, so the backing array keeps every
// old snapshot (whole old states of the resource) reachable until as many
// new snapshots overwrite their slots, indefinitely if the resource is
// quiet after the re-list.
func TestHistoryResetReleasesSnapshots(t *testing.T) {
	now := time.Now()
	h := newSnapshotHistory(time.Hour, 1000)
	h.reset(snapAt(1), now)
	for rv := uint64(2); rv <= 100; rv++ {
		h.add(snapAt(rv), now)
	}
	h.reset(snapAt(500), now)
	checkRevs(t, "after reset", h, 500)
	if n := historyPinned(h); n != 0 {
		t.Errorf("%d snapshots of the history before the re-list are still referenced", n)
	}
}
