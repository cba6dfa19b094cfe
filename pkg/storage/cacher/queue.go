// A FIFO queue over a slice, for the event log and the snapshot history.

package cacher

// queue is a slice that grows at the back and drops from the front, for the
// event log and the snapshot history: a full one drops an entry per entry
// added, and moving every other entry each time (100,000 events, 10,000
// snapshots) cost more than the work the entry stands for. Dropping advances
// head instead; the dropped prefix is reclaimed once it is half the slice,
// so a drop costs O(1) amortized, into a smaller array when the queue has
// shrunk to a quarter of its capacity (giving memory back). Dropped slots
// are zeroed, so what they held can be freed.
//
// Not safe for concurrent use: its owner guards it.
type queue[T any] struct {
	items []T // items[:head] are dropped
	head  int
}

// all returns the entries kept, oldest first. The slice is the queue's own:
// valid until the next change.
func (q *queue[T]) all() []T { return q.items[q.head:] }

// push appends an entry.
func (q *queue[T]) push(v T) { q.items = append(q.items, v) }

// clear drops every entry.
func (q *queue[T]) clear() {
	clear(q.items)
	q.items, q.head = q.items[:0], 0
}

// dropFront drops the n oldest entries.
func (q *queue[T]) dropFront(n int) {
	if n == 0 {
		return
	}
	clear(q.items[q.head : q.head+n])
	q.head += n
	if q.head < len(q.items)-q.head {
		return
	}
	kept := q.all()
	if cap(q.items) > 1024 && len(kept) < cap(q.items)/4 {
		q.items, q.head = append(make([]T, 0, 2*len(kept)), kept...), 0
		return
	}
	n = copy(q.items, kept)
	clear(q.items[n:])
	q.items, q.head = q.items[:n], 0
}
