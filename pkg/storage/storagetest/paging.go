// Conformance tests of paginated lists (KEP-365): limit and continue,
// filtered pages, continue-token defences, and expired revisions and tokens.

package storagetest

import (
	"encoding/base64"
	"fmt"
	"testing"

	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/storage"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
)

// KEP-365: limit and continue, one consistent snapshot across pages, 410
// Expired with an "inconsistent continue" token, and defensive checking of
// continue tokens.

// getPage reads one page, failing the test on error.
func (e *env) getPage(what, scope string, opts storage.ListOptions) *storage.List {
	e.t.Helper()
	l, err := e.store.GetList(e.ctx, scope, opts)
	if err != nil {
		e.t.Fatalf("%s: %v", what, err)
	}
	return l
}

// createPods creates count pods named prefix00, prefix01… in namespace.
func (e *env) createPods(namespace, prefix string, count int) map[string]*object.Object {
	e.t.Helper()
	out := map[string]*object.Object{}
	for i := range count {
		o := e.create(namespace, fmt.Sprintf("%s%02d", prefix, i), "node-1", nil)
		out[o.Key()] = o
	}
	return out
}

// remaining returns a page's RemainingItemCount, or -1 when unset.
func remaining(l *storage.List) int64 {
	if l.RemainingItemCount == nil {
		return -1
	}
	return *l.RemainingItemCount
}

// "_unset_ | _unset_ | _unset_ | _N_" then "_unset_ | _unset_ | _token_ |
// _N_": 25 objects in ns1, limit 10, are pages of 10, 10 and 5, all at the
// first page's revision, with RemainingItemCount 15, 5 and unset, and a
// continue token on all but the last. Creations, updates and deletions
// made between the pages, in the ranges of the pages still to come, are
// not visible. Objects in ns2, in ns10 (whose keys share "ns1" as a bare
// prefix) and cluster-scoped ones stay out of the ns1 list.
var _ = register("ListPaging", func(t *testing.T, e *env) {
	pods := e.createPods("ns1", "p", 25)
	e.createPods("ns2", "p", 4)
	e.createPods("ns10", "p", 2)
	e.create("", "ns1", "node-1", nil) // a cluster-scoped object whose key is "ns1"

	const limit = 10
	p1 := e.getPage("page 1", "ns1/", storage.ListOptions{Limit: limit})
	rv := p1.ResourceVersion
	if rv < e.hist.lastRV() {
		t.Fatalf("page 1 at %d, older than the last write at %d", rv, e.hist.lastRV())
	}
	want := e.hist.stateAt(rv, "ns1/", nil)
	if len(want) != 25 {
		t.Fatalf("oracle: %d objects in ns1, want 25", len(want))
	}

	// Between pages: an update in page 2's range, a creation in page 2's
	// range, a deletion in page 3's range, an update in page 1's range.
	e.update(pods["ns1/p15"], "node-2", map[string]string{"changed": "yes"})
	e.create("ns1", "p12a", "node-1", nil)
	e.remove("ns1/p22")
	e.update(pods["ns1/p03"], "node-2", nil)

	p2 := e.getPage("page 2", "ns1/", storage.ListOptions{Limit: limit, Continue: p1.Continue})

	// More changes between pages 2 and 3, in page 3's range.
	e.remove("ns1/p24")
	e.create("ns1", "p99", "node-1", nil)
	e.update(pods["ns1/p20"], "node-3", nil)

	p3 := e.getPage("page 3", "ns1/", storage.ListOptions{Limit: limit, Continue: p2.Continue})

	pages := []*storage.List{p1, p2, p3}
	wantLen := []int{10, 10, 5}
	wantRemaining := []int64{15, 5, -1}
	var got []*object.Object
	for i, p := range pages {
		if p.ResourceVersion != rv {
			t.Fatalf("page %d at %d, want the first page's %d", i+1, p.ResourceVersion, rv)
		}
		if len(p.Items) != wantLen[i] {
			t.Fatalf("page %d has %d items, want %d", i+1, len(p.Items), wantLen[i])
		}
		if remaining(p) != wantRemaining[i] {
			t.Fatalf("page %d: RemainingItemCount %d, want %d (-1: unset)", i+1, remaining(p), wantRemaining[i])
		}
		if last := i == len(pages)-1; last != (p.Continue == "") {
			t.Fatalf("page %d: continue token %q", i+1, p.Continue)
		}
		got = append(got, p.Items...)
	}
	assertSameObjects(t, "pages 1-3 at the first page's revision", got, want)

	// The changes are there for a new list.
	now := e.getPage("new list", "ns1/", storage.ListOptions{})
	if now.ResourceVersion <= rv {
		t.Fatalf("new list at %d, not after the paged list's %d", now.ResourceVersion, rv)
	}
	e.assertListIsStateAt("new list", now, "ns1/", nil)

	// Whole-resource paging, and other limits over ns1, including a limit
	// that divides the count, a limit of 1 and a limit above the count.
	for _, tc := range []struct {
		scope string
		limit int64
	}{{"", 10}, {"", 7}, {"ns1/", 1}, {"ns1/", 5}, {"ns1/", 25}, {"ns1/", 26}, {"ns1/", 1000}, {"ns2/", 2}, {"ns10/", 1}} {
		what := fmt.Sprintf("scope %q limit %d", tc.scope, tc.limit)
		first := e.getPage(what, tc.scope, storage.ListOptions{Limit: tc.limit})
		e.checkListRV(what, first, wantConsistent, 0)
		e.readPages(what, nil, first, tc.limit, tc.scope, storage.ListOptions{Limit: tc.limit}, nil)
	}
})

// "_unset_ | _unset_ | _unset_ | _N_" with selectors: each page of a
// filtered list holds at most limit items, may hold fewer (even none) with
// a continue token, gives no RemainingItemCount, and the pages together
// are the filtered state at the first page's revision, even when objects
// start or stop matching between pages.
var _ = register("ListPagingFiltered", func(t *testing.T, e *env) {
	pods := map[string]*object.Object{}
	for _, ns := range []string{"ns1", "ns2"} {
		for i := range 30 {
			app := "other"
			if i%3 == 0 {
				app = "target"
			}
			node := "node-b"
			if i%3 == 1 {
				node = "node-a"
			}
			o := e.create(ns, fmt.Sprintf("p%02d", i), node, map[string]string{"app": app})
			pods[o.Key()] = o
		}
	}
	byLabel := labels.SelectorFromSet(labels.Set{"app": "target"})
	byField := fields.OneTermEqualSelector("spec.nodeName", "node-a")
	none := labels.SelectorFromSet(labels.Set{"app": "none"})
	const limit = 3
	cases := []struct {
		name string
		opts storage.ListOptions
		keep func(*object.Object) bool
	}{
		{"label selector", storage.ListOptions{Labels: byLabel}, func(o *object.Object) bool { return byLabel.Matches(o.Labels()) }},
		{"field selector", storage.ListOptions{Fields: byField}, func(o *object.Object) bool { return byField.Matches(o.Fields()) }},
		// Only objects the test changes match both: most pages are empty.
		{"label and field selector", storage.ListOptions{Labels: byLabel, Fields: byField}, func(o *object.Object) bool {
			return byLabel.Matches(o.Labels()) && byField.Matches(o.Fields())
		}},
		// Nothing matches: the whole result set is filtered.
		{"selector matching nothing", storage.ListOptions{Labels: none}, func(o *object.Object) bool { return none.Matches(o.Labels()) }},
	}
	for _, tc := range cases {
		for _, scope := range []string{"ns1/", ""} {
			what := fmt.Sprintf("%s over %q", tc.name, scope)
			// Unpaged.
			full := e.getPage(what, scope, tc.opts)
			e.checkListRV(what, full, wantConsistent, 0)
			if full.Continue != "" || full.RemainingItemCount != nil {
				t.Fatalf("%s: unpaged list has token %q and RemainingItemCount %d", what, full.Continue, remaining(full))
			}
			e.assertListIsStateAt(what, full, scope, tc.keep)
			if (tc.name == "label selector" || tc.name == "field selector") && len(full.Items) < 10 {
				t.Fatalf("%s: only %d objects match", what, len(full.Items))
			}

			// Paged, with objects starting and stopping to match after
			// the first page.
			opts := tc.opts
			opts.Limit = limit
			first := e.getPage(what, scope, opts)
			e.checkListRV(what, first, wantConsistent, 0)
			if first.RemainingItemCount != nil {
				t.Fatalf("%s: filtered first page has RemainingItemCount %d", what, *first.RemainingItemCount)
			}
			// p28 starts matching both selectors, p27 (label) and p25
			// (field) stop matching, p24 (matching the label) is deleted,
			// p29a is created matching both.
			for _, ns := range []string{"ns1", "ns2"} {
				pods[ns+"/p28"] = e.update(pods[ns+"/p28"], "node-a", map[string]string{"app": "target"})
				pods[ns+"/p27"] = e.update(pods[ns+"/p27"], "node-b", map[string]string{"app": "other"})
				pods[ns+"/p25"] = e.update(pods[ns+"/p25"], "node-b", map[string]string{"app": "other"})
				if _, ok := pods[ns+"/p24"]; ok {
					e.remove(ns + "/p24")
					delete(pods, ns+"/p24")
				}
				if _, ok := pods[ns+"/p29a"]; !ok {
					pods[ns+"/p29a"] = e.create(ns, "p29a", "node-a", map[string]string{"app": "target"})
				}
			}
			e.readPages(what, nil, first, limit, scope, opts, tc.keep)
			// Put the objects back for the next case.
			for _, ns := range []string{"ns1", "ns2"} {
				pods[ns+"/p28"] = e.update(pods[ns+"/p28"], "node-a", map[string]string{"app": "other"})
				pods[ns+"/p27"] = e.update(pods[ns+"/p27"], "node-b", map[string]string{"app": "target"})
				pods[ns+"/p25"] = e.update(pods[ns+"/p25"], "node-a", map[string]string{"app": "other"})
			}
		}
	}

	// A field that the resource does not make selectable is a 400.
	for _, opts := range []storage.ListOptions{
		{Fields: fields.OneTermEqualSelector("spec.foo", "x")},
		{Fields: fields.OneTermEqualSelector("spec.foo", "x"), Limit: limit},
		{Fields: fields.OneTermEqualSelector("spec.foo", "x"), ResourceVersion: "0"},
		{Fields: fields.AndSelectors(byField, fields.OneTermEqualSelector("metadata.foo", "x"))},
	} {
		_, err := e.store.GetList(e.ctx, "ns1/", opts)
		assertCode(t, err, storage.ErrBadRequest)
	}
})

// KEP-365: "The storage layer must perform defensive checking on the
// provided value, check for path traversal attacks, and have stable
// versioning for the continue token", and "If the resource version
// parameter specified on the request is inconsistent with the continue
// token, the server must reject the request with a 400 Bad Request error."
var _ = register("ListContinueTokenDefences", func(t *testing.T, e *env) {
	e.createPods("ns1", "a", 5)
	e.createPods("ns2", "a", 5)
	first := e.getPage("ns1 page 1", "ns1/", storage.ListOptions{Limit: 2})
	if first.Continue == "" {
		t.Fatal("ns1 page 1 has no continue token")
	}
	rv := int64(first.ResourceVersion)

	// A token of one namespace's list used on another's.
	for _, limit := range []int64{0, 2} {
		_, err := e.store.GetList(e.ctx, "ns2/", storage.ListOptions{Continue: first.Continue, Limit: limit})
		assertCode(t, err, storage.ErrBadRequest)
	}

	// Hand-crafted tokens.
	raw := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	bad := map[string]string{
		"parent dir":            storage.EncodeContinue(rv, "../x"),
		"parent dir in scope":   storage.EncodeContinue(rv, "ns1/../x"),
		"absolute":              storage.EncodeContinue(rv, "/abs"),
		"absolute in scope":     storage.EncodeContinue(rv, "/ns1/a01"),
		"traversal to ns2":      storage.EncodeContinue(rv, "ns1/../ns2/a"),
		"dot segment":           storage.EncodeContinue(rv, "ns1/./a01"),
		"empty segment":         storage.EncodeContinue(rv, "ns1//a01"),
		"other namespace":       storage.EncodeContinue(rv, "ns2/a00"),
		"bare prefix sibling":   storage.EncodeContinue(rv, "ns10/a00"),
		"empty start key":       storage.EncodeContinue(rv, ""),
		"zero rv":               storage.EncodeContinue(0, "ns1/a02"),
		"negative rv":           storage.EncodeContinue(-2, "ns1/a02"),
		"not base64":            "%%%not-base64%%%",
		"std base64 padding":    base64.StdEncoding.EncodeToString([]byte(`{"v":1,"rv":5,"start":"ns1/a02"}`)) + "==",
		"garbage":               raw("not json at all"),
		"binary garbage":        raw("\x00\xff\xfe{"),
		"unknown version":       raw(fmt.Sprintf(`{"v":2,"rv":%d,"start":"ns1/a02"}`, rv)),
		"missing version":       raw(fmt.Sprintf(`{"rv":%d,"start":"ns1/a02"}`, rv)),
		"unknown field":         raw(fmt.Sprintf(`{"v":1,"rv":%d,"start":"ns1/a02","prefix":"/"}`, rv)),
		"start key not string":  raw(fmt.Sprintf(`{"v":1,"rv":%d,"start":5}`, rv)),
		"trailing json":         raw(fmt.Sprintf(`{"v":1,"rv":%d,"start":"ns1/a02"}{}`, rv)),
		"empty object":          raw(`{}`),
		"json null":             raw(`null`),
		"traversal with suffix": storage.EncodeContinue(rv, "ns1/a/../../ns2/a00"),
	}
	for name, token := range bad {
		t.Run(name, func(t *testing.T) {
			for _, opts := range []storage.ListOptions{
				{Continue: token},
				{Continue: token, Limit: 2},
				{Continue: token, ResourceVersion: "0"},
			} {
				_, err := e.store.GetList(e.ctx, "ns1/", opts)
				assertCode(t, err, storage.ErrBadRequest)
			}
		})
	}
	for _, key := range []string{"../x", "/abs", "ns1/../ns2/a00", "./ns1/a00"} {
		_, err := e.store.GetList(e.ctx, "", storage.ListOptions{Continue: storage.EncodeContinue(rv, key)})
		assertCode(t, err, storage.ErrBadRequest)
	}

	// A write after the first page, so that reading the rest at the newest
	// revision would differ from reading it at the token's.
	e.create("ns1", "a03x", "node-1", nil)
	e.remove("ns1/a04")

	// "_RV_ | _unset_ | _token_ | _N_" with an RV other than the token's.
	for _, other := range []uint64{uint64(rv) - 1, uint64(rv) + 1, e.hist.lastRV()} {
		for _, match := range []metav1.ResourceVersionMatch{"", metav1.ResourceVersionMatchNotOlderThan, metav1.ResourceVersionMatchExact} {
			_, err := e.store.GetList(e.ctx, "ns1/", storage.ListOptions{ResourceVersion: rvString(other), ResourceVersionMatch: match, Continue: first.Continue, Limit: 2})
			assertCode(t, err, storage.ErrBadRequest)
		}
	}
	// With the token's RV it is the same as without one.
	with := e.getPage("with rv", "ns1/", storage.ListOptions{ResourceVersion: rvString(uint64(rv)), Continue: first.Continue, Limit: 2})
	without := e.getPage("without rv", "ns1/", storage.ListOptions{Continue: first.Continue, Limit: 2})
	assertSameObjects(t, "page 2 with and without the token's rv", with.Items, without.Items)
	if with.ResourceVersion != uint64(rv) || without.ResourceVersion != uint64(rv) || (with.Continue == "") != (without.Continue == "") || remaining(with) != remaining(without) {
		t.Fatalf("page 2 with rv: at %d token %q remaining %d; without: at %d token %q remaining %d; want both at %d",
			with.ResourceVersion, with.Continue, remaining(with), without.ResourceVersion, without.Continue, remaining(without), rv)
	}
	e.readPages("rest with the token's rv", first.Items, with, 2, "ns1/", storage.ListOptions{ResourceVersion: rvString(uint64(rv)), Limit: 2}, nil)

	// A valid hand-made token (the layout is stable: a token written by an
	// earlier server, or another replica, keeps working).
	page := e.getPage("hand-made token", "ns1/", storage.ListOptions{Continue: storage.EncodeContinue(rv, "ns1/a02")})
	e.checkListRV("hand-made token", page, wantExact, uint64(rv))
	assertSameObjects(t, "hand-made token", page.Items, e.hist.stateAt(uint64(rv), "ns1/", func(o *object.Object) bool { return o.Key() >= "ns1/a02" }))
})

// Compacted revisions: an exact read below the compaction is a 410
// Expired ("_RV_ | _Exact_ | _unset_ | _unset_ / _N_" and "_RV_ | _unset_ |
// _unset_ | _N_"); reads that may be newer are unaffected. A watch cache
// that still keeps its snapshot of the revision may serve it instead (it
// drops such snapshots once it sees the compaction): then the answer must
// be exactly the state at that revision.
var _ = register("ListExpired", func(t *testing.T, e *env) {
	pods := e.createPods("ns1", "a", 3)
	old := e.hist.lastRV()
	e.update(pods["ns1/a01"], "node-2", nil)
	e.create("ns1", "b", "node-1", nil)
	compacted := e.compact()
	N := rvString(old)
	exact, notOlder := metav1.ResourceVersionMatchExact, metav1.ResourceVersionMatchNotOlderThan
	for name, opts := range map[string]storage.ListOptions{
		"_RV_ | _Exact_ | _unset_ | _unset_": {ResourceVersion: N, ResourceVersionMatch: exact},
		"_RV_ | _Exact_ | _unset_ | _N_":     {ResourceVersion: N, ResourceVersionMatch: exact, Limit: 2},
		"_RV_ | _unset_ | _unset_ | _N_":     {ResourceVersion: N, Limit: 2},
	} {
		t.Run(rowName(name), func(t *testing.T) {
			l, err := e.store.GetList(e.ctx, "ns1/", opts)
			if err == nil {
				e := e.sub(t)
				e.checkListRV("served from a kept snapshot", l, wantExact, old)
				e.readPages("served from a kept snapshot", nil, l, opts.Limit, "ns1/", storage.ListOptions{Limit: opts.Limit}, nil)
				return
			}
			assertCode(t, err, storage.ErrExpired)
		})
	}
	// Not older than a compacted revision is fine.
	for _, opts := range []storage.ListOptions{
		{ResourceVersion: N},
		{ResourceVersion: N, ResourceVersionMatch: notOlder},
		{ResourceVersion: N, ResourceVersionMatch: notOlder, Limit: 2},
		{},
	} {
		l := e.getPage("after compaction", "ns1/", opts)
		e.checkListRV("after compaction", l, wantNotOlderThan, old)
		e.readPages("after compaction", nil, l, opts.Limit, "ns1/", storage.ListOptions{Limit: opts.Limit}, nil)
	}
	// The compaction revision itself is still readable.
	l := e.getPage("at the compaction revision", "ns1/", storage.ListOptions{ResourceVersion: rvString(compacted), ResourceVersionMatch: exact})
	e.checkListRV("at the compaction revision", l, wantExact, compacted)
	e.assertListIsStateAt("at the compaction revision", l, "ns1/", nil)
})

// KEP-365 "Handling expired resource versions": a continue token whose
// revision was compacted is a 410 Expired, whose Continue is a token that
// continues the list from where it stopped at the newest revision (an
// inconsistent list: it shows the writes made since the first page, but
// only after the first page's last key). That continuation pages
// consistently at its own new revision. A watch cache that still keeps the
// snapshot of the token's revision may continue the list consistently
// instead.
var _ = register("ListContinueExpired", func(t *testing.T, e *env) {
	pods := e.createPods("ns1", "a", 8)
	e.createPods("ns2", "a", 3)
	first := e.getPage("page 1", "ns1/", storage.ListOptions{Limit: 3})
	if first.Continue == "" || len(first.Items) != 3 {
		t.Fatalf("page 1 has %d items and token %q", len(first.Items), first.Continue)
	}
	lastKey := first.Items[len(first.Items)-1].Key()
	// Changes after the first page: before its last key (not visible in
	// the continuation) and after it (visible).
	e.update(pods["ns1/a00"], "node-2", nil)
	e.create("ns1", "a01x", "node-1", nil)
	e.update(pods["ns1/a04"], "node-2", nil)
	e.create("ns1", "a02x", "node-1", nil)
	e.remove("ns1/a06")
	e.create("ns1", "a99", "node-1", nil)
	e.compact()

	after := func(o *object.Object) bool { return o.Key() > lastKey }
	for _, tc := range []struct {
		name string
		opts storage.ListOptions
	}{
		{"_unset_ | _unset_ | _token_ | _N_", storage.ListOptions{Limit: 2}},
		{"_unset_ | _unset_ | _token_ | _unset_", storage.ListOptions{}},
		{"_0_ | _unset_ | _token_ | _N_", storage.ListOptions{ResourceVersion: "0", Limit: 2}},
		{"_RV_ | _unset_ | _token_ | _N_", storage.ListOptions{ResourceVersion: rvString(first.ResourceVersion), Limit: 2}},
	} {
		t.Run(rowName(tc.name), func(t *testing.T) {
			e := e.sub(t)
			opts := tc.opts
			opts.Continue = first.Continue
			kept, err := e.store.GetList(e.ctx, "ns1/", opts)
			if err == nil {
				e.readPages("served from a kept snapshot", first.Items, kept, opts.Limit, "ns1/", storage.ListOptions{Limit: opts.Limit}, nil)
				return
			}
			se := assertCode(t, err, storage.ErrExpired)
			if se.Continue == "" {
				t.Fatalf("410 without an inconsistent-continue token: %v", se)
			}
			// The inconsistent continuation, paged (or not) as the client
			// asks, with resourceVersion unset as client-go's pager does.
			next := storage.ListOptions{Limit: tc.opts.Limit}
			next.Continue = se.Continue
			page := e.getPage("inconsistent continue", "ns1/", next)
			if page.ResourceVersion <= first.ResourceVersion {
				t.Fatalf("inconsistent continuation at %d, not newer than the expired %d", page.ResourceVersion, first.ResourceVersion)
			}
			e.checkListRV("inconsistent continue", page, wantConsistent, 0)
			e.readPages("inconsistent continue", nil, page, next.Limit, "ns1/", storage.ListOptions{Limit: next.Limit}, after)

			// The inconsistent token is still a token of ns1's list.
			_, err = e.store.GetList(e.ctx, "ns2/", storage.ListOptions{Continue: se.Continue})
			assertCode(t, err, storage.ErrBadRequest)
		})
	}
})
