// Package protojson transcodes the protobuf message of a k8s.io/api object,
// as kube-apiserver stores it, straight into the JSON text encoding/json
// gives for the Go value the generated Unmarshal would decode, byte for
// byte, without building that Go value: what resource.StorageCodec.Decode
// does for every value read from etcd (the cache's start, its watch and
// lists from etcd).
//
// A Transcoder is a table built once per Go type by reflection over the
// fields' protobuf and json tags; transcoding an object walks the wire
// bytes with that table and reflects on nothing. The few types whose JSON
// or protobuf is hand-written (metav1.Time, MicroTime, Duration, FieldsV1,
// resource.Quantity, intstr.IntOrString, runtime.RawExtension,
// certificates/v1's ExtraValue) are written here as their methods write
// them, mostly by calling those methods. Any
// other type with a hand-written encoding makes For refuse the kind, and
// Append declines any input it is not sure to read exactly as the
// generated code does (a duplicated field, an unexpected wire type, a
// malformed message, a value the Go path would fail on): the caller then
// takes the Go path, which gives the same answer or the same error.
package protojson

import (
	"bytes"
	"reflect"
	"sync"
)

// Transcoder writes the JSON of one Go type's protobuf messages.
type Transcoder struct {
	top *message
}

// transcoders memoizes For: reflect.Type → forResult.
var transcoders sync.Map

type forResult struct {
	t   *Transcoder
	err error
}

// For is the Transcoder of the k8s.io/api struct type typ (an object with
// metav1.TypeMeta inlined), or why there is none: a field of a type whose
// JSON or protobuf this package does not know.
func For(typ reflect.Type) (*Transcoder, error) {
	if r, ok := transcoders.Load(typ); ok {
		return r.(forResult).t, r.(forResult).err
	}
	b := builder{messages: map[reflect.Type]*message{}}
	m, err := b.message(typ, true)
	r := forResult{err: err}
	if err == nil {
		r.t = &Transcoder{top: m}
	}
	transcoders.Store(typ, r)
	return r.t, r.err
}

// states are the scratch space of transcodings, reused.
var states = sync.Pool{New: func() any { return new(state) }}

// Append appends to dst the JSON of the object whose protobuf message is
// msg, with kind and apiVersion as its TypeMeta (json.Marshal of the
// decoded Go value after SetGroupVersionKind), and reports true; or
// declines, returning dst unchanged and false.
func (t *Transcoder) Append(dst, msg []byte, kind, apiVersion string) ([]byte, bool) {
	st := states.Get().(*state)
	st.kind, st.apiVersion, st.bad = kind, apiVersion, false
	n := len(dst)
	dst = st.message(dst, t.top, msg)
	bad := st.bad
	st.kind, st.apiVersion = "", ""
	states.Put(st) // its entries were cleared as used: no pointers into msg
	if bad {
		return dst[:n], false
	}
	return dst, true
}

// occurrence is where a field of a message is on the wire: the offset of
// its first tag and the number of its tags.
type occurrence struct {
	first, count int
}

// entry is a map entry: its key and its value (bytes or number; nil
// and 0 where the entry has none).
type entry struct {
	key, value []byte
	x          uint64
}

// state is one transcoding's scratch: stacks of the fields found in each
// message and of map entries being sorted, and its failure.
type state struct {
	seen             []occurrence
	entries          []entry
	kind, apiVersion string
	// bad is set where the transcoding declines; the output is discarded.
	bad bool
	// compact and escaped hold a json.Marshaler's output being compacted.
	compacted, escaped bytes.Buffer
}
