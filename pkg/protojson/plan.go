package protojson

import (
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"
	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// op is how a value is read from the wire and written as JSON.
type op uint8

const (
	opString op = iota
	opBytes
	opBool
	opInt
	opUint
	opFloat
	opMessage
	// The types with hand-written JSON or protobuf (special.go).
	opTime
	opMicroTime
	opDuration
	opQuantity
	opIntOrString
	opFieldsV1
	opRawExtension
	// opStrings is a []string read from a message of its own (repeated
	// string items = 1): certificates/v1's ExtraValue, a map value only.
	opStrings
)

// specials are the types with a hand-written JSON or protobuf encoding
// that this package writes as their methods do. Every other type
// implementing json.Marshaler or encoding.TextMarshaler, or a protobuf
// Unmarshal of its own on a non-struct type, makes For fail.
var specials = map[reflect.Type]op{
	reflect.TypeFor[metav1.Time]():               opTime,
	reflect.TypeFor[metav1.MicroTime]():          opMicroTime,
	reflect.TypeFor[metav1.Duration]():           opDuration,
	reflect.TypeFor[resource.Quantity]():         opQuantity,
	reflect.TypeFor[intstr.IntOrString]():        opIntOrString,
	reflect.TypeFor[metav1.FieldsV1]():           opFieldsV1,
	reflect.TypeFor[runtime.RawExtension]():      opRawExtension,
	reflect.TypeFor[certificatesv1.ExtraValue](): opStrings,
}

// value is how one Go value (a field's, a slice element's, a map value's)
// is read and written.
type value struct {
	op   op
	wire protowire.Type
	// bits is the width of an int, uint or float.
	bits int
	// msg is an opMessage's table.
	msg *message
}

// shape is what holds a field's values in Go.
type shape uint8

const (
	single   shape = iota // a value, or a pointer to one
	repeated              // a slice other than []byte
	mapped                // a map with string keys
)

// field is one JSON member of a message, in Go field order.
type field struct {
	// key is the member's name, quoted, with its colon.
	key []byte
	num protowire.Number
	val value
	// mapVal is a map's value; val is then its key (a string).
	mapVal value
	shape  shape
	// pointer: a present value is never omitted (it is not nil).
	pointer bool
	// omit says a present value is omitted where it is empty (omitempty,
	// or omitzero on the types where both mean the same).
	omit bool
	// inline: an embedded struct whose members are this message's.
	inline bool
	// typeMeta: the embedded metav1.TypeMeta of the top object, written
	// from Append's kind and apiVersion.
	typeMeta bool
	// absent is what encoding/json writes for the field where the wire
	// has none (the Go zero value): its member (members of an inline
	// field) without braces, or nil where it is omitted.
	absent []byte
}

// message is the table of one struct type.
type message struct {
	fields []field
	// index is the position in fields of each protobuf field number
	// (-1: none, skipped as unknown).
	index []int16
}

func (m *message) field(num protowire.Number) int {
	if int(num) < len(m.index) {
		return int(m.index[num])
	}
	return -1
}

type builder struct {
	messages map[reflect.Type]*message
}

var (
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
	typeMeta      = reflect.TypeFor[metav1.TypeMeta]()
)

// marshals says t (or *t) writes its own JSON or text.
func marshals(t reflect.Type) bool {
	p := reflect.PointerTo(t)
	return t.Implements(jsonMarshaler) || p.Implements(jsonMarshaler) || t.Implements(textMarshaler) || p.Implements(textMarshaler)
}

// message builds the table of the struct type t; top: the object itself,
// whose TypeMeta Append writes.
func (b *builder) message(t reflect.Type, top bool) (*message, error) {
	if m, ok := b.messages[t]; ok {
		return m, nil
	}
	if t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("%s is not a struct", t)
	}
	if marshals(t) {
		return nil, fmt.Errorf("%s has a JSON marshaller of its own", t)
	}
	m := &message{}
	b.messages[t] = m // before its fields: a type may contain itself
	names := map[string]bool{}
	if err := b.fields(m, t, top, names); err != nil {
		return nil, err
	}
	for i, f := range m.fields {
		if f.num == 0 {
			continue
		}
		for int(f.num) >= len(m.index) {
			m.index = append(m.index, -1)
		}
		if m.index[f.num] >= 0 {
			return nil, fmt.Errorf("%s: protobuf field %d twice", t, f.num)
		}
		m.index[f.num] = int16(i)
	}
	return m, nil
}

// fields appends the fields of struct t to m; names are the JSON names
// taken so far in the object (inline fields share it), where encoding/json's
// rules for a name twice are not followed but refused.
func (b *builder) fields(m *message, t reflect.Type, top bool, names map[string]bool) error {
	for i := range t.NumField() {
		sf := t.Field(i)
		tag, hasTag := sf.Tag.Lookup("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if !sf.IsExported() {
			if sf.Anonymous {
				return fmt.Errorf("%s.%s: an unexported embedded field", t, sf.Name)
			}
			continue
		}
		omitEmpty, omitZero := false, false
		for _, o := range strings.Split(opts, ",") {
			switch o {
			case "omitempty":
				omitEmpty = true
			case "omitzero":
				omitZero = true
			case "", "inline":
			default:
				return fmt.Errorf("%s.%s: json option %q", t, sf.Name, o)
			}
		}
		ptag := sf.Tag.Get("protobuf")
		if sf.Anonymous && name == "" {
			if sf.Type == typeMeta && ptag == "" {
				// Not in protobuf: empty, so omitted, but in the object
				// itself, whose kind and apiVersion Append writes.
				if names["kind"] || names["apiVersion"] {
					return fmt.Errorf("%s: kind or apiVersion twice", t)
				}
				names["kind"], names["apiVersion"] = true, true
				if top {
					m.fields = append(m.fields, field{typeMeta: true})
				}
				continue
			}
			if _, special := specials[sf.Type]; special || sf.Type.Kind() != reflect.Struct || ptag == "" || marshals(sf.Type) {
				return fmt.Errorf("%s.%s: an embedded field this package cannot inline", t, sf.Name)
			}
			f, err := b.protoField(sf, ptag)
			if err != nil {
				return err
			}
			if f.shape != single || f.pointer {
				return fmt.Errorf("%s.%s: an embedded field this package cannot inline", t, sf.Name)
			}
			f.inline = true
			inner := &message{}
			if err := b.fields(inner, sf.Type, false, names); err != nil {
				return err
			}
			zero, err := json.Marshal(reflect.Zero(sf.Type).Interface())
			if err != nil {
				return err
			}
			if zero = zero[1 : len(zero)-1]; len(zero) > 0 {
				f.absent = zero
			}
			m.fields = append(m.fields, f)
			continue
		}
		if !hasTag || name == "" {
			name = sf.Name
		} else if !validName(name) {
			return fmt.Errorf("%s.%s: json name %q", t, sf.Name, name)
		}
		if names[name] {
			return fmt.Errorf("%s: json name %q twice", t, name)
		}
		names[name] = true
		if ptag == "" {
			return fmt.Errorf("%s.%s: no protobuf tag", t, sf.Name)
		}
		f, err := b.protoField(sf, ptag)
		if err != nil {
			return err
		}
		f.key = strconv.AppendQuote(nil, name) // a valid name needs no escaping
		f.key = append(f.key, ':')
		zero := reflect.Zero(sf.Type)
		if omitZero && hasIsZero(sf.Type) && specials[sf.Type] != opTime && specials[sf.Type] != opMicroTime {
			// encoding/json would call it; a *metav1.Time is omitted
			// where it is nil and where it is zero.
			return fmt.Errorf("%s.%s: omitzero on a %s, which has an IsZero method", t, sf.Name, sf.Type)
		}
		switch {
		case f.pointer || f.shape != single:
			f.omit = false // present: not nil, not empty
		case omitZero && !omitEmpty && (f.val.op == opFloat || f.val.op >= opMessage && f.val.op != opTime && f.val.op != opMicroTime):
			return fmt.Errorf("%s.%s: omitzero on a %s", t, sf.Name, sf.Type)
		case f.val.op == opTime || f.val.op == opMicroTime:
			f.omit = omitZero // a struct: omitempty never omits it
		case f.val.op >= opMessage:
			if omitZero {
				return fmt.Errorf("%s.%s: omitzero on a %s", t, sf.Name, sf.Type)
			}
		default:
			f.omit = omitEmpty || omitZero
		}
		if !((omitEmpty && emptyValue(zero)) || (omitZero && zero.IsZero())) {
			js, err := json.Marshal(zero.Interface())
			if err != nil {
				return err
			}
			f.absent = append(append([]byte(nil), f.key...), js...)
		}
		m.fields = append(m.fields, f)
	}
	return nil
}

// hasIsZero says t or *t has the IsZero method encoding/json's omitzero
// calls.
func hasIsZero(t reflect.Type) bool {
	_, onT := t.MethodByName("IsZero")
	_, onPointer := reflect.PointerTo(t).MethodByName("IsZero")
	return onT || onPointer
}

// emptyValue is encoding/json's test for omitempty.
func emptyValue(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Struct:
		return false
	}
	return v.IsZero()
}

// validName is encoding/json's test of a json tag's name (where it fails,
// encoding/json uses the Go name; For refuses).
func validName(s string) bool {
	for _, c := range s {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		default:
			return false
		}
	}
	return true
}

// protoField reads a field's protobuf tag and Go type. Only the tag's
// field number is used: its wire type and its "rep" are not always right
// in k8s.io/api (the generated code follows the .proto files, which are
// generated from the Go types), so the Go type gives them.
func (b *builder) protoField(sf reflect.StructField, ptag string) (field, error) {
	parts := strings.Split(ptag, ",")
	if len(parts) < 2 {
		return field{}, fmt.Errorf("%s: protobuf tag %q", sf.Name, ptag)
	}
	num, err := strconv.Atoi(parts[1])
	if err != nil || num <= 0 || num > 1<<12 {
		return field{}, fmt.Errorf("%s: protobuf tag %q", sf.Name, ptag)
	}
	f := field{num: protowire.Number(num)}
	t := sf.Type
	if k := t.Kind(); k == reflect.Slice || k == reflect.Map {
		// A named slice or map (its elements are checked as values).
		if err := ownEncoding(t); err != nil {
			return field{}, fmt.Errorf("%s: %w", sf.Name, err)
		}
	}
	switch {
	case t.Kind() == reflect.Pointer:
		f.pointer, t = true, t.Elem()
	case t.Kind() == reflect.Slice && t.Elem().Kind() != reflect.Uint8:
		f.shape, t = repeated, t.Elem()
	case t.Kind() == reflect.Map:
		f.shape = mapped
		if t.Key().Kind() != reflect.String || marshals(t.Key()) {
			return field{}, fmt.Errorf("%s: map key %s", sf.Name, t.Key())
		}
		if f.val, err = b.value(t.Key()); err != nil {
			return field{}, fmt.Errorf("%s: %w", sf.Name, err)
		}
		t = t.Elem()
		if f.mapVal, err = b.value(t); err != nil {
			return field{}, fmt.Errorf("%s: %w", sf.Name, err)
		}
		return f, nil
	}
	if f.val, err = b.value(t); err != nil {
		return field{}, fmt.Errorf("%s: %w", sf.Name, err)
	}
	if f.val.op == opStrings {
		return field{}, fmt.Errorf("%s: a %s not in a map", sf.Name, t)
	}
	return f, nil
}

// value is how a value of Go type t is read and written.
func (b *builder) value(t reflect.Type) (value, error) {
	if op, ok := specials[t]; ok {
		return value{op: op, wire: protowire.BytesType}, nil
	}
	if err := ownEncoding(t); err != nil {
		return value{}, err
	}
	switch t.Kind() {
	case reflect.String:
		return value{op: opString, wire: protowire.BytesType}, nil
	case reflect.Slice:
		if t.Elem().Kind() != reflect.Uint8 || marshals(t.Elem()) {
			return value{}, fmt.Errorf("a slice of slices %s", t)
		}
		return value{op: opBytes, wire: protowire.BytesType}, nil
	case reflect.Bool:
		return value{op: opBool, wire: protowire.VarintType}, nil
	case reflect.Int32, reflect.Int64:
		return value{op: opInt, wire: protowire.VarintType, bits: t.Bits()}, nil
	case reflect.Uint32, reflect.Uint64:
		return value{op: opUint, wire: protowire.VarintType, bits: t.Bits()}, nil
	case reflect.Float64:
		return value{op: opFloat, wire: protowire.Fixed64Type, bits: 64}, nil
	case reflect.Float32:
		return value{op: opFloat, wire: protowire.Fixed32Type, bits: 32}, nil
	case reflect.Struct:
		m, err := b.message(t, false)
		if err != nil {
			return value{}, err
		}
		return value{op: opMessage, wire: protowire.BytesType, msg: m}, nil
	}
	return value{}, fmt.Errorf("a %s", t)
}

// ownEncoding says why a type not special here has a JSON or protobuf
// encoding of its own: a JSON or text marshaller, or, not a struct (whose
// generated Unmarshal follows its fields' tags), an Unmarshal method
// (k8s.io/api's ExtraValue, a []string read from a message of its own).
func ownEncoding(t reflect.Type) error {
	if marshals(t) {
		return fmt.Errorf("%s has a JSON marshaller of its own", t)
	}
	if _, ok := reflect.PointerTo(t).MethodByName("Unmarshal"); ok && t.Kind() != reflect.Struct {
		return fmt.Errorf("%s has a protobuf encoding of its own", t)
	}
	return nil
}
