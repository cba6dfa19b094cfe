// Conformance tests of writes and reads of one object: Create (and
// concurrent creates), Get by resourceVersion, GuaranteedUpdate, Delete and
// CurrentResourceVersion.

package storagetest

import (
	"bytes"
	"sync"
	"testing"

	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/storage"
)

var _ = register("Create", func(t *testing.T, e *env) {
	obj := e.create("ns", "a", "n1", map[string]string{"app": "x"})
	if obj.ResourceVersion() == 0 || obj.Name() != "a" || obj.Namespace() != "ns" {
		t.Fatalf("created %s", obj)
	}
	got, err := e.store.Get(e.ctx, "ns/a", storage.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	assertSameObjects(t, "get after create", []*object.Object{got}, []*object.Object{obj})

	_, err = e.store.Create(e.ctx, "ns/a", pod("ns", "a", "n2", nil))
	assertCode(t, err, storage.ErrAlreadyExists)
	_, err = e.store.Create(e.ctx, "ns/b", []byte(`{"metadata":{"name":"b","namespace":"ns","resourceVersion":"5"}}`))
	assertCode(t, err, storage.ErrInvalid)
	_, err = e.store.Create(e.ctx, "ns/b", []byte(`{"metadata":{"name":"b","namespace":"ns"}`))
	assertCode(t, err, storage.ErrInvalid)
	_, err = e.store.Create(e.ctx, "ns/b", pod("ns", "c", "", nil))
	assertCode(t, err, storage.ErrInvalid)
	_, err = e.store.Create(e.ctx, "../b", pod("", "b", "", nil))
	assertCode(t, err, storage.ErrBadRequest)
	// Nothing was written by the failures.
	list, err := e.store.GetList(e.ctx, "", storage.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e.assertListIsStateAt("list after failed creates", list, "", nil)
})

var _ = register("CreateConcurrentOneWins", func(t *testing.T, e *env) {
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = e.store.Create(e.ctx, "ns/race", pod("ns", "race", "n", nil))
		}()
	}
	wg.Wait()
	wins := 0
	for _, err := range errs {
		if err == nil {
			wins++
		} else {
			assertCode(t, err, storage.ErrAlreadyExists)
		}
	}
	if wins != 1 {
		t.Fatalf("%d concurrent creates succeeded, want 1", wins)
	}
})

// GET: "" most recent, "0" any, "N" not older than N.
var _ = register("Get", func(t *testing.T, e *env) {
	a := e.create("ns", "a", "n1", nil)
	a2 := e.update(a, "n2", nil)
	for _, rv := range []string{"", "0", storage.FormatResourceVersion(a.ResourceVersion()), storage.FormatResourceVersion(a2.ResourceVersion())} {
		got, err := e.store.Get(e.ctx, "ns/a", storage.GetOptions{ResourceVersion: rv})
		if err != nil {
			t.Fatalf("rv %q: %v", rv, err)
		}
		if rv == "0" && got.ResourceVersion() == a.ResourceVersion() {
			continue // "any" may be the older state
		}
		assertSameObjects(t, "get rv "+rv, []*object.Object{got}, []*object.Object{a2})
	}
	_, err := e.store.Get(e.ctx, "ns/a", storage.GetOptions{ResourceVersion: storage.FormatResourceVersion(a2.ResourceVersion() + 1000)})
	se := assertCode(t, err, storage.ErrTooLargeResourceVersion)
	if se.RetryAfterSeconds != 1 {
		t.Errorf("Retry-After %d, want 1", se.RetryAfterSeconds)
	}
	_, err = e.store.Get(e.ctx, "ns/missing", storage.GetOptions{})
	assertCode(t, err, storage.ErrNotFound)
	for _, bad := range []string{"-1", "x", "01", " 1"} {
		_, err = e.store.Get(e.ctx, "ns/a", storage.GetOptions{ResourceVersion: bad})
		assertCode(t, err, storage.ErrBadRequest)
	}
})

var _ = register("GuaranteedUpdate", func(t *testing.T, e *env) {
	a := e.create("ns", "a", "n1", nil)
	uid, otherUID := a.UID(), "other"
	rv := storage.FormatResourceVersion(a.ResourceVersion())
	stale := "1"
	replace := func(node string) storage.UpdateFunc {
		return func(*object.Object) ([]byte, error) { return pod("ns", "a", node, nil), nil }
	}
	_, err := e.store.GuaranteedUpdate(e.ctx, "ns/a", &storage.Preconditions{UID: &otherUID}, replace("x"), nil)
	assertCode(t, err, storage.ErrConflict)
	_, err = e.store.GuaranteedUpdate(e.ctx, "ns/a", &storage.Preconditions{ResourceVersion: &stale}, replace("x"), nil)
	assertCode(t, err, storage.ErrConflict)
	_, err = e.store.GuaranteedUpdate(e.ctx, "ns/missing", nil, replace("x"), nil)
	assertCode(t, err, storage.ErrNotFound)

	b, err := e.store.GuaranteedUpdate(e.ctx, "ns/a", &storage.Preconditions{UID: &uid, ResourceVersion: &rv}, replace("n2"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if b.ResourceVersion() <= a.ResourceVersion() || b.Fields().Get("spec.nodeName") != "n2" {
		t.Fatalf("update gave %s %s", b, b.JSON())
	}
	e.hist.record(b.ResourceVersion(), "ns/a", b)

	// A stale cached state costs a retry, not a wrong answer: the update
	// function sees the fresh state.
	var seen []uint64
	c, err := e.store.GuaranteedUpdate(e.ctx, "ns/a", nil, func(cur *object.Object) ([]byte, error) {
		seen = append(seen, cur.ResourceVersion())
		return pod("ns", "a", "n3", nil), nil
	}, a)
	if err != nil {
		t.Fatal(err)
	}
	if seen[len(seen)-1] != b.ResourceVersion() || c.Fields().Get("spec.nodeName") != "n3" {
		t.Fatalf("update from stale cache saw %v, gave %s", seen, c.JSON())
	}
	e.hist.record(c.ResourceVersion(), "ns/a", c)
	// A precondition that fails against the stale cached state but holds
	// against etcd's state succeeds.
	crv := storage.FormatResourceVersion(c.ResourceVersion())
	d, err := e.store.GuaranteedUpdate(e.ctx, "ns/a", &storage.Preconditions{ResourceVersion: &crv}, replace("n4"), b)
	if err != nil {
		t.Fatal(err)
	}
	e.hist.record(d.ResourceVersion(), "ns/a", d)

	// No change, no write.
	same, err := e.store.GuaranteedUpdate(e.ctx, "ns/a", nil, replace("n4"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if same.ResourceVersion() != d.ResourceVersion() {
		t.Fatalf("no-op update wrote: rv %d, want %d", same.ResourceVersion(), d.ResourceVersion())
	}
	// tryUpdate errors pass through; invalid results are rejected.
	_, err = e.store.GuaranteedUpdate(e.ctx, "ns/a", nil, func(*object.Object) ([]byte, error) { return []byte(`{`), nil }, nil)
	assertCode(t, err, storage.ErrInvalid)
	got, _ := e.store.Get(e.ctx, "ns/a", storage.GetOptions{})
	assertSameObjects(t, "after failed updates", []*object.Object{got}, []*object.Object{d})
})

var _ = register("GuaranteedUpdateConcurrent", func(t *testing.T, e *env) {
	e.create("ns", "counter", "", nil)
	const writers, each = 4, 5
	var wg sync.WaitGroup
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				_, err := e.store.GuaranteedUpdate(e.ctx, "ns/counter", nil, func(cur *object.Object) ([]byte, error) {
					n := len(cur.Fields().Get("spec.nodeName"))
					return pod("ns", "counter", string(bytes.Repeat([]byte("x"), n+1)), nil), nil
				}, nil)
				if err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	got, err := e.store.Get(e.ctx, "ns/counter", storage.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(got.Fields().Get("spec.nodeName")); n != writers*each {
		t.Fatalf("counter is %d after %d increments: an update was lost", n, writers*each)
	}
})

var _ = register("Delete", func(t *testing.T, e *env) {
	a := e.create("ns", "a", "n1", nil)
	other := "other"
	_, err := e.store.Delete(e.ctx, "ns/a", &storage.Preconditions{UID: &other}, nil)
	assertCode(t, err, storage.ErrConflict)
	stale := "1"
	_, err = e.store.Delete(e.ctx, "ns/a", &storage.Preconditions{ResourceVersion: &stale}, nil)
	assertCode(t, err, storage.ErrConflict)

	b := e.update(a, "n2", nil)
	brv := storage.FormatResourceVersion(b.ResourceVersion())
	// The cached state is stale; the precondition holds against etcd's.
	last, err := e.store.Delete(e.ctx, "ns/a", &storage.Preconditions{ResourceVersion: &brv}, a)
	if err != nil {
		t.Fatal(err)
	}
	if last.ResourceVersion() <= b.ResourceVersion() || !last.StoredEqual(b) {
		t.Fatalf("delete returned %s %s, want the last state at the deletion's revision", last, last.JSON())
	}
	e.hist.record(last.ResourceVersion(), "ns/a", nil)
	_, err = e.store.Get(e.ctx, "ns/a", storage.GetOptions{})
	assertCode(t, err, storage.ErrNotFound)
	_, err = e.store.Delete(e.ctx, "ns/a", nil, nil)
	assertCode(t, err, storage.ErrNotFound)
})

var _ = register("CurrentResourceVersion", func(t *testing.T, e *env) {
	a := e.create("ns", "a", "n1", nil)
	rv, err := e.store.CurrentResourceVersion(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rv < a.ResourceVersion() {
		t.Fatalf("current revision %d is older than the write at %d", rv, a.ResourceVersion())
	}
})
