package cacher

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/storage"
	"github.com/watchcache/watchcache/pkg/storage/storagetest"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// spyStore is a test double of storage.Interface wrapping a real store
// (etcd3 over the package's etcd): it counts the reads that reach it (so a
// test can tell what the cache served itself), and, when failWatch is
// set, makes the first watch fail with an EventError once failWatch is
// closed.
type spyStore struct {
	storage.Interface
	gets, lists, watches atomic.Int64
	failWatch            chan struct{}
}

func (s *spyStore) Get(ctx context.Context, key string, opts storage.GetOptions) (*object.Object, error) {
	s.gets.Add(1)
	return s.Interface.Get(ctx, key, opts)
}

func (s *spyStore) GetList(ctx context.Context, scope string, opts storage.ListOptions) (*storage.List, error) {
	s.lists.Add(1)
	return s.Interface.GetList(ctx, scope, opts)
}

func (s *spyStore) Watch(ctx context.Context, scope string, opts storage.ListOptions) (storage.Watcher, error) {
	w, err := s.Interface.Watch(ctx, scope, opts)
	if err != nil {
		return nil, err
	}
	if s.watches.Add(1) == 1 && s.failWatch != nil {
		return storagetest.NewBreakableWatcher(w, s.failWatch), nil
	}
	return w, nil
}

// createPods creates n pods ns/<name>-i through s and returns the revision
// of the last.
func createPods(t *testing.T, ctx context.Context, s storage.Interface, ns, name string, n int) uint64 {
	t.Helper()
	var rv uint64
	for i := range n {
		pod := fmt.Sprintf("%s-%02d", name, i)
		obj, err := s.Create(ctx, ns+"/"+pod, podJSON(ns, pod, fmt.Sprintf("node-%d", i%3), "Running", map[string]string{"app": name}, i))
		if err != nil {
			t.Fatal(err)
		}
		rv = obj.ResourceVersion()
	}
	return rv
}

// updatePod rewrites a pod's image through s and returns its revision.
func updatePod(t *testing.T, ctx context.Context, s storage.Interface, key string, gen int) uint64 {
	t.Helper()
	obj, err := s.GuaranteedUpdate(ctx, key, nil, func(cur *object.Object) ([]byte, error) {
		return podJSON(cur.Namespace(), cur.Name(), "node-9", "Pending", map[string]string{"updated": "yes"}, gen), nil
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return obj.ResourceVersion()
}

func exactList(rv uint64, limit int64) storage.ListOptions {
	return storage.ListOptions{ResourceVersion: storage.FormatResourceVersion(rv), ResourceVersionMatch: metav1.ResourceVersionMatchExact, Limit: limit}
}

// TestCompactionDropsSnapshots: after etcd compacts, the cache notices
// within CompactionPollInterval and drops the snapshots that only stand
// for compacted revisions, so an exact list of such a revision becomes the
// 410 etcd answers (before that it may be served, exactly, from the kept
// snapshot); the newest snapshot stays, and reads at the current revision
// are still served by the cache.
func TestCompactionDropsSnapshots(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	etcd := newEtcdStore("compaction-test")
	spy := &spyStore{Interface: etcd}
	var compactedCalls atomic.Int64
	c := New(Config{
		Store: spy, Resource: "pods", IndexedFields: []string{"spec.nodeName"},
		IsCompacted: func(ctx context.Context, rev uint64) (bool, error) {
			compactedCalls.Add(1)
			return etcd.IsCompacted(ctx, rev)
		},
		CompactionPollInterval: 50 * time.Millisecond,
	})
	t.Cleanup(c.Stop)
	waitReady(t, c, 10*time.Second)

	N := createPods(t, ctx, c, "ns", "a", 10)
	wantN, err := etcd.GetList(ctx, "", exactList(N, 0))
	if err != nil {
		t.Fatal(err)
	}
	firstPage, err := c.GetList(ctx, "", exactList(N, 3))
	if err != nil {
		t.Fatal(err)
	}
	sameObjects(t, "first page at N", firstPage.Items, wantN.Items[:3])
	for i := range 5 {
		updatePod(t, ctx, c, fmt.Sprintf("ns/a-%02d", i), 100+i)
	}
	createPods(t, ctx, c, "ns", "b", 5)
	C, err := etcd.CurrentResourceVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Wait for the cache to reach C, then check it serves N from history.
	if _, err := c.GetList(ctx, "", storage.ListOptions{ResourceVersion: storage.FormatResourceVersion(C), ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan}); err != nil {
		t.Fatal(err)
	}
	lists := spy.lists.Load()
	before, err := c.GetList(ctx, "", exactList(N, 0))
	if err != nil {
		t.Fatal(err)
	}
	sameObjects(t, "exact at N before the compaction", before.Items, wantN.Items)
	if spy.lists.Load() != lists {
		t.Fatal("the exact list at N was delegated before any compaction")
	}
	if n := c.history.len(); n < 2 {
		t.Fatalf("%d snapshots kept before the compaction, want several", n)
	}
	kept := c.history.len()

	if _, err := storagetest.Client().Compact(ctx, int64(C)); err != nil {
		t.Fatal(err)
	}
	compactedAt := time.Now()
	servedFromSnapshot := 0
	for {
		l, err := c.GetList(ctx, "", exactList(N, 0))
		if err != nil {
			if code := codeOf(t, err); code != storage.ErrExpired {
				t.Fatalf("exact list at compacted revision %d: %v, want Expired", N, err)
			}
			break
		}
		// Served from the kept snapshot: then exactly the state at N.
		servedFromSnapshot++
		if l.ResourceVersion != N {
			t.Fatalf("exact list at %d served at %d", N, l.ResourceVersion)
		}
		sameObjects(t, "exact at N from the kept snapshot", l.Items, wantN.Items)
		if time.Since(compactedAt) > 2*time.Second {
			t.Fatalf("the cache still serves compacted revision %d %s after the compaction", N, time.Since(compactedAt))
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Logf("compacted at %d; the exact list at %d was a 410 after %s (%d times served from the kept snapshot before); %d snapshots were kept; %d IsCompacted calls",
		C, N, time.Since(compactedAt).Round(time.Millisecond), servedFromSnapshot, kept, compactedCalls.Load())

	// The newest snapshot (at C, the last write) is kept, alone.
	if n := c.history.len(); n != 1 {
		t.Errorf("%d snapshots kept after compacting at the newest revision, want 1", n)
	}
	if sn, ok := c.history.at(C); !ok || sn.rv != C {
		t.Errorf("history.at(%d) = %v, %v; want the newest snapshot, at %d", C, sn, ok, C)
	}
	if !c.Ready() {
		t.Error("the cache is not ready after a compaction")
	}

	// The continuation of a page at N is now a 410 with an inconsistent
	// continue token (etcd's answer, KEP-365).
	_, err = c.GetList(ctx, "", storage.ListOptions{Continue: firstPage.Continue, Limit: 3})
	var se *storage.Error
	if !errors.As(err, &se) || se.Code != storage.ErrExpired || se.Continue == "" {
		t.Errorf("continuing a list at compacted revision %d: %v, want Expired with a continue token", N, err)
	}

	// Reads at the current revision still come from the cache.
	lists = spy.lists.Load()
	notOlder, err := c.GetList(ctx, "", storage.ListOptions{ResourceVersion: storage.FormatResourceVersion(C), ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
	if err != nil {
		t.Fatal(err)
	}
	exactC, err := c.GetList(ctx, "", exactList(C, 0))
	if err != nil {
		t.Fatal(err)
	}
	if got := spy.lists.Load() - lists; got != 0 {
		t.Errorf("%d lists at the current revision were delegated to etcd after the compaction", got)
	}
	wantC, err := etcd.GetList(ctx, "", exactList(C, 0))
	if err != nil {
		t.Fatal(err)
	}
	sameObjects(t, "exact at C", exactC.Items, wantC.Items)
	wantNotOlder, err := etcd.GetList(ctx, "", exactList(notOlder.ResourceVersion, 0))
	if err != nil {
		t.Fatal(err)
	}
	sameObjects(t, "not older than C", notOlder.Items, wantNotOlder.Items)

	// Writes after the compaction are served as usual.
	rv := createPods(t, ctx, c, "ns", "c", 3)
	after, err := c.GetList(ctx, "", storage.ListOptions{ResourceVersion: storage.FormatResourceVersion(rv), ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
	if err != nil {
		t.Fatal(err)
	}
	wantAfter, err := etcd.GetList(ctx, "", exactList(after.ResourceVersion, 0))
	if err != nil {
		t.Fatal(err)
	}
	sameObjects(t, "after the compaction", after.Items, wantAfter.Items)
}

// TestWatchErrorRelists: when the reflector's watch fails (an EventError,
// as etcd3 sends on compaction or trouble), the cache stops serving,
// delegates reads to etcd meanwhile, lists again and serves again, with
// the writes made during the outage.
func TestWatchErrorRelists(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	etcd := newEtcdStore("watch-error-test")
	spy := &spyStore{Interface: etcd, failWatch: make(chan struct{})}
	c := New(Config{Store: spy, Resource: "pods", IndexedFields: []string{"spec.nodeName"}})
	t.Cleanup(c.Stop)
	waitReady(t, c, 10*time.Second)

	R1 := createPods(t, ctx, c, "ns", "a", 10)
	if _, err := c.GetList(ctx, "", storage.ListOptions{ResourceVersion: storage.FormatResourceVersion(R1), ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan}); err != nil {
		t.Fatal(err)
	}
	lists := spy.lists.Load()

	close(spy.failWatch)
	deadline := time.Now().Add(2 * time.Second)
	for c.Ready() {
		if time.Now().After(deadline) {
			t.Fatal("the cache is still ready 2s after its watch failed")
		}
		time.Sleep(100 * time.Microsecond)
	}
	// While it is down: writes go to etcd; reads are delegated and current.
	outage := time.Now()
	updatePod(t, ctx, c, "ns/a-00", 1)
	if _, err := c.Delete(ctx, "ns/a-01", nil, nil); err != nil {
		t.Fatal(err)
	}
	R2 := createPods(t, ctx, c, "ns", "b", 3)
	waitReady(t, c, 10*time.Second)
	t.Logf("not ready for %s", time.Since(outage).Round(time.Millisecond))
	// Ready is set once the list is published, just before the new watch
	// is opened.
	waitUntil(t, "watching again", func() bool { return spy.watches.Load() >= 2 })
	if n := spy.watches.Load(); n != 2 {
		t.Errorf("%d watches opened, want 2 (the failed one and the one after the re-list)", n)
	}
	if spy.lists.Load() == lists {
		t.Error("ready again without a list")
	}

	// Serving again, from the cache, the state etcd has.
	lists = spy.lists.Load()
	got, err := c.GetList(ctx, "", storage.ListOptions{ResourceVersion: storage.FormatResourceVersion(R2), ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
	if err != nil {
		t.Fatal(err)
	}
	if spy.lists.Load() != lists {
		t.Error("a list after the re-list was delegated to etcd")
	}
	want, err := etcd.GetList(ctx, "", exactList(got.ResourceVersion, 0))
	if err != nil {
		t.Fatal(err)
	}
	sameObjects(t, "after the re-list", got.Items, want.Items)
	if len(got.Items) != 12 {
		t.Errorf("%d objects after the re-list, want 12", len(got.Items))
	}

	// The watch after the re-list keeps the cache current.
	updatePod(t, ctx, c, "ns/a-02", 2)
	R3 := createPods(t, ctx, c, "ns", "c", 2)
	got, err = c.GetList(ctx, "", storage.ListOptions{ResourceVersion: storage.FormatResourceVersion(R3), ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
	if err != nil {
		t.Fatal(err)
	}
	if want, err = etcd.GetList(ctx, "", exactList(got.ResourceVersion, 0)); err != nil {
		t.Fatal(err)
	}
	sameObjects(t, "after writes following the re-list", got.Items, want.Items)

	// The history before the re-list is gone: an exact list at R1 is
	// served by etcd, correctly.
	lists = spy.lists.Load()
	old, err := c.GetList(ctx, "", exactList(R1, 0))
	if err != nil {
		t.Fatal(err)
	}
	if spy.lists.Load() == lists {
		t.Error("an exact list older than the re-list was served from the cache")
	}
	if want, err = etcd.GetList(ctx, "", exactList(R1, 0)); err != nil {
		t.Fatal(err)
	}
	sameObjects(t, "exact at R1 after the re-list", old.Items, want.Items)
	if !c.Ready() {
		t.Error("the cache is not ready at the end")
	}
}
