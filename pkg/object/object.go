// Package object holds the immutable record of a stored Kubernetes-style
// object: its identity, resourceVersion, labels and selectable fields, and
// its stored JSON (without metadata.resourceVersion; etcd keeps it as is,
// or for built-in kinds its protobuf: see etcd3.Codec), from which the
// served form (with metadata.resourceVersion) is written without decoding
// or re-encoding.
//
// A record is built from JSON in one pass (Decode) and never changes, so it
// can be shared by the cache, every list and every watcher without copying.
package object

import (
	"bufio"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"sync/atomic"
	"unsafe"
)

// Object is one stored object at one resourceVersion. It is immutable.
//
// It keeps the stored JSON (without metadata.resourceVersion) and serves
// stored[:rvAt] + `"resourceVersion":"N"` (+ ",") + stored[rvAt:], rvAt
// being just inside metadata's '{'. Its strings (name, namespace, uid,
// labels, field values) share the memory of the stored bytes: those bytes
// must never be modified, by anyone.
//
// The record is 128 bytes, exactly an allocation size class: a field added
// to it costs 16 bytes per object (the next class is 144). That is why the
// comma after the inserted resourceVersion is derived (comma) rather than
// stored, and the stored JSON is held as a string.
type Object struct {
	// key locates the object within its resource: "namespace/name" or, for
	// cluster-scoped resources, "name".
	key string
	rv  uint64
	// uidHash and namespaceHash are ShardHash of metadata.uid and
	// metadata.namespace, computed once by Decode: a shard selector
	// (KEP-5866) then costs a comparison per object, not a hash. Neither
	// field changes over an object's life (the uid is immutable, the
	// namespace is part of the key), so neither does its shard.
	uidHash, namespaceHash uint64
	// fields[i] is the value of the schema's slot i (schema.paths[i],
	// then its derived fields); the first three are metadata.name,
	// metadata.namespace and metadata.uid.
	fields fieldValues
	labels Labels
	// stored is the stored JSON, held as a string (16 bytes, not a slice's
	// 24) so that the record has room for encoded within its size class.
	stored string
	// encoded is the object's encoding other than JSON (protobuf), made by
	// the first request that needs it and kept for every later one (see
	// Encoded).
	encoded atomic.Pointer[[]byte]
	// rvAt is where the resourceVersion member goes (see comma).
	rvAt int32
	// metaEnd is the offset just after metadata's '}' in stored.
	metaEnd int32
}

// KeyOnly returns a record with only a key, to look objects up by key in
// ordered collections. It has no JSON and must not be served.
func KeyOnly(key string) *Object { return &Object{key: key} }

// Key is the object's key within its resource ("ns/name" or "name").
func (o *Object) Key() string { return o.key }

// ResourceVersion is the etcd revision that last modified the object (for
// a deletion event: the deletion's revision).
func (o *Object) ResourceVersion() uint64 { return o.rv }

// Name is metadata.name.
func (o *Object) Name() string { return o.fields.values[nameIndex] }

// Namespace is metadata.namespace ("" for cluster-scoped objects).
func (o *Object) Namespace() string { return o.fields.values[namespaceIndex] }

// UID is metadata.uid.
func (o *Object) UID() string { return o.fields.values[uidIndex] }

// UIDHash is ShardHash(o.UID()), computed when the record was built.
func (o *Object) UIDHash() uint64 { return o.uidHash }

// NamespaceHash is ShardHash(o.Namespace()), computed when the record was
// built.
func (o *Object) NamespaceHash() uint64 { return o.namespaceHash }

// Labels are metadata.labels, for label selectors.
func (o *Object) Labels() Labels { return o.labels }

// Fields are the selectable fields, for field selectors. The result is
// shared: do not keep it beyond the object.
func (o *Object) Fields() *fieldValues { return &o.fields }

// comma reports whether the inserted resourceVersion member needs a comma
// after it: metadata has other members. The stored JSON is compact in
// practice, so this looks at one byte.
func (o *Object) comma() bool { return firstNonSpace(o.Stored()[o.rvAt:]) != '}' }

// rvMember formats the inserted `"resourceVersion":"N"` member (and its
// comma) into buf.
func (o *Object) rvMember(buf *[48]byte) []byte {
	m := append(buf[:0], `"resourceVersion":"`...)
	m = strconv.AppendUint(m, o.rv, 10)
	m = append(m, '"')
	if o.comma() {
		m = append(m, ',')
	}
	return m
}

// AppendJSON appends the object as served to clients, with
// metadata.resourceVersion.
func (o *Object) AppendJSON(buf []byte) []byte {
	var m [48]byte
	buf = append(buf, o.stored[:o.rvAt]...)
	buf = append(buf, o.rvMember(&m)...)
	return append(buf, o.stored[o.rvAt:]...)
}

// WriteJSONWithoutPrefix writes the object as WriteJSON does, its stored
// JSON's first members prefix (e.g. `{"kind":"Pod","apiVersion":"v1",`)
// written as `{`; false, writing nothing, if the stored JSON does not
// begin with prefix.
func (o *Object) WriteJSONWithoutPrefix(w *bufio.Writer, prefix string) (bool, error) {
	if len(prefix) < 2 || prefix[len(prefix)-1] != ',' || int32(len(prefix)) > o.rvAt || o.stored[:len(prefix)] != prefix {
		return false, nil
	}
	w.WriteByte('{')
	return true, o.writeFrom(w, len(prefix))
}

// WriteJSON writes the object as served to clients, with
// metadata.resourceVersion, into a buffered writer without allocating.
func (o *Object) WriteJSON(w *bufio.Writer) error { return o.writeFrom(w, 0) }

// writeFrom writes the served form from offset start of the stored JSON
// (before metadata's members).
func (o *Object) writeFrom(w *bufio.Writer, start int) error {
	w.WriteString(o.stored[start:o.rvAt])
	w.WriteString(`"resourceVersion":"`)
	w.Write(strconv.AppendUint(w.AvailableBuffer(), o.rv, 10))
	if o.comma() {
		w.WriteString(`",`)
	} else {
		w.WriteByte('"')
	}
	_, err := w.WriteString(o.stored[o.rvAt:])
	return err
}

// JSON returns the object as served to clients, in a new slice.
func (o *Object) JSON() []byte { return o.AppendJSON(make([]byte, 0, o.JSONSize())) }

// JSONSize is the length of the served form.
func (o *Object) JSONSize() int {
	var m [48]byte
	return len(o.stored) + len(o.rvMember(&m))
}

// AppendMetadata appends the object's metadata as served (a JSON object,
// resourceVersion included).
func (o *Object) AppendMetadata(buf []byte) []byte {
	var m [48]byte
	buf = append(buf, '{')
	buf = append(buf, o.rvMember(&m)...)
	return append(buf, o.stored[o.rvAt:o.metaEnd]...)
}

// Stored is the object as stored in etcd: JSON without
// metadata.resourceVersion. Shared: do not modify.
func (o *Object) Stored() []byte { return unsafe.Slice(unsafe.StringData(o.stored), len(o.stored)) }

// StoredEqual reports whether other's stored form equals this object's.
func (o *Object) StoredEqual(other *Object) bool { return o.stored == other.stored }

// WithResourceVersion returns a copy of the object at another
// resourceVersion (used for a deletion, which carries the last state at the
// deletion's revision). The copy shares the stored bytes, not the encoding
// (which holds the resourceVersion).
func (o *Object) WithResourceVersion(rv uint64) *Object {
	cp := &Object{key: o.key, rv: rv, uidHash: o.uidHash, namespaceHash: o.namespaceHash, fields: o.fields, labels: o.labels,
		stored: o.stored, rvAt: o.rvAt, metaEnd: o.metaEnd}
	return cp
}

// Encoded returns the object's encoding as served (with its
// resourceVersion) in the one other encoding a server speaks besides JSON
// (protobuf): made by encode on first use and kept with the record, so
// that every list and watch that serves the object shares it. Two first
// uses at once may both encode; one result is kept. The result is shared:
// do not modify it.
func (o *Object) Encoded(encode func() ([]byte, error)) ([]byte, error) {
	if p := o.encoded.Load(); p != nil {
		return *p, nil
	}
	data, err := encode()
	if err != nil {
		return nil, err
	}
	o.encoded.CompareAndSwap(nil, &data)
	return *o.encoded.Load(), nil
}

// EncodedSize is the length of the kept encoding (0 if none was made),
// for memory accounting.
func (o *Object) EncodedSize() int {
	if p := o.encoded.Load(); p != nil {
		return len(*p)
	}
	return 0
}

// Size is the number of bytes the record holds beyond its fixed header,
// for memory accounting.
func (o *Object) Size() int { return len(o.stored) + o.EncodedSize() }

// String names the object for logs and test failures.
func (o *Object) String() string { return fmt.Sprintf("%s@%d", o.key, o.rv) }

const (
	nameIndex = iota
	namespaceIndex
	uidIndex
	firstSelectableIndex
)

// ErrInvalid is wrapped by every Decode error caused by the input.
var ErrInvalid = errors.New("invalid object")

// Decode builds the record of the object whose JSON is data, stored under
// key at revision rv. A metadata.resourceVersion in data is dropped (the
// record carries rv instead); Decode reports its value as clientRV so that a
// writer can check it. The record keeps data itself when it has no
// resourceVersion to drop (the case of everything read from etcd): the
// caller must not modify data afterwards.
func Decode(schema *Schema, key string, data []byte, rv uint64) (obj *Object, clientRV string, err error) {
	d := decoder{s: scanner{data: data}, metaOpen: -1, rvKeyStart: -1}
	d.values = make([]capture, len(schema.paths))
	if err := d.object(schema.root); err != nil {
		return nil, "", fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if d.s.peek() != 0 {
		return nil, "", fmt.Errorf("%w: %v", ErrInvalid, d.s.syntaxError("data after the object"))
	}
	if d.metaOpen < 0 {
		return nil, "", fmt.Errorf("%w: metadata must be an object", ErrInvalid)
	}
	// Cut the client's resourceVersion member (and one adjacent comma) out.
	stored := data
	cutStart, cut := len(data), 0
	if d.rvKeyStart >= 0 {
		var cutEnd int
		cutStart, cutEnd = memberCut(data, d.rvKeyStart, d.rvValueEnd)
		cut = cutEnd - cutStart
		stored = make([]byte, 0, len(data)-cut)
		stored = append(append(stored, data[:cutStart]...), data[cutEnd:]...)
	}
	obj = &Object{
		key:     key,
		rv:      rv,
		stored:  unsafe.String(unsafe.SliceData(stored), len(stored)),
		rvAt:    int32(d.metaOpen + 1),
		metaEnd: int32(d.metaClose - cut),
	}

	// The captured values become strings that share the stored bytes
	// (which never change); past the cut, offsets move back by its length.
	str := func(c capture) string {
		if c.start < 0 {
			return c.text
		}
		if c.start == c.end {
			return ""
		}
		at := c.start
		if at >= cutStart {
			at -= cut
		}
		return unsafe.String(&stored[at], c.end-c.start)
	}
	values := make([]string, len(d.values), len(d.values)+len(schema.derived))
	for i, c := range d.values {
		values[i] = str(c)
	}
	values = schema.values(values)
	obj.fields = fieldValues{schema: schema, values: values}
	obj.uidHash, obj.namespaceHash = ShardHash(values[uidIndex]), ShardHash(values[namespaceIndex])
	if len(d.labels) > 0 {
		labels := make(Labels, len(d.labels))
		for i, c := range d.labels {
			labels[i] = str(c)
		}
		sort.Sort(labelPairs(labels))
		obj.labels = labels
	}
	return obj, d.clientRV, nil
}

// memberCut widens the span of one object member [keyStart, valueEnd) to
// take one separating comma with it, so the object stays valid JSON.
func memberCut(data []byte, keyStart, valueEnd int) (int, int) {
	i := valueEnd
	for i < len(data) && isSpace(data[i]) {
		i++
	}
	if i < len(data) && data[i] == ',' {
		i++
		for i < len(data) && isSpace(data[i]) {
			i++
		}
		return keyStart, i
	}
	// Last member: take the comma before it, if any.
	j := keyStart - 1
	for j >= 0 && isSpace(data[j]) {
		j--
	}
	if j >= 0 && data[j] == ',' {
		return j, valueEnd
	}
	return keyStart, valueEnd
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func firstNonSpace(b []byte) byte {
	for _, c := range b {
		if !isSpace(c) {
			return c
		}
	}
	return 0
}

// decoder collects what a Schema asks for during one scan.
type decoder struct {
	s          scanner
	metaOpen   int // offset of metadata's '{'
	metaClose  int // offset just after metadata's '}'
	rvKeyStart int // offset of the "resourceVersion" key in metadata, or -1
	rvValueEnd int
	clientRV   string
	values     []capture // by schema field index
	labels     []capture // key, value, key, value…
}

func (d *decoder) object(node *pathNode) error {
	if node.role == roleMetadata {
		if d.s.peek() != '{' {
			return d.s.syntaxError("metadata must be an object")
		}
		d.metaOpen = d.s.pos
		defer func() { d.metaClose = d.s.pos }()
	}
	return d.s.forEachMember(func(key capture, keyStart int) error {
		child := node.children[string(d.s.bytes(key))]
		if child == nil {
			return d.s.skipValue()
		}
		switch {
		case child.role == roleResourceVersion:
			v, _, err := d.s.captureScalar()
			if err != nil {
				return err
			}
			d.clientRV = string(d.s.bytes(v))
			d.rvKeyStart, d.rvValueEnd = keyStart, d.s.pos
			return nil
		case child.role == roleLabels:
			return d.readLabels()
		case child.field >= 0:
			v, _, err := d.s.captureScalar()
			d.values[child.field] = v
			return err
		case len(child.children) > 0 && d.s.peek() == '{':
			return d.object(child)
		default:
			return d.s.skipValue()
		}
	})
}

func (d *decoder) readLabels() error {
	if d.s.peek() == 'n' { // null
		return d.s.skipValue()
	}
	return d.s.forEachMember(func(key capture, _ int) error {
		if d.s.peek() != '"' {
			return fmt.Errorf("metadata.labels[%q] must be a string", d.s.bytes(key))
		}
		v, err := d.s.captureString()
		d.labels = append(d.labels, key, v)
		return err
	})
}

// Labels are an object's labels as sorted key/value pairs: k0, v0, k1, v1…
// They implement k8s.io/apimachinery's labels.Labels.
type Labels []string

// Has reports whether the label is set.
func (l Labels) Has(key string) bool {
	_, ok := l.Lookup(key)
	return ok
}

// Get returns the label's value, or "".
func (l Labels) Get(key string) string {
	v, _ := l.Lookup(key)
	return v
}

// Map returns the labels as a map (allocates; not for hot paths).
func (l Labels) Map() map[string]string {
	m := make(map[string]string, len(l)/2)
	for i := 0; i+1 < len(l); i += 2 {
		m[l[i]] = l[i+1]
	}
	return m
}

// Lookup returns the label's value and whether it is set.
func (l Labels) Lookup(key string) (string, bool) {
	n := len(l) / 2
	i := sort.Search(n, func(i int) bool { return l[2*i] >= key })
	if i < n && l[2*i] == key {
		return l[2*i+1], true
	}
	return "", false
}

// labelPairs sorts a flat key/value slice by key.
type labelPairs []string

func (p labelPairs) Len() int           { return len(p) / 2 }
func (p labelPairs) Less(i, j int) bool { return p[2*i] < p[2*j] }
func (p labelPairs) Swap(i, j int) {
	p[2*i], p[2*j] = p[2*j], p[2*i]
	p[2*i+1], p[2*j+1] = p[2*j+1], p[2*i+1]
}

// fieldValues are an object's selectable fields. They implement
// k8s.io/apimachinery's fields.Fields.
type fieldValues struct {
	schema *Schema
	values []string
}

// Has reports whether the field is selectable for this resource.
func (f *fieldValues) Has(field string) bool {
	_, ok := f.schema.index[field]
	return ok
}

// Get returns the field's value ("" when absent from the object).
func (f *fieldValues) Get(field string) string {
	if i, ok := f.schema.index[field]; ok {
		return f.values[i]
	}
	return ""
}
