package encoding

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/watchcache/watchcache/pkg/apistatus"
	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/resource"
	"github.com/watchcache/watchcache/pkg/storage"
	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	kjson "sigs.k8s.io/json"
)

// The protobuf wire form, as kube-apiserver writes it: every object (a
// list, a Status) is the magic "k8s\x00" and a runtime.Unknown message
// whose TypeMeta names its apiVersion and kind and whose Raw is the
// object's own message (generated from its k8s.io/api Go type); a watch is
// a sequence of frames, each a 4-byte big-endian length and a
// metav1.WatchEvent whose object is such an enveloped object.
//
// An object's message is made from its JSON once (decoded into its Go type
// and marshalled) and kept with the object's record (object.Encoded), so
// that every list, get and watch that serves it afterwards copies ready
// bytes, as it does the JSON; a list is written item by item, its length
// known from its items' sizes.

// protobufMagic opens every protobuf object.
var protobufMagic = []byte("k8s\x00")

// scheme knows every built-in kind's Go type: what request bodies in
// protobuf decode into, and what typed answers (a Scale, a TokenRequest,
// a review, the aggregated discovery document) encode from.
var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme, apidiscoveryv2.AddToScheme} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	return s
}()

// ProtobufDecoder decodes protobuf bodies of the built-in kinds and of
// meta/v1 options (DeleteOptions).
var ProtobufDecoder = serializer.NewCodecFactory(scheme).UniversalDeserializer()

// protobufSerializer encodes typed values the scheme knows.
var protobufSerializer = protobuf.NewSerializer(scheme, scheme)

// protobufMarshaler is what k8s.io/api's generated types implement.
type protobufMarshaler interface {
	Size() int
	MarshalToSizedBuffer(dAtA []byte) (int, error)
}

// protobufType is the Go type whose generated message res's objects are
// encoded as; none for custom resources.
func protobufType(res *resource.Resource) (reflect.Type, bool) {
	if res == nil || res.StrategicMergeType == nil {
		return nil, false
	}
	t := reflect.TypeOf(res.StrategicMergeType)
	_, ok := reflect.New(t).Interface().(protobufMarshaler)
	return t, ok
}

// protobufToJSON converts a protobuf body into JSON, checking that it is
// of kind group/kind.
func protobufToJSON(data []byte, group, kind string) ([]byte, *apierrors.StatusError) {
	obj, gvk, err := ProtobufDecoder.Decode(data, nil, nil)
	if err != nil {
		return nil, apistatus.BadRequest("the protobuf request body cannot be decoded: %v", err)
	}
	if gvk.Group != group || gvk.Kind != kind {
		// kube-apiserver converts the body to its internal type of the
		// request's kind, named by its group's package ("core" for the
		// core group), and says that the conversion is unknown.
		internal, _, _ := strings.Cut(group, ".")
		if internal == "" {
			internal = "core"
		}
		return nil, CannotHandle(gvk.Kind, gvk.Version, kind, fmt.Errorf("converting (%s) to (%s.%s): unknown conversion",
			strings.TrimPrefix(reflect.TypeOf(obj).String(), "*"), internal, kind))
	}
	out, err := json.Marshal(obj)
	if err != nil {
		return nil, apistatus.BadRequest("the protobuf request body cannot be converted: %v", err)
	}
	return out, nil
}

// marshal is m's message.
func marshal(m protobufMarshaler) ([]byte, error) {
	buf := make([]byte, m.Size())
	n, err := m.MarshalToSizedBuffer(buf)
	return buf[len(buf)-n:], err
}

// message is obj's message, made once and kept with the record.
func message(res *resource.Resource, obj *object.Object) ([]byte, error) {
	t, ok := protobufType(res)
	if !ok {
		return nil, fmt.Errorf("%s has no protobuf encoding", res)
	}
	return obj.Encoded(func() ([]byte, error) {
		typed := reflect.New(t).Interface()
		if err := kjson.UnmarshalCaseSensitivePreserveInts(obj.JSON(), typed); err != nil {
			return nil, fmt.Errorf("encoding %s %s in protobuf: %w", res.Kind, obj.Key(), err)
		}
		return marshal(typed.(protobufMarshaler))
	})
}

// appendTag appends a length-delimited field's tag and length.
func appendTag(buf []byte, field int, n int) []byte {
	buf = append(buf, byte(field<<3|2))
	return binary.AppendUvarint(buf, uint64(n))
}

// appendEnvelopeOpen appends the magic and the runtime.Unknown message up
// to its Raw field's bytes, which are rawLen long; appendEnvelopeClose
// appends what follows them.
func appendEnvelopeOpen(buf []byte, apiVersion, kind string, rawLen int) []byte {
	typeMetaLen := protoStringLen(apiVersion) + protoStringLen(kind)
	buf = append(buf, protobufMagic...)
	buf = appendTag(buf, 1, typeMetaLen)
	buf = appendTag(buf, 1, len(apiVersion))
	buf = append(buf, apiVersion...)
	buf = appendTag(buf, 2, len(kind))
	buf = append(buf, kind...)
	return appendTag(buf, 2, rawLen)
}

// appendEnvelopeClose appends the runtime.Unknown fields after Raw: its
// empty contentEncoding and contentType, which kube-apiserver writes.
func appendEnvelopeClose(buf []byte) []byte { return append(buf, 0x1a, 0, 0x22, 0) }

// protoStringLen is the encoded size of a string field.
func protoStringLen(s string) int {
	return 1 + uvarintLen(uint64(len(s))) + len(s)
}

func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// envelope is raw, the message of an apiVersion/kind object, enveloped.
func envelope(apiVersion, kind string, raw []byte) []byte {
	buf := make([]byte, 0, len(raw)+len(apiVersion)+len(kind)+16)
	buf = appendEnvelopeOpen(buf, apiVersion, kind, len(raw))
	return appendEnvelopeClose(append(buf, raw...))
}

// ObjectProtobuf is res's object obj as kube-apiserver answers a get in
// protobuf.
func ObjectProtobuf(res *resource.Resource, obj *object.Object) ([]byte, error) {
	raw, err := message(res, obj)
	if err != nil {
		return nil, err
	}
	return envelope(res.GroupVersion(), res.Kind, raw), nil
}

// ValueProtobuf is a typed value of a kind the scheme knows (a Scale, a
// TokenRequest, a review, a Status) in protobuf. Its apiVersion and kind
// are its TypeMeta's when set, else the scheme's for its Go type.
func ValueProtobuf(v runtime.Object) ([]byte, error) {
	if status, ok := v.(*metav1.Status); ok {
		return StatusProtobuf(status), nil
	}
	gvks, _, err := scheme.ObjectKinds(v)
	if err != nil {
		return nil, err
	}
	if gvk := v.GetObjectKind().GroupVersionKind(); gvk.Kind == "" {
		v = v.DeepCopyObject()
		v.GetObjectKind().SetGroupVersionKind(gvks[0])
	}
	var buf bytes.Buffer
	if err := protobufSerializer.Encode(v, &buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// StatusProtobuf is a Status in protobuf.
func StatusProtobuf(status *metav1.Status) []byte {
	raw, _ := marshal(status) // a Status always encodes
	return envelope("v1", "Status", raw)
}

// listMetaProtobuf is a list's ListMeta message.
func listMetaProtobuf(list *storage.List) []byte {
	meta := metav1.ListMeta{Continue: list.Continue, RemainingItemCount: list.RemainingItemCount}
	if list.ResourceVersion != 0 {
		meta.ResourceVersion = storage.FormatResourceVersion(list.ResourceVersion)
	}
	if list.Shard != nil {
		meta.ShardInfo = &metav1.ShardInfo{Selector: list.Shard.String()}
	}
	raw, _ := marshal(&meta)
	return raw
}

// ListProtobuf is the protobuf body of a list of res.
func ListProtobuf(res *resource.Resource, list *storage.List) ([]byte, error) {
	var buf bytes.Buffer
	err := protobufList(res.GroupVersion(), res.ListKind(), list, func(obj *object.Object) ([]byte, error) { return message(res, obj) },
		func(p []byte) error { buf.Write(p); return nil })
	return buf.Bytes(), err
}

// protobufList writes a list (apiVersion, kind) in protobuf to write, in
// pieces: the messages of the list's items (item) are made, or found kept,
// first, for the list's length, then written one by one.
func protobufList(apiVersion, kind string, list *storage.List, item func(*object.Object) ([]byte, error), write func([]byte) error) error {
	var items [][]byte
	if err := list.Chunks(func(chunk []*object.Object) error {
		for _, obj := range chunk {
			raw, err := item(obj)
			if err != nil {
				return err
			}
			items = append(items, raw)
		}
		return nil
	}); err != nil {
		return err
	}
	meta := listMetaProtobuf(list)
	rawLen := protoBytesLen(len(meta))
	for _, item := range items {
		rawLen += protoBytesLen(len(item))
	}
	head := appendEnvelopeOpen(nil, apiVersion, kind, rawLen)
	head = append(appendTag(head, 1, len(meta)), meta...)
	if err := write(head); err != nil {
		return err
	}
	var tag []byte
	for _, item := range items {
		tag = appendTag(tag[:0], 2, len(item))
		if err := write(tag); err != nil {
			return err
		}
		if err := write(item); err != nil {
			return err
		}
	}
	return write(appendEnvelopeClose(nil))
}

// protoBytesLen is the encoded size of a bytes field of n bytes.
func protoBytesLen(n int) int { return 1 + uvarintLen(uint64(n)) + n }

// watchFrame appends one protobuf watch frame: the length, then a
// WatchEvent of type t whose object is the enveloped object.
func watchFrame(buf []byte, t storage.EventType, object []byte) []byte {
	ext := protoBytesLen(len(object))
	n := protoStringLen(string(t)) + protoBytesLen(ext)
	buf = binary.BigEndian.AppendUint32(buf, uint32(n))
	buf = appendTag(buf, 1, len(t))
	buf = append(buf, t...)
	buf = appendTag(buf, 2, ext)
	buf = appendTag(buf, 1, len(object))
	return append(buf, object...)
}

// WatchEventProtobuf is one frame of a protobuf watch of res.
func WatchEventProtobuf(res *resource.Resource, ev storage.Event) ([]byte, error) {
	var object []byte
	switch ev.Type {
	case storage.EventBookmark:
		object = bookmarkProtobuf(res, ev)
	case storage.EventError:
		object = StatusProtobuf(&apistatus.From(ev.Err, res.Subject("")).ErrStatus)
	default:
		var err error
		if object, err = ObjectProtobuf(res, ev.Object); err != nil {
			return nil, err
		}
	}
	return watchFrame(nil, ev.Type, object), nil
}

// bookmarkMeta is a BOOKMARK's metadata: its resourceVersion and the
// initial-events-end annotation.
func bookmarkMeta(ev storage.Event) *metav1.ObjectMeta {
	meta := &metav1.ObjectMeta{ResourceVersion: storage.FormatResourceVersion(ev.ResourceVersion)}
	if ev.InitialEventsEnd {
		meta.Annotations = map[string]string{metav1.InitialEventsAnnotationKey: "true"}
	}
	return meta
}

// bookmarkBodies are the fields kube-apiserver's BOOKMARK objects of some
// kinds carry besides metadata: what converting its empty internal object
// to the served version sets (a nil replica count becomes 0, a DaemonSet
// gets its template generation annotation). Recorded from kube-apiserver
// 1.37's watches (testdata/protobuf).
var bookmarkBodies = map[string]string{
	"apps/Deployment":  `{"spec":{"replicas":0}}`,
	"apps/ReplicaSet":  `{"spec":{"replicas":0}}`,
	"apps/StatefulSet": `{"spec":{"replicas":0}}`,
	"apps/DaemonSet":   `{"metadata":{"annotations":{"deprecated.daemonset.template.generation":"0"}}}`,
}

// bookmarkProtobuf is a BOOKMARK's object: res's kind with only
// metadata.resourceVersion (and the initial-events-end annotation), and
// the fields of bookmarkBodies.
func bookmarkProtobuf(res *resource.Resource, ev storage.Event) []byte {
	t, _ := protobufType(res)
	typed := reflect.New(t).Interface()
	if body, ok := bookmarkBodies[res.Group+"/"+res.Kind]; ok {
		json.Unmarshal([]byte(body), typed) // data above: it decodes
	}
	meta := reflect.ValueOf(typed).Elem().FieldByName("ObjectMeta").Addr().Interface().(*metav1.ObjectMeta)
	bookmark := bookmarkMeta(ev)
	meta.ResourceVersion = bookmark.ResourceVersion
	for k, v := range bookmark.Annotations {
		metav1.SetMetaDataAnnotation(meta, k, v)
	}
	raw, _ := marshal(typed.(protobufMarshaler))
	return envelope(res.GroupVersion(), res.Kind, raw)
}
