// Reading cell values from an object's stored JSON without decoding it: a
// tree of the columns' paths captured in one scan, and raw values read as
// strings, integers, booleans and times.

package table

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"iter"
	"math/bits"
	"strings"
	"time"
	"unsafe"
)

// raw is the JSON text of one value inside an object's stored JSON, nil
// when the object has no such value. It shares the stored bytes, which
// never change.
type raw []byte

// pathNode is one step of a set of dot-separated JSON paths: the values
// found at the paths ending here go to slots.
type pathNode struct {
	children map[string]*pathNode
	slots    []int
}

// compile builds the tree of paths; the value at paths[i] goes to slot i.
func compile(paths []string) *pathNode {
	root := &pathNode{}
	for i, p := range paths {
		n := root
		for step := range strings.SplitSeq(p, ".") {
			if n.children == nil {
				n.children = map[string]*pathNode{}
			}
			child := n.children[step]
			if child == nil {
				child = &pathNode{}
				n.children[step] = child
			}
			n = child
		}
		n.slots = append(n.slots, i)
	}
	return root
}

// capture stores into out the values of obj, a JSON object, at the
// node's paths, in one pass that skips everything else. Values not found
// are left as they were.
func (n *pathNode) capture(obj raw, out []raw) {
	for key, v := range obj.members() {
		child := n.children[string(key)]
		if child == nil {
			continue
		}
		for _, s := range child.slots {
			out[s] = v
		}
		if child.children != nil {
			child.capture(v, out)
		}
	}
}

// members iterates over the members of an object (nothing for other
// values), giving each key without its quotes.
func (r raw) members() iter.Seq2[[]byte, raw] {
	return func(yield func([]byte, raw) bool) {
		if len(r) == 0 || r[0] != '{' {
			return
		}
		for i := space(r, 1); i < len(r) && r[i] == '"'; {
			keyEnd := stringEnd(r, i)
			key := r[i+1 : keyEnd-1]
			i = space(r, keyEnd)
			if i >= len(r) || r[i] != ':' {
				return
			}
			i = space(r, i+1)
			end := valueEnd(r, i)
			if !yield(key, r[i:end]) {
				return
			}
			if i = space(r, end); i < len(r) && r[i] == ',' {
				i = space(r, i+1)
			}
		}
	}
}

// elements iterates over the elements of an array (nothing for other
// values).
func (r raw) elements() iter.Seq[raw] {
	return func(yield func(raw) bool) {
		if len(r) == 0 || r[0] != '[' {
			return
		}
		for i := space(r, 1); i < len(r) && r[i] != ']'; {
			end := valueEnd(r, i)
			if end == i || !yield(r[i:end]) {
				return
			}
			if i = space(r, end); i < len(r) && r[i] == ',' {
				i = space(r, i+1)
			}
		}
	}
}

// count is the number of elements of an array or members of an object.
func (r raw) count() int {
	n := 0
	for range r.elements() {
		n++
	}
	for range r.members() {
		n++
	}
	return n
}

// present reports whether the value exists and is not null.
func (r raw) present() bool { return len(r) > 0 && string(r) != "null" }

// str is a string's text; "" for null or a missing value; the JSON text of
// a number or boolean (intOrString values print either way).
func (r raw) str() string {
	if len(r) == 0 || string(r) == "null" {
		return ""
	}
	if r[0] != '"' {
		return unsafe.String(&r[0], len(r))
	}
	if len(r) == 2 {
		return ""
	}
	if bytes.IndexByte(r, '\\') < 0 {
		return unsafe.String(&r[1], len(r)-2)
	}
	var s string
	json.Unmarshal(r, &s)
	return s
}

// int is an integer's value; 0 for anything else.
func (r raw) int() int64 {
	var n int64
	digits := r
	if len(r) > 0 && r[0] == '-' {
		digits = r[1:]
	}
	if len(digits) == 0 {
		return 0
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0
		}
		n = n*10 + int64(c-'0')
	}
	if len(digits) < len(r) {
		return -n
	}
	return n
}

// bool reports whether the value is true.
func (r raw) bool() bool { return string(r) == "true" }

// time is a timestamp's value (metav1.Time or MicroTime); zero for
// anything else.
func (r raw) time() time.Time {
	t, err := time.Parse(time.RFC3339, r.str())
	if err != nil {
		return time.Time{}
	}
	return t
}

// space skips white space from d[i].
func space(d []byte, i int) int {
	for i < len(d) && (d[i] == ' ' || d[i] == '\n' || d[i] == '\r' || d[i] == '\t') {
		i++
	}
	return i
}

// stringEnd is the offset just past the string starting at d[i] ('"').
// It looks at eight bytes at a time for a quote or a backslash.
func stringEnd(d []byte, i int) int {
	for i++; i < len(d); {
		if i+8 <= len(d) {
			w := binary.LittleEndian.Uint64(d[i:])
			special := hasByte(w, '"') | hasByte(w, '\\')
			if special == 0 {
				i += 8
				continue
			}
			i += bits.TrailingZeros64(special) / 8
		}
		switch d[i] {
		case '"':
			return i + 1
		case '\\':
			i += 2
		default:
			i++
		}
	}
	return len(d)
}

// hasByte has the high bit of each byte of w that equals c set (and
// maybe of bytes above one that does: the lowest set bit is exact).
func hasByte(w uint64, c byte) uint64 {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	x := w ^ (ones * uint64(c))
	return (x - ones) & ^x & highs
}

// valueEnd is the offset just past the value starting at d[i]. The stored
// JSON is valid (it was checked on write), so the scan only needs to keep
// track of strings and nesting.
func valueEnd(d []byte, i int) int {
	if i >= len(d) {
		return i
	}
	switch d[i] {
	case '"':
		return stringEnd(d, i)
	case '{', '[':
		depth := 0
		for i < len(d) {
			switch d[i] {
			case '"':
				i = stringEnd(d, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	}
	for i < len(d) && d[i] != ',' && d[i] != '}' && d[i] != ']' && d[i] != ' ' && d[i] != '\n' && d[i] != '\r' && d[i] != '\t' {
		i++
	}
	return i
}
