package etcd3_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/storage"
	"github.com/watchcache/watchcache/pkg/storage/etcd3"
	"github.com/watchcache/watchcache/pkg/storage/storagetest"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestTTL: a store with a TTL attaches every create and update to an etcd
// lease of that TTL (writes within the reuse period share one), etcd
// deletes the object once the TTL has passed since its last write, and
// watches see the delete. A lease etcd no longer has is replaced, not
// failed on.
func TestTTL(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := storagetest.Client()
	prefix := fmt.Sprintf("/ttl-test/%d/pods", time.Now().UnixNano())
	const ttl = 3 * time.Second
	store := etcd3.New(etcd3.Config{Client: client, Prefix: prefix, Schema: storagetest.PodSchema, TTL: ttl})
	pod := func(name, node string) []byte {
		return []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"` + name + `","namespace":"ns"},"spec":{"nodeName":"` + node + `"}}`)
	}
	lease := func(name string) clientv3.LeaseID {
		t.Helper()
		resp, err := client.Get(ctx, prefix+"/ns/"+name)
		if err != nil || len(resp.Kvs) != 1 {
			t.Fatalf("get %s: %v %v", name, resp, err)
		}
		return clientv3.LeaseID(resp.Kvs[0].Lease)
	}
	w, err := store.Watch(ctx, "", storage.ListOptions{ResourceVersion: "0"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	if _, err := store.Create(ctx, "ns/a", pod("a", "n1")); err != nil {
		t.Fatal(err)
	}
	first := lease("a")
	if first == 0 {
		t.Fatal("created without a lease")
	}
	granted, err := client.TimeToLive(ctx, first)
	if err != nil {
		t.Fatal(err)
	}
	// A TTL of 3 s has no reuse period (5 % of it, in whole seconds).
	if granted.GrantedTTL != int64(ttl/time.Second) {
		t.Errorf("lease granted for %d s, want %v", granted.GrantedTTL, ttl)
	}

	// etcd no longer has the lease (its object goes with it): the next
	// write gets a new one.
	if _, err := client.Revoke(ctx, first); err != nil {
		t.Fatal(err)
	}
	expectEvent(t, ctx, w, storage.EventAdded, "ns/a")
	expectEvent(t, ctx, w, storage.EventDeleted, "ns/a")
	created, err := store.Create(ctx, "ns/b", pod("b", "n1"))
	if err != nil {
		t.Fatalf("a create after the lease was revoked: %v", err)
	}
	expectEvent(t, ctx, w, storage.EventAdded, "ns/b")
	if l := lease("b"); l == 0 || l == first {
		t.Fatalf("created with lease %x after %x was revoked", l, first)
	}

	// An update renews the object's life: it outlives its create's TTL.
	time.Sleep(ttl / 2)
	if _, err := store.GuaranteedUpdate(ctx, "ns/b", nil, func(*object.Object) ([]byte, error) { return pod("b", "n2"), nil }, nil); err != nil {
		t.Fatal(err)
	}
	expectEvent(t, ctx, w, storage.EventModified, "ns/b")
	if lease("b") == 0 {
		t.Fatal("updated without a lease")
	}
	time.Sleep(ttl/2 + 500*time.Millisecond) // past the create's TTL, not the update's
	if _, err := store.Get(ctx, "ns/b", storage.GetOptions{}); err != nil {
		t.Fatalf("the updated object expired with its create's lease: %v", err)
	}
	began := time.Now()
	ev := expectEvent(t, ctx, w, storage.EventDeleted, "ns/b")
	if ev.ResourceVersion <= created.ResourceVersion() {
		t.Errorf("delete at %d, not after the create at %d", ev.ResourceVersion, created.ResourceVersion())
	}
	t.Logf("expired %v after the check", time.Since(began).Round(100*time.Millisecond))
}

// expectEvent waits for w's next event and checks its type, its object's
// key and that the object is at the event's revision.
func expectEvent(t *testing.T, ctx context.Context, w storage.Watcher, typ storage.EventType, key string) storage.Event {
	t.Helper()
	select {
	case ev := <-w.ResultChan():
		if ev.Type != typ || ev.Object == nil || ev.Object.Key() != key || ev.Object.ResourceVersion() != ev.ResourceVersion {
			t.Fatalf("event %s %v at %d, want %s of %s", ev.Type, ev.Object, ev.ResourceVersion, typ, key)
		}
		return ev
	case <-ctx.Done():
		t.Fatalf("no %s event of %s", typ, key)
		return storage.Event{}
	}
}

// TestTTLLeaseReuse: with kube-apiserver's default --event-ttl (an hour),
// writes share a lease granted for the TTL plus a minute of reuse.
func TestTTLLeaseReuse(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := storagetest.Client()
	prefix := fmt.Sprintf("/ttl-test/%d/pods", time.Now().UnixNano())
	store := etcd3.New(etcd3.Config{Client: client, Prefix: prefix, Schema: storagetest.PodSchema, TTL: time.Hour})
	var leases []int64
	for _, name := range []string{"a", "b"} {
		if _, err := store.Create(ctx, "ns/"+name, []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"`+name+`","namespace":"ns"}}`)); err != nil {
			t.Fatal(err)
		}
		resp, err := client.Get(ctx, prefix+"/ns/"+name)
		if err != nil || len(resp.Kvs) != 1 {
			t.Fatalf("get %s: %v %v", name, resp, err)
		}
		leases = append(leases, resp.Kvs[0].Lease)
	}
	if leases[0] == 0 || leases[0] != leases[1] {
		t.Fatalf("leases %x, want one shared", leases)
	}
	granted, err := client.TimeToLive(ctx, clientv3.LeaseID(leases[0]))
	if err != nil {
		t.Fatal(err)
	}
	if granted.GrantedTTL != 3660 {
		t.Errorf("lease granted for %d s, want 3660", granted.GrantedTTL)
	}
	if _, err := client.Revoke(ctx, clientv3.LeaseID(leases[0])); err != nil {
		t.Fatal(err)
	}
}
