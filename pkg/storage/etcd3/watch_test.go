package etcd3_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/watchcache/watchcache/pkg/storage"
	"github.com/watchcache/watchcache/pkg/storage/etcd3"
	"github.com/watchcache/watchcache/pkg/storage/storagetest"
)

// TestWatchKeyOnlyDeletes: with ListOptions.KeyOnlyDeletes a watch without
// selectors delivers a deletion as its key and revision alone (etcd is not
// asked for the previous value); without it, the deletion carries the last
// state.
func TestWatchKeyOnlyDeletes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	prefix := fmt.Sprintf("/keyonly-test/%d/pods", time.Now().UnixNano())
	store := etcd3.New(etcd3.Config{Client: storagetest.Client(), Prefix: prefix, Schema: storagetest.PodSchema})
	created, err := store.Create(ctx, "ns/a", []byte(`{"metadata":{"name":"a","namespace":"ns"},"spec":{"nodeName":"n1"}}`))
	if err != nil {
		t.Fatal(err)
	}
	from := storage.FormatResourceVersion(created.ResourceVersion())
	keyOnly, err := store.Watch(ctx, "", storage.ListOptions{ResourceVersion: from, KeyOnlyDeletes: true})
	if err != nil {
		t.Fatal(err)
	}
	defer keyOnly.Stop()
	full, err := store.Watch(ctx, "", storage.ListOptions{ResourceVersion: from})
	if err != nil {
		t.Fatal(err)
	}
	defer full.Stop()
	deleted, err := store.Delete(ctx, "ns/a", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	next := func(w storage.Watcher) storage.Event {
		t.Helper()
		ev := expectEvent(t, ctx, w, storage.EventDeleted, "ns/a")
		if ev.ResourceVersion != deleted.ResourceVersion() {
			t.Fatalf("DELETED at %d, want %d", ev.ResourceVersion, deleted.ResourceVersion())
		}
		return ev
	}
	if ev := next(keyOnly); len(ev.Object.Stored()) != 0 {
		t.Errorf("KeyOnlyDeletes: DELETED carries %s, want the key alone", ev.Object.Stored())
	}
	if ev := next(full); !ev.Object.StoredEqual(created) {
		t.Errorf("DELETED carries %s, want the last state %s", ev.Object.Stored(), created.Stored())
	}
}
