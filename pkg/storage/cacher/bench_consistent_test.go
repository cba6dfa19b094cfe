package cacher

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/watchcache/watchcache/pkg/storage"
	"k8s.io/apimachinery/pkg/fields"
)

// clientRun is the outcome of concurrent clients running an operation.
type clientRun struct {
	opsPerSecond float64
	p50, p99     time.Duration
}

// runClients runs op from n concurrent clients for d (at least one
// operation each) and measures each operation's latency.
func runClients(b *testing.B, n int, d time.Duration, op func(client, i int) error) clientRun {
	var mu sync.Mutex
	var latencies []time.Duration
	var wg sync.WaitGroup
	start := time.Now()
	for client := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			for i := 0; i == 0 || time.Since(start) < d; i++ {
				t := time.Now()
				if err := op(client, i); err != nil {
					b.Error(err)
					return
				}
				mine = append(mine, time.Since(t))
			}
			mu.Lock()
			latencies = append(latencies, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	slices.Sort(latencies)
	if len(latencies) == 0 {
		return clientRun{}
	}
	return clientRun{
		opsPerSecond: float64(len(latencies)) / elapsed.Seconds(),
		p50:          latencies[len(latencies)/2],
		p99:          latencies[len(latencies)*99/100],
	}
}

func reportClients(b *testing.B, r clientRun) {
	b.ReportMetric(r.opsPerSecond, "ops/s")
	b.ReportMetric(float64(r.p50.Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(r.p99.Microseconds())/1000, "p99-ms")
}

// consistentCache is the benchmark cache with consistent reads from
// memory (the gates on, as the server runs by default).
func consistentCache(b *testing.B) *Cacher {
	_, cache := benchSetup(b)
	cache.consistentList, cache.consistentGet = true, true
	return cache
}

// BenchmarkConsistentListByNode: a kubelet's consistent list of its node's
// pods (resourceVersion unset), from 2 and 16 concurrent clients, from the
// cache and from etcd, for 2 s each; also the etcd requests per consistent
// read with shared revision fetches (without sharing it is 1). Run with
//
//	go test ./pkg/storage/cacher/ -run '^$' -bench Consistent -benchtime 1x
func BenchmarkConsistentListByNode(b *testing.B) {
	cache := consistentCache(b)
	etcdStore, _ := benchSetup(b)
	for _, clients := range []int{2, 16} {
		for _, s := range []struct {
			name  string
			store storage.Interface
		}{{"cache", cache}, {"etcd", etcdStore}} {
			b.Run(fmt.Sprintf("%s/%d-clients", s.name, clients), func(b *testing.B) {
				fetches, reads := cache.revisions.fetches.Load(), cache.revisions.reads.Load()
				for b.Loop() {
					reportClients(b, runClients(b, clients, 2*time.Second, func(client, i int) error {
						node := fmt.Sprintf("node-%04d", (client*7919+i)%benchNodes)
						_, err := s.store.GetList(context.Background(), "", storage.ListOptions{Fields: fields.OneTermEqualSelector("spec.nodeName", node)})
						return err
					}))
				}
				if s.name == "cache" {
					f, r := cache.revisions.fetches.Load()-fetches, cache.revisions.reads.Load()-reads
					b.ReportMetric(float64(f)/float64(r), "etcd-requests/read")
				}
			})
		}
	}
}

// BenchmarkConsistentGet: consistent gets of single pods from 16 clients,
// from the cache and from etcd, for 2 s each.
func BenchmarkConsistentGet(b *testing.B) {
	cache := consistentCache(b)
	etcdStore, _ := benchSetup(b)
	for _, s := range []struct {
		name  string
		store storage.Interface
	}{{"cache", cache}, {"etcd", etcdStore}} {
		b.Run(s.name, func(b *testing.B) {
			for b.Loop() {
				reportClients(b, runClients(b, 16, 2*time.Second, func(client, i int) error {
					n := (client*7919 + i*31) % benchPods
					_, err := s.store.Get(context.Background(), fmt.Sprintf("ns-%03d/pod-%06d", n%benchNamespaces, n), storage.GetOptions{})
					return err
				}))
			}
		})
	}
}
