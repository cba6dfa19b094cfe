// Streamed: stores whose every GetList asks for a streamed (chunked) list,
// and the conformance test of a list without a limit read in chunks.

package storagetest

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/storage"
	"github.com/watchcache/watchcache/pkg/storage/etcd3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Streamed wraps newStore's stores so that every GetList asks for a
// streamed list (storage.ListOptions.Stream) and reads it whole, checking
// what a stream promises on the way: chunks are not empty, keys strictly
// increase across Items and chunks, and no object is newer than the
// list. The whole suite then runs over the streaming path.
func Streamed(newStore NewStoreFunc) NewStoreFunc {
	return func(t *testing.T, cfg etcd3.Config) storage.Interface {
		return streamedStore{Interface: newStore(t, cfg)}
	}
}

type streamedStore struct{ storage.Interface }

func (s streamedStore) GetList(ctx context.Context, scope string, opts storage.ListOptions) (*storage.List, error) {
	opts.Stream = true
	list, err := s.Interface.GetList(ctx, scope, opts)
	if err != nil {
		return nil, err
	}
	out := *list
	out.Items, out.Rest = nil, nil
	err = list.Chunks(func(chunk []*object.Object) error {
		if len(chunk) == 0 {
			return fmt.Errorf("an empty chunk")
		}
		for _, o := range chunk {
			if n := len(out.Items); n > 0 && out.Items[n-1].Key() >= o.Key() {
				return fmt.Errorf("key %q after %q", o.Key(), out.Items[n-1].Key())
			}
			if o.ResourceVersion() > list.ResourceVersion {
				return fmt.Errorf("%s in a list at %d", o, list.ResourceVersion)
			}
			out.Items = append(out.Items, o)
		}
		return nil
	})
	if err != nil {
		if storage.CodeOf(err) != 0 {
			return nil, err
		}
		return nil, &storage.Error{Code: storage.ErrInternal, Key: scope, Message: "broken stream: " + err.Error()}
	}
	return &out, nil
}

// streamFixture is the number of objects of the streamed-list tests: many
// chunks of ChunkKeys, and several of etcd's RangeStream (10, 20, 40… keys).
const streamFixture = 90

// "A list without a limit, streamed": with a label selector keeping every
// third object, over a scope with neighbours outside it, read at the
// newest revision and at an older exact one. While the first chunk is in
// hand (before the rest is read) the test updates, deletes and creates
// objects further on in the range and behind it: the list must still be
// exactly the state at its resourceVersion, in key order. For a store that
// streams (Rest set), the rest comes in several chunks.
var _ = register("ListStreamed", func(t *testing.T, e *env) {
	objs := make([]*object.Object, streamFixture)
	for i := range objs {
		objs[i] = e.create("ns1", fmt.Sprintf("p%03d", i), "node-1", map[string]string{"third": strconv.FormatBool(i%3 == 0)})
	}
	e.createPods("ns2", "q", 5)
	e.createPods("ns10", "r", 5)
	selector := labels.SelectorFromSet(labels.Set{"third": "true"})
	keep := func(o *object.Object) bool { return selector.Matches(o.Labels()) }
	old := e.hist.lastRV()

	round := 0
	for _, c := range []struct {
		name string
		opts storage.ListOptions
		sel  bool
	}{
		{"consistent, selector", storage.ListOptions{Labels: selector, Stream: true}, true},
		{"consistent, everything", storage.ListOptions{Stream: true}, false},
		{"exact, selector", storage.ListOptions{ResourceVersion: rvString(old), ResourceVersionMatch: metav1.ResourceVersionMatchExact, Labels: selector, Stream: true}, true},
	} {
		round++
		list, err := e.store.GetList(e.ctx, "ns1/", c.opts)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if c.opts.ResourceVersion != "" && list.ResourceVersion != old {
			t.Fatalf("%s: list at %d, want %d", c.name, list.ResourceVersion, old)
		}
		var got []*object.Object
		chunks := 0
		err = list.Chunks(func(chunk []*object.Object) error {
			chunks++
			if chunks == 1 {
				// Writes while the stream is open: ahead of it and behind.
				n := len(objs)
				objs[n-1] = e.update(objs[n-1], "node-2", map[string]string{"third": "true", "round": strconv.Itoa(round)})
				objs[n-3] = e.update(objs[n-3], "node-2", map[string]string{"third": "false"})
				e.remove(objs[n-6].Key())
				objs = append(objs[:n-6], objs[n-5:]...)
				objs = append(objs, e.create("ns1", fmt.Sprintf("p%03d-%d", n, round), "node-1", map[string]string{"third": "true"}))
				objs[0] = e.update(objs[0], "node-3", map[string]string{"third": "true", "round": strconv.Itoa(round)})
			}
			got = append(got, chunk...)
			return nil
		})
		if err != nil {
			t.Fatalf("%s: reading the rest: %v", c.name, err)
		}
		k := keep
		if !c.sel {
			k = nil
		}
		assertSameObjects(t, c.name, got, e.hist.stateAt(list.ResourceVersion, "ns1/", k))
		if list.ResourceVersion >= e.hist.lastRV() {
			t.Fatalf("%s: the writes during the stream are not after the list's revision %d", c.name, list.ResourceVersion)
		}
		if list.Rest != nil && chunks < 3 {
			t.Fatalf("%s: a streamed list of %d objects came in %d chunks", c.name, len(got), chunks)
		}
	}
})
