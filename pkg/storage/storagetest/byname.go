// Conformance tests of lists and watches by name (a metadata.name field
// selector), over namespaced and cluster-scoped resources.

package storagetest

import (
	"fmt"
	"testing"

	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/storage"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
)

// Lists and watches by name (field selector metadata.name=N, what a
// single-object informer sends), which the stores serve as point lookups:
// their answers must be the oracle's, as for any selector.

// byNameSelectors are the selectors a list or watch by name is tried with:
// the name alone, with a label selector, with another field.
func byNameSelectors(name string) []storage.ListOptions {
	sel := fields.OneTermEqualSelector("metadata.name", name)
	return []storage.ListOptions{
		{Fields: sel},
		{Fields: sel, Labels: labels.SelectorFromSet(labels.Set{"app": "one"})},
		{Fields: fields.AndSelectors(sel, fields.OneTermEqualSelector("spec.nodeName", "node-1"))},
	}
}

// checkListsByName reads lists by each name over each scope with each
// selector (byNameSelectors), as each read kind says (at revision mid for
// those that take one), with no limit and a limit of 1, and checks them
// against the oracle, pages followed to the end.
func (e *env) checkListsByName(t *testing.T, names, scopes []string, mid uint64) {
	N := rvString(mid)
	rows := []struct {
		row  string
		opts storage.ListOptions
		want rvWant
	}{
		{"consistent", storage.ListOptions{}, wantConsistent},
		{"any", storage.ListOptions{ResourceVersion: "0"}, wantAny},
		{"not older than", storage.ListOptions{ResourceVersion: N, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan}, wantNotOlderThan},
		{"exact", storage.ListOptions{ResourceVersion: N, ResourceVersionMatch: metav1.ResourceVersionMatchExact}, wantExact},
	}
	for _, r := range rows {
		t.Run(rowName(r.row), func(t *testing.T) {
			e := e.sub(t)
			for _, name := range names {
				for _, scope := range scopes {
					for _, sel := range byNameSelectors(name) {
						for _, limit := range []int64{0, 1} {
							opts := r.opts
							opts.Fields, opts.Labels, opts.Limit = sel.Fields, sel.Labels, limit
							what := fmt.Sprintf("%s list over %s, fields %v, labels %v, limit %d", r.row, scopeName(scope), sel.Fields, sel.Labels, limit)
							list, err := e.store.GetList(e.ctx, scope, opts)
							if err != nil {
								t.Fatalf("%s: %v", what, err)
							}
							e.checkListRV(what, list, r.want, mid)
							if list.Continue != "" && (scope != "" || e.store.Schema().ClusterScoped()) {
								t.Fatalf("%s: a continue token, where one key holds the only object there can be", what)
							}
							next := storage.ListOptions{Limit: limit, Fields: sel.Fields, Labels: sel.Labels}
							e.readPages(what, nil, list, limit, scope, next, func(o *object.Object) bool { return sel.Matches(o) })
						}
					}
				}
			}
		})
	}
}

// Lists by name over setupListFixture's objects: names in several
// namespaces ("a"), updated, deleted or created after the revision of
// the exact reads, absent; over every namespace, one, and a namespace
// whose name has another's as a prefix; the fixture's objects without a
// namespace among them.
var _ = register("ListByName", func(t *testing.T, e *env) {
	mid := setupListFixture(e)
	e.checkListsByName(t, []string{"a", "d", "e", "f", "c-a", "c-c", "zz"}, []string{"", "ns1/", "ns2/", "ns10/"}, mid)
})

// clusterScoped returns an env of its own for a cluster-scoped resource:
// a new prefix, the schema WithClusterScope.
func (e *env) clusterScoped() *env {
	c := *e
	c.prefix = e.prefix + "-cluster"
	c.cfg.Prefix, c.cfg.Schema = c.prefix, PodSchema.WithClusterScope()
	c.store = c.newStore(c.t, c.cfg)
	c.hist = newHistory()
	return &c
}

// Lists by name of a cluster-scoped resource, where a name is one key:
// names that other names start with, an object deleted and created
// again, absent names.
var _ = register("ListByNameClusterScoped", func(t *testing.T, e *env) {
	c := e.clusterScoped()
	n1 := c.create("", "n1", "node-1", map[string]string{"app": "one"})
	c.create("", "n10", "node-1", map[string]string{"app": "one"})
	c.create("", "n2", "node-2", map[string]string{"app": "one"})
	c.create("", "n3", "node-1", nil)
	mid := c.hist.lastRV()
	c.update(n1, "node-2", map[string]string{"app": "one"})
	c.remove("n2")
	c.create("", "n2", "node-1", map[string]string{"app": "two"})
	c.remove("n3")
	c.create("", "n4", "node-1", map[string]string{"app": "one"})
	c.checkListsByName(t, []string{"n1", "n10", "n2", "n3", "n4", "n"}, []string{""}, mid)
})

// A watch by name sees exactly the events of the objects of that name in
// its scope (updates, a deletion and a re-creation; not an object whose
// name starts with it, nor one of another namespace), with other
// selectors too; from a revision, with its initial state, and from now.
var _ = register("WatchByName", func(t *testing.T, e *env) {
	a := e.create("ns1", "a", "node-1", map[string]string{"app": "one"})
	e.create("ns1", "ab", "node-1", map[string]string{"app": "one"})
	a2 := e.create("ns2", "a", "node-1", map[string]string{"app": "one"})
	e.create("ns1", "b", "node-1", nil)
	start := e.hist.lastRV()
	watches := e.watchesByName(t, "a", []string{"ns1/", ""}, start)

	a = e.update(a, "node-1", map[string]string{"app": "two"})
	e.update(a2, "node-2", map[string]string{"app": "one"})
	e.create("ns1", "aa", "node-1", map[string]string{"app": "one"})
	e.remove("ns1/a")
	a = e.create("ns1", "a", "node-2", map[string]string{"app": "one"})
	e.create("ns3", "a", "node-1", map[string]string{"app": "one"})
	e.remove("ns1/b")
	e.update(a, "node-1", map[string]string{"app": "one"}) // every watch sees this last write
	watches.check(t, e)
})

// A watch by name of a cluster-scoped resource sees that one key's
// events, not those of a name that starts with it.
var _ = register("WatchByNameClusterScoped", func(t *testing.T, e *env) {
	c := e.clusterScoped()
	n1 := c.create("", "n1", "node-1", map[string]string{"app": "one"})
	n10 := c.create("", "n10", "node-1", map[string]string{"app": "one"})
	start := c.hist.lastRV()
	watches := c.watchesByName(t, "n1", []string{""}, start)

	c.update(n10, "node-2", nil)
	n1 = c.update(n1, "node-2", map[string]string{"app": "one"})
	c.remove("n1")
	c.remove("n10")
	n1 = c.create("", "n1", "node-2", nil)
	c.create("", "n10", "node-1", map[string]string{"app": "one"})
	c.update(n1, "node-1", map[string]string{"app": "one"}) // every watch sees this last write
	watches.check(t, c)
})

// namedWatch is a watch by name and what it must see.
type namedWatch struct {
	what string
	w    storage.Watcher
	x    watchExpect
}

type namedWatches []namedWatch

// watchesByName opens watches by name over each scope with each selector
// (byNameSelectors): from revision start, with the initial state of a
// consistent read (which is the state at start: nothing is written
// meanwhile), with sendInitialEvents, and from now.
func (e *env) watchesByName(t *testing.T, name string, scopes []string, start uint64) namedWatches {
	t.Helper()
	var out namedWatches
	for _, scope := range scopes {
		for _, sel := range byNameSelectors(name) {
			keep := func(o *object.Object) bool { return sel.Matches(o) }
			for _, k := range []struct {
				kind string
				opts storage.ListOptions
				x    watchExpect
			}{
				{"from N", storage.ListOptions{ResourceVersion: rvString(start)}, watchExpect{starts: []uint64{start}}},
				{"consistent", storage.ListOptions{}, watchExpect{initial: true, starts: []uint64{start}}},
				{"sendInitialEvents", storage.ListOptions{ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, SendInitialEvents: watchBool(true), AllowWatchBookmarks: true},
					watchExpect{endBookmark: true, minR: start, bookmarksOK: true}},
				{"from now", storage.ListOptions{ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, SendInitialEvents: watchBool(false)}, watchExpect{starts: []uint64{start}}},
			} {
				opts := k.opts
				opts.Fields, opts.Labels = sel.Fields, sel.Labels
				x := k.x
				x.scope, x.keep = scope, keep
				what := fmt.Sprintf("watch %s over %s, fields %v, labels %v", k.kind, scopeName(scope), sel.Fields, sel.Labels)
				out = append(out, namedWatch{what, e.watch(t, e.ctx, scope, opts), x})
			}
		}
	}
	// The state the initial events end at is not newer than the current
	// revision once every watch is open.
	current, err := e.store.CurrentResourceVersion(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := range out {
		out[i].x.maxR = current
	}
	return out
}

// check reads every watch up to the test's last write, which each of
// them must see, and checks it against the oracle, then that nothing more
// comes.
func (ws namedWatches) check(t *testing.T, e *env) {
	t.Helper()
	final := e.hist.lastRV()
	for _, w := range ws {
		e.checkWatch(t, w.what, watchCollect(t, w.w, final), w.x)
		watchQuiet(t, w.what, w.w, watchQuietWait, w.x.bookmarksOK)
	}
}
