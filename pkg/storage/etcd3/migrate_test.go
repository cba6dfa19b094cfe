package etcd3_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/watchcache/watchcache/pkg/storage"
	"github.com/watchcache/watchcache/pkg/storage/etcd3"
	"github.com/watchcache/watchcache/pkg/storage/storagetest"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestMigrate: objects under an old prefix move to the store's prefix,
// re-encrypted under their new key (aesgcm binds a value to its key); an
// object at both keys stops the pass with an error naming both, and the
// pass run again once it is resolved moves the rest.
func TestMigrate(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := storagetest.Client()
	tr := transformer(t, "  - aesgcm: {keys: [{name: key1, secret: "+key1+"}]}\n")
	old := etcd3.New(etcd3.Config{Client: c, Prefix: "/migrate-test/core/pods", Schema: storagetest.PodSchema, Transformer: tr})
	store := etcd3.New(etcd3.Config{Client: c, Prefix: "/migrate-test/pods", Schema: storagetest.PodSchema, Transformer: tr})
	pod := func(name, node string) []byte {
		return []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"` + name + `","namespace":"ns"},"spec":{"nodeName":"` + node + `"}}`)
	}
	for _, name := range []string{"a", "b", "c"} {
		if _, err := old.Create(ctx, "ns/"+name, pod(name, "old")); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := store.Create(ctx, "ns/b", pod("b", "new")); err != nil {
		t.Fatal(err)
	}
	moved, err := store.Migrate(ctx, "/migrate-test/core/pods")
	if err == nil || !strings.Contains(err.Error(), "/migrate-test/core/pods/ns/b") || !strings.Contains(err.Error(), "/migrate-test/pods/ns/b") || moved != 1 {
		t.Fatalf("Migrate with ns/b at both keys: %d, %v; want 1 moved and an error naming both", moved, err)
	}
	if _, err := old.Delete(ctx, "ns/b", nil, nil); err != nil {
		t.Fatal(err)
	}
	if moved, err := store.Migrate(ctx, "/migrate-test/core/pods"); err != nil || moved != 1 {
		t.Fatalf("Migrate again: %d, %v; want the one left", moved, err)
	}
	for name, node := range map[string]string{"a": "old", "b": "new", "c": "old"} {
		obj, err := store.Get(ctx, "ns/"+name, storage.GetOptions{})
		if err != nil || obj.Fields().Get("spec.nodeName") != node {
			t.Errorf("ns/%s after the move: %v %v", name, obj, err)
		}
	}
	if resp, err := c.Get(ctx, "/migrate-test/core/pods/", clientv3.WithPrefix(), clientv3.WithCountOnly()); err != nil || resp.Count != 0 {
		t.Errorf("old keys left: %v %v", resp, err)
	}
}
