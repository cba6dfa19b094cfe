// Work estimates: how many seats a request occupies while it executes.

package flowcontrol

import (
	"net/url"
	"strconv"

	"github.com/watchcache/watchcache/pkg/requestinfo"
)

// A list (or a watch's initial events) takes a seat per objectsPerSeat
// objects it reads, at least one and at most maxSeats (kube-apiserver's
// figures).
const (
	objectsPerSeat = 100
	maxSeats       = 10
)

// seats estimates the seats a request takes: one, but for lists and the
// initialization of watches that send the collection first (no
// resourceVersion or "0", or sendInitialEvents=true), which take one per
// objectsPerSeat objects they read.
//
// Beyond kube-apiserver, which estimates from a per-resource object count
// that it refreshes from etcd once a minute (so a list of one namespace is
// charged for the whole resource, and a resource that grew a minute ago is
// charged as it was), the count is the watch cache's exact count of the
// request's own scope (Config.CountObjects): a list of a small namespace
// takes one seat however big the resource, and a collection that has just
// grown is charged as it now is. When the count is unknown (no cache, or
// a cache not ready, so that the list goes to etcd) the request takes
// maxSeats, as kube-apiserver charges a list whose count is stale.
func (c *Controller) seats(ri *requestinfo.Info, q url.Values) int {
	switch ri.Verb {
	case "list":
	case "watch":
		if rv := q.Get("resourceVersion"); rv != "" && rv != "0" && q.Get("sendInitialEvents") != "true" {
			return 1
		}
	default:
		return 1
	}
	if c.cfg.CountObjects == nil {
		return maxSeats
	}
	n, ok := c.cfg.CountObjects(ri)
	if !ok {
		return maxSeats
	}
	if limit, err := strconv.Atoi(q.Get("limit")); ri.Verb == "list" && err == nil && limit > 0 &&
		q.Get("labelSelector") == "" && q.Get("fieldSelector") == "" {
		n = min(n, limit) // a page reads no further than its limit
	}
	return min(max(1, (n+objectsPerSeat-1)/objectsPerSeat), maxSeats)
}
