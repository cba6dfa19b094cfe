package etcd3_test

import (
	"bytes"
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/storage"
	"github.com/watchcache/watchcache/pkg/storage/etcd3"
	"github.com/watchcache/watchcache/pkg/storage/storagetest"
)

// countingCodec stores "v:" and the JSON, reads values with or without
// it (as StorageCodec reads JSON written before protobuf), and counts its
// decodings.
type countingCodec struct {
	decoded    atomic.Int32
	roundTrips bool
}

func (c *countingCodec) Encode(stored []byte) ([]byte, error) {
	return append([]byte("v:"), stored...), nil
}

func (c *countingCodec) Decode(value []byte) ([]byte, error) {
	c.decoded.Add(1)
	json, _ := bytes.CutPrefix(value, []byte("v:"))
	return json, nil
}

func (c *countingCodec) RoundTrips([]byte) bool { return c.roundTrips }

// TestConformanceWithCodec: the whole storage contract holds with values
// through a codec, whose decoding is parallel and whose own writes'
// events are taken from memory.
func TestConformanceWithCodec(t *testing.T) {
	storagetest.Run(t, func(t *testing.T, cfg etcd3.Config) storage.Interface {
		cfg.Codec = &countingCodec{roundTrips: true}
		return etcd3.New(cfg)
	})
}

// TestCodecListsInOrder: values decoded by several workers come out in
// key order, each once, in a collected list, a streamed one and a watch's
// initial events.
func TestCodecListsInOrder(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	codec := &countingCodec{}
	store := etcd3.New(etcd3.Config{Client: storagetest.Client(), Prefix: fmt.Sprintf("/codec-test/%d/pods", time.Now().UnixNano()),
		Schema: storagetest.PodSchema, Codec: codec})
	const n = 500
	var want []string
	for i := range n {
		key := fmt.Sprintf("ns/p-%04d", i)
		want = append(want, key)
		data := fmt.Appendf(nil, `{"metadata":{"name":"p-%04d","namespace":"ns"},"spec":{"nodeName":"n%d"}}`, i, i)
		if _, err := store.Create(ctx, key, data); err != nil {
			t.Fatal(err)
		}
	}
	check := func(how string, objs []*object.Object) {
		t.Helper()
		if len(objs) != n {
			t.Fatalf("%s: %d objects, want %d", how, len(objs), n)
		}
		for i, obj := range objs {
			if obj.Key() != want[i] || !bytes.Contains(obj.JSON(), fmt.Appendf(nil, `"nodeName":"n%d"`, i)) {
				t.Fatalf("%s: item %d is %s %s, want %s", how, i, obj, obj.JSON(), want[i])
			}
		}
	}
	before := codec.decoded.Load()
	list, err := store.GetList(ctx, "", storage.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	check("list", list.Items)
	if got := codec.decoded.Load() - before; got != n {
		t.Errorf("a list of %d decoded %d values", n, got)
	}
	list, err = store.GetList(ctx, "", storage.ListOptions{Stream: true})
	if err != nil {
		t.Fatal(err)
	}
	var streamed []*object.Object
	if err := list.Each(func(obj *object.Object) error { streamed = append(streamed, obj); return nil }); err != nil {
		t.Fatal(err)
	}
	check("streamed list", streamed)
	w, err := store.Watch(ctx, "", storage.ListOptions{SendInitialEvents: new(true), AllowWatchBookmarks: true,
		ResourceVersionMatch: "NotOlderThan"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var initial []*object.Object
	for len(initial) < n {
		select {
		case ev := <-w.ResultChan():
			if ev.Type != storage.EventAdded {
				t.Fatalf("initial events: %s after %d", ev.Type, len(initial))
			}
			initial = append(initial, ev.Object)
		case <-ctx.Done():
			t.Fatalf("%d initial events", len(initial))
		}
	}
	check("watch's initial events", initial)
}
