package cacher

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/storage"
	"github.com/watchcache/watchcache/pkg/storage/etcd3"
	"github.com/watchcache/watchcache/pkg/storage/storagetest"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
)

// testPrefixSeq makes the etcd prefixes of these tests unique within the
// process (-count=N reruns share the package's etcd).
var testPrefixSeq atomic.Int64

// uniquePrefix returns a fresh etcd prefix for a resource of one test.
func uniquePrefix(name string) string {
	return fmt.Sprintf("/%s/%d-%d/pods", name, time.Now().UnixNano(), testPrefixSeq.Add(1))
}

// newEtcdStore returns an etcd3 store of pods under a fresh prefix of the
// package's etcd.
func newEtcdStore(name string) *etcd3.Store {
	return etcd3.New(etcd3.Config{Client: storagetest.Client(), Prefix: uniquePrefix(name), Schema: storagetest.PodSchema, Resource: "pods"})
}

// waitReady waits until c serves reads.
func waitReady(t *testing.T, c *Cacher, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !c.Ready() {
		if time.Now().After(deadline) {
			t.Fatalf("cache not ready after %s", timeout)
		}
		time.Sleep(time.Millisecond)
	}
}

// podJSON is the JSON of a pod-like object; gen varies its bytes without
// changing anything selectable.
func podJSON(namespace, name, node, phase string, lbls map[string]string, gen int) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":%q,"namespace":%q,"uid":"uid-%s-%s"`, name, namespace, namespace, name)
	if len(lbls) > 0 {
		keys := make([]string, 0, len(lbls))
		for k := range lbls {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteString(`,"labels":{`)
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, "%q:%q", k, lbls[k])
		}
		b.WriteByte('}')
	}
	b.WriteString(`},"spec":{`)
	if node != "" {
		fmt.Fprintf(&b, `"nodeName":%q,`, node)
	}
	fmt.Fprintf(&b, `"containers":[{"name":"c","image":"img:%d"}]},"status":{"phase":%q}}`, gen, phase)
	return b.Bytes()
}

// sameObjects checks that got and want are the same objects, item by item:
// key, resourceVersion and served bytes.
func sameObjects(t *testing.T, what string, got, want []*object.Object) {
	t.Helper()
	for i := 0; i < len(got) || i < len(want); i++ {
		switch {
		case i >= len(got):
			t.Fatalf("%s: got %d objects, want %d; first missing: %s", what, len(got), len(want), want[i])
		case i >= len(want):
			t.Fatalf("%s: got %d objects, want %d; first extra: %s", what, len(got), len(want), got[i])
		case got[i].Key() != want[i].Key() || got[i].ResourceVersion() != want[i].ResourceVersion() || !bytes.Equal(got[i].JSON(), want[i].JSON()):
			t.Fatalf("%s: item %d is %s %s, want %s %s", what, i, got[i], got[i].JSON(), want[i], want[i].JSON())
		}
	}
}

// codeOf fails the test unless err is a storage error, and returns its code.
func codeOf(t *testing.T, err error) storage.ErrorCode {
	t.Helper()
	var se *storage.Error
	if !errors.As(err, &se) {
		t.Fatalf("error %v (%T) is not a storage error", err, err)
	}
	return se.Code
}

var (
	randomNamespaces = []string{"ns-0", "ns-1", "ns-2", "ns-3", "ns-4"}
	randomPhases     = []string{"Running", "Pending", "Succeeded"}
)

func randomNode(rng *rand.Rand) string {
	if rng.IntN(20) == 0 {
		return "" // unscheduled: indexed under the empty value
	}
	return fmt.Sprintf("node-%d", rng.IntN(10))
}

func randomLabels(rng *rand.Rand) map[string]string {
	l := map[string]string{}
	if rng.IntN(5) > 0 {
		l["app"] = []string{"web", "db", "cache"}[rng.IntN(3)]
	}
	if rng.IntN(2) == 0 {
		l["tier"] = []string{"front", "back"}[rng.IntN(2)]
	}
	if rng.IntN(4) == 0 {
		l["canary"] = "true"
	}
	return l
}

// randomWorker writes through the cache on its own keys (names w<id>-<n>),
// so that workers running in parallel never write the same key.
type randomWorker struct {
	id   int
	rng  *rand.Rand
	live []string // keys that exist
	seq  int
	// maxRV is the revision of the worker's newest write.
	maxRV uint64
}

func (w *randomWorker) run(ctx context.Context, s storage.Interface, ops int) error {
	for range ops {
		if err := w.step(ctx, s); err != nil {
			return err
		}
	}
	return nil
}

func (w *randomWorker) step(ctx context.Context, s storage.Interface) error {
	r := w.rng.IntN(10)
	switch {
	case len(w.live) < 5 || r < 4: // create
		ns := randomNamespaces[w.rng.IntN(len(randomNamespaces))]
		name := fmt.Sprintf("w%d-%04d", w.id, w.seq)
		w.seq++
		key := ns + "/" + name
		obj, err := s.Create(ctx, key, podJSON(ns, name, randomNode(w.rng), randomPhases[w.rng.IntN(3)], randomLabels(w.rng), w.rng.IntN(1000)))
		if err != nil {
			return fmt.Errorf("create %s: %w", key, err)
		}
		w.live = append(w.live, key)
		w.maxRV = max(w.maxRV, obj.ResourceVersion())
	case r < 8: // update
		key := w.live[w.rng.IntN(len(w.live))]
		node, phase, lbls, gen := randomNode(w.rng), randomPhases[w.rng.IntN(3)], randomLabels(w.rng), w.rng.IntN(1000)
		if w.rng.IntN(3) == 0 {
			node = "keep"
		}
		obj, err := s.GuaranteedUpdate(ctx, key, nil, func(cur *object.Object) ([]byte, error) {
			n := node
			if n == "keep" {
				n = cur.Fields().Get("spec.nodeName")
			}
			return podJSON(cur.Namespace(), cur.Name(), n, phase, lbls, gen), nil
		}, nil)
		if err != nil {
			return fmt.Errorf("update %s: %w", key, err)
		}
		w.maxRV = max(w.maxRV, obj.ResourceVersion())
	default: // delete
		i := w.rng.IntN(len(w.live))
		key := w.live[i]
		obj, err := s.Delete(ctx, key, nil, nil)
		if err != nil {
			return fmt.Errorf("delete %s: %w", key, err)
		}
		w.live[i] = w.live[len(w.live)-1]
		w.live = w.live[:len(w.live)-1]
		w.maxRV = max(w.maxRV, obj.ResourceVersion())
	}
	return nil
}

// TestRandomizedAgainstEtcd applies thousands of random writes through the
// cache, and after each batch compares what the cache serves with what
// etcd serves at the same revision, item by item and byte by byte: full,
// namespace, index-served field-selected and label-selected lists at the
// newest revision, exact lists at earlier revisions (from the snapshot
// history), paged lists followed to their end, and gets. Every read in the
// comparisons must be served by the cache itself (none delegated).
func TestRandomizedAgainstEtcd(t *testing.T) {
	const (
		batches   = 30
		batchSize = 100
		workers   = 8
		pageLimit = 37
	)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	etcd := newEtcdStore("random-test")
	spy := &spyStore{Interface: etcd}
	c := New(Config{Store: spy, Resource: "pods", IndexedFields: []string{"spec.nodeName"}})
	t.Cleanup(c.Stop)
	waitReady(t, c, 10*time.Second)
	startRV, err := etcd.CurrentResourceVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	delegatedLists, delegatedGets := spy.lists.Load(), spy.gets.Load()

	ws := make([]*randomWorker, workers)
	for i := range ws {
		ws[i] = &randomWorker{id: i, rng: rand.New(rand.NewPCG(seed, uint64(i+1)))}
	}

	// compare lists scope with opts (at revision rv, not older than or
	// exact) from the cache and from etcd at the cache's list revision.
	compare := func(what, scope string, rv uint64, match metav1.ResourceVersionMatch, lsel labels.Selector, fsel fields.Selector) {
		t.Helper()
		opts := storage.ListOptions{ResourceVersion: storage.FormatResourceVersion(rv), ResourceVersionMatch: match, Labels: lsel, Fields: fsel}
		got, err := c.GetList(ctx, scope, opts)
		if err != nil {
			t.Fatalf("%s: cache: %v", what, err)
		}
		if match == metav1.ResourceVersionMatchExact && got.ResourceVersion != rv || got.ResourceVersion < rv {
			t.Fatalf("%s: cache list at revision %d, want %s %d", what, got.ResourceVersion, match, rv)
		}
		if got.Continue != "" || got.RemainingItemCount != nil {
			t.Fatalf("%s: unpaged cache list has continue %q", what, got.Continue)
		}
		want, err := etcd.GetList(ctx, scope, storage.ListOptions{ResourceVersion: storage.FormatResourceVersion(got.ResourceVersion), ResourceVersionMatch: metav1.ResourceVersionMatchExact, Labels: lsel, Fields: fsel})
		if err != nil {
			t.Fatalf("%s: etcd: %v", what, err)
		}
		sameObjects(t, fmt.Sprintf("%s at %d", what, got.ResourceVersion), got.Items, want.Items)
	}

	// comparePaged reads a list in pages of pageLimit from the cache, and
	// compares it with etcd's unpaged list at the first page's revision;
	// it also continues the cache's first page on etcd (tokens of either
	// store work on the other).
	comparePaged := func(what, scope string, first storage.ListOptions) {
		t.Helper()
		page, err := c.GetList(ctx, scope, first)
		if err != nil {
			t.Fatalf("%s: page 1: %v", what, err)
		}
		rv := page.ResourceVersion
		want, err := etcd.GetList(ctx, scope, storage.ListOptions{ResourceVersion: storage.FormatResourceVersion(rv), ResourceVersionMatch: metav1.ResourceVersionMatchExact, Labels: first.Labels, Fields: first.Fields})
		if err != nil {
			t.Fatalf("%s: etcd: %v", what, err)
		}
		filtered := first.Filtered()
		firstToken := page.Continue
		var got []*object.Object
		for n := 1; ; n++ {
			if page.ResourceVersion != rv {
				t.Fatalf("%s: page %d at revision %d, want %d", what, n, page.ResourceVersion, rv)
			}
			if len(page.Items) > pageLimit {
				t.Fatalf("%s: page %d has %d items, limit %d", what, n, len(page.Items), pageLimit)
			}
			got = append(got, page.Items...)
			if page.Continue == "" {
				if page.RemainingItemCount != nil {
					t.Fatalf("%s: last page %d has a remaining count %d", what, n, *page.RemainingItemCount)
				}
				break
			}
			if len(page.Items) != pageLimit {
				t.Fatalf("%s: page %d has %d items and a continue token (the cache fills its pages)", what, n, len(page.Items))
			}
			switch r := page.RemainingItemCount; {
			case filtered && r != nil:
				t.Fatalf("%s: filtered page %d says %d items remain", what, n, *r)
			case !filtered && r == nil:
				t.Fatalf("%s: unfiltered page %d has no remaining count", what, n)
			case !filtered && *r != int64(len(want.Items)-len(got)):
				t.Fatalf("%s: page %d says %d items remain, want %d", what, n, *r, len(want.Items)-len(got))
			}
			if n > len(want.Items)+2 {
				t.Fatalf("%s: %d pages for %d items", what, n, len(want.Items))
			}
			if page, err = c.GetList(ctx, scope, storage.ListOptions{Continue: page.Continue, Limit: pageLimit, Labels: first.Labels, Fields: first.Fields}); err != nil {
				t.Fatalf("%s: page %d: %v", what, n+1, err)
			}
		}
		sameObjects(t, fmt.Sprintf("%s at %d", what, rv), got, want.Items)
		if firstToken != "" {
			rest, err := etcd.GetList(ctx, scope, storage.ListOptions{Continue: firstToken, Labels: first.Labels, Fields: first.Fields})
			if err != nil {
				t.Fatalf("%s: the cache's token on etcd: %v", what, err)
			}
			if rest.ResourceVersion != rv {
				t.Fatalf("%s: the cache's token on etcd read revision %d, want %d", what, rest.ResourceVersion, rv)
			}
			sameObjects(t, what+": the cache's first page continued on etcd", append(append([]*object.Object(nil), got[:pageLimit]...), rest.Items...), want.Items)
		}
	}

	var batchRVs []uint64
	keys := map[string]bool{}
	start := time.Now()
	var writing, comparing time.Duration
	for b := range batches {
		t0 := time.Now()
		var wg sync.WaitGroup
		errs := make([]error, workers)
		for i, w := range ws {
			ops := batchSize / workers
			if i < batchSize%workers {
				ops++
			}
			wg.Go(func() { errs[i] = w.run(ctx, c, ops) })
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatalf("batch %d: %v", b, err)
			}
		}
		var R uint64
		for _, w := range ws {
			R = max(R, w.maxRV)
			for _, k := range w.live {
				keys[k] = true
			}
		}
		t1 := time.Now()
		writing += t1.Sub(t0)
		notOlder, exact := metav1.ResourceVersionMatchNotOlderThan, metav1.ResourceVersionMatchExact
		ns := randomNamespaces[rng.IntN(len(randomNamespaces))] + "/"
		node := fmt.Sprintf("node-%d", rng.IntN(10))
		lsel, err := labels.Parse([]string{"app=web", "app in (db,cache),tier!=back", "canary", "!tier"}[rng.IntN(4)])
		if err != nil {
			t.Fatal(err)
		}
		prefix := fmt.Sprintf("batch %d (R %d)", b, R)

		// (a) everything; (b) a namespace, an index-served field selector
		// and a label selector; at R, not older than. Further variants in
		// turn (one per batch, to keep the test short).
		compare(prefix+": all", "", R, notOlder, nil, nil)
		compare(prefix+": namespace "+ns, ns, R, notOlder, nil, nil)
		compare(prefix+": spec.nodeName="+node, "", R, notOlder, nil, fields.OneTermEqualSelector("spec.nodeName", node))
		compare(prefix+": labels "+lsel.String(), "", R, notOlder, lsel, nil)
		switch b % 4 {
		case 0:
			compare(prefix+": "+ns+" spec.nodeName="+node+",status.phase=Running", ns, R, notOlder, nil, fields.ParseSelectorOrDie("spec.nodeName="+node+",status.phase=Running"))
		case 1:
			compare(prefix+": spec.nodeName= (unscheduled)", "", R, notOlder, nil, fields.OneTermEqualSelector("spec.nodeName", ""))
		case 2:
			compare(prefix+": spec.nodeName!="+node, "", R, notOlder, nil, fields.ParseSelectorOrDie("spec.nodeName!="+node))
		case 3:
			compare(prefix+": exact R", "", R, exact, nil, nil)
		}

		// (c) exact lists at earlier revisions: a previous batch's, and
		// any revision since the cache started (every one is in the
		// snapshot history: a revision between two snapshots is served by
		// the older one).
		if b > 0 {
			prev := batchRVs[rng.IntN(len(batchRVs))]
			compare(fmt.Sprintf("%s: exact at batch revision %d", prefix, prev), "", prev, exact, nil, nil)
		}
		at := startRV + rng.Uint64N(R-startRV+1)
		if b%2 == 0 {
			compare(fmt.Sprintf("%s: exact at revision %d, spec.nodeName=%s", prefix, at, node), "", at, exact, nil, fields.OneTermEqualSelector("spec.nodeName", node))
		} else {
			compare(fmt.Sprintf("%s: exact at revision %d, %s, labels %s", prefix, at, ns, lsel), ns, at, exact, lsel, nil)
		}

		// (d) paged lists followed to their end: everything at R, and in
		// turn filtered ones at an earlier revision.
		comparePaged(prefix+": paged", "", storage.ListOptions{ResourceVersion: storage.FormatResourceVersion(R), ResourceVersionMatch: notOlder, Limit: pageLimit})
		if b%2 == 0 {
			comparePaged(fmt.Sprintf("%s: paged exact at %d, labels %s", prefix, at, lsel), "", storage.ListOptions{ResourceVersion: storage.FormatResourceVersion(at), ResourceVersionMatch: exact, Limit: pageLimit, Labels: lsel})
		} else {
			comparePaged(fmt.Sprintf("%s: paged legacy exact at %d, spec.nodeName=%s", prefix, at, node), "", storage.ListOptions{ResourceVersion: storage.FormatResourceVersion(at), Limit: pageLimit, Fields: fields.OneTermEqualSelector("spec.nodeName", node)})
		}

		// Gets of a sample of keys, live and deleted: the cache at ≥ R
		// against a consistent read of etcd (nothing was written since R).
		sample := make([]string, 0, len(keys))
		for k := range keys {
			sample = append(sample, k)
		}
		sort.Strings(sample)
		for range 10 {
			key := sample[rng.IntN(len(sample))]
			got, gerr := c.Get(ctx, key, storage.GetOptions{ResourceVersion: storage.FormatResourceVersion(R)})
			want, werr := etcd.Get(ctx, key, storage.GetOptions{})
			switch {
			case werr != nil && storage.IsNotFound(werr):
				if !storage.IsNotFound(gerr) {
					t.Fatalf("%s: get %s: cache %v %v, etcd not found", prefix, key, got, gerr)
				}
			case werr != nil:
				t.Fatalf("%s: get %s from etcd: %v", prefix, key, werr)
			case gerr != nil:
				t.Fatalf("%s: get %s: cache %v, etcd %s", prefix, key, gerr, want)
			default:
				sameObjects(t, prefix+": get "+key, []*object.Object{got}, []*object.Object{want})
			}
		}
		batchRVs = append(batchRVs, R)
		comparing += time.Since(t1)
	}
	if n, g := spy.lists.Load()-delegatedLists, spy.gets.Load()-delegatedGets; n != 0 || g != 0 {
		t.Errorf("%d lists and %d gets were delegated to etcd; every read of this test should be served by the cache", n, g)
	}
	if !c.Ready() {
		t.Error("the cache is not ready at the end")
	}
	final, err := etcd.GetList(ctx, "", storage.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d writes (revisions %d to %d) in %s (%s writing, %s comparing), %d objects at the end, %d snapshots kept",
		batches*batchSize, startRV, batchRVs[len(batchRVs)-1], time.Since(start).Round(time.Millisecond), writing.Round(time.Millisecond), comparing.Round(time.Millisecond), len(final.Items), c.history.len())
}
