package cacher

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/google/btree"
	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/storage"
	"github.com/watchcache/watchcache/pkg/storage/storagetest"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
)

// decodePod builds the record of a pod-like object at rv.
func decodePod(t testing.TB, key, node, phase string, lbls map[string]string, rv uint64) *object.Object {
	t.Helper()
	ns, name, _ := strings.Cut(key, "/")
	obj, _, err := object.Decode(storagetest.PodSchema, key, podJSON(ns, name, node, phase, lbls, int(rv)), rv)
	if err != nil {
		t.Fatal(err)
	}
	return obj
}

// randomPod is a random pod under key at rv.
func randomPod(t testing.TB, rng *rand.Rand, key string, rv uint64) *object.Object {
	return decodePod(t, key, randomNode(rng), randomPhases[rng.IntN(len(randomPhases))], randomLabels(rng), rv)
}

// treeView is what a state or a snapshot holds: its objects and indexes.
type treeView struct {
	objects *btree.BTreeG[*object.Object]
	indexes map[string]*btree.BTreeG[indexEntry]
}

func viewOfState(s *state) treeView       { return treeView{s.objects, s.indexes} }
func viewOfSnapshot(s *snapshot) treeView { return treeView{s.objects, s.indexes} }

// checkView checks that v holds exactly the objects of model (the same
// records) and that every index holds exactly one entry per object, under
// the object's current value of the field.
func checkView(t *testing.T, what string, v treeView, model map[string]*object.Object, fieldNames []string) {
	t.Helper()
	if v.objects.Len() != len(model) {
		t.Fatalf("%s: %d objects, want %d", what, v.objects.Len(), len(model))
	}
	prev := ""
	v.objects.Ascend(func(o *object.Object) bool {
		if o.Key() <= prev && prev != "" {
			t.Fatalf("%s: key %s after %s", what, o.Key(), prev)
		}
		prev = o.Key()
		if model[o.Key()] != o {
			t.Fatalf("%s: object %s is not the record put last (%v)", what, o, model[o.Key()])
		}
		return true
	})
	if len(v.indexes) != len(fieldNames) {
		t.Fatalf("%s: %d indexes, want %d", what, len(v.indexes), len(fieldNames))
	}
	for _, f := range fieldNames {
		idx := v.indexes[f]
		if idx == nil {
			t.Fatalf("%s: no index of %s", what, f)
		}
		if idx.Len() != len(model) {
			t.Fatalf("%s: index %s has %d entries for %d objects", what, f, idx.Len(), len(model))
		}
		idx.Ascend(func(e indexEntry) bool {
			if model[e.obj.Key()] != e.obj {
				t.Fatalf("%s: index %s holds %s, not the current record (%v)", what, f, e.obj, model[e.obj.Key()])
			}
			if e.value != e.obj.Fields().Get(f) {
				t.Fatalf("%s: index %s holds %s under %q, its value is %q", what, f, e.obj, e.value, e.obj.Fields().Get(f))
			}
			return true
		})
		for _, o := range model {
			if !idx.Has(indexEntry{value: o.Fields().Get(f), obj: o}) {
				t.Fatalf("%s: index %s misses %s", what, f, o)
			}
		}
	}
}

func copyModel(m map[string]*object.Object) map[string]*object.Object {
	cp := make(map[string]*object.Object, len(m))
	for k, v := range m {
		cp[k] = v
	}
	return cp
}

// TestStatePutRemoveKeepIndexes applies random puts (creates, and
// replacements that change or keep the indexed values) and removes
// (including of absent keys) and checks after each that the objects and
// both indexes hold exactly the model's records.
func TestStatePutRemoveKeepIndexes(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	fieldNames := []string{"spec.nodeName", "status.phase"}
	s := newState(fieldNames)
	model := map[string]*object.Object{}
	checkView(t, "empty", viewOfState(s), model, fieldNames)
	for i := range 3000 {
		key := fmt.Sprintf("ns-%d/p-%02d", rng.IntN(3), rng.IntN(40))
		rv := uint64(i + 1)
		switch rng.IntN(5) {
		case 0, 1: // create or replace with random values
			obj := randomPod(t, rng, key, rv)
			s.put(obj)
			model[key] = obj
		case 2: // replace keeping the indexed values
			if cur, ok := model[key]; ok {
				obj := decodePod(t, key, cur.Fields().Get("spec.nodeName"), cur.Fields().Get("status.phase"), map[string]string{"v": fmt.Sprint(rv)}, rv)
				s.put(obj)
				model[key] = obj
			}
		default: // remove, by a deletion record (another record, same key)
			if cur, ok := model[key]; ok {
				s.remove(cur.WithResourceVersion(rv))
			} else {
				s.remove(decodePod(t, key, "node-1", "Running", nil, rv)) // absent: no-op
			}
			delete(model, key)
		}
		checkView(t, fmt.Sprintf("after op %d", i), viewOfState(s), model, fieldNames)
	}
}

// TestSnapshotIsolation: a snapshot keeps exactly the state it was taken
// at while the state goes on changing (copy-on-write), also while readers
// use it concurrently with the writer (run with -race).
func TestSnapshotIsolation(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	fieldNames := []string{"spec.nodeName"}
	s := newState(fieldNames)
	model := map[string]*object.Object{}
	mutate := func(n int, rv *uint64) {
		for range n {
			*rv++
			key := fmt.Sprintf("ns-%d/p-%03d", rng.IntN(3), rng.IntN(200))
			if rng.IntN(3) == 0 {
				if cur, ok := model[key]; ok {
					s.remove(cur.WithResourceVersion(*rv))
					delete(model, key)
					continue
				}
			}
			obj := randomPod(t, rng, key, *rv)
			s.put(obj)
			model[key] = obj
		}
		s.rv = *rv
	}
	var rv uint64
	type taken struct {
		sn    *snapshot
		model map[string]*object.Object
		// lists are the snapshot's answers when it was taken.
		all, node3 page
	}
	var snaps []taken
	node3 := &storage.ListOptions{Fields: fields.OneTermEqualSelector("spec.nodeName", "node-3")}
	for range 20 {
		mutate(100, &rv)
		sn := s.snapshot()
		if sn.rv != rv {
			t.Fatalf("snapshot at %d, state at %d", sn.rv, rv)
		}
		snaps = append(snaps, taken{sn, copyModel(model), sn.list("", "", 0, &storage.ListOptions{}), sn.list("", "", 0, node3)})
	}

	// Readers on the snapshots while the writer goes on.
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for i := range 4 {
		wg.Go(func() {
			for j := 0; ; j++ {
				select {
				case <-stop:
					return
				default:
				}
				tk := snaps[(i+j)%len(snaps)]
				if p := tk.sn.list("", "", 0, &storage.ListOptions{}); len(p.items) != len(tk.model) {
					t.Errorf("concurrent read of the snapshot at %d: %d objects, want %d", tk.sn.rv, len(p.items), len(tk.model))
					return
				}
				tk.sn.list("ns-1/", "", 10, node3)
			}
		})
	}
	mutate(3000, &rv)
	close(stop)
	wg.Wait()

	for _, tk := range snaps {
		what := fmt.Sprintf("snapshot at %d", tk.sn.rv)
		checkView(t, what, viewOfSnapshot(tk.sn), tk.model, fieldNames)
		for _, q := range []struct {
			opts *storage.ListOptions
			want page
		}{{&storage.ListOptions{}, tk.all}, {node3, tk.node3}} {
			got := tk.sn.list("", "", 0, q.opts)
			if len(got.items) != len(q.want.items) {
				t.Fatalf("%s: list %v has %d items, had %d", what, q.opts.Fields, len(got.items), len(q.want.items))
			}
			for i := range got.items {
				if got.items[i] != q.want.items[i] {
					t.Fatalf("%s: list item %d is %s, was %s", what, i, got.items[i], q.want.items[i])
				}
			}
		}
	}
	checkView(t, "the state", viewOfState(s), model, fieldNames)

	// withRV shares the trees and changes only the revision.
	sn := s.snapshot()
	later := sn.withRV(sn.rv + 10)
	if later.rv != sn.rv+10 || sn.rv != rv || later.objects != sn.objects {
		t.Fatalf("withRV: %d (objects shared: %v) from %d", later.rv, later.objects == sn.objects, sn.rv)
	}
	for key, want := range model {
		if o, ok := later.get(key); !ok || o != want {
			t.Fatalf("get %s on a withRV snapshot: %v %v, want %s", key, o, ok, want)
		}
	}
}

// listCase is a hand-checked list of a small snapshot.
type listCase struct {
	name      string
	scope     string
	startKey  string
	limit     int64
	opts      storage.ListOptions
	want      []string
	next      string
	remaining int64 // checked when next != ""
	scanned   int
}

// TestSnapshotList checks scope, start key, limit, the next key, the
// remaining count (unfiltered lists) or -1 (filtered) and the scanned
// count on a small snapshot, by hand.
func TestSnapshotList(t *testing.T) {
	s := newState([]string{"spec.nodeName"})
	rv := uint64(0)
	put := func(key, node string, lbls map[string]string) {
		rv++
		s.put(decodePod(t, key, node, "Running", lbls, rv))
	}
	put("a/1", "n1", map[string]string{"app": "web"})
	put("a/2", "n2", nil)
	put("a/3", "n1", map[string]string{"app": "web"})
	put("a/4", "n2", map[string]string{"app": "web"})
	put("a/5", "n1", nil)
	put("ab/1", "n1", map[string]string{"app": "web"}) // not under scope "a/"
	put("b/1", "n1", nil)
	put("b/2", "n1", map[string]string{"app": "web"})
	put("b/3", "n3", nil)
	sn := s.snapshot()
	web := storage.ListOptions{Labels: labels.SelectorFromSet(labels.Set{"app": "web"})}
	n1 := storage.ListOptions{Fields: fields.OneTermEqualSelector("spec.nodeName", "n1")}
	n1web := storage.ListOptions{Fields: n1.Fields, Labels: web.Labels}
	for _, tc := range []listCase{
		{name: "all", want: []string{"a/1", "a/2", "a/3", "a/4", "a/5", "ab/1", "b/1", "b/2", "b/3"}, scanned: 9},
		{name: "scope", scope: "a/", want: []string{"a/1", "a/2", "a/3", "a/4", "a/5"}, scanned: 5},
		{name: "scope b", scope: "b/", want: []string{"b/1", "b/2", "b/3"}, scanned: 3},
		{name: "empty scope", scope: "c/", want: nil},
		{name: "limit", scope: "a/", limit: 2, want: []string{"a/1", "a/2"}, next: "a/3", remaining: 3, scanned: 3},
		{name: "limit, all", limit: 4, want: []string{"a/1", "a/2", "a/3", "a/4"}, next: "a/5", remaining: 5, scanned: 5},
		{name: "limit = size", scope: "a/", limit: 5, want: []string{"a/1", "a/2", "a/3", "a/4", "a/5"}, scanned: 5},
		{name: "limit > size", scope: "b/", limit: 7, want: []string{"b/1", "b/2", "b/3"}, scanned: 3},
		{name: "start key", scope: "a/", startKey: "a/3", limit: 2, want: []string{"a/3", "a/4"}, next: "a/5", remaining: 1, scanned: 3},
		{name: "start key between keys", scope: "a/", startKey: "a/2\x00", limit: 1, want: []string{"a/3"}, next: "a/4", remaining: 2, scanned: 2},
		{name: "start key, last page", scope: "a/", startKey: "a/4", limit: 2, want: []string{"a/4", "a/5"}, scanned: 2},
		{name: "start key past the scope", scope: "a/", startKey: "a/9", want: nil},
		{name: "labels", scope: "a/", opts: web, want: []string{"a/1", "a/3", "a/4"}, scanned: 5},
		{name: "labels, limit: next is the next match", scope: "a/", limit: 1, opts: web, want: []string{"a/1"}, next: "a/3", remaining: -1, scanned: 3},
		{name: "labels, limit, all", limit: 3, opts: web, want: []string{"a/1", "a/3", "a/4"}, next: "ab/1", remaining: -1, scanned: 6},
		{name: "labels, limit = matches", scope: "a/", limit: 3, opts: web, want: []string{"a/1", "a/3", "a/4"}, scanned: 5},
		{name: "index", opts: n1, want: []string{"a/1", "a/3", "a/5", "ab/1", "b/1", "b/2"}, scanned: 6},
		{name: "index, scope", scope: "a/", opts: n1, want: []string{"a/1", "a/3", "a/5"}, scanned: 3},
		{name: "index, scope b", scope: "b/", opts: n1, want: []string{"b/1", "b/2"}, scanned: 2},
		{name: "index, limit", scope: "a/", limit: 2, opts: n1, want: []string{"a/1", "a/3"}, next: "a/5", remaining: -1, scanned: 3},
		{name: "index, start key", scope: "a/", startKey: "a/2", limit: 1, opts: n1, want: []string{"a/3"}, next: "a/5", remaining: -1, scanned: 2},
		{name: "index, no such value", opts: storage.ListOptions{Fields: fields.OneTermEqualSelector("spec.nodeName", "n9")}, want: nil},
		{name: "index and labels", opts: n1web, want: []string{"a/1", "a/3", "ab/1", "b/2"}, scanned: 6},
		{name: "index and labels, limit", limit: 2, opts: n1web, want: []string{"a/1", "a/3"}, next: "ab/1", remaining: -1, scanned: 4},
		{name: "field not indexed", scope: "a/", opts: storage.ListOptions{Fields: fields.OneTermEqualSelector("status.phase", "Running")}, limit: 2, want: []string{"a/1", "a/2"}, next: "a/3", remaining: -1, scanned: 3},
		{name: "negated field (scan)", scope: "b/", opts: storage.ListOptions{Fields: fields.OneTermNotEqualSelector("spec.nodeName", "n1")}, want: []string{"b/3"}, scanned: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := sn.list(tc.scope, tc.startKey, tc.limit, &tc.opts)
			var got []string
			for _, o := range p.items {
				got = append(got, o.Key())
			}
			if strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("items %v, want %v", got, tc.want)
			}
			if p.next != tc.next {
				t.Errorf("next %q, want %q", p.next, tc.next)
			}
			if tc.next != "" && p.remaining != tc.remaining {
				t.Errorf("remaining %d, want %d", p.remaining, tc.remaining)
			}
			if tc.opts.Filtered() && p.remaining != -1 {
				t.Errorf("filtered list: remaining %d, want -1", p.remaining)
			}
			if p.scanned != tc.scanned {
				t.Errorf("scanned %d, want %d", p.scanned, tc.scanned)
			}
		})
	}
}

// bruteList is the reference of snapshot.list: a filter over all objects
// in key order. candidate says which objects the implementation examines
// (all of them for a scan; those with the index's value for an index
// lookup), for the scanned count.
func bruteList(all []*object.Object, scope, startKey string, limit int64, opts *storage.ListOptions, candidate func(*object.Object) bool) (items []*object.Object, next string, remaining int64, scanned int) {
	remaining = -1
	for _, o := range all {
		if !strings.HasPrefix(o.Key(), scope) || o.Key() < startKey || !candidate(o) {
			continue
		}
		if next != "" {
			remaining++
			continue
		}
		scanned++
		if !opts.Matches(o) {
			continue
		}
		if limit > 0 && int64(len(items)) == limit {
			next = o.Key()
			if opts.Filtered() {
				return
			}
			remaining = 1
			continue
		}
		items = append(items, o)
	}
	return
}

// TestSnapshotListAgainstBruteForce compares many random lists of a
// snapshot of a few thousand random objects with a brute-force filter:
// index-served field selectors (alone, with another field, with labels,
// with a scope, a start key, a limit) return what a scan returns, and
// examine only the objects with the selected value; scans examine what
// they must.
func TestSnapshotListAgainstBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	indexed := newState([]string{"spec.nodeName"})
	twoIndexes := newState([]string{"spec.nodeName", "status.phase"})
	plain := newState(nil)
	var all []*object.Object
	for i := range 3000 {
		key := fmt.Sprintf("%s/p-%04d", randomNamespaces[rng.IntN(len(randomNamespaces))], rng.IntN(5000))
		obj := randomPod(t, rng, key, uint64(i+1))
		for _, s := range []*state{indexed, twoIndexes, plain} {
			s.put(obj)
		}
	}
	indexed.objects.Ascend(func(o *object.Object) bool { all = append(all, o); return true })
	snIndexed, snTwo, snPlain := indexed.snapshot(), twoIndexes.snapshot(), plain.snapshot()

	indexServed, scans := 0, 0
	for i := range 2000 {
		node := fmt.Sprintf("node-%d", rng.IntN(11)) // node-10 matches nothing
		if rng.IntN(10) == 0 {
			node = ""
		}
		var opts storage.ListOptions
		byIndex := true
		switch rng.IntN(7) {
		case 0, 1:
			opts.Fields = fields.OneTermEqualSelector("spec.nodeName", node)
		case 2:
			opts.Fields = fields.AndSelectors(fields.OneTermEqualSelector("spec.nodeName", node), fields.OneTermEqualSelector("status.phase", randomPhases[rng.IntN(3)]))
		case 3:
			opts.Fields = fields.OneTermEqualSelector("spec.nodeName", node)
			opts.Labels = labels.SelectorFromSet(labels.Set{"app": "web"})
		case 4:
			opts.Fields = fields.OneTermNotEqualSelector("spec.nodeName", node)
			byIndex = false
		case 5:
			opts.Labels = labels.SelectorFromSet(labels.Set{"tier": "front"})
			byIndex = false
		case 6:
			byIndex = false
		}
		scope := ""
		if rng.IntN(2) == 0 {
			scope = randomNamespaces[rng.IntN(len(randomNamespaces))] + "/"
		}
		startKey := ""
		switch rng.IntN(3) {
		case 0:
			startKey = all[rng.IntN(len(all))].Key() // an existing key
		case 1:
			startKey = all[rng.IntN(len(all))].Key() + "\x00" // just after one
		}
		if startKey != "" && !strings.HasPrefix(startKey, scope) {
			startKey = scope + startKey[strings.Index(startKey, "/")+1:]
		}
		limit := []int64{0, 1, 2, 7, 50, 500}[rng.IntN(6)]
		what := fmt.Sprintf("list %d: scope %q start %q limit %d fields %v labels %v", i, scope, startKey, limit, opts.Fields, opts.Labels)

		candidate := func(*object.Object) bool { return true }
		if byIndex {
			candidate = func(o *object.Object) bool { return o.Fields().Get("spec.nodeName") == node }
			indexServed++
		} else {
			scans++
		}
		wantItems, wantNext, wantRemaining, wantScanned := bruteList(all, scope, startKey, limit, &opts, candidate)
		_, _, _, fullScanScanned := bruteList(all, scope, startKey, limit, &opts, func(*object.Object) bool { return true })

		for _, v := range []struct {
			name    string
			sn      *snapshot
			scanned int
		}{{"indexed", snIndexed, wantScanned}, {"unindexed", snPlain, fullScanScanned}, {"two indexes", snTwo, -1}} {
			p := v.sn.list(scope, startKey, limit, &opts)
			if len(p.items) != len(wantItems) {
				t.Fatalf("%s (%s): %d items, want %d", what, v.name, len(p.items), len(wantItems))
			}
			for j := range p.items {
				if p.items[j] != wantItems[j] {
					t.Fatalf("%s (%s): item %d is %s, want %s", what, v.name, j, p.items[j], wantItems[j])
				}
			}
			if p.next != wantNext {
				t.Fatalf("%s (%s): next %q, want %q", what, v.name, p.next, wantNext)
			}
			if wantNext != "" && p.remaining != wantRemaining {
				t.Fatalf("%s (%s): remaining %d, want %d", what, v.name, p.remaining, wantRemaining)
			}
			if v.scanned >= 0 && p.scanned != v.scanned {
				t.Fatalf("%s (%s): scanned %d, want %d", what, v.name, p.scanned, v.scanned)
			}
		}
	}
	t.Logf("%d index-served lists, %d scans", indexServed, scans)
}

// TestSnapshotGet: get finds the record under a key, and nothing under a
// prefix of a key or an absent key.
func TestSnapshotGet(t *testing.T) {
	s := newState([]string{"spec.nodeName"})
	a := decodePod(t, "ns/a", "n1", "Running", nil, 5)
	s.put(a)
	s.put(decodePod(t, "ns/ab", "n1", "Running", nil, 6))
	sn := s.snapshot()
	if got, ok := sn.get("ns/a"); !ok || got != a {
		t.Errorf("get ns/a = %v, %v", got, ok)
	}
	for _, key := range []string{"ns/", "ns", "ns/b", "ns/a\x00"} {
		if got, ok := sn.get(key); ok {
			t.Errorf("get %q = %v", key, got)
		}
	}
}

// A snapshot counts the objects of a scope exactly: a namespace's (not its
// neighbours', whose names it prefixes) and the whole resource's.
func TestSnapshotCount(t *testing.T) {
	s := newState(nil)
	for i, key := range []string{"a/p1", "a/p2", "ab/p1", "b/p1", "b/p2", "b/p3"} {
		s.put(decodePod(t, key, "n", "Running", nil, uint64(i+1)))
	}
	sn := s.snapshot()
	for scope, want := range map[string]int{"": 6, "a/": 2, "ab/": 1, "b/": 3, "c/": 0} {
		if got := sn.count(scope); got != want {
			t.Errorf("count(%q) = %d, want %d", scope, got, want)
		}
	}
}
