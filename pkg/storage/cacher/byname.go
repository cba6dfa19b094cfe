// Lists by name from a snapshot: an object per namespace under one name,
// found by skipping through the keys, instead of a walk of the whole scope.

package cacher

import (
	"strings"

	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/storage"
)

// ascendByName calls visit, in key order from key from on, until it
// returns false, with the objects that a list by name (l, see
// storage.LookupByName) can select: the object at l.Key, a lookup whatever
// the size of the resource; or, when l.Key is "" (all namespaces of a
// namespaced resource), the object at "namespace/Name" in each namespace.
//
// The namespaces are found by skipping through the keys: from the first
// key at or after the position, its namespace ns gives the candidate
// "ns/Name", then the next position is the first key after every
// "ns/..." key, "ns0" ('0' follows '/'), so each namespace costs two
// lookups whatever it holds. A key without a namespace (which a
// namespaced resource does not have) is visited as it is, so that the
// answer is the scan's for any keys of one or two segments.
func (sn *snapshot) ascendByName(l storage.NameLookup, from string, visit func(*object.Object) bool) {
	if l.Key != "" {
		if l.Key >= from {
			if obj, ok := sn.get(l.Key); ok {
				visit(obj)
			}
		}
		return
	}
	for pos := from; ; {
		var first *object.Object
		sn.objects.AscendGreaterOrEqual(keyProbe(pos), func(o *object.Object) bool { first = o; return false })
		if first == nil {
			return
		}
		key := first.Key()
		slash := strings.IndexByte(key, '/')
		if slash < 0 {
			if !visit(first) {
				return
			}
			pos = key + "\x00"
			continue
		}
		ns := key[:slash+1]
		if candidate := ns + l.Name; candidate >= pos {
			if obj, ok := sn.get(candidate); ok && !visit(obj) {
				return
			}
		}
		pos = key[:slash] + "0"
	}
}
