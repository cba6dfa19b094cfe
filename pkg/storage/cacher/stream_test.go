package cacher

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/btree"
	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/storage"
	"github.com/watchcache/watchcache/pkg/storage/etcd3"
	"github.com/watchcache/watchcache/pkg/storage/storagetest"
)

// streamRecorder records whether the lists through it were streamed and
// how many chunks their rest came in.
type streamRecorder struct {
	storage.Interface
	streamed, chunks atomic.Int64
}

func (s *streamRecorder) GetList(ctx context.Context, scope string, opts storage.ListOptions) (*storage.List, error) {
	list, err := s.Interface.GetList(ctx, scope, opts)
	if err != nil || list.Rest == nil {
		return list, err
	}
	s.streamed.Add(1)
	rest := list.Rest
	list.Rest = func(yield func([]*object.Object) error) error {
		return rest(func(chunk []*object.Object) error {
			s.chunks.Add(1)
			return yield(chunk)
		})
	}
	return list, nil
}

// TestConsistencyCheckComparesChunks: the consistency check reads etcd's
// state as a stream of chunks and finds the first difference wherever it
// is: an object the cache lacks or has in excess (first, in the middle,
// last, after etcd's last), or holds at another revision.
func TestConsistencyCheckComparesChunks(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	etcdStore := etcd3.New(etcd3.Config{Client: storagetest.Client(), Prefix: "/consistency-chunks-test/pods", Schema: storagetest.PodSchema,
		ListChunkKeys: storagetest.ChunkKeys})
	rec := &streamRecorder{Interface: etcdStore}
	c := New(Config{Store: rec, Resource: "pods"})
	defer c.Stop()
	for !c.Ready() {
		time.Sleep(time.Millisecond)
	}
	const n = 60
	for i := range n {
		name := fmt.Sprintf("p%02d", i)
		if _, err := c.Create(ctx, "ns/"+name, []byte(`{"metadata":{"name":"`+name+`","namespace":"ns"}}`)); err != nil {
			t.Fatal(err)
		}
	}
	sn := c.newest.Load()
	for deadline := time.Now().Add(10 * time.Second); sn.objects.Len() != n; sn = c.newest.Load() {
		if time.Now().After(deadline) {
			t.Fatalf("the cache has %d objects, want %d", sn.objects.Len(), n)
		}
		time.Sleep(time.Millisecond)
	}
	obj := func(i int) *object.Object {
		o, _ := sn.get(fmt.Sprintf("ns/p%02d", i))
		return o
	}
	extra := func(key string) *object.Object {
		o, _, err := object.Decode(storagetest.PodSchema, key, []byte(`{"metadata":{"name":"`+strings.TrimPrefix(key, "ns/")+`","namespace":"ns"}}`), sn.rv)
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	for _, c2 := range []struct {
		name   string
		change func(tree *btree.BTreeG[*object.Object])
		want   string
	}{
		{"same", func(*btree.BTreeG[*object.Object]) {}, ""},
		{"first missing", func(tr *btree.BTreeG[*object.Object]) { tr.Delete(obj(0)) }, "the cache has no " + obj(0).String()},
		{"middle missing", func(tr *btree.BTreeG[*object.Object]) { tr.Delete(obj(31)) }, "the cache has no " + obj(31).String()},
		{"last missing", func(tr *btree.BTreeG[*object.Object]) { tr.Delete(obj(n - 1)) }, "the cache has no " + obj(n-1).String()},
		{"extra in the middle", func(tr *btree.BTreeG[*object.Object]) { tr.ReplaceOrInsert(extra("ns/p40a")) }, "etcd has no ns/p40a@" + fmt.Sprint(sn.rv)},
		{"extra after the last", func(tr *btree.BTreeG[*object.Object]) { tr.ReplaceOrInsert(extra("ns/zz")) }, "etcd has no ns/zz@" + fmt.Sprint(sn.rv)},
		{"other revision", func(tr *btree.BTreeG[*object.Object]) { tr.ReplaceOrInsert(obj(47).WithResourceVersion(1)) },
			"the cache has ns/p47@1, etcd has " + obj(47).String()},
	} {
		changed := &snapshot{rv: sn.rv, objects: sn.objects.Clone()}
		c2.change(changed.objects)
		streamed, chunks := rec.streamed.Load(), rec.chunks.Load()
		got, err := c.firstDifference(ctx, changed)
		if err != nil || got != c2.want {
			t.Fatalf("%s: %q, %v; want %q", c2.name, got, err, c2.want)
		}
		if rec.streamed.Load() != streamed+1 || c2.want == "" && rec.chunks.Load()-chunks < 3 {
			t.Fatalf("%s: etcd's state was not read as a stream of chunks (%d chunks)", c2.name, rec.chunks.Load()-chunks)
		}
	}
}

// TestListsFromEtcdAreStreamed: the lists the cache passes to etcd (here:
// consistent lists with the feature gate off, and exact lists older than
// the snapshots kept) come back streamed as etcd3 reads them, the rest in
// chunks, complete and at their revision; lists the cache serves are
// complete at once.
func TestListsFromEtcdAreStreamed(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	etcdStore := etcd3.New(etcd3.Config{Client: storagetest.Client(), Prefix: "/passthrough-stream-test/pods", Schema: storagetest.PodSchema,
		ListChunkKeys: storagetest.ChunkKeys})
	rec := &streamRecorder{Interface: etcdStore}
	c := New(Config{Store: rec, Resource: "pods", HistoryCapacity: 2})
	defer c.Stop()
	for !c.Ready() {
		time.Sleep(time.Millisecond)
	}
	const n = 30
	var early uint64
	for i := range n {
		name := fmt.Sprintf("p%02d", i)
		o, err := c.Create(ctx, "ns/"+name, []byte(`{"metadata":{"name":"`+name+`","namespace":"ns"}}`))
		if err != nil {
			t.Fatal(err)
		}
		if i == 9 {
			early = o.ResourceVersion()
		}
	}
	for deadline := time.Now().Add(10 * time.Second); c.newest.Load().objects.Len() != n; {
		if time.Now().After(deadline) {
			t.Fatal("the cache did not get every object")
		}
		time.Sleep(time.Millisecond)
	}
	if _, kept := c.history.at(early); kept {
		t.Fatalf("the snapshot at %d is still kept", early)
	}
	for _, tc := range []struct {
		name     string
		opts     storage.ListOptions
		items    int
		streamed bool
	}{
		{"consistent, gate off", storage.ListOptions{Stream: true}, n, true},
		{"exact, older than the snapshots", storage.ListOptions{ResourceVersion: storage.FormatResourceVersion(early), ResourceVersionMatch: "Exact", Stream: true}, 10, true},
		{"any, from memory", storage.ListOptions{ResourceVersion: "0", Stream: true}, n, false},
	} {
		chunks := rec.chunks.Load()
		list, err := c.GetList(ctx, "", tc.opts)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if (list.Rest != nil) != tc.streamed {
			t.Fatalf("%s: streamed %v, want %v", tc.name, list.Rest != nil, tc.streamed)
		}
		if err := list.Collect(); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if len(list.Items) != tc.items || tc.streamed && rec.chunks.Load() == chunks {
			t.Fatalf("%s: %d objects, %d chunks after the first", tc.name, len(list.Items), rec.chunks.Load()-chunks)
		}
		for i, o := range list.Items {
			if want := fmt.Sprintf("ns/p%02d", i); o.Key() != want || o.ResourceVersion() > list.ResourceVersion {
				t.Fatalf("%s: item %d is %s in a list at %d, want %s", tc.name, i, o, list.ResourceVersion, want)
			}
		}
	}
}

// TestReflectorListsInChunks: the cache's own list is a stream read chunk
// by chunk into the cache; when etcd compacts its revision before the
// rest is read, the attempt fails and the cache lists again, and is then
// ready with every object.
func TestReflectorListsInChunks(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	etcdStore := etcd3.New(etcd3.Config{Client: storagetest.Client(), Prefix: "/reflector-stream-test/pods", Schema: storagetest.PodSchema,
		ListChunkKeys: storagetest.ChunkKeys, NoRangeStream: true})
	const n = 40
	for i := range n {
		name := fmt.Sprintf("p%02d", i)
		if _, err := etcdStore.Create(ctx, "ns/"+name, []byte(`{"metadata":{"name":"`+name+`","namespace":"ns"}}`)); err != nil {
			t.Fatal(err)
		}
	}
	rec := &compactingRecorder{streamRecorder: streamRecorder{Interface: etcdStore}, store: etcdStore}
	c := New(Config{Store: rec})
	defer c.Stop()
	for deadline := time.Now().Add(10 * time.Second); !c.Ready(); {
		if time.Now().After(deadline) {
			t.Fatal("the cache is not ready after 10s")
		}
		time.Sleep(time.Millisecond)
	}
	sn := c.newest.Load()
	if rec.lists.Load() != 2 || sn.objects.Len() != n+1 || rec.chunks.Load() < n/storagetest.ChunkKeys {
		t.Fatalf("%d lists, %d chunks after the first, %d objects cached; want 2 lists (the first compacted), %d objects",
			rec.lists.Load(), rec.chunks.Load(), sn.objects.Len(), n+1)
	}
}

// compactingRecorder compacts etcd past the revision of the first
// reflector list it passes, once that list's first chunk is read.
type compactingRecorder struct {
	streamRecorder
	store *etcd3.Store
	lists atomic.Int64
}

func (s *compactingRecorder) GetList(ctx context.Context, scope string, opts storage.ListOptions) (*storage.List, error) {
	list, err := s.streamRecorder.GetList(ctx, scope, opts)
	if err != nil || !IsReflectorList(ctx) || s.lists.Add(1) > 1 {
		return list, err
	}
	later, err := s.store.Create(ctx, "ns/later", []byte(`{"metadata":{"name":"later","namespace":"ns"}}`))
	if err != nil {
		return nil, err
	}
	if _, err := storagetest.Client().Compact(ctx, int64(later.ResourceVersion())); err != nil {
		return nil, err
	}
	return list, nil
}
