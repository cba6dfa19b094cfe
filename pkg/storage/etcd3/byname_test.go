package etcd3_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/storage"
	"github.com/watchcache/watchcache/pkg/storage/etcd3"
	"github.com/watchcache/watchcache/pkg/storage/storagetest"
	"k8s.io/apimachinery/pkg/fields"
)

// readCounter is a Transformer that stores values as they are and counts
// the values read back from etcd, by key relative to the prefix.
type readCounter struct {
	prefix string
	mu     sync.Mutex
	reads  map[string]int
}

func (c *readCounter) ToStorage(plain []byte, _ string) ([]byte, error) { return plain, nil }

func (c *readCounter) FromStorage(stored []byte, etcdKey string) ([]byte, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reads[strings.TrimPrefix(etcdKey, c.prefix)]++
	return stored, false, nil
}

// take returns the reads counted since the last call.
func (c *readCounter) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.reads
	c.reads = map[string]int{}
	return r
}

// countingStore is a store under a fresh prefix whose reads are counted.
func countingStore(t *testing.T, schema *object.Schema) (*etcd3.Store, *readCounter) {
	prefix := fmt.Sprintf("/byname-test/%d/pods", time.Now().UnixNano())
	rc := &readCounter{prefix: prefix + "/", reads: map[string]int{}}
	return etcd3.New(etcd3.Config{Client: storagetest.Client(), Prefix: prefix, Schema: schema, Transformer: rc}), rc
}

func podData(ns, name string) []byte {
	meta := fmt.Sprintf(`"name":%q`, name)
	if ns != "" {
		meta += fmt.Sprintf(`,"namespace":%q`, ns)
	}
	return []byte(`{"metadata":{` + meta + `},"spec":{"nodeName":"n1"}}`)
}

// TestListByNameReadsOneKey: a list by name in a namespace, or of a
// cluster-scoped resource, reads that one key from etcd (whatever else is
// there, however many), at every read kind and with a limit; a list by
// name over all namespaces of a namespaced resource reads them all.
func TestListByNameReadsOneKey(t *testing.T) {
	ctx := context.Background()
	pods, podReads := countingStore(t, storagetest.PodSchema)
	nodes, nodeReads := countingStore(t, storagetest.PodSchema.WithClusterScope())
	var rv uint64
	for i := range 200 {
		name := fmt.Sprintf("p-%03d", i)
		if _, err := pods.Create(ctx, "ns1/"+name, podData("ns1", name)); err != nil {
			t.Fatal(err)
		}
		obj, err := nodes.Create(ctx, name, podData("", name))
		if err != nil {
			t.Fatal(err)
		}
		rv = obj.ResourceVersion()
	}
	podReads.take()
	nodeReads.take()
	for _, opts := range []storage.ListOptions{
		{}, {ResourceVersion: "0"}, {ResourceVersion: storage.FormatResourceVersion(rv)}, {ResourceVersion: storage.FormatResourceVersion(rv), Limit: 1},
		{ResourceVersion: storage.FormatResourceVersion(rv), ResourceVersionMatch: "Exact"}, {Limit: 5}, {Stream: true},
	} {
		opts.Fields = fields.OneTermEqualSelector("metadata.name", "p-100")
		for _, c := range []struct {
			store *etcd3.Store
			reads *readCounter
			scope string
			key   string
		}{{pods, podReads, "ns1/", "ns1/p-100"}, {nodes, nodeReads, "", "p-100"}} {
			list, err := c.store.GetList(ctx, c.scope, opts)
			if err != nil {
				t.Fatal(err)
			}
			if err := list.Collect(); err != nil {
				t.Fatal(err)
			}
			if len(list.Items) != 1 || list.Items[0].Key() != c.key || list.Continue != "" {
				t.Errorf("list %+v over %q: %v, continue %q; want %s alone", opts, c.scope, list.Items, list.Continue, c.key)
			}
			if reads := c.reads.take(); len(reads) != 1 || reads[c.key] != 1 {
				t.Errorf("list %+v over %q read %d keys from etcd (%s %d times), want %s once", opts, c.scope, len(reads), c.key, reads[c.key], c.key)
			}
		}
	}
	if _, err := pods.GetList(ctx, "", storage.ListOptions{Fields: fields.OneTermEqualSelector("metadata.name", "p-100")}); err != nil {
		t.Fatal(err)
	}
	if reads := podReads.take(); len(reads) != 200 {
		t.Errorf("a list by name over all namespaces read %d keys, want the 200 of the range", len(reads))
	}
}

// TestWatchByNameWatchesOneKey: a watch by name in a namespace, or of a
// cluster-scoped resource, watches that one key in etcd: the writes of a
// key it starts (ns1/a and ns1/ab, n1 and n10) never reach it. The writes
// are another store's (a replica's), whose values the watch reads rather
// than taking its own store's records of them.
func TestWatchByNameWatchesOneKey(t *testing.T) {
	ctx := context.Background()
	pods, podReads := countingStore(t, storagetest.PodSchema)
	nodes, nodeReads := countingStore(t, storagetest.PodSchema.WithClusterScope())
	for _, c := range []struct {
		store       *etcd3.Store
		reads       *readCounter
		scope       string
		ns          string
		name, other string
	}{{pods, podReads, "ns1/", "ns1", "a", "ab"}, {nodes, nodeReads, "", "", "n1", "n10"}} {
		key := func(name string) string {
			if c.ns == "" {
				return name
			}
			return c.ns + "/" + name
		}
		replica := etcd3.New(etcd3.Config{Client: storagetest.Client(), Prefix: strings.TrimSuffix(c.reads.prefix, "/"), Schema: c.store.Schema()})
		w, err := c.store.Watch(ctx, c.scope, storage.ListOptions{ResourceVersionMatch: "NotOlderThan", SendInitialEvents: new(bool),
			Fields: fields.OneTermEqualSelector("metadata.name", c.name)})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 10 {
			if _, err := replica.Create(ctx, key(fmt.Sprintf("%s-%d", c.other, i)), podData(c.ns, fmt.Sprintf("%s-%d", c.other, i))); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := replica.Create(ctx, key(c.other), podData(c.ns, c.other)); err != nil {
			t.Fatal(err)
		}
		obj, err := replica.Create(ctx, key(c.name), podData(c.ns, c.name))
		if err != nil {
			t.Fatal(err)
		}
		select {
		case ev := <-w.ResultChan():
			if ev.Type != storage.EventAdded || ev.Object.Key() != key(c.name) || ev.ResourceVersion != obj.ResourceVersion() {
				t.Errorf("watch of %s: got %s %v", key(c.name), ev.Type, ev.Object)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("watch of %s: no event", key(c.name))
		}
		w.Stop()
		if reads := c.reads.take(); len(reads) != 1 || reads[key(c.name)] != 1 {
			t.Errorf("watch of %s read %v from etcd, want that key once", key(c.name), reads)
		}
	}
}
