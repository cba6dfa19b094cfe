package cacher

import "testing"

// TestNextPageSize: pages of the initial list hold about listPageBytes of
// objects, within their bounds.
func TestNextPageSize(t *testing.T) {
	for _, c := range []struct {
		objects, bytes int
		want           int64
	}{
		{0, 0, firstPageSize},                          // nothing known yet
		{500, 500 * 2200, listPageSize},                // small pods: the most objects
		{500, 500 * 25000, 1342},                       // 25 KB objects: 32 MiB pages
		{500, 500 * 1 << 20, minPageSize},              // 1 MiB objects: the fewest
		{3, 3 * 100000, int64(listPageBytes / 100000)}, // a short last page still tells the size
	} {
		if got := nextPageSize(c.objects, c.bytes); got != c.want {
			t.Errorf("nextPageSize(%d, %d) = %d, want %d", c.objects, c.bytes, got, c.want)
		}
	}
}
