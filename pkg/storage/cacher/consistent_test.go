package cacher

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/watchcache/watchcache/pkg/storage"
	"github.com/watchcache/watchcache/pkg/storage/etcd3"
	"github.com/watchcache/watchcache/pkg/storage/storagemetrics"
	"github.com/watchcache/watchcache/pkg/storage/storagetest"
)

// stalledStore is a test double of the store under the cache whose watch
// delivers nothing (a clogged watch stream), so that the cache cannot
// catch up with etcd. etcd behind it is real.
type stalledStore struct{ storage.Interface }

func (s stalledStore) Watch(ctx context.Context, _ string, _ storage.ListOptions) (storage.Watcher, error) {
	ch := make(chan storage.Event)
	go func() { <-ctx.Done(); close(ch) }()
	return closedWatcher(ch), nil
}

// TestConsistentReadCannotCatchUp: when the cache does not reach etcd's
// revision within 3 s, a consistent read is refused with 429 and
// Retry-After (counted as success=false), or, with the fallback, served by
// etcd (counted as fallback=true) — never served stale.
func TestConsistentReadCannotCatchUp(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	etcdStore := etcd3.New(etcd3.Config{Client: storagetest.Client(), Prefix: "/stalled-test/pods", Schema: storagetest.PodSchema})
	for _, fallback := range []bool{false, true} {
		reg := prometheus.NewRegistry()
		c := New(Config{Store: stalledStore{etcdStore}, Resource: "pods", Metrics: storagemetrics.NewStorage(reg),
			ConsistentListFromCache: true, ConsistentGetFromCache: true, ConsistentReadFallback: fallback})
		for !c.Ready() {
			time.Sleep(time.Millisecond)
		}
		// A write the cache never sees.
		if _, err := etcdStore.Create(ctx, "ns/a", []byte(`{"metadata":{"name":"a","namespace":"ns"}}`)); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		list, err := c.GetList(ctx, "ns/", storage.ListOptions{})
		waited := time.Since(start)
		if fallback {
			if err != nil || len(list.Items) != 1 {
				t.Fatalf("with fallback: %v, %v; want etcd's list with the write", list, err)
			}
		} else {
			var se *storage.Error
			if !errors.As(err, &se) || se.Code != storage.ErrTooManyRequests || se.RetryAfterSeconds != 1 {
				t.Fatalf("got %v, %v; want 429 with Retry-After 1", list, err)
			}
		}
		if waited < freshnessTimeout || waited > freshnessTimeout+2*time.Second {
			t.Errorf("the read took %v, want about %v", waited, freshnessTimeout)
		}
		if n := consistentReads(t, reg, fallback); n != 1 {
			t.Errorf("success=false fallback=%v counted %v times, want 1", fallback, n)
		}
		c.Stop()
		etcdStore.Delete(ctx, "ns/a", nil, nil)
	}
}

// consistentReads reads apiserver_watch_cache_consistent_read_total for
// success=false and the given fallback.
func consistentReads(t *testing.T, reg *prometheus.Registry, fallback bool) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "apiserver_watch_cache_consistent_read_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["success"] == "false" && labels["fallback"] == map[bool]string{false: "false", true: "true"}[fallback] {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}
