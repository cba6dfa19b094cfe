// Conformance tests of KEP-2340's LIST table: each valid row over each scope,
// rows with a continue token, rows that fail validation, too-large
// resourceVersions and invalid options.

package storagetest

import (
	"strings"
	"testing"

	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/storage"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The LIST table of KEP-2340, one row per line, as the KEP writes it
// (ResourceVersion | ResourceVersionMatch | Continuation | Limit; in
// docs/design.md with the tests of each row):
//
//	_unset_ | _unset_        | _unset_           | _unset_       Quorum read request
//	_unset_ | _unset_        | _unset_           | _N_           Quorum read request
//	_unset_ | _unset_        | _token_           | _unset_ / _N_ Read request from RV encoded in _token_
//	_unset_ | _Exact_        | _unset_ / _token_ | _unset_ / _N_ Fails [validation]
//	_unset_ | _NotOlderThan_ | _unset_           | _unset_ / _N_ Fails [validation]
//	_unset_ | _NotOlderThan_ | _token_           | _unset_ / _N_ Fails [validation]
//	_0_     | _unset_        | _unset_           | _unset_ / _N_ Quorum read request (cache: any state, may ignore limit)
//	_0_     | _unset_        | _token_           | _unset_ / _N_ Quorum read request (see ListTableContinue)
//	_0_     | _Exact_        | _unset_ / _token_ | _unset_ / _N_ Fails [validation]
//	_0_     | _NotOlderThan_ | _unset_           | _unset_ / _N_ Quorum read request (cache: any state, may ignore limit)
//	_0_     | _NotOlderThan_ | _token_           | _unset_ / _N_ Read request from RV encoded in _token_
//	_RV_    | _unset_        | _unset_           | _unset_       Quorum read request (not older than RV)
//	_RV_    | _unset_        | _unset_           | _N_           Read request from RV=_RV_
//	_RV_    | _unset_        | _token_           | _unset_ / _N_ Read request from RV encoded in _token_
//	_RV_    | _Exact_        | _unset_           | _unset_ / _N_ Read request from RV=_RV_
//	_RV_    | _Exact_        | _token_           | _unset_ / _N_ Fails [validation]
//	_RV_    | _NotOlderThan_ | _unset_           | _unset_       Quorum read request + check for _RV_
//	_RV_    | _NotOlderThan_ | _unset_           | _N_           Quorum read request + check for _RV_
//	_RV_    | _NotOlderThan_ | _token_           | _unset_/ _N_  Fails [validation]
//
// Each test below names the row it covers, with one subtest per value of a
// "_unset_ / _N_" column.

// tableLimit is the _N_ of the table tests: small, so that every scope of
// the fixture takes several pages.
const tableLimit = 2

// listTableScopes are the scopes every valid row is read over.
var listTableScopes = []string{"", "ns1/", "ns2/"}

// scopeName names a scope in a subtest name.
func scopeName(scope string) string {
	if scope == "" {
		return "all"
	}
	return strings.TrimSuffix(scope, "/")
}

// rowName turns a table row as quoted in the comments into a subtest name.
func rowName(row string) string { return strings.ReplaceAll(row, " ", "") }

// rvString formats a revision as a resourceVersion parameter.
func rvString(rv uint64) string { return storage.FormatResourceVersion(rv) }

// sub returns a copy of e reporting to t, for use inside t.Run: e's helpers
// must not call Fatal on the parent test from a subtest.
func (e *env) sub(t *testing.T) *env {
	c := *e
	c.t = t
	return &c
}

// setupListFixture writes objects in namespaces ns1, ns2 and ns10 (a trap
// for scope "ns1/" matched as a bare prefix) and cluster-scoped ones, then,
// after the returned revision mid, updates, deletes and creates objects in
// every scope, so that a read at mid differs from the newest state in each.
// Every scope also changes after its first tableLimit keys, so that the
// continuations of a first page read at mid must show the older state too.
func setupListFixture(e *env) (mid uint64) {
	e.t.Helper()
	objs := map[string]*object.Object{}
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		objs["ns1/"+n] = e.create("ns1", n, "node-1", map[string]string{"app": "one"})
	}
	for _, n := range []string{"a", "b", "c", "d"} {
		objs["ns2/"+n] = e.create("ns2", n, "node-2", map[string]string{"app": "two"})
	}
	e.create("ns10", "a", "node-1", nil)
	for _, n := range []string{"c-a", "c-b", "c-c"} {
		objs[n] = e.create("", n, "node-3", nil)
	}
	mid = e.hist.lastRV()

	e.update(objs["ns1/d"], "node-9", map[string]string{"app": "one", "updated": "yes"})
	e.remove("ns1/e")
	e.create("ns1", "f", "node-1", nil)
	e.update(objs["ns2/c"], "node-9", nil)
	e.remove("ns2/d")
	e.update(objs["c-a"], "node-9", nil)
	e.remove("c-c")

	for _, scope := range listTableScopes {
		before, after := e.hist.stateAt(mid, scope, nil), e.hist.stateAt(e.hist.lastRV(), scope, nil)
		if len(before) <= tableLimit || sameKeysAndRVs(before, after) {
			e.t.Fatalf("fixture: scope %q does not change after revision %d", scope, mid)
		}
	}
	return mid
}

func sameKeysAndRVs(a, b []*object.Object) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Key() != b[i].Key() || a[i].ResourceVersion() != b[i].ResourceVersion() {
			return false
		}
	}
	return true
}

// rvWant is what a row says about the list's resourceVersion.
type rvWant int

const (
	// wantConsistent: at least the newest write (a quorum read).
	wantConsistent rvWant = iota
	// wantAny: any state; only self-consistency is checked (a watch cache
	// may serve an older state than the newest).
	wantAny
	// wantNotOlderThan: at least the requested N.
	wantNotOlderThan
	// wantExact: exactly the requested N.
	wantExact
)

// checkListRV checks a list's resourceVersion against what the row says.
func (e *env) checkListRV(what string, list *storage.List, want rvWant, n uint64) {
	e.t.Helper()
	if list.ResourceVersion == 0 {
		e.t.Fatalf("%s: list has resourceVersion 0", what)
	}
	switch want {
	case wantConsistent:
		if list.ResourceVersion < e.hist.lastRV() {
			e.t.Fatalf("%s: consistent list at revision %d, older than the last write at %d", what, list.ResourceVersion, e.hist.lastRV())
		}
	case wantNotOlderThan:
		if list.ResourceVersion < n {
			e.t.Fatalf("%s: list at revision %d, want not older than %d", what, list.ResourceVersion, n)
		}
	case wantExact:
		if list.ResourceVersion != n {
			e.t.Fatalf("%s: list at revision %d, want exactly %d", what, list.ResourceVersion, n)
		}
	}
}

// readPages checks a paged list (KEP-365) from page on, following its
// continue tokens with the options next (whose Continue is set from each
// page). prior are the items of the pages before page, limit the limit
// page was requested with. Every page must be at page's resourceVersion,
// hold no more than its limit when it carries a continue token, carry a
// token only if a limit was given, and, if it gives RemainingItemCount, do
// so only when no selector filters the list and count exactly the objects
// after it. The concatenation of all pages must be the state at that
// resourceVersion under scope, restricted by keep.
func (e *env) readPages(what string, prior []*object.Object, page *storage.List, limit int64, scope string, next storage.ListOptions, keep func(*object.Object) bool) []*object.Object {
	t := e.t
	t.Helper()
	rv := page.ResourceVersion
	want := e.hist.stateAt(rv, scope, keep)
	filtered := next.Filtered()
	got := append([]*object.Object(nil), prior...)
	for n := 1; ; n++ {
		if n > len(want)+10 {
			t.Fatalf("%s: %d pages for %d objects: the continue tokens do not progress", what, n, len(want))
		}
		if page.ResourceVersion != rv {
			t.Fatalf("%s: page %d at revision %d, want the list's revision %d", what, n, page.ResourceVersion, rv)
		}
		got = append(got, page.Items...)
		if filtered && page.RemainingItemCount != nil {
			t.Fatalf("%s: page %d of a filtered list says %d items remain", what, n, *page.RemainingItemCount)
		}
		if page.Continue == "" {
			if page.RemainingItemCount != nil && *page.RemainingItemCount != 0 {
				t.Fatalf("%s: last page %d says %d items remain", what, n, *page.RemainingItemCount)
			}
			break
		}
		if limit <= 0 {
			t.Fatalf("%s: page %d has a continue token though no limit was given", what, n)
		}
		if int64(len(page.Items)) > limit {
			t.Fatalf("%s: page %d has %d items and a continue token, limit %d", what, n, len(page.Items), limit)
		}
		if r := page.RemainingItemCount; r != nil {
			if *r != int64(len(want)-len(got)) {
				t.Fatalf("%s: page %d says %d items remain, want %d", what, n, *r, len(want)-len(got))
			}
		}
		next.Continue = page.Continue
		limit = next.Limit
		var err error
		if page, err = e.store.GetList(e.ctx, scope, next); err != nil {
			t.Fatalf("%s: page %d: %v", what, n+1, err)
		}
	}
	assertSameObjects(t, what, got, want)
	return got
}

// checkRow reads a list as opts say, checks its resourceVersion as the row
// says, and reads it to its end (continuing as client-go's pager does:
// resourceVersion and resourceVersionMatch unset, the same limit), checking
// it is exactly the state at its resourceVersion.
func (e *env) checkRow(what, scope string, opts storage.ListOptions, want rvWant, n uint64) *storage.List {
	e.t.Helper()
	list, err := e.store.GetList(e.ctx, scope, opts)
	if err != nil {
		e.t.Fatalf("%s: %v", what, err)
	}
	e.checkListRV(what, list, want, n)
	e.readPages(what, nil, list, opts.Limit, scope, storage.ListOptions{Limit: opts.Limit}, nil)
	return list
}

// The rows that read without a continue token, over every scope, with the
// limit unset and with a limit where the row allows one. Reads at N use
// the fixture's mid revision, before some updates and deletions, so an
// exact read must show the older state.
var _ = register("ListTable", func(t *testing.T, e *env) {
	mid := setupListFixture(e)
	type row struct {
		row  string
		opts storage.ListOptions
		want rvWant
		rv   uint64
	}
	N := rvString(mid)
	rows := []row{
		{"_unset_ | _unset_ | _unset_ | _unset_", storage.ListOptions{}, wantConsistent, 0},
		{"_unset_ | _unset_ | _unset_ | _N_", storage.ListOptions{Limit: tableLimit}, wantConsistent, 0},
		{"_0_ | _unset_ | _unset_ | _unset_", storage.ListOptions{ResourceVersion: "0"}, wantAny, 0},
		{"_0_ | _unset_ | _unset_ | _N_", storage.ListOptions{ResourceVersion: "0", Limit: tableLimit}, wantAny, 0},
		{"_0_ | _NotOlderThan_ | _unset_ | _unset_", storage.ListOptions{ResourceVersion: "0", ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan}, wantAny, 0},
		{"_0_ | _NotOlderThan_ | _unset_ | _N_", storage.ListOptions{ResourceVersion: "0", ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, Limit: tableLimit}, wantAny, 0},
		{"_RV_ | _unset_ | _unset_ | _unset_", storage.ListOptions{ResourceVersion: N}, wantNotOlderThan, mid},
		{"_RV_ | _unset_ | _unset_ | _N_", storage.ListOptions{ResourceVersion: N, Limit: tableLimit}, wantExact, mid},
		{"_RV_ | _Exact_ | _unset_ | _unset_", storage.ListOptions{ResourceVersion: N, ResourceVersionMatch: metav1.ResourceVersionMatchExact}, wantExact, mid},
		{"_RV_ | _Exact_ | _unset_ | _N_", storage.ListOptions{ResourceVersion: N, ResourceVersionMatch: metav1.ResourceVersionMatchExact, Limit: tableLimit}, wantExact, mid},
		{"_RV_ | _NotOlderThan_ | _unset_ | _unset_", storage.ListOptions{ResourceVersion: N, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan}, wantNotOlderThan, mid},
		{"_RV_ | _NotOlderThan_ | _unset_ | _N_", storage.ListOptions{ResourceVersion: N, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, Limit: tableLimit}, wantNotOlderThan, mid},
	}
	for _, r := range rows {
		t.Run(rowName(r.row), func(t *testing.T) {
			e := e.sub(t)
			for _, scope := range listTableScopes {
				what := r.row + " over " + scopeName(scope)
				e.checkRow(what, scope, r.opts, r.want, r.rv)
			}
		})
	}
	// The exact reads above were checked against the oracle's state at mid;
	// make sure that state really differs from the newest one in the store,
	// so that an implementation serving the newest state would have failed.
	list, err := e.store.GetList(e.ctx, "", storage.ListOptions{ResourceVersion: N, ResourceVersionMatch: metav1.ResourceVersionMatchExact})
	if err != nil {
		t.Fatal(err)
	}
	latest, err := e.store.GetList(e.ctx, "", storage.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sameKeysAndRVs(list.Items, latest.Items) {
		t.Fatalf("an exact list at %d equals the newest list at %d", mid, latest.ResourceVersion)
	}
})

// The rows that continue a list with a token: the rest of the list is read
// at the token's revision, whatever the newest state is. The first page is
// an exact read at the fixture's mid revision, so reading the rest at the
// newest revision instead would show the later writes.
var _ = register("ListTableContinue", func(t *testing.T, e *env) {
	mid := setupListFixture(e)
	N := rvString(mid)
	notOlder := metav1.ResourceVersionMatchNotOlderThan
	type row struct {
		row  string
		opts storage.ListOptions // Continue is set from the first page
	}
	rows := []row{
		{"_unset_ | _unset_ | _token_ | _unset_", storage.ListOptions{}},
		{"_unset_ | _unset_ | _token_ | _N_", storage.ListOptions{Limit: tableLimit}},
		// The KEP's table says "Quorum read request" for the etcd
		// implementation of this row; like Kubernetes' etcd3 store, and as
		// KEP-365's consistent snapshot across pages requires, the rest of
		// the list is read at the token's revision.
		{"_0_ | _unset_ | _token_ | _unset_", storage.ListOptions{ResourceVersion: "0"}},
		{"_0_ | _unset_ | _token_ | _N_", storage.ListOptions{ResourceVersion: "0", Limit: tableLimit}},
		{"_0_ | _NotOlderThan_ | _token_ | _unset_", storage.ListOptions{ResourceVersion: "0", ResourceVersionMatch: notOlder}},
		{"_0_ | _NotOlderThan_ | _token_ | _N_", storage.ListOptions{ResourceVersion: "0", ResourceVersionMatch: notOlder, Limit: tableLimit}},
		// KEP-365: a resourceVersion given with a token must be the token's.
		{"_RV_ | _unset_ | _token_ | _unset_", storage.ListOptions{ResourceVersion: N}},
		{"_RV_ | _unset_ | _token_ | _N_", storage.ListOptions{ResourceVersion: N, Limit: tableLimit}},
	}
	for _, r := range rows {
		t.Run(rowName(r.row), func(t *testing.T) {
			e := e.sub(t)
			for _, scope := range listTableScopes {
				what := r.row + " over " + scopeName(scope)
				first, err := e.store.GetList(e.ctx, scope, storage.ListOptions{ResourceVersion: N, ResourceVersionMatch: metav1.ResourceVersionMatchExact, Limit: tableLimit})
				if err != nil {
					t.Fatalf("%s: first page: %v", what, err)
				}
				if first.Continue == "" || first.ResourceVersion != mid || len(first.Items) > tableLimit {
					t.Fatalf("%s: first page at %d with %d items and token %q, want a page of at most %d at %d with a token", what, first.ResourceVersion, len(first.Items), first.Continue, tableLimit, mid)
				}
				opts := r.opts
				opts.Continue = first.Continue
				page, err := e.store.GetList(e.ctx, scope, opts)
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				e.checkListRV(what, page, wantExact, mid)
				e.readPages(what, first.Items, page, opts.Limit, scope, opts, nil)
			}
		})
	}
})

// The rows that fail validation: every combination of their "_unset_ /
// _token_" and "_unset_ / _N_" columns is a 400 BadRequest. The token is a
// valid one (from a real first page) and N is a valid, reachable revision,
// so only the combination is wrong.
var _ = register("ListTableFailsValidation", func(t *testing.T, e *env) {
	mid := setupListFixture(e)
	N := rvString(mid)
	first, err := e.store.GetList(e.ctx, "ns1/", storage.ListOptions{ResourceVersion: N, ResourceVersionMatch: metav1.ResourceVersionMatchExact, Limit: tableLimit})
	if err != nil {
		t.Fatal(err)
	}
	if first.Continue == "" {
		t.Fatal("first page has no continue token")
	}
	token := first.Continue
	exact, notOlder := metav1.ResourceVersionMatchExact, metav1.ResourceVersionMatchNotOlderThan
	type row struct {
		row  string
		opts storage.ListOptions
	}
	rows := []row{
		{"_unset_ | _Exact_ | _unset_ | _unset_", storage.ListOptions{ResourceVersionMatch: exact}},
		{"_unset_ | _Exact_ | _unset_ | _N_", storage.ListOptions{ResourceVersionMatch: exact, Limit: tableLimit}},
		{"_unset_ | _Exact_ | _token_ | _unset_", storage.ListOptions{ResourceVersionMatch: exact, Continue: token}},
		{"_unset_ | _Exact_ | _token_ | _N_", storage.ListOptions{ResourceVersionMatch: exact, Continue: token, Limit: tableLimit}},
		{"_unset_ | _NotOlderThan_ | _unset_ | _unset_", storage.ListOptions{ResourceVersionMatch: notOlder}},
		{"_unset_ | _NotOlderThan_ | _unset_ | _N_", storage.ListOptions{ResourceVersionMatch: notOlder, Limit: tableLimit}},
		{"_unset_ | _NotOlderThan_ | _token_ | _unset_", storage.ListOptions{ResourceVersionMatch: notOlder, Continue: token}},
		{"_unset_ | _NotOlderThan_ | _token_ | _N_", storage.ListOptions{ResourceVersionMatch: notOlder, Continue: token, Limit: tableLimit}},
		{"_0_ | _Exact_ | _unset_ | _unset_", storage.ListOptions{ResourceVersion: "0", ResourceVersionMatch: exact}},
		{"_0_ | _Exact_ | _unset_ | _N_", storage.ListOptions{ResourceVersion: "0", ResourceVersionMatch: exact, Limit: tableLimit}},
		{"_0_ | _Exact_ | _token_ | _unset_", storage.ListOptions{ResourceVersion: "0", ResourceVersionMatch: exact, Continue: token}},
		{"_0_ | _Exact_ | _token_ | _N_", storage.ListOptions{ResourceVersion: "0", ResourceVersionMatch: exact, Continue: token, Limit: tableLimit}},
		{"_RV_ | _Exact_ | _token_ | _unset_", storage.ListOptions{ResourceVersion: N, ResourceVersionMatch: exact, Continue: token}},
		{"_RV_ | _Exact_ | _token_ | _N_", storage.ListOptions{ResourceVersion: N, ResourceVersionMatch: exact, Continue: token, Limit: tableLimit}},
		{"_RV_ | _NotOlderThan_ | _token_ | _unset_", storage.ListOptions{ResourceVersion: N, ResourceVersionMatch: notOlder, Continue: token}},
		{"_RV_ | _NotOlderThan_ | _token_ | _N_", storage.ListOptions{ResourceVersion: N, ResourceVersionMatch: notOlder, Continue: token, Limit: tableLimit}},
	}
	for _, r := range rows {
		t.Run(rowName(r.row), func(t *testing.T) {
			for _, scope := range []string{"ns1/", ""} {
				_, err := e.store.GetList(e.ctx, scope, r.opts)
				assertCode(t, err, storage.ErrBadRequest)
			}
		})
	}
})

// Reads at an N the store has not reached: the rows that read "not older
// than N" fail with ErrTooLargeResourceVersion and Retry-After 1 (504), and
// so do the rows that read exactly N.
var _ = register("ListTooLargeResourceVersion", func(t *testing.T, e *env) {
	e.create("ns1", "a", "node-1", nil)
	cur, err := e.store.CurrentResourceVersion(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	N := rvString(cur + 1000)
	exact, notOlder := metav1.ResourceVersionMatchExact, metav1.ResourceVersionMatchNotOlderThan
	type row struct {
		row  string
		opts storage.ListOptions
	}
	rows := []row{
		{"_RV_ | _unset_ | _unset_ | _unset_", storage.ListOptions{ResourceVersion: N}},
		{"_RV_ | _NotOlderThan_ | _unset_ | _unset_", storage.ListOptions{ResourceVersion: N, ResourceVersionMatch: notOlder}},
		{"_RV_ | _NotOlderThan_ | _unset_ | _N_", storage.ListOptions{ResourceVersion: N, ResourceVersionMatch: notOlder, Limit: tableLimit}},
		{"_RV_ | _unset_ | _unset_ | _N_", storage.ListOptions{ResourceVersion: N, Limit: tableLimit}},
		{"_RV_ | _Exact_ | _unset_ | _unset_", storage.ListOptions{ResourceVersion: N, ResourceVersionMatch: exact}},
		{"_RV_ | _Exact_ | _unset_ | _N_", storage.ListOptions{ResourceVersion: N, ResourceVersionMatch: exact, Limit: tableLimit}},
	}
	for _, r := range rows {
		t.Run(rowName(r.row), func(t *testing.T) {
			_, err := e.store.GetList(e.ctx, "ns1/", r.opts)
			se := assertCode(t, err, storage.ErrTooLargeResourceVersion)
			if se.RetryAfterSeconds != 1 {
				t.Fatalf("Retry-After %d, want 1", se.RetryAfterSeconds)
			}
		})
	}
})

// Options outside the table: malformed resourceVersions, unknown
// resourceVersionMatch values, negative limits, sendInitialEvents (a watch
// option) and scopes reaching outside the resource are 400 BadRequest.
var _ = register("ListInvalidOptions", func(t *testing.T, e *env) {
	e.create("ns1", "a", "node-1", nil)
	yes := true
	bad := map[string]storage.ListOptions{
		"rv -1":                 {ResourceVersion: "-1"},
		"rv x":                  {ResourceVersion: "x"},
		"rv 01":                 {ResourceVersion: "01"},
		"rv with space":         {ResourceVersion: " 1"},
		"rv overflow":           {ResourceVersion: "99999999999999999999"},
		"match unknown":         {ResourceVersion: "1", ResourceVersionMatch: "Newest"},
		"negative limit":        {Limit: -1},
		"negative limit rv 0":   {ResourceVersion: "0", Limit: -5},
		"sendInitialEvents set": {SendInitialEvents: &yes},
	}
	for name, opts := range bad {
		t.Run(name, func(t *testing.T) {
			_, err := e.store.GetList(e.ctx, "ns1/", opts)
			assertCode(t, err, storage.ErrBadRequest)
		})
	}
	for _, scope := range []string{"../", "ns1/../", "/"} {
		_, err := e.store.GetList(e.ctx, scope, storage.ListOptions{})
		assertCode(t, err, storage.ErrBadRequest)
	}
})
