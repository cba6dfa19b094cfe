package cacher

// pinned counts the entries q's backing array still references outside
// the entries kept (what the garbage collector cannot free): before head
// and beyond the length.
func pinned[T comparable](q *queue[T]) int {
	var zero T
	n := 0
	for _, v := range append(q.items[:q.head:q.head], q.items[len(q.items):cap(q.items)]...) {
		if v != zero {
			n++
		}
	}
	return n
}
