package cacher

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/watchcache/watchcache/pkg/benchdata"
	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/storage"
	"github.com/watchcache/watchcache/pkg/storage/etcd3"
	"github.com/watchcache/watchcache/pkg/storage/storagetest"
	"k8s.io/apimachinery/pkg/fields"
)

// The in-process benchmark workload of docs/performance.md ("Go
// benchmarks"): 50,000 pods of about 2.2 KB JSON on 1,000 nodes in 100
// namespaces. Every list is JSON-encoded to a discard writer as part of
// the operation. Run with
//
//	go test ./pkg/storage/cacher/ -run '^$' -bench . -benchtime 3s
//
// Each benchmark has a cache and an etcd variant, measured side by side in
// one run; compare them with each other, not across runs.
const (
	benchPods       = 50000
	benchNodes      = 1000
	benchNamespaces = 100
)

var (
	benchOnce  sync.Once
	benchEtcd  *etcd3.Store
	benchCache *Cacher
	benchErr   error
)

// benchPod returns pod i, about 2.2 KB, like a small real one.
func benchPod(i int) []byte { return benchdata.Pod(i, benchNamespaces, benchNodes) }

// benchSetup loads the pods into etcd once per process and starts a cache.
func benchSetup(b *testing.B) (*etcd3.Store, *Cacher) {
	benchOnce.Do(func() {
		ctx := context.Background()
		benchEtcd = etcd3.New(etcd3.Config{Client: storagetest.Client(), Prefix: "/bench/core/pods", Schema: storagetest.PodSchema})
		if benchErr = loadBenchPods(ctx, benchEtcd, benchPods); benchErr == nil {
			benchCache = startCacheOf(benchEtcd)
		}
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return benchEtcd, benchCache
}

// benchPodKey is the key of pod i.
func benchPodKey(i int) string { return fmt.Sprintf("ns-%03d/pod-%06d", i%benchNamespaces, i) }

// loadBenchPods creates pods 0 to n-1 in store, from 16 writers.
func loadBenchPods(ctx context.Context, store storage.Interface, n int) error {
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 16 {
				if _, err := store.Create(ctx, benchPodKey(i), benchPod(i)); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// startCacheOf starts a cache of store as the server caches pods, and
// waits until it is ready.
func startCacheOf(store storage.Interface) *Cacher {
	c := New(Config{Store: store, Resource: "pods", IndexedFields: []string{"spec.nodeName"}})
	for !c.Ready() {
		time.Sleep(time.Millisecond)
	}
	return c
}

// encodeList writes a list as the server does: items' ready bytes into a
// buffered writer (here discarding).
func encodeList(w *bufio.Writer, l *storage.List) {
	w.WriteString(`{"kind":"PodList","apiVersion":"v1","metadata":{},"items":[`)
	for i, item := range l.Items {
		if i > 0 {
			w.WriteByte(',')
		}
		item.WriteJSON(w)
	}
	w.WriteString("]}")
	w.Flush()
}

// benchStores runs op once per iteration against each store, as
// sub-benchmarks "cache" and "etcd".
func benchStores(b *testing.B, op func(ctx context.Context, store storage.Interface, w *bufio.Writer, i int)) {
	etcdStore, cache := benchSetup(b)
	for _, s := range []struct {
		name  string
		store storage.Interface
	}{{"cache", cache}, {"etcd", etcdStore}} {
		b.Run(s.name, func(b *testing.B) {
			w := bufio.NewWriterSize(io.Discard, 64<<10)
			ctx := context.Background()
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				op(ctx, s.store, w, i)
				i++
			}
		})
	}
}

// benchList runs one list per iteration against each store.
func benchList(b *testing.B, opts func(i int) storage.ListOptions) {
	benchStores(b, func(ctx context.Context, store storage.Interface, w *bufio.Writer, i int) {
		l, err := store.GetList(ctx, "", opts(i))
		if err != nil {
			b.Fatal(err)
		}
		encodeList(w, l)
	})
}

// BenchmarkListByNode: what a kubelet asks for, its node's 50 pods
// (resourceVersion "0"; the cache serves it from the spec.nodeName index).
func BenchmarkListByNode(b *testing.B) {
	benchList(b, func(i int) storage.ListOptions {
		return storage.ListOptions{ResourceVersion: "0", Fields: fields.OneTermEqualSelector("spec.nodeName", fmt.Sprintf("node-%04d", i%benchNodes))}
	})
}

// BenchmarkListAll: all 50,000 pods with resourceVersion "0".
func BenchmarkListAll(b *testing.B) {
	benchList(b, func(int) storage.ListOptions { return storage.ListOptions{ResourceVersion: "0"} })
}

// BenchmarkListPaginated: a full pass over all pods in pages of 500, as
// client-go's pager does (first page at "0" from the cache, the rest by
// continue token from the snapshot; all from etcd for the etcd variant).
func BenchmarkListPaginated(b *testing.B) {
	benchStores(b, func(ctx context.Context, store storage.Interface, w *bufio.Writer, _ int) {
		opts := storage.ListOptions{ResourceVersion: "0", Limit: 500}
		n := 0
		for {
			l, err := store.GetList(ctx, "", opts)
			if err != nil {
				b.Fatal(err)
			}
			encodeList(w, l)
			n += len(l.Items)
			if l.Continue == "" {
				break
			}
			opts = storage.ListOptions{Limit: 500, Continue: l.Continue}
		}
		if n != benchPods {
			b.Fatalf("paged %d pods, want %d", n, benchPods)
		}
	})
}

// BenchmarkCacheInit: time to list 50,000 pods into a new cache, and the
// heap the cache holds per pod (after GC) against the pods' JSON size.
func BenchmarkCacheInit(b *testing.B) {
	benchSetup(b)
	jsonBytes := 0
	for i := range benchPods {
		jsonBytes += len(benchPod(i))
	}
	var heapPerPod float64
	for b.Loop() {
		c := startCacheOf(benchEtcd)
		b.StopTimer()
		// What the cache holds: the live heap with it, minus the live heap
		// once it is gone (etcd, in this process too, is in both).
		var with, without runtime.MemStats
		fullGC()
		runtime.ReadMemStats(&with)
		c.Stop() // c is dead from here on
		fullGC()
		runtime.ReadMemStats(&without)
		heapPerPod = (float64(with.HeapAlloc) - float64(without.HeapAlloc)) / benchPods
		b.StartTimer()
	}
	b.ReportMetric(heapPerPod, "heap-B/pod")
	b.ReportMetric(float64(jsonBytes)/benchPods, "json-B/pod")
}

// fullGC collects twice: sync.Pool contents (gRPC's buffers, here) survive
// one collection in the pools' victim caches.
func fullGC() {
	runtime.GC()
	runtime.GC()
}

// benchWidgets is the number of custom resources BenchmarkCacheInitCustomResource caches.
const benchWidgets = 20000

// benchWidget returns custom resource i as the server stores it (about
// 1 KB: metadata with managedFields, a spec of a few fields).
func benchWidget(i int) []byte {
	return fmt.Appendf(nil, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"creationTimestamp":"2026-11-25T05:00:00Z",`+
		`"generation":1,"labels":{"app":"widget-%d","tier":"backend"},"managedFields":[{"apiVersion":"example.com/v1","fieldsType":"FieldsV1",`+
		`"fieldsV1":{"f:metadata":{"f:labels":{".":{},"f:app":{},"f:tier":{}}},"f:spec":{".":{},"f:color":{},"f:size":{},"f:owner":{},"f:notes":{}}},`+
		`"manager":"widget-controller","operation":"Apply","time":"2026-11-25T05:00:00Z"}],"name":"widget-%06d","namespace":"ns-%03d",`+
		`"uid":"0b1c2d3e-4f50-6172-8394-a5b6c7d8e9%02d"},"spec":{"color":"%s","size":%d,"owner":"team-%d",`+
		`"notes":"a widget of the benchmark, with a description long enough to be like the ones users write"}}`,
		i%50, i, i%benchNamespaces, i%100, []string{"red", "green", "blue"}[i%3], i%10, i%20)
}

// BenchmarkCacheInitCustomResource: the heap the cache holds per custom
// resource (after GC) against the objects' JSON size (an index of a
// selectable field would add about 50 B per object).
func BenchmarkCacheInitCustomResource(b *testing.B) {
	ctx := context.Background()
	schema := object.MustSchema("spec.color")
	store := etcd3.New(etcd3.Config{Client: storagetest.Client(), Prefix: "/bench/example.com/widgets", Schema: schema})
	jsonBytes := 0
	for i := range benchWidgets {
		data := benchWidget(i)
		jsonBytes += len(data)
		key := fmt.Sprintf("ns-%03d/widget-%06d", i%benchNamespaces, i)
		if _, err := store.Create(ctx, key, data); err != nil && storage.CodeOf(err) != storage.ErrAlreadyExists {
			b.Fatal(err)
		}
	}
	var heapPerObject float64
	for b.Loop() {
		// As a CRD's resource is cached: its selectable fields filter,
		// without an index of their own.
		c := New(Config{Store: store, Resource: "widgets.example.com"})
		for !c.Ready() {
			time.Sleep(time.Millisecond)
		}
		b.StopTimer()
		var with, without runtime.MemStats
		fullGC()
		runtime.ReadMemStats(&with)
		c.Stop()
		fullGC()
		runtime.ReadMemStats(&without)
		heapPerObject = (float64(with.HeapAlloc) - float64(without.HeapAlloc)) / benchWidgets
		b.StartTimer()
	}
	b.ReportMetric(heapPerObject, "heap-B/object")
	b.ReportMetric(float64(jsonBytes)/benchWidgets, "json-B/object")
	b.ReportMetric(heapPerObject/(float64(jsonBytes)/benchWidgets), "heap/json")
}
