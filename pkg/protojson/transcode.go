package protojson

import (
	"bytes"
	"encoding/base64"
	"math"
	"slices"
	"strconv"

	"google.golang.org/protobuf/encoding/protowire"
)

// message appends the JSON object of message m read from data.
func (st *state) message(dst []byte, m *message, data []byte) []byte {
	dst = append(dst, '{')
	dst = st.members(dst, m, data)
	return append(dst, '}')
}

// comma opens a member of the object dst is in.
func comma(dst []byte) []byte {
	if dst[len(dst)-1] != '{' {
		dst = append(dst, ',')
	}
	return dst
}

// members appends the members of message m read from data (no braces:
// those of the object it is in, for an inline one).
func (st *state) members(dst []byte, m *message, data []byte) []byte {
	base := len(st.seen)
	st.seen = append(st.seen, make([]occurrence, len(m.fields))...)
	for rest := data; len(rest) > 0; {
		off := len(data) - len(rest)
		num, _, _, next, ok := st.readField(rest)
		if !ok {
			break
		}
		if i := m.field(num); i >= 0 {
			o := &st.seen[base+i]
			if o.count == 0 {
				o.first = off
			}
			o.count++
		}
		rest = next
	}
	for i := range m.fields {
		if st.bad {
			break
		}
		f := &m.fields[i]
		o := st.seen[base+i] // by value: nested messages grow st.seen
		switch {
		case f.typeMeta:
			if st.kind != "" {
				dst = appendString(append(comma(dst), `"kind":`...), st.kind)
			}
			if st.apiVersion != "" {
				dst = appendString(append(comma(dst), `"apiVersion":`...), st.apiVersion)
			}
		case o.count == 0:
			if f.absent != nil {
				dst = append(comma(dst), f.absent...)
			}
		case f.shape == repeated:
			dst = st.list(dst, f, data[o.first:])
		case f.shape == mapped:
			dst = st.mapOf(dst, f, data[o.first:])
		case o.count > 1:
			// Merged or overwritten by the generated code; never written so.
			st.bad = true
		case f.inline:
			payload, _ := st.next(data[o.first:], f)
			if len(payload) == 0 && f.absent != nil {
				dst = append(comma(dst), f.absent...)
			} else {
				dst = st.members(dst, f.val.msg, payload)
			}
		default:
			payload, x := st.next(data[o.first:], f)
			mark := len(dst)
			dst = append(comma(dst), f.key...)
			var empty bool
			dst, empty = st.value(dst, &f.val, payload, x)
			if empty && f.omit {
				dst = dst[:mark]
			}
		}
	}
	st.seen = st.seen[:base]
	return dst
}

// next reads the value of field f whose tag opens data: the bytes of a
// length-delimited one, the number of another.
func (st *state) next(data []byte, f *field) (payload []byte, x uint64) {
	_, typ, n := protowire.ConsumeTag(data)
	if typ != f.val.wire {
		st.bad = true
		return nil, 0
	}
	payload, x, _ = consume(typ, data[n:])
	return payload, x
}

// consume reads a value of wire type typ (checked already) at the start of data,
// and its length.
func consume(typ protowire.Type, data []byte) (payload []byte, x uint64, n int) {
	switch typ {
	case protowire.BytesType:
		payload, n = protowire.ConsumeBytes(data)
	case protowire.VarintType:
		x, n = protowire.ConsumeVarint(data)
	case protowire.Fixed64Type:
		x, n = protowire.ConsumeFixed64(data)
	case protowire.Fixed32Type:
		var v uint32
		v, n = protowire.ConsumeFixed32(data)
		x = uint64(v)
	}
	return payload, x, n
}

// list appends the member of repeated field f, whose first tag opens
// data: its elements, one per tag or packed.
func (st *state) list(dst []byte, f *field, data []byte) []byte {
	mark := len(dst)
	dst = append(append(comma(dst), f.key...), '[')
	elems := 0
	for !st.bad {
		typ, rest, ok := nextOf(data, f.num)
		if !ok {
			break
		}
		data = rest
		switch {
		case typ == f.val.wire:
			payload, x, n := consume(typ, data)
			data = data[n:]
			if elems > 0 {
				dst = append(dst, ',')
			}
			dst, _ = st.value(dst, &f.val, payload, x)
			elems++
		case typ == protowire.BytesType && f.val.wire != protowire.BytesType:
			packed, n := protowire.ConsumeBytes(data)
			data = data[n:]
			for len(packed) > 0 {
				_, x, n := consume(f.val.wire, packed)
				if n < 0 {
					st.bad = true
					break
				}
				packed = packed[n:]
				if elems > 0 {
					dst = append(dst, ',')
				}
				dst, _ = st.value(dst, &f.val, nil, x)
				elems++
			}
		default:
			st.bad = true
		}
	}
	if elems == 0 { // only empty packed runs: the generated code leaves the slice nil
		dst = dst[:mark]
		if f.absent != nil {
			dst = append(comma(dst), f.absent...)
		}
		return dst
	}
	return append(dst, ']')
}

// mapOf appends the member of map field f, whose first tag opens data:
// its entries sorted by key as encoding/json sorts them, the last of
// entries with the same key only (as the generated code keeps it).
func (st *state) mapOf(dst []byte, f *field, data []byte) []byte {
	base := len(st.entries)
	for !st.bad {
		typ, rest, ok := nextOf(data, f.num)
		if !ok {
			break
		}
		data = rest
		if typ != protowire.BytesType {
			st.bad = true
			break
		}
		msg, n := protowire.ConsumeBytes(data)
		data = data[n:]
		st.entries = append(st.entries, st.mapEntry(msg, f))
	}
	entries := st.entries[base:]
	slices.SortStableFunc(entries, func(a, b entry) int { return bytes.Compare(a.key, b.key) })
	dst = append(append(comma(dst), f.key...), '{')
	for i := range entries {
		if st.bad {
			break
		}
		if i+1 < len(entries) && bytes.Equal(entries[i].key, entries[i+1].key) {
			continue
		}
		e := entries[i]
		if dst[len(dst)-1] != '{' {
			dst = append(dst, ',')
		}
		dst = append(appendString(dst, e.key), ':')
		// A value absent is its Go zero value, nil bytes included: the
		// generated code's []byte{} (not nil: "", never null).
		dst, _ = st.value(dst, &f.mapVal, e.value, e.x)
	}
	clear(st.entries[base:])
	st.entries = st.entries[:base]
	return append(dst, '}')
}

// mapEntry reads a map entry: key 1, value 2 (where the generated code
// reads them whatever their wire type, a wrong one is declined).
func (st *state) mapEntry(msg []byte, f *field) entry {
	var e entry
	for len(msg) > 0 {
		num, typ, val, rest, ok := st.readField(msg)
		if !ok {
			return e
		}
		switch num {
		case 1:
			if typ != protowire.BytesType {
				st.bad = true
			}
			e.key, _, _ = consume(typ, val)
		case 2:
			if typ != f.mapVal.wire {
				st.bad = true
			}
			e.value, e.x, _ = consume(typ, val)
		}
		msg = rest
	}
	return e
}

// value appends the JSON of a value read from the wire (its bytes, or its
// number) and whether it is empty for omitempty (omitzero for times).
func (st *state) value(dst []byte, v *value, payload []byte, x uint64) ([]byte, bool) {
	switch v.op {
	case opString:
		return appendString(dst, payload), len(payload) == 0
	case opBytes:
		dst = append(dst, '"')
		dst = base64.StdEncoding.AppendEncode(dst, payload)
		return append(dst, '"'), len(payload) == 0
	case opBool:
		if x != 0 {
			return append(dst, "true"...), false
		}
		return append(dst, "false"...), true
	case opInt:
		i := int64(x)
		if v.bits == 32 {
			i = int64(int32(x))
		}
		return strconv.AppendInt(dst, i, 10), i == 0
	case opUint:
		if v.bits == 32 {
			x = uint64(uint32(x))
		}
		return strconv.AppendUint(dst, x, 10), x == 0
	case opFloat:
		f := math.Float64frombits(x)
		if v.bits == 32 {
			f = float64(math.Float32frombits(uint32(x)))
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			st.bad = true // encoding/json fails
			return dst, false
		}
		return appendFloat(dst, f, v.bits), f == 0
	case opMessage:
		return st.message(dst, v.msg, payload), false
	}
	return st.special(dst, v.op, payload)
}

// readField reads the field msg opens: its number, wire type, value (its bytes
// after the tag) and the fields after it. A group or a malformed field is
// declined (st.bad, ok false).
func (st *state) readField(msg []byte) (num protowire.Number, typ protowire.Type, val, rest []byte, ok bool) {
	num, typ, n := protowire.ConsumeTag(msg)
	if n < 0 || typ == protowire.StartGroupType || typ == protowire.EndGroupType {
		st.bad = true
		return 0, 0, nil, nil, false
	}
	vn := protowire.ConsumeFieldValue(num, typ, msg[n:])
	if vn < 0 {
		st.bad = true
		return 0, 0, nil, nil, false
	}
	return num, typ, msg[n : n+vn], msg[n+vn:], true
}

// nextOf skips data's fields up to the next one numbered num and returns
// its wire type and the data after its tag (ok false: none left). data's
// fields have been read by members, which declines malformed ones.
func nextOf(data []byte, num protowire.Number) (typ protowire.Type, rest []byte, ok bool) {
	for len(data) > 0 {
		n, typ, l := protowire.ConsumeTag(data)
		data = data[l:]
		if n == num {
			return typ, data, true
		}
		data = data[protowire.ConsumeFieldValue(n, typ, data):]
	}
	return 0, nil, false
}
