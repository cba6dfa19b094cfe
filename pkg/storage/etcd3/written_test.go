package etcd3_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/storage"
	"github.com/watchcache/watchcache/pkg/storage/etcd3"
	"github.com/watchcache/watchcache/pkg/storage/storagetest"
)

// TestWatchTakesOwnWrites: a watch takes the events of its store's own
// writes from memory, without decoding them; any other value at the key
// (another replica's write, a direct put of other bytes, even after this
// store failed to write there) is decoded; the very bytes this store
// wrote, whoever puts them, are the remembered record.
func TestWatchTakesOwnWrites(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := storagetest.Client()
	prefix := fmt.Sprintf("/written-test/%d/pods", time.Now().UnixNano())
	codec := &countingCodec{roundTrips: true}
	store := etcd3.New(etcd3.Config{Client: client, Prefix: prefix, Schema: storagetest.PodSchema, Codec: codec})
	replica := etcd3.New(etcd3.Config{Client: client, Prefix: prefix, Schema: storagetest.PodSchema, Codec: &countingCodec{roundTrips: true}})
	pod := func(node string) []byte {
		return []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a","namespace":"ns"},"spec":{"nodeName":"` + node + `"}}`)
	}
	w, err := store.Watch(ctx, "", storage.ListOptions{ResourceVersion: "0"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	// next checks the next event: its type, node, and whether it was
	// decoded (the watch may do so before next is called: decodings are
	// counted from the write's start, at mark).
	var before int32
	mark := func() { before = codec.decoded.Load() }
	next := func(step string, typ storage.EventType, node string, decoded bool) {
		t.Helper()
		select {
		case ev := <-w.ResultChan():
			if ev.Type != typ || ev.Object == nil || !bytes.Contains(ev.Object.JSON(), []byte(`"nodeName":"`+node+`"`)) {
				t.Fatalf("%s: event %s %v, want %s with node %s", step, ev.Type, ev.Object, typ, node)
			}
			if ev.Object.ResourceVersion() != ev.ResourceVersion {
				t.Errorf("%s: object at %d, event at %d", step, ev.Object.ResourceVersion(), ev.ResourceVersion)
			}
			if got := codec.decoded.Load() - before; (got > 0) != decoded {
				t.Errorf("%s: %d decodings, want decoded %v", step, got, decoded)
			}
		case <-ctx.Done():
			t.Fatalf("%s: no event", step)
		}
	}

	mark()
	created, err := store.Create(ctx, "ns/a", pod("one"))
	if err != nil {
		t.Fatal(err)
	}
	next("own create", storage.EventAdded, "one", false)
	mark()
	updated, err := store.GuaranteedUpdate(ctx, "ns/a", nil, func(*object.Object) ([]byte, error) { return pod("two"), nil }, created)
	if err != nil {
		t.Fatal(err)
	}
	next("own update", storage.EventModified, "two", false)

	mark()
	if _, err := replica.GuaranteedUpdate(ctx, "ns/a", nil, func(*object.Object) ([]byte, error) { return pod("three"), nil }, updated); err != nil {
		t.Fatal(err)
	}
	next("another replica's update", storage.EventModified, "three", true)

	// A create that fails leaves its value remembered: a direct put of
	// other bytes is decoded, one of the same bytes is that value's record.
	mark()
	if _, err := store.Create(ctx, "ns/a", pod("four")); storage.CodeOf(err) != storage.ErrAlreadyExists {
		t.Fatalf("create of an existing key: %v", err)
	}
	mark()
	if _, err := client.Put(ctx, prefix+"/ns/a", "v:"+string(pod("five"))); err != nil {
		t.Fatal(err)
	}
	next("a direct put of other bytes", storage.EventModified, "five", true)
	mark()
	if _, err := client.Put(ctx, prefix+"/ns/a", "v:"+string(pod("four"))); err != nil {
		t.Fatal(err)
	}
	next("a direct put of the bytes this store wrote", storage.EventModified, "four", false)

	// A codec that cannot promise its round trip is always decoded.
	codec.roundTrips = false
	mark()
	if _, err := store.Create(ctx, "ns/b", []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"b","namespace":"ns"},"spec":{"nodeName":"six"}}`)); err != nil {
		t.Fatal(err)
	}
	next("own create, no round trip", storage.EventAdded, "six", true)
}
