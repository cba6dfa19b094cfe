// The stored encoding of values: protobuf in kube-apiserver's envelope for
// built-in kinds, JSON for custom resources and the few built-in kinds
// kube-apiserver stores so.

package resource

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"sync"

	"github.com/watchcache/watchcache/pkg/protojson"
	"google.golang.org/protobuf/encoding/protowire"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// protobufMagic opens every protobuf value kube-apiserver stores; a
// runtime.Unknown follows, whose TypeMeta names the stored version and
// kind and whose Raw is the object's message (generated from its k8s.io/api
// Go type, without TypeMeta and with metadata.resourceVersion empty).
var protobufMagic = []byte("k8s\x00")

// StorageCodec turns a record's stored JSON (what object.Decode reads:
// the object without metadata.resourceVersion) into the value etcd keeps,
// before any encryption, and back. It reads both encodings whatever it
// writes: kube-apiserver's (protobuf in its storage version, or JSON with
// a trailing newline) and watchcache's before issue 29 (JSON).
type StorageCodec struct {
	// apiVersion and kind are the served version's: what Decode returns.
	apiVersion, kind string
	// typ is the served version's Go type; nil for custom resources.
	typ reflect.Type
	// json says values are JSON, not protobuf.
	json bool
	// storage is the storage version, if not the served one.
	storage *storageVersion
	// objects are zero values of typ for Decode to fill, reused.
	objects sync.Pool
	// transcoder writes the JSON of typ's protobuf without decoding it
	// into objects; nil for the few kinds it does not know
	// (protojson.For's error).
	transcoder *protojson.Transcoder
}

func newCodec(apiVersion, kind string, typ any, asJSON bool, storage *storageVersion) *StorageCodec {
	c := &StorageCodec{apiVersion: apiVersion, kind: kind, typ: reflect.TypeOf(typ), json: asJSON, storage: storage}
	c.objects.New = func() any { return reflect.New(c.typ).Interface() }
	if !asJSON {
		c.transcoder, _ = protojson.For(c.typ)
	}
	return c
}

// transcodeBuffers are Decode's buffers for the transcoder's output,
// which it copies out at its size (the cache keeps it).
var transcodeBuffers = sync.Pool{New: func() any { return new([]byte) }}

// RangeAllocationCodec stores core/v1 RangeAllocations (the node port
// bitmap at <root>/ranges/servicenodeports) as kube-apiserver does.
var RangeAllocationCodec = newCodec("v1", "RangeAllocation", corev1.RangeAllocation{}, false, nil)

// protobufMessage is what k8s.io/api's generated types implement.
type protobufMessage interface {
	runtime.Object
	Size() int
	MarshalToSizedBuffer([]byte) (int, error)
	Unmarshal([]byte) error
}

// Encode is the value stored for a record's JSON.
func (c *StorageCodec) Encode(stored []byte) ([]byte, error) {
	if c.typ == nil {
		return append(stored[:len(stored):len(stored)], '\n'), nil
	}
	obj := reflect.New(c.typ).Interface().(runtime.Object)
	if err := json.Unmarshal(stored, obj); err != nil {
		return nil, fmt.Errorf("encoding a %s for storage: %w", c.kind, err)
	}
	return c.encodeObject(obj)
}

// EncodeBuilt is Encode(stored) given the object stored was marshalled
// from (Resource.EncodeTyped's, see storage.Built), which it encodes
// without decoding stored again. The caller guarantees that stored is
// exactly the JSON of built; a built of another type (not the served
// version's Go type) is ignored.
func (c *StorageCodec) EncodeBuilt(stored []byte, built any) ([]byte, error) {
	obj, ok := built.(runtime.Object)
	if !ok || c.typ == nil || reflect.TypeOf(built) != reflect.PointerTo(c.typ) {
		return c.Encode(stored)
	}
	if c.storage != nil || c.json {
		// Rare kinds (not pods): left to Encode, which owns the object it
		// converts or sets the TypeMeta of.
		return c.Encode(stored)
	}
	return c.encodeObject(obj)
}

// encodeObject is the stored value of obj, an object of the served version.
func (c *StorageCodec) encodeObject(obj runtime.Object) ([]byte, error) {
	apiVersion := c.apiVersion
	if c.storage != nil {
		out := reflect.New(reflect.TypeOf(c.storage.typ)).Interface().(runtime.Object)
		if err := c.storage.convert(c.storage.toStorage, obj, out); err != nil {
			return nil, fmt.Errorf("converting a %s to %s for storage: %w", c.kind, c.storage.apiVersion, err)
		}
		obj, apiVersion = out, c.storage.apiVersion
	}
	if c.json {
		obj.GetObjectKind().SetGroupVersionKind(schema.FromAPIVersionAndKind(apiVersion, c.kind))
		data, err := json.Marshal(obj)
		return append(data, '\n'), err
	}
	msg := obj.(protobufMessage)
	u := runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: apiVersion, Kind: c.kind}, Raw: make([]byte, msg.Size())}
	if _, err := msg.MarshalToSizedBuffer(u.Raw); err != nil {
		return nil, err
	}
	buf := make([]byte, len(protobufMagic)+u.Size())
	copy(buf, protobufMagic)
	if _, err := u.MarshalToSizedBuffer(buf[len(protobufMagic):]); err != nil {
		return nil, err
	}
	return buf, nil
}

// RoundTrips reports whether Decode(Encode(stored)) is stored itself, byte
// for byte, for the canonical stored JSON of the kind (Resource.Encode's),
// or cannot be told cheaply (false); see etcd3.RoundTripCodec. A custom
// resource's value is its JSON. A built-in kind's goes through its Go type
// both ways, which gives its canonical JSON back, except where protobuf
// cannot tell an empty list from none: a field without omitempty written
// [] reads back null (kube-apiserver serves a ClusterRole created with
// "rules":[] so, its create response included), hence no [] anywhere (no
// map field of k8s.io/api lacks omitempty). A kind stored in another
// version (converted, defaulted) never round-trips here.
func (c *StorageCodec) RoundTrips(stored []byte) bool {
	switch {
	case c.storage != nil:
		return false
	case c.typ == nil:
		return len(stored) > 0 && stored[len(stored)-1] == '}'
	default:
		return !bytes.Contains(stored, []byte("[]"))
	}
}

// Decode is the record's JSON of a stored value: the object in the served
// version, kind and apiVersion first for built-in kinds.
func (c *StorageCodec) Decode(value []byte) ([]byte, error) {
	if !bytes.HasPrefix(value, protobufMagic) {
		value = bytes.TrimRight(value, " \t\r\n")
		if c.storage == nil || storedJSONVersion(value) != c.storage.apiVersion {
			return value, nil
		}
		in := reflect.New(reflect.TypeOf(c.storage.typ)).Interface().(runtime.Object)
		if err := json.Unmarshal(value, in); err != nil {
			return nil, err
		}
		return c.served(in, c.storage.fromStorage)
	}
	if c.typ == nil {
		return nil, fmt.Errorf("a %s stored in protobuf, which custom resources are not", c.kind)
	}
	apiVersion, kind, raw, err := parseEnvelope(value[len(protobufMagic):])
	if err != nil {
		return nil, fmt.Errorf("the stored protobuf envelope: %w", err)
	}
	switch {
	case kind != c.kind:
		return nil, fmt.Errorf("a %s is stored where a %s belongs", kind, c.kind)
	case apiVersion == c.apiVersion:
		if c.transcoder != nil {
			buf := transcodeBuffers.Get().(*[]byte)
			out, ok := c.transcoder.Append((*buf)[:0], raw, c.kind, c.apiVersion)
			*buf = out
			out = bytes.Clone(out)
			transcodeBuffers.Put(buf)
			if ok {
				return out, nil
			}
		}
		return c.decodeServed(raw)
	case c.storage != nil && apiVersion == c.storage.apiVersion:
		obj := reflect.New(reflect.TypeOf(c.storage.typ)).Interface().(protobufMessage)
		if err := obj.Unmarshal(raw); err != nil {
			return nil, fmt.Errorf("the stored %s %s: %w", apiVersion, c.kind, err)
		}
		return c.served(obj, c.storage.fromStorage)
	default:
		// Deliberately unlike kube-apiserver, which converts from every
		// version it knows: watchcache reads the served and the storage
		// version only (a value left in an older version by an older
		// kube-apiserver needs a storage migration first).
		return nil, fmt.Errorf("a %s stored as %s, which is neither served nor kube-apiserver 1.37's storage version", c.kind, apiVersion)
	}
}

// decodeServed is the JSON of raw, a message of the served version,
// through its Go type: where the transcoder declines, and what it must
// equal where it does not.
func (c *StorageCodec) decodeServed(raw []byte) ([]byte, error) {
	obj := c.objects.Get().(protobufMessage)
	defer func() {
		reflect.ValueOf(obj).Elem().SetZero() // holds nothing while pooled
		c.objects.Put(obj)
	}()
	if err := obj.Unmarshal(raw); err != nil {
		return nil, fmt.Errorf("the stored %s %s: %w", c.apiVersion, c.kind, err)
	}
	return c.served(obj, nil)
}

// parseEnvelope reads the runtime.Unknown that follows protobufMagic: its
// apiVersion, its kind and its raw message, which shares value's memory
// (runtime.Unknown's Unmarshal would copy it).
func parseEnvelope(value []byte) (apiVersion, kind string, raw []byte, err error) {
	var typeMeta []byte
	err = firstTwoBytesFields(value, func(num protowire.Number, field []byte) {
		if num == 2 {
			raw = field
		} else {
			typeMeta = field
		}
	})
	if err != nil {
		return "", "", nil, err
	}
	err = firstTwoBytesFields(typeMeta, func(num protowire.Number, field []byte) {
		if num == 1 {
			apiVersion = string(field)
		} else {
			kind = string(field)
		}
	})
	return apiVersion, kind, raw, err
}

// firstTwoBytesFields calls fn with each length-delimited field numbered
// 1 or 2 of the protobuf message msg (runtime.Unknown's typeMeta and raw,
// TypeMeta's apiVersion and kind), skipping the others: contentEncoding
// and contentType, empty in what kube-apiserver stores, or fields a later
// version may add.
func firstTwoBytesFields(msg []byte, fn func(num protowire.Number, field []byte)) error {
	for len(msg) > 0 {
		num, typ, n := protowire.ConsumeTag(msg)
		if n < 0 {
			return protowire.ParseError(n)
		}
		msg = msg[n:]
		if typ != protowire.BytesType || num > 2 {
			n = protowire.ConsumeFieldValue(num, typ, msg)
		} else {
			var field []byte
			field, n = protowire.ConsumeBytes(msg)
			if n >= 0 {
				fn(num, field)
			}
		}
		if n < 0 {
			return protowire.ParseError(n)
		}
		msg = msg[n:]
	}
	return nil
}

// served is the JSON of obj, converted by convert from the storage
// version if it is not nil or obj is not of the served type.
func (c *StorageCodec) served(obj runtime.Object, convert func(in, out runtime.Object) error) ([]byte, error) {
	if reflect.TypeOf(obj).Elem() != c.typ {
		out := reflect.New(c.typ).Interface().(runtime.Object)
		if err := c.storage.convert(convert, obj, out); err != nil {
			return nil, fmt.Errorf("converting a stored %s from %s: %w", c.kind, c.storage.apiVersion, err)
		}
		obj = out
	}
	obj.GetObjectKind().SetGroupVersionKind(schema.FromAPIVersionAndKind(c.apiVersion, c.kind))
	return json.Marshal(obj)
}

// convert converts in to out with fn, through JSON if fn is nil.
func (v *storageVersion) convert(fn func(in, out runtime.Object) error, in, out runtime.Object) error {
	if fn == nil {
		fn = convertByJSON
	}
	return fn(in, out)
}
