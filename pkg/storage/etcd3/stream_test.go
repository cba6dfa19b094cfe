package etcd3_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/storage"
	"github.com/watchcache/watchcache/pkg/storage/etcd3"
	"github.com/watchcache/watchcache/pkg/storage/storagetest"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestConformanceStreamed runs the suite with every list streamed
// (ListOptions.Stream, read chunk by chunk with its invariants checked)
// and read with ranged Gets of storagetest.ChunkKeys keys, as from an etcd
// without RangeStream.
func TestConformanceStreamed(t *testing.T) {
	storagetest.Run(t, storagetest.Streamed(func(t *testing.T, cfg etcd3.Config) storage.Interface {
		cfg.NoRangeStream = true
		return etcd3.New(cfg)
	}))
}

var streamSeq atomic.Int64

// newStreamStore returns a store over a fresh prefix holding n pods, with
// first chunks of storagetest.ChunkKeys keys.
func newStreamStore(t *testing.T, client *clientv3.Client, n int, tweak func(*etcd3.Config)) *etcd3.Store {
	t.Helper()
	cfg := etcd3.Config{Client: client, Prefix: fmt.Sprintf("/stream-test/%d/pods", streamSeq.Add(1)), Schema: storagetest.PodSchema,
		ListChunkKeys: storagetest.ChunkKeys}
	if tweak != nil {
		tweak(&cfg)
	}
	s := etcd3.New(cfg)
	for i := range n {
		name := fmt.Sprintf("p%03d", i)
		if _, err := s.Create(context.Background(), "ns/"+name, []byte(`{"metadata":{"name":"`+name+`","namespace":"ns"}}`)); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// readChunks reads a streamed list whole and returns its chunks' sizes
// (Items first).
func readChunks(t *testing.T, list *storage.List) (items []*object.Object, sizes []int) {
	t.Helper()
	if err := list.Chunks(func(chunk []*object.Object) error {
		items = append(items, chunk...)
		sizes = append(sizes, len(chunk))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return items, sizes
}

// TestStreamedListReadsChunks: a streamed list of 100 objects comes as a
// first chunk of ChunkKeys and a rest in several chunks: etcd's RangeStream
// (10, 20, 40… keys), or ranged Gets of ChunkKeys without it. Without
// Stream, the same store returns the list complete.
func TestStreamedListReadsChunks(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name          string
		noRangeStream bool
	}{{"RangeStream", false}, {"ranged Gets", true}} {
		t.Run(c.name, func(t *testing.T) {
			s := newStreamStore(t, storagetest.Client(), 100, func(cfg *etcd3.Config) { cfg.NoRangeStream = c.noRangeStream })
			list, err := s.GetList(ctx, "", storage.ListOptions{Stream: true})
			if err != nil {
				t.Fatal(err)
			}
			if len(list.Items) != storagetest.ChunkKeys || list.Rest == nil {
				t.Fatalf("first chunk of %d objects, rest %v", len(list.Items), list.Rest != nil)
			}
			items, sizes := readChunks(t, list)
			if len(items) != 100 {
				t.Fatalf("%d objects, want 100", len(items))
			}
			largest := 0
			for _, n := range sizes[1:] {
				largest = max(largest, n)
			}
			if c.noRangeStream && (largest != storagetest.ChunkKeys || len(sizes) != 34) {
				t.Fatalf("ranged Gets: chunks %v", sizes)
			}
			if !c.noRangeStream && (largest <= storagetest.ChunkKeys || len(sizes) < 4) {
				t.Fatalf("RangeStream: chunks %v", sizes)
			}
			if err := list.Rest(func([]*object.Object) error { return nil }); storage.CodeOf(err) != storage.ErrInternal {
				t.Fatalf("a second read of the rest: %v", err)
			}
			whole, err := s.GetList(ctx, "", storage.ListOptions{})
			if err != nil || whole.Rest != nil || len(whole.Items) != 100 {
				t.Fatalf("unstreamed list: %v", err)
			}
		})
	}
}

// TestStreamedListFallsBackWithoutRangeStream: against an etcd that
// answers RangeStream with Unimplemented (etcd before 3.7, here the real
// etcd asked for a method it does not have), a streamed list is read with
// ranged Gets, and the store does not ask again for the next list.
func TestStreamedListFallsBackWithoutRangeStream(t *testing.T) {
	var asked atomic.Int64
	client, err := clientv3.New(clientv3.Config{Endpoints: storagetest.Client().Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop(),
		DialOptions: []grpc.DialOption{grpc.WithStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
			if method == "/etcdserverpb.KV/RangeStream" {
				asked.Add(1)
				method = "/etcdserverpb.KV/RangeStreamOfAFutureVersion"
			}
			return streamer(ctx, desc, cc, method, opts...)
		})}})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	s := newStreamStore(t, client, 20, nil)
	for i := range 2 {
		list, err := s.GetList(context.Background(), "ns/", storage.ListOptions{Stream: true})
		if err != nil {
			t.Fatal(err)
		}
		items, sizes := readChunks(t, list)
		if len(items) != 20 || len(sizes) != 7 {
			t.Fatalf("list %d: %d objects in chunks %v", i, len(items), sizes)
		}
	}
	if n := asked.Load(); n != 1 {
		t.Fatalf("RangeStream asked %d times, want once", n)
	}
}

// TestStreamedListCompacted: when etcd compacts the list's revision while
// the rest is still to be read, the rest fails with 410 Expired (the
// server then aborts its response), with RangeStream and without.
func TestStreamedListCompacted(t *testing.T) {
	ctx := context.Background()
	for _, noRangeStream := range []bool{false, true} {
		t.Run(fmt.Sprintf("noRangeStream=%v", noRangeStream), func(t *testing.T) {
			s := newStreamStore(t, storagetest.Client(), 30, func(cfg *etcd3.Config) { cfg.NoRangeStream = noRangeStream })
			list, err := s.GetList(ctx, "", storage.ListOptions{Stream: true})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Create(ctx, "ns/later", []byte(`{"metadata":{"name":"later","namespace":"ns"}}`)); err != nil {
				t.Fatal(err)
			}
			rv, err := s.CurrentResourceVersion(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := storagetest.Client().Compact(ctx, int64(rv)); err != nil {
				t.Fatal(err)
			}
			var read int
			err = list.Chunks(func(chunk []*object.Object) error { read += len(chunk); return nil })
			if storage.CodeOf(err) != storage.ErrExpired || read != storagetest.ChunkKeys {
				t.Fatalf("after %d objects: %v, want 410 Expired after the first chunk", read, err)
			}
		})
	}
}

// TestStreamedListStopsOnYieldError: an error of the consumer (a client
// gone) stops the reading and is returned as is.
func TestStreamedListStopsOnYieldError(t *testing.T) {
	s := newStreamStore(t, storagetest.Client(), 50, nil)
	list, err := s.GetList(context.Background(), "", storage.ListOptions{Stream: true})
	if err != nil {
		t.Fatal(err)
	}
	gone := errors.New("client gone")
	calls := 0
	if err := list.Chunks(func([]*object.Object) error { calls++; return gone }); err != gone || calls != 1 {
		t.Fatalf("%d calls, error %v", calls, err)
	}
	rest := list.Rest
	list.Rest = nil
	calls = 0
	if err := rest(func([]*object.Object) error { calls++; return gone }); err != gone || calls != 1 {
		t.Fatalf("rest: %d calls, error %v", calls, err)
	}
}

// TestWatchInitialEventsStreamed: a watch's initial state from etcd is
// read in chunks as the watcher takes its events (all of them, in key
// order, then the end bookmark), and a compaction while it is read ends
// the watch with an ERROR event (410). The initial state is larger than
// the watcher's buffer, so that its reading waits for the test.
func TestWatchInitialEventsStreamed(t *testing.T) {
	const n = 250
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s := newStreamStore(t, storagetest.Client(), n, func(cfg *etcd3.Config) { cfg.NoRangeStream = true })
	yes := true
	w, err := s.Watch(ctx, "", storage.ListOptions{SendInitialEvents: &yes, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, AllowWatchBookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		ev := <-w.ResultChan()
		if want := fmt.Sprintf("ns/p%03d", i); ev.Type != storage.EventAdded || ev.Object.Key() != want {
			t.Fatalf("event %d: %s %v, want ADDED %s", i, ev.Type, ev.Object, want)
		}
	}
	if ev := <-w.ResultChan(); ev.Type != storage.EventBookmark || !ev.InitialEventsEnd {
		t.Fatalf("after the initial events: %s", ev.Type)
	}
	w.Stop()

	w, err = s.Watch(ctx, "", storage.ListOptions{SendInitialEvents: &yes, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	// The watcher's buffer fills up while the test compacts.
	if _, err := s.Create(ctx, "ns/later", []byte(`{"metadata":{"name":"later","namespace":"ns"}}`)); err != nil {
		t.Fatal(err)
	}
	rv, err := s.CurrentResourceVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := storagetest.Client().Compact(ctx, int64(rv)); err != nil {
		t.Fatal(err)
	}
	added := 0
	for ev := range w.ResultChan() {
		switch ev.Type {
		case storage.EventAdded:
			added++
		case storage.EventError:
			if ev.Err.Code != storage.ErrExpired || added >= n {
				t.Fatalf("after %d events: %v", added, ev.Err)
			}
			return
		default:
			t.Fatalf("unexpected %s", ev.Type)
		}
	}
	t.Fatal("the watch ended without an error")
}
