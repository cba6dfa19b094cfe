package flowcontrol

import (
	"net/url"
	"testing"

	"github.com/watchcache/watchcache/pkg/requestinfo"
)

// Lists and initializing watches take a seat per 100 objects of their own
// scope, as the cache counts them, within [1, 10]; other requests one; an
// unknown count the maximum.
func TestSeats(t *testing.T) {
	counts := map[string]int{"small": 150, "big": 5000, "": 5150}
	c := &Controller{cfg: Config{CountObjects: func(ri *requestinfo.Info) (int, bool) {
		n, ok := counts[ri.Namespace]
		return n, ok && ri.Resource == "configmaps"
	}}}
	for _, tc := range []struct {
		verb, namespace, resource, query string
		want                             int
	}{
		{"get", "big", "configmaps", "", 1},
		{"create", "big", "configmaps", "", 1},
		{"list", "small", "configmaps", "", 2},
		{"list", "small", "configmaps", "limit=50", 1},
		{"list", "small", "configmaps", "limit=50&labelSelector=a%3Db", 2}, // a selector scans them all
		{"list", "big", "configmaps", "", 10},
		{"list", "", "configmaps", "limit=500", 5},
		{"watch", "small", "configmaps", "", 2},
		{"watch", "small", "configmaps", "resourceVersion=0", 2},
		{"watch", "small", "configmaps", "resourceVersion=12", 1},
		{"watch", "small", "configmaps", "resourceVersion=12&sendInitialEvents=true", 2},
		{"list", "small", "secrets", "", maxSeats}, // not counted
	} {
		q, _ := url.ParseQuery(tc.query)
		ri := &requestinfo.Info{IsResourceRequest: true, Verb: tc.verb, Namespace: tc.namespace, APIVersion: "v1", Resource: tc.resource}
		if got := c.seats(ri, q); got != tc.want {
			t.Errorf("%s %s/%s?%s: %d seats, want %d", tc.verb, tc.namespace, tc.resource, tc.query, got, tc.want)
		}
	}
}
