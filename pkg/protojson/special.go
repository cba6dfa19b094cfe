package protojson

import (
	"encoding/json"
	"strconv"
	"sync"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// small is a message of up to three scalar fields, numbered 1 to 3, read
// as their generated (or hand-written) Unmarshal reads them; other
// numbers are skipped.
type small struct {
	has     [4]bool
	x       [4]uint64
	payload [4][]byte
}

// readSmall reads data as a small message whose fields have the wire
// types wires (index: number); it declines a wrong wire type and a field
// twice.
func (st *state) readSmall(data []byte, wires [4]protowire.Type) small {
	var s small
	for len(data) > 0 {
		num, typ, val, rest, ok := st.readField(data)
		if !ok {
			return s
		}
		if num >= 1 && num <= 3 && wires[num] != 0 {
			if typ != wires[num]-1 || s.has[num] {
				st.bad = true
				return s
			}
			s.has[num] = true
			s.payload[num], s.x[num], _ = consume(typ, val)
		}
		data = rest
	}
	return s
}

// Wire types shifted by one, so that 0 is "no such field" in readSmall's
// wires.
const (
	varint = protowire.VarintType + 1
	bytesT = protowire.BytesType + 1
)

// special appends the JSON of a value of a type with a hand-written
// encoding, read from its message's bytes, and whether it is empty (for
// omitzero: a zero time).
func (st *state) special(dst []byte, op op, data []byte) ([]byte, bool) {
	switch op {
	case opTime, opMicroTime:
		// metav1.Time's Unmarshal: no bytes, the zero time; else
		// Timestamp's seconds, its nanoseconds dropped (MicroTime's
		// truncated to microseconds).
		var t time.Time
		if len(data) > 0 {
			s := st.readSmall(data, [4]protowire.Type{1: varint, 2: varint})
			nanos := int64(0)
			if op == opMicroTime {
				nanos = int64(time.Duration(int32(s.x[2])).Truncate(time.Microsecond))
			}
			t = time.Unix(int64(s.x[1]), nanos)
		}
		if t.IsZero() {
			return append(dst, "null"...), true
		}
		if op == opTime {
			dst = append(dst, '"')
			dst = t.UTC().AppendFormat(dst, time.RFC3339)
			return append(dst, '"'), false
		}
		return appendString(dst, t.UTC().Format(metav1.RFC3339Micro)), false
	case opDuration:
		s := st.readSmall(data, [4]protowire.Type{1: varint})
		return appendString(dst, time.Duration(int64(s.x[1])).String()), false
	case opIntOrString:
		s := st.readSmall(data, [4]protowire.Type{1: varint, 2: varint, 3: bytesT})
		switch intstr.Type(int64(s.x[1])) {
		case intstr.Int:
			return strconv.AppendInt(dst, int64(int32(s.x[2])), 10), false
		case intstr.String:
			return appendString(dst, s.payload[3]), false
		}
		st.bad = true // "impossible IntOrString.Type"
		return dst, false
	case opQuantity:
		s := st.readSmall(data, [4]protowire.Type{1: bytesT})
		return st.quantity(dst, s.payload[1]), false
	case opFieldsV1:
		s := st.readSmall(data, [4]protowire.Type{1: bytesT})
		var f metav1.FieldsV1
		if s.has[1] {
			f.SetRawBytes(s.payload[1])
		}
		js, err := f.MarshalJSON()
		return st.compact(dst, js, err), false
	case opRawExtension:
		s := st.readSmall(data, [4]protowire.Type{1: bytesT})
		var r runtime.RawExtension
		if s.has[1] {
			r.Raw = s.payload[1]
			if r.Raw == nil {
				r.Raw = []byte{} // the generated Unmarshal's
			}
		}
		js, err := r.MarshalJSON()
		return st.compact(dst, js, err), false
	case opStrings:
		// Its Unmarshal appends each item to a value that is never nil
		// (the map entry's &ExtraValue{}): [] where there are none.
		dst = append(dst, '[')
		for len(data) > 0 {
			num, typ, n := protowire.ConsumeTag(data)
			if n < 0 || typ == protowire.StartGroupType || typ == protowire.EndGroupType {
				st.bad = true
				break
			}
			data = data[n:]
			vn := protowire.ConsumeFieldValue(num, typ, data)
			if vn < 0 || num == 1 && typ != protowire.BytesType {
				st.bad = true
				break
			}
			if num == 1 {
				item, _ := protowire.ConsumeBytes(data)
				if dst[len(dst)-1] != '[' {
					dst = append(dst, ',')
				}
				dst = appendString(dst, item)
			}
			data = data[vn:]
		}
		return append(dst, ']'), false
	}
	panic("protojson: unknown op")
}

// compact appends a json.Marshaler's output as encoding/json does:
// compacted, with HTML characters escaped; it declines where encoding/json
// fails.
func (st *state) compact(dst, js []byte, err error) []byte {
	st.compacted.Reset()
	st.escaped.Reset()
	if err != nil || json.Compact(&st.compacted, js) != nil {
		st.bad = true
		return dst
	}
	json.HTMLEscape(&st.escaped, st.compacted.Bytes())
	return append(dst, st.escaped.Bytes()...)
}

// quantities caches the JSON of the quantities seen (few distinct ones
// in a cluster: "100m", "128Mi"), up to maxQuantities of them.
var quantities struct {
	sync.RWMutex
	json map[string][]byte
}

const maxQuantities = 4096

// quantity appends the JSON of the resource.Quantity stored as s (absent:
// nil, the zero quantity): its canonical form, which Quantity's
// Unmarshal and MarshalJSON give, not always s ("1000m" is "1").
func (st *state) quantity(dst, s []byte) []byte {
	if len(s) > 0 { // nil (the zero quantity) and "" (an error) are not cached
		quantities.RLock()
		js, ok := quantities.json[string(s)]
		quantities.RUnlock()
		if ok {
			return append(dst, js...)
		}
	}
	var q resource.Quantity
	if s != nil {
		var err error
		if q, err = resource.ParseQuantity(string(s)); err != nil {
			st.bad = true // Quantity's Unmarshal fails
			return dst
		}
	}
	js, err := q.MarshalJSON()
	n := len(dst)
	if dst = st.compact(dst, js, err); st.bad || len(s) == 0 {
		return dst
	}
	quantities.Lock()
	if quantities.json == nil {
		quantities.json = map[string][]byte{}
	}
	if len(quantities.json) < maxQuantities {
		quantities.json[string(s)] = append([]byte(nil), dst[n:]...)
	}
	quantities.Unlock()
	return dst
}
