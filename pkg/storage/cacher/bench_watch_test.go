package cacher

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/storage"
	"github.com/watchcache/watchcache/pkg/storage/storagetest"
	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/fields"
)

// BenchmarkWatchFanout: 500 or 1,000 watchers of the 50,000 pods, 10,000
// updates written as fast as 16 writers can (through etcd), in two shapes:
// every watcher sees every pod ("all"), and every watcher selects one
// node's pods by spec.nodeName ("by-node", served by the watcher index).
// Reported: events delivered per second, and the delivery latency from the
// write's acknowledgement to the event's receipt (p50, p99; a sample of one
// revision in ten). Beside them, what the cache cannot go below: the same
// latency p99 of a plain etcd watch in the same process ("etcd-p99-ms"),
// and the part after it, from that watch's receipt of an event to a
// watcher's ("cache-p99-ms"). Run with
//
//	go test ./pkg/storage/cacher/ -run '^$' -bench WatchFanout -benchtime 1x
func BenchmarkWatchFanout(b *testing.B) {
	_, cache := benchSetup(b)
	for _, c := range []struct {
		name     string
		watchers int
		byNode   bool
	}{{"all-500", 500, false}, {"all-1000", 1000, false}, {"by-node-1000", 1000, true}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				r := runFanout(b, cache, c.watchers, 10000, c.byNode)
				b.ReportMetric(r.eventsPerSecond, "events/s")
				b.ReportMetric(float64(r.p50.Microseconds())/1000, "p50-ms")
				b.ReportMetric(float64(r.p99.Microseconds())/1000, "p99-ms")
				b.ReportMetric(float64(r.etcdP99.Microseconds())/1000, "etcd-p99-ms")
				b.ReportMetric(float64(r.cacheP99.Microseconds())/1000, "cache-p99-ms")
				b.ReportMetric(float64(r.closed), "closed-watchers")
			}
		})
	}
}

type fanoutResult struct {
	eventsPerSecond float64
	p50, p99        time.Duration
	// etcdP99 is the latency p99 of a plain etcd watch of the pods;
	// cacheP99 that of the watchers' receipts after that watch's.
	etcdP99, cacheP99 time.Duration
	closed            int
}

// receipt is when a watcher received the event of a revision.
type receipt struct {
	rv uint64
	at time.Time
}

func runFanout(b *testing.B, cache *Cacher, watchers, updates int, byNode bool) fanoutResult {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start, err := cache.CurrentResourceVersion(ctx)
	if err != nil {
		b.Fatal(err)
	}
	var delivered atomic.Int64
	var closedEarly atomic.Int64
	receipts := make([][]receipt, watchers)
	lastReceipt := make([]time.Time, watchers)
	var wg sync.WaitGroup
	for i := range watchers {
		opts := storage.ListOptions{ResourceVersion: storage.FormatResourceVersion(start)}
		if byNode {
			opts.Fields = fields.OneTermEqualSelector("spec.nodeName", fmt.Sprintf("node-%04d", i%benchNodes))
		}
		w, err := cache.Watch(ctx, "", opts)
		if err != nil {
			b.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer w.Stop()
			n := int64(0)
			for ev := range w.ResultChan() {
				n++
				now := time.Now()
				lastReceipt[i] = now
				if ev.ResourceVersion%10 == 0 {
					receipts[i] = append(receipts[i], receipt{ev.ResourceVersion, now})
				}
			}
			delivered.Add(n)
			if ctx.Err() == nil {
				closedEarly.Add(1) // closed by the server: too slow
			}
		}()
	}

	// A plain etcd watch of the same updates: the floor of the latency.
	etcdEvents := storagetest.Client().Watch(ctx, "/bench/core/pods/", clientv3.WithPrefix(), clientv3.WithRev(int64(start)+1))
	etcdReceipts := map[uint64]time.Time{}
	etcdDone := make(chan struct{})
	go func() {
		defer close(etcdDone)
		for resp := range etcdEvents {
			now := time.Now()
			for _, ev := range resp.Events {
				etcdReceipts[uint64(ev.Kv.ModRevision)] = now
			}
		}
	}()

	// Writers: update pods round-robin, recording each acknowledgement.
	var acks sync.Map // rv → time.Time
	began := time.Now()
	var next atomic.Int64
	var writers sync.WaitGroup
	var last atomic.Uint64
	for range 16 {
		writers.Add(1)
		go func() {
			defer writers.Done()
			for {
				n := int(next.Add(1))
				if n > updates {
					return
				}
				i := (n * 7919) % benchPods
				key := fmt.Sprintf("ns-%03d/pod-%06d", i%benchNamespaces, i)
				obj, err := cache.GuaranteedUpdate(ctx, key, nil, func(cur *object.Object) ([]byte, error) {
					return bumpGeneration(cur.Stored()), nil
				}, nil)
				if err != nil {
					b.Error(err)
					return
				}
				acks.Store(obj.ResourceVersion(), time.Now())
				for {
					l := last.Load()
					if obj.ResourceVersion() <= l || last.CompareAndSwap(l, obj.ResourceVersion()) {
						break
					}
				}
			}
		}()
	}
	writers.Wait()
	// Every event is dispatched once the cache reaches the last write;
	// the watchers then get a moment to drain their buffers.
	if err := cache.waitFor(ctx, last.Load()); err != nil {
		b.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	cancel()
	wg.Wait()
	var end time.Time
	for _, t := range lastReceipt {
		if t.After(end) {
			end = t
		}
	}
	elapsed := end.Sub(began)

	var latencies []time.Duration
	for _, rs := range receipts {
		for _, r := range rs {
			if ack, ok := acks.Load(r.rv); ok {
				latencies = append(latencies, max(0, r.at.Sub(ack.(time.Time))))
			}
		}
	}
	<-etcdDone
	var etcdLatencies, cacheLatencies []time.Duration
	for rv, at := range etcdReceipts {
		if ack, ok := acks.Load(rv); ok {
			etcdLatencies = append(etcdLatencies, max(0, at.Sub(ack.(time.Time))))
		}
	}
	for _, rs := range receipts {
		for _, r := range rs {
			if at, ok := etcdReceipts[r.rv]; ok {
				cacheLatencies = append(cacheLatencies, max(0, r.at.Sub(at)))
			}
		}
	}
	for _, ds := range [][]time.Duration{latencies, etcdLatencies, cacheLatencies} {
		slices.Sort(ds)
	}
	return fanoutResult{eventsPerSecond: float64(delivered.Load()) / elapsed.Seconds(), closed: int(closedEarly.Load()),
		p50: percentile(latencies, 0.5), p99: percentile(latencies, 0.99), etcdP99: percentile(etcdLatencies, 0.99), cacheP99: percentile(cacheLatencies, 0.99)}
}

// bumpGeneration returns a pod's stored JSON with a changed
// metadata.generation-like marker, keeping its size: it rewrites the
// "pod-template-hash" label's last character.
func bumpGeneration(stored []byte) []byte {
	out := slices.Clone(stored)
	const marker = `"pod-template-hash":"5d8f7c9b`
	for i := 0; i+len(marker) < len(out); i++ {
		if string(out[i:i+len(marker)]) == marker {
			c := &out[i+len(marker)]
			*c = '0' + (*c-'0'+1)%10
			break
		}
	}
	return out
}
