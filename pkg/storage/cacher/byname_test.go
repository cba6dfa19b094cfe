package cacher

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/storage"
	"github.com/watchcache/watchcache/pkg/storage/storagetest"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
)

// decodeAt builds the record of a pod-like object under key: namespace
// and name from "namespace/name", no namespace for a key of one segment.
func decodeAt(t testing.TB, schema *object.Schema, key, node string, lbls map[string]string, rv uint64) *object.Object {
	t.Helper()
	ns, name, found := strings.Cut(key, "/")
	if !found {
		ns, name = "", key
	}
	obj, _, err := object.Decode(schema, key, podJSON(ns, name, node, "Running", lbls, int(rv)), rv)
	if err != nil {
		t.Fatal(err)
	}
	return obj
}

// byName is a field selector metadata.name=name, with more requirements.
func byName(name string, more ...fields.Selector) fields.Selector {
	return fields.AndSelectors(append([]fields.Selector{fields.OneTermEqualSelector("metadata.name", name)}, more...)...)
}

// TestListByNameCostsOneLookup: a list by name in a namespace of 20,000
// objects examines one object, as in a namespace of 10; over all
// namespaces, one per namespace holding the name; in a cluster-scoped
// resource of 20,000 objects, one.
func TestListByNameCostsOneLookup(t *testing.T) {
	s := newState([]string{"spec.nodeName"})
	cluster := newState(nil)
	cluster.clusterScoped = true
	rv := uint64(0)
	for i := range 20000 {
		rv++
		s.put(decodeAt(t, storagetest.PodSchema, fmt.Sprintf("big/p-%05d", i), "n1", nil, rv))
		cluster.put(decodeAt(t, storagetest.PodSchema, fmt.Sprintf("p-%05d", i), "n1", nil, rv))
	}
	for i := range 10 {
		rv++
		s.put(decodeAt(t, storagetest.PodSchema, fmt.Sprintf("small/p-%05d", i*2000), "n1", nil, rv))
	}
	sn, snCluster := s.snapshot(), cluster.snapshot()
	for _, tc := range []struct {
		what    string
		sn      *snapshot
		scope   string
		name    string
		limit   int64
		want    []string
		next    string
		scanned int
	}{
		{"in the big namespace", sn, "big/", "p-04000", 0, []string{"big/p-04000"}, "", 1},
		{"in the small namespace", sn, "small/", "p-04000", 0, []string{"small/p-04000"}, "", 1},
		{"absent", sn, "small/", "p-00001", 0, nil, "", 0},
		{"limit 1: no continue", sn, "big/", "p-04000", 1, []string{"big/p-04000"}, "", 1},
		{"all namespaces", sn, "", "p-04000", 0, []string{"big/p-04000", "small/p-04000"}, "", 2},
		{"all namespaces, in one", sn, "", "p-04001", 0, []string{"big/p-04001"}, "", 1},
		{"all namespaces, limit 1: continue at the next", sn, "", "p-04000", 1, []string{"big/p-04000"}, "small/p-04000", 2},
		{"cluster-scoped", snCluster, "", "p-04000", 0, []string{"p-04000"}, "", 1},
		{"cluster-scoped, absent", snCluster, "", "x", 0, nil, "", 0},
	} {
		t.Run(tc.what, func(t *testing.T) {
			p := tc.sn.list(tc.scope, "", tc.limit, &storage.ListOptions{Fields: byName(tc.name, fields.OneTermEqualSelector("spec.nodeName", "n1"))})
			var got []string
			for _, o := range p.items {
				got = append(got, o.Key())
			}
			if strings.Join(got, " ") != strings.Join(tc.want, " ") || p.next != tc.next || p.scanned != tc.scanned {
				t.Errorf("items %v, next %q, scanned %d; want %v, %q, %d", got, p.next, p.scanned, tc.want, tc.next, tc.scanned)
			}
		})
	}
}

// TestSnapshotListByNameAgainstBruteForce compares many random lists by
// name with a brute-force filter of every object: over a namespace, over
// all namespaces (keys of one segment among them, which the skip from
// namespace to namespace must visit too) and over a cluster-scoped
// state; with other selectors (the indexed field among them), start keys
// and limits. Each must return what a scan returns and examine only the
// objects under the keys it looks up.
func TestSnapshotListByNameAgainstBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	namespaced := newState([]string{"spec.nodeName"})
	cluster := newState([]string{"spec.nodeName"})
	cluster.clusterScoped = true
	names := make([]string, 40)
	for i := range names {
		names[i] = fmt.Sprintf("p-%02d", i)
	}
	var all, allCluster []*object.Object
	for i := range 3000 {
		name := names[rng.IntN(len(names)-2)] // the last two names are never used
		key := randomNamespaces[rng.IntN(len(randomNamespaces))] + "/" + name
		if rng.IntN(20) == 0 {
			key = name // no namespace
		}
		namespaced.put(decodeAt(t, storagetest.PodSchema, key, randomNode(rng), randomLabels(rng), uint64(i+1)))
		cluster.put(decodeAt(t, storagetest.PodSchema, name+"-"+fmt.Sprint(rng.IntN(3)), randomNode(rng), randomLabels(rng), uint64(i+1)))
	}
	namespaced.objects.Ascend(func(o *object.Object) bool { all = append(all, o); return true })
	cluster.objects.Ascend(func(o *object.Object) bool { allCluster = append(allCluster, o); return true })
	sn, snCluster := namespaced.snapshot(), cluster.snapshot()

	for i := range 3000 {
		isCluster := rng.IntN(4) == 0
		name := names[rng.IntN(len(names))]
		if isCluster {
			name += "-" + fmt.Sprint(rng.IntN(4)) // -3 is never used
		}
		var more []fields.Selector
		var opts storage.ListOptions
		switch rng.IntN(5) {
		case 1:
			more = append(more, fields.OneTermEqualSelector("spec.nodeName", randomNode(rng)))
		case 2:
			opts.Labels = labels.SelectorFromSet(labels.Set{"app": "web"})
		case 3:
			more = append(more, fields.OneTermEqualSelector("metadata.namespace", randomNamespaces[rng.IntN(len(randomNamespaces))]))
		case 4:
			more = append(more, fields.OneTermNotEqualSelector("status.phase", "Pending"))
		}
		opts.Fields = byName(name, more...)
		scope, objs, s := "", all, sn
		if isCluster {
			objs, s = allCluster, snCluster
		} else if rng.IntN(2) == 0 {
			scope = randomNamespaces[rng.IntN(len(randomNamespaces))] + "/"
		}
		startKey := ""
		switch rng.IntN(3) {
		case 0:
			startKey = objs[rng.IntN(len(objs))].Key()
		case 1:
			startKey = objs[rng.IntN(len(objs))].Key() + "\x00"
		}
		limit := []int64{0, 1, 2, 5}[rng.IntN(4)]
		what := fmt.Sprintf("list %d: scope %q start %q limit %d fields %v labels %v cluster %v", i, scope, startKey, limit, opts.Fields, opts.Labels, isCluster)

		// What the lookups examine: the objects with the name, and, over
		// all namespaces of the namespaced state, every key without one.
		looked := func(o *object.Object) bool {
			return o.Name() == name || !isCluster && scope == "" && !strings.Contains(o.Key(), "/")
		}
		wantItems, wantNext, _, wantScanned := bruteList(objs, scope, startKey, limit, &opts, looked)
		p := s.list(scope, startKey, limit, &opts)
		if len(p.items) != len(wantItems) {
			t.Fatalf("%s: %d items %v, want %d %v", what, len(p.items), p.items, len(wantItems), wantItems)
		}
		for j := range p.items {
			if p.items[j] != wantItems[j] {
				t.Fatalf("%s: item %d is %s, want %s", what, j, p.items[j], wantItems[j])
			}
		}
		if p.next != wantNext || p.remaining != -1 {
			t.Fatalf("%s: next %q, remaining %d; want %q, -1", what, p.next, p.remaining, wantNext)
		}
		if p.scanned != wantScanned {
			t.Fatalf("%s: scanned %d, want %d", what, p.scanned, wantScanned)
		}
		// A scan finds the same.
		scanItems, scanNext, _, _ := bruteList(objs, scope, startKey, limit, &opts, func(*object.Object) bool { return true })
		if fmt.Sprint(scanItems) != fmt.Sprint(wantItems) || scanNext != wantNext {
			t.Fatalf("%s: the lookups' reference %v (next %q) is not the scan's %v (next %q)", what, wantItems, wantNext, scanItems, scanNext)
		}
	}
}

// TestWatchByNameIsIndexed: watchers by name are filed under their name
// (whatever else they select, the indexed field included), so an event is
// offered to the watchers of its object's name only; they see exactly
// that object's events, in their scope, deletion and re-creation
// included.
func TestWatchByNameIsIndexed(t *testing.T) {
	c, _ := newMeteredCacher(t, "watch-by-name", Config{})
	ctx := context.Background()
	create := func(ns, name string, lbls map[string]string) *object.Object {
		t.Helper()
		obj, err := c.Create(ctx, ns+"/"+name, podJSON(ns, name, "n1", "Running", lbls, 0))
		if err != nil {
			t.Fatal(err)
		}
		return obj
	}
	create("ns1", "a", nil)
	create("ns2", "a", nil)
	start, err := c.CurrentResourceVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	from := storage.FormatResourceVersion(start)
	specs := []struct {
		what  string
		scope string
		opts  storage.ListOptions
		want  []string // "TYPE key"
	}{
		{"name in ns1", "ns1/", storage.ListOptions{ResourceVersion: from, Fields: byName("a")}, []string{"DELETED ns1/a", "ADDED ns1/a", "MODIFIED ns1/a"}},
		{"name everywhere", "", storage.ListOptions{ResourceVersion: from, Fields: byName("a")}, []string{"MODIFIED ns2/a", "DELETED ns1/a", "ADDED ns1/a", "ADDED ns3/a", "MODIFIED ns1/a"}},
		{"name and node", "", storage.ListOptions{ResourceVersion: from, Fields: byName("a", fields.OneTermEqualSelector("spec.nodeName", "n1"))}, []string{"MODIFIED ns2/a", "DELETED ns1/a", "ADDED ns1/a", "ADDED ns3/a", "MODIFIED ns1/a"}},
		{"name and label", "ns1/", storage.ListOptions{ResourceVersion: from, Fields: byName("a"), Labels: labels.SelectorFromSet(labels.Set{"app": "x"})}, []string{"ADDED ns1/a", "MODIFIED ns1/a"}},
		{"another name", "", storage.ListOptions{ResourceVersion: from, Fields: byName("b")}, []string{"ADDED ns1/b"}},
	}
	ws := make([]storage.Watcher, len(specs))
	for i, s := range specs {
		if ws[i], err = c.Watch(ctx, s.scope, s.opts); err != nil {
			t.Fatal(err)
		}
		defer ws[i].Stop()
	}
	c.watchMu.Lock()
	for i, s := range specs {
		w := ws[i].(*cacheWatcher)
		name, _ := s.opts.SelectedName()
		if _, ok := c.watchers.byName[name][w]; !ok || !w.indexed || !w.byName || w.indexValue != name {
			t.Errorf("%s: not filed under the name %q", s.what, name)
		}
	}
	if n, m := len(c.watchers.unindexed), len(c.watchers.byValue); n != 0 || m != 0 {
		t.Errorf("%d unindexed watchers and %d node values, want none", n, m)
	}
	c.watchMu.Unlock()

	create("ns1", "ab", nil) // a prefix of the key is not the key
	if _, err := c.GuaranteedUpdate(ctx, "ns2/a", nil, func(*object.Object) ([]byte, error) {
		return podJSON("ns2", "a", "n1", "Running", map[string]string{"v": "2"}, 0), nil
	}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Delete(ctx, "ns1/a", nil, nil); err != nil {
		t.Fatal(err)
	}
	create("ns1", "a", map[string]string{"app": "x"})
	create("ns3", "a", nil)
	create("ns1", "b", nil)
	last, err := c.GuaranteedUpdate(ctx, "ns1/a", nil, func(*object.Object) ([]byte, error) {
		return podJSON("ns1", "a", "n1", "Running", map[string]string{"app": "x", "v": "2"}, 0), nil
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range specs {
		var got []string
		deadline := time.After(10 * time.Second)
		for len(got) < len(s.want) {
			select {
			case ev := <-ws[i].ResultChan():
				got = append(got, fmt.Sprintf("%s %s", ev.Type, ev.Object.Key()))
			case <-deadline:
				t.Fatalf("%s: got %v, want %v", s.what, got, s.want)
			}
		}
		if strings.Join(got, ", ") != strings.Join(s.want, ", ") {
			t.Errorf("%s: got %v, want %v", s.what, got, s.want)
		}
	}
	// Nothing more.
	for i, s := range specs {
		select {
		case ev := <-ws[i].ResultChan():
			t.Errorf("%s: unexpected %s %v (after the last write at %d)", s.what, ev.Type, ev.Object, last.ResourceVersion())
		case <-time.After(50 * time.Millisecond):
		}
	}
}
