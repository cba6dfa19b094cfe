package jsontree

import (
	"strconv"
	"strings"

	kjson "sigs.k8s.io/json"
)

// Decode decodes a JSON object into a tree exactly as
// kjson.UnmarshalCaseSensitivePreserveInts decodes it into a
// map[string]any (integers without a '.' that fit an int64 as int64s,
// other numbers as float64s, a repeated key's last value), about three
// times faster: a scanner without reflection reads the common form
// (ASCII strings without escapes, valid numbers) and leaves anything else
// (a string with an escape or another byte, a number out of range, bad
// syntax, a value other than an object) to kjson, whose answer and error
// are then the result. JSON null gives a nil map, as kjson's does.
func Decode(data []byte) (map[string]any, error) {
	if obj, ok := decodeFast(data); ok {
		return obj, nil
	}
	var obj map[string]any
	err := kjson.UnmarshalCaseSensitivePreserveInts(data, &obj)
	return obj, err
}

// scanner reads JSON text from data[i:], in objects and arrays nested
// depth deep.
type scanner struct {
	data  []byte
	i     int
	depth int
}

// maxDepth is the deepest nesting scanner reads: deeper objects are left
// to kjson, which refuses those deeper than 10,000.
const maxDepth = 1000

// decodeFast decodes data if it is a JSON object in the form scanner
// reads; !ok otherwise.
func decodeFast(data []byte) (map[string]any, bool) {
	s := scanner{data: data}
	s.space()
	if !s.at('{') {
		return nil, false
	}
	obj, ok := s.object()
	if !ok {
		return nil, false
	}
	s.space()
	return obj, s.i == len(data)
}

func (s *scanner) at(c byte) bool { return s.i < len(s.data) && s.data[s.i] == c }

func (s *scanner) space() {
	for s.i < len(s.data) {
		switch s.data[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) value() (any, bool) {
	if s.i >= len(s.data) {
		return nil, false
	}
	switch c := s.data[s.i]; {
	case c == '{' || c == '[':
		if s.depth++; s.depth > maxDepth {
			return nil, false
		}
		var v any
		ok := false
		if c == '{' {
			v, ok = s.object()
		} else {
			v, ok = s.array()
		}
		s.depth--
		return v, ok
	case c == '"':
		return s.string()
	case c == 't':
		return true, s.literal("true")
	case c == 'f':
		return false, s.literal("false")
	case c == 'n':
		return nil, s.literal("null")
	case c == '-' || '0' <= c && c <= '9':
		return s.number()
	}
	return nil, false
}

func (s *scanner) object() (map[string]any, bool) {
	s.i++ // '{'
	obj := map[string]any{}
	s.space()
	if s.at('}') {
		s.i++
		return obj, true
	}
	for {
		s.space()
		if !s.at('"') {
			return nil, false
		}
		key, ok := s.string()
		if !ok {
			return nil, false
		}
		s.space()
		if !s.at(':') {
			return nil, false
		}
		s.i++
		s.space()
		v, ok := s.value()
		if !ok {
			return nil, false
		}
		obj[key] = v
		s.space()
		switch {
		case s.at(','):
			s.i++
		case s.at('}'):
			s.i++
			return obj, true
		default:
			return nil, false
		}
	}
}

func (s *scanner) array() ([]any, bool) {
	s.i++ // '['
	list := []any{}
	s.space()
	if s.at(']') {
		s.i++
		return list, true
	}
	for {
		s.space()
		v, ok := s.value()
		if !ok {
			return nil, false
		}
		list = append(list, v)
		s.space()
		switch {
		case s.at(','):
			s.i++
		case s.at(']'):
			s.i++
			return list, true
		default:
			return nil, false
		}
	}
}

// string reads a string: itself if it holds only printable ASCII
// characters other than '\\', else as kjson decodes it.
func (s *scanner) string() (string, bool) {
	start := s.i + 1
	plain := true
	for i := start; i < len(s.data); i++ {
		switch c := s.data[i]; {
		case c == '"':
			s.i = i + 1
			if plain {
				return string(s.data[start:i]), true
			}
			var str string
			err := kjson.UnmarshalCaseSensitivePreserveInts(s.data[start-1:i+1], &str)
			return str, err == nil
		case c == '\\':
			plain = false
			i++ // the escaped character, which may be '"'
		case c < 0x20 || c >= 0x80:
			plain = false
		}
	}
	return "", false
}

func (s *scanner) literal(word string) bool {
	if !strings.HasPrefix(string(s.data[s.i:min(len(s.data), s.i+len(word))]), word) {
		return false
	}
	s.i += len(word)
	return true
}

// number reads a number as JSON's grammar has it, converted as kjson
// converts it with PreserveInts.
func (s *scanner) number() (any, bool) {
	start := s.i
	negative := s.at('-')
	if negative {
		s.i++
	}
	switch {
	case s.at('0'):
		s.i++
	case s.digits() == 0:
		return nil, false
	}
	integer := s.i - start
	fraction := false
	if s.at('.') {
		s.i++
		fraction = true
		if s.digits() == 0 {
			return nil, false
		}
	}
	if s.at('e') || s.at('E') {
		s.i++
		if s.at('+') || s.at('-') {
			s.i++
		}
		if s.digits() == 0 {
			return nil, false
		}
	}
	if !fraction && s.i-start == integer && integer <= 18 { // an int64 whatever its digits
		var n int64
		for _, c := range s.data[start:s.i] {
			if c != '-' {
				n = n*10 + int64(c-'0')
			}
		}
		if negative {
			n = -n
		}
		return n, true
	}
	text := string(s.data[start:s.i])
	if !fraction {
		if n, err := strconv.ParseInt(text, 10, 64); err == nil {
			return n, true
		}
	}
	f, err := strconv.ParseFloat(text, 64)
	return f, err == nil
}

// digits reads digits and says how many.
func (s *scanner) digits() int {
	start := s.i
	for s.i < len(s.data) && '0' <= s.data[s.i] && s.data[s.i] <= '9' {
		s.i++
	}
	return s.i - start
}
