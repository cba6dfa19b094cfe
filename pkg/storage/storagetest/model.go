// The tests' oracle (every write by revision and the state at a revision),
// the pod-like objects and writes that record into it, and assertions on
// lists, errors and watch events.

package storagetest

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/storage"
)

// history is the test's oracle: every write the test made, by revision, so
// that the expected state at any revision can be computed.
type history struct {
	writes []write
}

type write struct {
	rv  uint64
	key string
	obj *object.Object // nil: deleted
}

func newHistory() *history { return &history{} }

func (h *history) record(rv uint64, key string, obj *object.Object) {
	h.writes = append(h.writes, write{rv, key, obj})
}

// stateAt returns the objects that existed at revision rv, by key order,
// restricted to scope and to those keep accepts (nil: all).
func (h *history) stateAt(rv uint64, scope string, keep func(*object.Object) bool) []*object.Object {
	state := map[string]*object.Object{}
	for _, w := range h.writes {
		if w.rv > rv {
			break
		}
		if w.obj == nil {
			delete(state, w.key)
		} else {
			state[w.key] = w.obj
		}
	}
	var out []*object.Object
	for k, o := range state {
		if strings.HasPrefix(k, scope) && (keep == nil || keep(o)) {
			out = append(out, o)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key() < out[j].Key() })
	return out
}

// lastRV is the revision of the test's newest write.
func (h *history) lastRV() uint64 {
	if len(h.writes) == 0 {
		return 0
	}
	return h.writes[len(h.writes)-1].rv
}

// pod returns the JSON of a pod-like object, its uid made of its
// namespace and name.
func pod(namespace, name, node string, labels map[string]string) []byte {
	return podUID(namespace, name, "uid-"+namespace+"-"+name, node, labels)
}

// podUID returns the JSON of a pod-like object with the given uid.
func podUID(namespace, name, uid, node string, labels map[string]string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":%q`, name)
	if namespace != "" {
		fmt.Fprintf(&b, `,"namespace":%q`, namespace)
	}
	fmt.Fprintf(&b, `,"uid":%q`, uid)
	if len(labels) > 0 {
		keys := make([]string, 0, len(labels))
		for k := range labels {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteString(`,"labels":{`)
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, "%q:%q", k, labels[k])
		}
		b.WriteByte('}')
	}
	fmt.Fprintf(&b, `},"spec":{"nodeName":%q},"status":{"phase":"Running"}}`, node)
	return b.Bytes()
}

// create creates a pod and records it.
func (e *env) create(namespace, name, node string, labels map[string]string) *object.Object {
	e.t.Helper()
	return e.createData(namespace, name, pod(namespace, name, node, labels))
}

// createData creates the object data under namespace/name and records it.
func (e *env) createData(namespace, name string, data []byte) *object.Object {
	e.t.Helper()
	key := name
	if namespace != "" {
		key = namespace + "/" + name
	}
	obj, err := e.store.Create(e.ctx, key, data)
	if err != nil {
		e.t.Fatalf("create %s: %v", key, err)
	}
	e.hist.record(obj.ResourceVersion(), key, obj)
	return obj
}

// update replaces a pod's node (and labels) and records it.
func (e *env) update(cur *object.Object, node string, labels map[string]string) *object.Object {
	e.t.Helper()
	obj, err := e.store.GuaranteedUpdate(e.ctx, cur.Key(), nil, func(*object.Object) ([]byte, error) {
		return podUID(cur.Namespace(), cur.Name(), cur.UID(), node, labels), nil
	}, nil)
	if err != nil {
		e.t.Fatalf("update %s: %v", cur.Key(), err)
	}
	e.hist.record(obj.ResourceVersion(), cur.Key(), obj)
	return obj
}

// remove deletes a pod and records it.
func (e *env) remove(key string) *object.Object {
	e.t.Helper()
	obj, err := e.store.Delete(e.ctx, key, nil, nil)
	if err != nil {
		e.t.Fatalf("delete %s: %v", key, err)
	}
	e.hist.record(obj.ResourceVersion(), key, nil)
	return obj
}

// compact compacts etcd at the current revision.
func (e *env) compact() uint64 {
	e.t.Helper()
	rv, err := e.store.CurrentResourceVersion(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.client.Compact(e.ctx, int64(rv)); err != nil {
		e.t.Fatal(err)
	}
	return rv
}

// assertSameObjects checks that got and want are the same objects, item by
// item: key, resourceVersion and served bytes.
func assertSameObjects(t *testing.T, what string, got, want []*object.Object) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: got %d objects %v, want %d %v", what, len(got), got, len(want), want)
	}
	for i := range got {
		if got[i].Key() != want[i].Key() || got[i].ResourceVersion() != want[i].ResourceVersion() || !bytes.Equal(got[i].JSON(), want[i].JSON()) {
			t.Fatalf("%s: item %d is %s %s, want %s %s", what, i, got[i], got[i].JSON(), want[i], want[i].JSON())
		}
	}
}

// assertListIsStateAt checks that a full (unpaged) list is exactly the
// state at its own resourceVersion, restricted to scope and keep.
func (e *env) assertListIsStateAt(what string, list *storage.List, scope string, keep func(*object.Object) bool) {
	e.t.Helper()
	assertSameObjects(e.t, what, list.Items, e.hist.stateAt(list.ResourceVersion, scope, keep))
}

// assertCode checks that err is a storage error with the given code.
func assertCode(t *testing.T, err error, code storage.ErrorCode) *storage.Error {
	t.Helper()
	var se *storage.Error
	if !errors.As(err, &se) {
		t.Fatalf("got error %v, want a storage error with code %s", err, code)
	}
	if se.Code != code {
		t.Fatalf("got %s (%v), want %s", se.Code, err, code)
	}
	return se
}

// eventTimeout bounds the wait for one expected watch event.
const eventTimeout = 10 * time.Second

// nextEvent returns the next event of w, failing the test after
// eventTimeout or if the channel closes.
func nextEvent(t *testing.T, w storage.Watcher) storage.Event {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatal("watch channel closed while an event was expected")
		}
		return ev
	case <-time.After(eventTimeout):
		t.Fatal("no watch event within", eventTimeout)
	}
	return storage.Event{}
}

// nextNonBookmark skips bookmarks and returns the next other event.
func nextNonBookmark(t *testing.T, w storage.Watcher) storage.Event {
	t.Helper()
	for {
		if ev := nextEvent(t, w); ev.Type != storage.EventBookmark {
			return ev
		}
	}
}

// expectEvent checks the next non-bookmark event's type, key and revision.
func expectEvent(t *testing.T, w storage.Watcher, typ storage.EventType, key string, rv uint64) storage.Event {
	t.Helper()
	ev := nextNonBookmark(t, w)
	if ev.Type != typ || ev.Object == nil || ev.Object.Key() != key || ev.Object.ResourceVersion() != rv || ev.ResourceVersion != rv {
		t.Fatalf("got event %s %v (rv %d), want %s %s@%d", ev.Type, ev.Object, ev.ResourceVersion, typ, key, rv)
	}
	return ev
}
