package cacher

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/watchcache/watchcache/pkg/storage"
	"github.com/watchcache/watchcache/pkg/storage/etcd3"
	"github.com/watchcache/watchcache/pkg/storage/storagetest"
	"k8s.io/apimachinery/pkg/fields"
)

// The benchmark workload of TARGETS.md: 50,000 pods of about 2.2 KB JSON
// on 1,000 nodes in 100 namespaces. Every list is JSON-encoded to a
// discard writer as part of the operation. Run with
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

// benchPod returns a pod of about 2.2 KB, like a small real one.
func benchPod(i int) []byte {
	ns, name, node := fmt.Sprintf("ns-%03d", i%benchNamespaces), fmt.Sprintf("pod-%06d", i), fmt.Sprintf("node-%04d", i%benchNodes)
	env := make([]string, 4)
	for j := range env {
		env[j] = fmt.Sprintf(`{"name":"ENV_VARIABLE_%02d","value":"some-configuration-value-%02d"}`, j, j)
	}
	return []byte(fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":%q,"namespace":%q,"uid":"6f0c4a8e-%08d-4d1e-9f0e-2b7c5d3a1e%02d","creationTimestamp":"2026-11-01T10:00:00Z","labels":{"app":"app-%d","tier":"backend","pod-template-hash":"5d8f7c9b6"},"annotations":{"kubernetes.io/config.seen":"2026-11-01T10:00:00.000000000Z","kubernetes.io/config.source":"api"},"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"app-%d-5d8f7c9b6","uid":"1a2b3c4d-0000-4000-8000-%012d","controller":true,"blockOwnerDeletion":true}]},`+
		`"spec":{"nodeName":%q,"restartPolicy":"Always","schedulerName":"default-scheduler","serviceAccountName":"default","terminationGracePeriodSeconds":30,"dnsPolicy":"ClusterFirst","containers":[{"name":"main","image":"registry.example.com/team/app:v1.2.3","ports":[{"containerPort":8080,"protocol":"TCP"}],"env":[%s],"resources":{"requests":{"cpu":"100m","memory":"128Mi"},"limits":{"cpu":"500m","memory":"256Mi"}},"volumeMounts":[{"name":"kube-api-access","mountPath":"/var/run/secrets/kubernetes.io/serviceaccount","readOnly":true}],"terminationMessagePath":"/dev/termination-log","imagePullPolicy":"IfNotPresent"}],"volumes":[{"name":"kube-api-access","projected":{"defaultMode":420,"sources":[{"serviceAccountToken":{"expirationSeconds":3607,"path":"token"}}]}}]},`+
		`"status":{"phase":"Running","podIP":"10.%d.%d.%d","hostIP":"192.168.%d.%d","startTime":"2026-11-01T10:00:01Z","qosClass":"Burstable","conditions":[{"type":"Ready","status":"True","lastTransitionTime":"2026-11-01T10:00:05Z"},{"type":"ContainersReady","status":"True","lastTransitionTime":"2026-11-01T10:00:05Z"}],"containerStatuses":[{"name":"main","ready":true,"restartCount":0,"image":"registry.example.com/team/app:v1.2.3","imageID":"registry.example.com/team/app@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef","containerID":"containerd://%064d","started":true,"state":{"running":{"startedAt":"2026-11-01T10:00:04Z"}}}]}}`,
		name, ns, i, i%100, i%50, i%50, i, node, strings.Join(env, ","), i%256, (i/256)%256, i%200+1, (i/1000)%256, i%1000%250+1, i))
}

// benchSetup loads the pods into etcd once per process and starts a cache.
func benchSetup(b *testing.B) (*etcd3.Store, *Cacher) {
	benchOnce.Do(func() {
		ctx := context.Background()
		benchEtcd = etcd3.New(etcd3.Config{Client: storagetest.Client(), Prefix: "/bench/core/pods", Schema: storagetest.PodSchema})
		var wg sync.WaitGroup
		errs := make(chan error, 16)
		for w := range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < benchPods; i += 16 {
					key := fmt.Sprintf("ns-%03d/pod-%06d", i%benchNamespaces, i)
					if _, err := benchEtcd.Create(ctx, key, benchPod(i)); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		benchErr = <-errs
		if benchErr == nil {
			benchCache = startBenchCache(b)
		}
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return benchEtcd, benchCache
}

func startBenchCache(tb testing.TB) *Cacher {
	c := New(Config{Store: benchEtcd, Resource: "pods", IndexedFields: []string{"spec.nodeName"}})
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
		c := startBenchCache(b)
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
