// Conformance tests of shard selectors (KEP-5866): sharded lists by uid and
// by namespace, sharded watches, and the feature gate off.

package storagetest

import (
	"crypto/sha256"
	"fmt"
	"hash/fnv"
	"testing"

	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/storage"
	"github.com/watchcache/watchcache/pkg/storage/etcd3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Sharded lists and watches (KEP-5866, ListOptions.Shard): the oracle
// places each object by the hash's definition (FNV-1a 64 of its uid or
// namespace, computed here with hash/fnv), independently of the stores.

// shardBounds are the bounds of four equal shards of the hash space.
var shardBounds = []string{"0x0000000000000000", "0x4000000000000000", "0x8000000000000000", "0xc000000000000000", "0x10000000000000000"}

// shardTest is one shard selector and what it must select.
type shardTest struct {
	sel  *storage.ShardSelector
	keep func(*object.Object) bool
}

// fnv64a is the shard hash by its definition.
func fnv64a(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
}

// shardOf is the shard of four (by shardBounds) that a hash falls in.
func shardOf(h uint64) int { return int(h >> 62) }

// uidShards are the four shards of the uid hash space.
func uidShards(t *testing.T) []shardTest {
	t.Helper()
	var out []shardTest
	for i := range 4 {
		sel, err := storage.ParseShardSelector(fmt.Sprintf("shardRange(object.metadata.uid, '%s', '%s')", shardBounds[i], shardBounds[i+1]))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, shardTest{sel, func(o *object.Object) bool { return shardOf(fnv64a(o.UID())) == i }})
	}
	return out
}

// randomUID is a uuid-like uid that spreads over the hash space (a
// sequential one would not: FNV-1a keeps strings that differ in their last
// bytes close), the same for the same name in every run.
func randomUID(name string) string {
	s := fmt.Sprintf("%x", sha256.Sum256([]byte(name)))
	return s[:8] + "-" + s[8:12] + "-" + s[12:16] + "-" + s[16:20] + "-" + s[20:32]
}

// createSharded creates count pods named prefix00, prefix01… in namespace
// with spread uids, labeled app=even or app=odd.
func (e *env) createSharded(namespace, prefix string, count int) []*object.Object {
	e.t.Helper()
	var out []*object.Object
	for i := range count {
		name := fmt.Sprintf("%s%02d", prefix, i)
		app := map[bool]string{true: "even", false: "odd"}[i%2 == 0]
		data := podUID(namespace, name, randomUID(namespace+"/"+name), "n1", map[string]string{"app": app})
		out = append(out, e.createData(namespace, name, data))
	}
	return out
}

// checkShardList checks an unpaged sharded list: the state at its
// revision restricted to the shard, marked as sharded by sel, without
// RemainingItemCount.
func (e *env) checkShardList(what string, list *storage.List, scope string, sel *storage.ShardSelector, keep func(*object.Object) bool) {
	e.t.Helper()
	e.assertListIsStateAt(what, list, scope, keep)
	if list.Shard != sel {
		e.t.Fatalf("%s: List.Shard is %v, want the request's selector %q", what, list.Shard, sel)
	}
	if list.RemainingItemCount != nil || list.Continue != "" {
		e.t.Fatalf("%s: unpaged sharded list has RemainingItemCount %d and token %q", what, remaining(list), list.Continue)
	}
}

// Four shards of the uid space, listed unpaged and paged (limit 2, the
// shard a selector like the others: pages may be short or empty, no
// RemainingItemCount), over the whole resource and one namespace, at the
// newest revision, "0" and an exact older one, alone and with a label
// selector: each is the state restricted to the objects whose uid hashes
// into it, the lists say they are sharded, and together the four hold
// every object exactly once.
var _ = register("ShardList", func(t *testing.T, e *env) {
	var pods []*object.Object
	for _, ns := range []string{"ns1", "ns2", "team-a"} {
		pods = append(pods, e.createSharded(ns, "s", 12)...)
	}
	pods = append(pods, e.createSharded("", "s", 4)...) // cluster-scoped
	mid := e.hist.lastRV()
	// Changes after mid: updates (labels move objects in and out of the
	// label selector, never between shards), a deletion, a creation.
	for _, o := range pods[:6] {
		e.update(o, "n2", map[string]string{"app": "even"})
	}
	e.remove(pods[7].Key())
	e.createSharded("ns3", "s", 2)

	shards := uidShards(t)
	for i, s := range shards {
		if n := len(e.hist.stateAt(e.hist.lastRV(), "", s.keep)); n < 3 {
			t.Fatalf("test setup: shard %d holds %d objects", i, n)
		}
	}
	even := labels.SelectorFromSet(labels.Set{"app": "even"})
	isEven := func(o *object.Object) bool { return o.Labels().Get("app") == "even" }
	for _, scope := range []string{"", "ns1/"} {
		seen := map[string]int{}
		for i, s := range shards {
			what := fmt.Sprintf("shard %d over %q", i, scope)
			list := e.getPage(what, scope, storage.ListOptions{Shard: s.sel})
			e.checkListRV(what, list, wantConsistent, 0)
			e.checkShardList(what, list, scope, s.sel, s.keep)
			for _, o := range list.Items {
				seen[o.Key()]++
			}

			first := e.getPage(what+" paged", scope, storage.ListOptions{Shard: s.sel, Limit: 2})
			if first.Shard != s.sel {
				t.Fatalf("%s paged: List.Shard is %v", what, first.Shard)
			}
			e.readPages(what+" paged", nil, first, 2, scope, storage.ListOptions{Shard: s.sel, Limit: 2}, s.keep)

			// With a label selector too: both must pass.
			both := func(o *object.Object) bool { return s.keep(o) && isEven(o) }
			list = e.getPage(what+" and app=even", scope, storage.ListOptions{Shard: s.sel, Labels: even})
			e.checkShardList(what+" and app=even", list, scope, s.sel, both)
			first = e.getPage(what+" and app=even, paged", scope, storage.ListOptions{Shard: s.sel, Labels: even, Limit: 1})
			e.readPages(what+" and app=even, paged", nil, first, 1, scope, storage.ListOptions{Shard: s.sel, Labels: even, Limit: 1}, both)

			// Any state ("0"), and the state at mid (exact).
			list = e.getPage(what+" at 0", scope, storage.ListOptions{Shard: s.sel, ResourceVersion: "0"})
			e.checkShardList(what+" at 0", list, scope, s.sel, s.keep)
			exact := storage.ListOptions{Shard: s.sel, ResourceVersion: rvString(mid), ResourceVersionMatch: metav1.ResourceVersionMatchExact}
			list = e.getPage(what+" at mid", scope, exact)
			e.checkListRV(what+" at mid", list, wantExact, mid)
			e.checkShardList(what+" at mid", list, scope, s.sel, s.keep)
			exact.Limit = 3
			first = e.getPage(what+" at mid, paged", scope, exact)
			e.readPages(what+" at mid, paged", nil, first, 3, scope, storage.ListOptions{Shard: s.sel, Limit: 3}, s.keep)
		}
		all := e.hist.stateAt(e.hist.lastRV(), scope, nil)
		if len(seen) != len(all) {
			t.Fatalf("the four shards over %q hold %d objects, want all %d", scope, len(seen), len(all))
		}
		for key, n := range seen {
			if n != 1 {
				t.Fatalf("%s is in %d shards over %q", key, n, scope)
			}
		}
	}

	// The shards of two ranges each: the union of theirs.
	pair, err := storage.ParseShardSelector(shards[0].sel.String() + " || " + shards[2].sel.String())
	if err != nil {
		t.Fatal(err)
	}
	list := e.getPage("shards 0 and 2", "", storage.ListOptions{Shard: pair})
	e.checkShardList("shards 0 and 2", list, "", pair, func(o *object.Object) bool { return shards[0].keep(o) || shards[2].keep(o) })
})

// Two shards of the namespace space: every object of a namespace is in the
// same shard, cluster-scoped ones in the shard of "" (FNV's offset basis,
// in the upper half).
var _ = register("ShardListByNamespace", func(t *testing.T, e *env) {
	// Namespaces on both sides of 2^63.
	var low, high []string
	for i := 0; len(low) < 2 || len(high) < 2; i++ {
		ns := fmt.Sprintf("team-%d", i)
		if fnv64a(ns) < 1<<63 {
			low = append(low, ns)
		} else {
			high = append(high, ns)
		}
	}
	for _, ns := range append(low[:2], high[:2]...) {
		e.createSharded(ns, "s", 3)
	}
	e.createSharded("", "s", 2)
	for _, tc := range []struct {
		start, end string
		upper      bool
	}{{shardBounds[0], shardBounds[2], false}, {shardBounds[2], shardBounds[4], true}} {
		sel, err := storage.ParseShardSelector(fmt.Sprintf("shardRange(object.metadata.namespace, '%s', '%s')", tc.start, tc.end))
		if err != nil {
			t.Fatal(err)
		}
		keep := func(o *object.Object) bool { return (fnv64a(o.Namespace()) >= 1<<63) == tc.upper }
		what := "namespaces from " + tc.start
		list := e.getPage(what, "", storage.ListOptions{Shard: sel})
		e.checkShardList(what, list, "", sel, keep)
		want := 6 // two namespaces of 3
		if tc.upper {
			want += 2 // and the cluster-scoped objects
		}
		if len(list.Items) != want {
			t.Fatalf("%s: %d objects, want %d", what, len(list.Items), want)
		}
		first := e.getPage(what+" paged", "", storage.ListOptions{Shard: sel, Limit: 2})
		e.readPages(what+" paged", nil, first, 2, "", storage.ListOptions{Shard: sel, Limit: 2}, keep)
	}
})

// A watch on a shard sees every event of its objects and nothing else:
// one watch per uid shard from a revision ("_RV_ | _unset_ | _unset_"),
// one with its initial state ("_unset_ | _NotOlderThan_ | true"), and one
// with a label selector too (objects entering and leaving it within the
// shard are ADDED and DELETED), through creations, updates and deletions
// of objects of every shard.
var _ = register("ShardWatch", func(t *testing.T, e *env) {
	pods := e.createSharded("ns1", "s", 16)
	pods = append(pods, e.createSharded("ns2", "s", 8)...)
	start := e.hist.lastRV()
	shards := uidShards(t)
	even := labels.SelectorFromSet(labels.Set{"app": "even"})
	isEven := func(o *object.Object) bool { return o.Labels().Get("app") == "even" }
	type shardWatch struct {
		what  string
		w     storage.Watcher
		scope string
		keep  func(*object.Object) bool
		init  bool
	}
	var watches []shardWatch
	for i, s := range shards {
		watches = append(watches,
			shardWatch{fmt.Sprintf("shard %d from %d", i, start), e.watch(t, e.ctx, "", storage.ListOptions{ResourceVersion: rvString(start), Shard: s.sel}), "", s.keep, false},
			shardWatch{fmt.Sprintf("shard %d with its initial state over ns1/", i),
				e.watch(t, e.ctx, "ns1/", storage.ListOptions{ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, SendInitialEvents: watchBool(true), AllowWatchBookmarks: true, Shard: s.sel}),
				"ns1/", s.keep, true},
			shardWatch{fmt.Sprintf("shard %d and app=even from %d", i, start),
				e.watch(t, e.ctx, "", storage.ListOptions{ResourceVersion: rvString(start), Shard: s.sel, Labels: even}), "",
				func(o *object.Object) bool { return s.keep(o) && isEven(o) }, false})
	}
	current, err := e.store.CurrentResourceVersion(e.ctx)
	if err != nil {
		t.Fatal(err)
	}

	for i, o := range pods {
		switch i % 4 {
		case 0:
			e.update(o, "n2", map[string]string{"app": "odd"}) // leaves app=even
		case 1:
			e.update(o, "n2", map[string]string{"app": "even"}) // enters it
		case 2:
			e.remove(o.Key())
		}
	}
	e.createSharded("ns3", "s", 8)
	e.createSharded("ns1", "t", 6)

	for _, sw := range watches {
		want := watchEventsAfter(e.hist, start, sw.scope, sw.keep)
		if len(want) < 2 {
			t.Fatalf("test setup: %s expects %d events", sw.what, len(want))
		}
		got := watchCollect(t, sw.w, want[len(want)-1].obj.ResourceVersion())
		x := watchExpect{scope: sw.scope, keep: sw.keep, starts: []uint64{start}}
		if sw.init {
			x = watchExpect{scope: sw.scope, keep: sw.keep, initial: true, endBookmark: true, minR: start, maxR: current, bookmarksOK: true}
		}
		e.checkWatch(t, sw.what, got, x)
		watchQuiet(t, sw.what, sw.w, watchQuietWait, sw.init)
	}
})

// With the ShardedListAndWatch gate off, a store ignores shard selectors:
// lists and watches are whole, and lists do not say they are sharded.
var _ = register("ShardGateOff", func(t *testing.T, e *env) {
	off := *e
	off.store = e.storeWith(func(c *etcd3.Config) { c.DisableShardedListAndWatch = true })
	e.createSharded("ns1", "s", 8)
	start := e.hist.lastRV()
	sel := uidShards(t)[0].sel
	if n := len(e.hist.stateAt(start, "", uidShards(t)[0].keep)); n == 8 {
		t.Fatal("test setup: every object is in the shard")
	}
	for _, opts := range []storage.ListOptions{{Shard: sel}, {Shard: sel, Limit: 3}, {Shard: sel, ResourceVersion: "0"}} {
		what := fmt.Sprintf("gate off, limit %d, resourceVersion %q", opts.Limit, opts.ResourceVersion)
		list := off.getPage(what, "", opts)
		if list.Shard != nil {
			t.Fatalf("%s: List.Shard is %q", what, list.Shard)
		}
		if opts.Limit > 0 && remaining(list) != 5 {
			t.Fatalf("%s: RemainingItemCount %d, want 5: the shard selector does not filter", what, remaining(list))
		}
		// The rest, without the selector (which this store ignores).
		off.readPages(what, nil, list, opts.Limit, "", storage.ListOptions{Limit: opts.Limit}, nil)
	}
	w := off.watch(t, e.ctx, "", storage.ListOptions{ResourceVersion: rvString(start), Shard: sel})
	e.createSharded("ns2", "s", 8)
	want := watchEventsAfter(e.hist, start, "", nil)
	got := watchCollect(t, w, want[len(want)-1].obj.ResourceVersion())
	off.checkWatch(t, "gate off", got, watchExpect{scope: "", starts: []uint64{start}})
})
