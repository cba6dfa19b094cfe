package cacher

import (
	"testing"
	"time"

	"github.com/watchcache/watchcache/pkg/storage"
	"github.com/watchcache/watchcache/pkg/storage/etcd3"
	"github.com/watchcache/watchcache/pkg/storage/storagetest"
)

func TestMain(m *testing.M) { storagetest.Main(m) }

// newCacher wraps an etcd3 store in a ready cache.
func newCacher(t *testing.T, cfg etcd3.Config) storage.Interface {
	// Bookmarks as often as the suite's etcd sends progress notifications.
	c := New(Config{Store: etcd3.New(cfg), Resource: "pods", IndexedFields: []string{"spec.nodeName"},
		BookmarkInterval: storagetest.ProgressNotifyInterval, ConsistentListFromCache: true, ConsistentGetFromCache: true,
		ConsistencyCheckInterval: 100 * time.Millisecond, DisableShardedListAndWatch: cfg.DisableShardedListAndWatch})
	t.Cleanup(c.Stop)
	deadline := time.Now().Add(10 * time.Second)
	for !c.Ready() {
		if time.Now().After(deadline) {
			t.Fatal("cache not ready after 10s")
		}
		time.Sleep(time.Millisecond)
	}
	return c
}

// TestConformance runs the storage conformance suite against the cacher.
func TestConformance(t *testing.T) { storagetest.Run(t, newCacher) }
