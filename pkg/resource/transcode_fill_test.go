package resource

import (
	"encoding/json"
	"math"
	"math/rand"
	"reflect"
	"strings"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/cbor/direct"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// filler fills Go values of k8s.io/api types at random, favouring the
// edge values where a transcoder may differ from encoding/json: empty
// strings and zero numbers (omitempty), HTML characters, controls,
// U+2028, invalid UTF-8, extreme integers, nil and present-but-empty
// pointers, slices and maps, zero times, non-canonical quantities.
type filler struct {
	r *rand.Rand
}

var edgeStrings = []string{"", "", "a", "web-1", "<b>&amp;</b>", "\u2028\u2029", "é日本語🙂", "\x00\x1f\t\n\r\b\f\"\\/",
	"\xff\xfeinvalid", "trunc\xe2\x80", "\xed\xa0\x80 surrogate", "a\u007fb", strings.Repeat("long ", 40)}

func (f *filler) str() string {
	if f.r.Intn(3) == 0 {
		b := make([]byte, f.r.Intn(12))
		for i := range b {
			b[i] = byte(f.r.Intn(256))
		}
		return string(b)
	}
	return edgeStrings[f.r.Intn(len(edgeStrings))]
}

func (f *filler) int(bits int) int64 {
	switch f.r.Intn(6) {
	case 0:
		return 0
	case 1:
		return -1
	case 2:
		if bits == 32 {
			return math.MaxInt32
		}
		return math.MaxInt64
	case 3:
		if bits == 32 {
			return math.MinInt32
		}
		return math.MinInt64
	}
	if bits == 32 {
		return int64(int32(f.r.Uint32()))
	}
	return int64(f.r.Uint64())
}

var edgeFloats = []float64{0, math.Copysign(0, -1), 1, -1.5, 1e-7, 1e-6, 1e20, 1e21, 123456789.125, 3.4e38, 5e-324, math.MaxFloat64}

var edgeQuantities = []string{"0", "1", "1000m", "100m", "0.5", "1.5Gi", "128Mi", "1k", "1e3", "2E6", "-5", "500u", "12n",
	"123456789012345678", "9223372036854775807", "0.000001", "1.000", "+3", "1024Ki", "8Ei"}

// specialFills fill the types with hand-written encodings with values
// they can encode.
var specialFills = map[reflect.Type]func(f *filler, v reflect.Value){
	reflect.TypeFor[metav1.Time](): func(f *filler, v reflect.Value) {
		v.Set(reflect.ValueOf(metav1.Time{Time: f.time()}))
	},
	reflect.TypeFor[metav1.MicroTime](): func(f *filler, v reflect.Value) {
		v.Set(reflect.ValueOf(metav1.MicroTime{Time: f.time()}))
	},
	reflect.TypeFor[metav1.Duration](): func(f *filler, v reflect.Value) {
		v.Set(reflect.ValueOf(metav1.Duration{Duration: time.Duration(f.int(64))}))
	},
	reflect.TypeFor[resource.Quantity](): func(f *filler, v reflect.Value) {
		var q resource.Quantity
		switch f.r.Intn(4) {
		case 0:
		case 1:
			q = *resource.NewMilliQuantity(f.int(64)/1000, resource.DecimalSI)
		default:
			q = resource.MustParse(edgeQuantities[f.r.Intn(len(edgeQuantities))])
		}
		v.Set(reflect.ValueOf(q))
	},
	reflect.TypeFor[intstr.IntOrString](): func(f *filler, v reflect.Value) {
		switch f.r.Intn(40) {
		case 0:
			v.Set(reflect.ValueOf(intstr.IntOrString{Type: 2, IntVal: 3})) // encoding/json fails
		case 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18:
			v.Set(reflect.ValueOf(intstr.FromInt32(int32(f.int(32)))))
		default:
			v.Set(reflect.ValueOf(intstr.FromString(f.str())))
		}
	},
	reflect.TypeFor[metav1.FieldsV1](): func(f *filler, v reflect.Value) {
		var fv metav1.FieldsV1
		if raw := f.rawJSON(true); raw != nil {
			fv.SetRawBytes(raw)
		}
		v.Set(reflect.ValueOf(fv))
	},
	reflect.TypeFor[runtime.RawExtension](): func(f *filler, v reflect.Value) {
		v.Set(reflect.ValueOf(runtime.RawExtension{Raw: f.rawJSON(false)}))
	},
}

func (f *filler) time() time.Time {
	switch f.r.Intn(6) {
	case 0:
		return time.Time{}
	case 1:
		return time.Unix(-62135596800, 0) // the zero time's seconds
	case 2:
		return time.Unix(253402300800+f.r.Int63n(1e9), 0) // after year 9999
	}
	return time.Unix(f.r.Int63n(4e9)-1e9, f.r.Int63n(1e9))
}

// rawJSON is the raw bytes of a FieldsV1 (object: an object, null or
// CBOR) or a RawExtension (any JSON value), with spaces to compact,
// sometimes nil, empty or not JSON at all (encoding/json fails on them).
func (f *filler) rawJSON(object bool) []byte {
	m := map[string]any{"f:" + f.str(): map[string]any{}, ".": map[string]any{}, "k:{\"a\":1}": map[string]any{"v:<x>": map[string]any{}}}
	switch f.r.Intn(40) {
	case 0:
		return nil
	case 1:
		return []byte{}
	case 2:
		return []byte("{not json") // encoding/json fails, as for []byte{} in a RawExtension
	case 3:
		if object {
			cbor, _ := direct.Marshal(m)
			return cbor
		}
		return []byte(` [1, "<&>", {"a" : null}, 2.50, true] `)
	case 4:
		return []byte(" null ")
	case 5, 6, 7, 8, 9:
		return nil
	}
	js, _ := json.MarshalIndent(m, " ", "\t")
	if f.r.Intn(2) == 0 {
		js, _ = json.Marshal(m)
	}
	return js
}

// fill sets v, settable, to a random value; depth bounds the nesting.
func (f *filler) fill(v reflect.Value, depth int) {
	if fill, ok := specialFills[v.Type()]; ok {
		fill(f, v)
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(f.str())
	case reflect.Bool:
		v.SetBool(f.r.Intn(2) == 0)
	case reflect.Int32, reflect.Int64:
		v.SetInt(f.int(v.Type().Bits()))
	case reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(f.int(v.Type().Bits())))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(edgeFloats[f.r.Intn(len(edgeFloats))])
	case reflect.Pointer:
		if f.r.Intn(3) > 0 {
			v.Set(reflect.New(v.Type().Elem()))
			if f.r.Intn(5) > 0 { // else present but empty
				f.fill(v.Elem(), depth+1)
			}
		}
	case reflect.Slice:
		n := f.r.Intn(4) - 1
		if depth > 6 {
			n = min(n, 1)
		}
		if n < 0 {
			return
		}
		if v.Type().Elem().Kind() == reflect.Uint8 {
			b := make([]byte, f.r.Intn(8)*n)
			f.r.Read(b)
			v.SetBytes(b)
			return
		}
		v.Set(reflect.MakeSlice(v.Type(), n, n))
		for i := range n {
			f.fill(v.Index(i), depth+1)
		}
	case reflect.Map:
		n := f.r.Intn(5) - 1
		if n < 0 {
			return
		}
		v.Set(reflect.MakeMap(v.Type()))
		for range n {
			key := reflect.New(v.Type().Key()).Elem()
			key.SetString(f.str())
			val := reflect.New(v.Type().Elem()).Elem()
			f.fill(val, depth+1)
			v.SetMapIndex(key, val)
		}
	case reflect.Struct:
		if depth > 12 {
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() && f.r.Intn(4) > 0 {
				f.fill(v.Field(i), depth+1)
			}
		}
	}
}

// shuffleWire re-encodes raw, if it parses as a protobuf message, with
// its fields in a random order (map entries and repeated elements
// included), recursively in every length-delimited field that parses as
// a message too (a string that happens to is reordered as well: both
// paths read the same bytes), and, where dup, with some fields twice.
func shuffleWire(r *rand.Rand, raw []byte, dup bool, depth int) []byte {
	type tagged struct {
		tag, value []byte
	}
	var fields []tagged
	for rest := raw; len(rest) > 0; {
		num, typ, n := protowire.ConsumeTag(rest)
		if n < 0 || typ == protowire.StartGroupType || typ == protowire.EndGroupType {
			return raw
		}
		vn := protowire.ConsumeFieldValue(num, typ, rest[n:])
		if vn < 0 {
			return raw
		}
		f := tagged{rest[:n], rest[n : n+vn]}
		if typ == protowire.BytesType && depth < 20 {
			payload, _ := protowire.ConsumeBytes(f.value)
			f.value = protowire.AppendBytes(nil, shuffleWire(r, payload, dup, depth+1))
		}
		fields = append(fields, f)
		rest = rest[n+vn:]
	}
	r.Shuffle(len(fields), func(i, j int) { fields[i], fields[j] = fields[j], fields[i] })
	if dup && len(fields) > 0 && r.Intn(4) == 0 {
		fields = append(fields, fields[r.Intn(len(fields))])
	}
	var out []byte
	for _, f := range fields {
		out = append(append(out, f.tag...), f.value...)
	}
	return out
}
