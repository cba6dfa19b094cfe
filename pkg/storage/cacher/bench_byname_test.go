package cacher

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/storage"
	"github.com/watchcache/watchcache/pkg/storage/etcd3"
	"github.com/watchcache/watchcache/pkg/storage/storagetest"
	"k8s.io/apimachinery/pkg/fields"
)

// BenchmarkConsistentListByName: a consistent list (resourceVersion unset)
// of one pod by metadata.name, what a single-object informer sends, from 2
// clients for 2 s while a writer updates other pods at 200 writes/s, over
// 5,000 and 50,000 pods in 100 namespaces (50 and 500 pods a namespace):
// in the pod's namespace from the cache and from etcd, and over all
// namespaces from the cache. A point lookup costs the same at both sizes.
// Run with
//
//	go test ./pkg/storage/cacher/ -run '^$' -bench ConsistentListByName -benchtime 1x
func BenchmarkConsistentListByName(b *testing.B) {
	for _, size := range []int{5000, benchPods} {
		etcdStore, cache := benchSetupSize(b, size)
		cache.consistentList, cache.consistentGet = true, true
		for _, v := range byNameVariants(etcdStore, cache) {
			b.Run(fmt.Sprintf("%d-pods/%s", size, v.name), func(b *testing.B) {
				stop := writeAtRate(b, etcdStore, size, 200)
				defer stop()
				for b.Loop() {
					reportClients(b, runClients(b, 2, 2*time.Second, func(client, i int) error {
						_, err := v.list(context.Background(), (client*7919+i*31)%size, "")
						return err
					}))
				}
			})
		}
	}
}

// BenchmarkListByName: the list of BenchmarkConsistentListByName with
// resourceVersion "0", without writes, encoded: the lookup itself, which
// a consistent read adds a read of etcd's revision to. Run with
//
//	go test ./pkg/storage/cacher/ -run '^$' -bench '^BenchmarkListByName$'
func BenchmarkListByName(b *testing.B) {
	for _, size := range []int{5000, benchPods} {
		etcdStore, cache := benchSetupSize(b, size)
		for _, v := range byNameVariants(etcdStore, cache) {
			b.Run(fmt.Sprintf("%d-pods/%s", size, v.name), func(b *testing.B) {
				w := bufio.NewWriterSize(io.Discard, 64<<10)
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					l, err := v.list(context.Background(), (i*7919)%size, "0")
					if err != nil {
						b.Fatal(err)
					}
					encodeList(w, l)
					i++
				}
			})
		}
	}
}

// byNameVariant lists pod n by name from one store over one scope.
type byNameVariant struct {
	name string
	list func(ctx context.Context, n int, rv string) (*storage.List, error)
}

// byNameVariants are the lists by name the benchmarks compare: in the
// pod's namespace from the cache and from etcd, over all namespaces from
// the cache (etcd reads every pod for it).
func byNameVariants(etcdStore *etcd3.Store, cache *Cacher) []byNameVariant {
	variant := func(name string, store storage.Interface, inNamespace bool) byNameVariant {
		return byNameVariant{name, func(ctx context.Context, n int, rv string) (*storage.List, error) {
			scope := ""
			if inNamespace {
				scope = fmt.Sprintf("ns-%03d/", n%benchNamespaces)
			}
			l, err := store.GetList(ctx, scope, storage.ListOptions{ResourceVersion: rv, Fields: fields.OneTermEqualSelector("metadata.name", fmt.Sprintf("pod-%06d", n))})
			if err == nil && len(l.Items) != 1 {
				err = fmt.Errorf("list of pod %d by name: %d items", n, len(l.Items))
			}
			return l, err
		}}
	}
	return []byNameVariant{variant("cache", cache, true), variant("etcd", etcdStore, true), variant("cache-all-namespaces", cache, false)}
}

// benchSized holds the pod sets of sizes other than benchPods, loaded
// once per process under a prefix of their own, with their caches.
var benchSized struct {
	sync.Mutex
	sets map[int]*sizedBench
}

type sizedBench struct {
	store *etcd3.Store
	cache *Cacher
}

// benchSetupSize returns a store of n pods (benchPod 0 to n-1) and a
// ready cache of it: benchSetup's for benchPods.
func benchSetupSize(b *testing.B, n int) (*etcd3.Store, *Cacher) {
	if n == benchPods {
		return benchSetup(b)
	}
	benchSized.Lock()
	defer benchSized.Unlock()
	if set := benchSized.sets[n]; set != nil {
		return set.store, set.cache
	}
	store := etcd3.New(etcd3.Config{Client: storagetest.Client(), Prefix: fmt.Sprintf("/bench/core/pods-%d", n), Schema: storagetest.PodSchema})
	if err := loadBenchPods(context.Background(), store, n); err != nil {
		b.Fatal(err)
	}
	if benchSized.sets == nil {
		benchSized.sets = map[int]*sizedBench{}
	}
	set := &sizedBench{store: store, cache: startCacheOf(store)}
	benchSized.sets[n] = set
	return set.store, set.cache
}

// writeAtRate updates pods of store (of n pods) perSecond times a second,
// each update flipping a label, until the returned stop is called.
func writeAtRate(b *testing.B, store storage.Interface, n, perSecond int) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(time.Second / time.Duration(perSecond))
		defer t.Stop()
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			_, err := store.GuaranteedUpdate(ctx, benchPodKey(i*7%n), nil, func(cur *object.Object) ([]byte, error) {
				data := cur.Stored() // bytes.Replace returns a copy
				if flipped := bytes.Replace(data, []byte(`"tier":"backend"`), []byte(`"tier":"bakend"`), 1); !bytes.Equal(flipped, data) {
					return flipped, nil
				}
				return bytes.Replace(data, []byte(`"tier":"bakend"`), []byte(`"tier":"backend"`), 1), nil
			}, nil)
			if err != nil && ctx.Err() == nil {
				b.Error(err)
				return
			}
		}
	}()
	return func() { cancel(); <-done }
}
