// A JSON scanner that walks an object's bytes without building a tree,
// capturing only the values of the paths a schema looks for.

package object

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// scanner walks JSON bytes without building a tree. It visits only the
// parts of the document that a pathNode asks for and skips everything else
// at memory speed; this is the "one decode" of an object on ingest.
type scanner struct {
	data []byte
	pos  int
}

var errSyntax = errors.New("malformed JSON")

func (s *scanner) syntaxError(what string) error {
	return fmt.Errorf("%w: %s at offset %d", errSyntax, what, s.pos)
}

func (s *scanner) skipSpace() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

// peek returns the next non-space byte, or 0 at the end of input.
func (s *scanner) peek() byte {
	s.skipSpace()
	if s.pos >= len(s.data) {
		return 0
	}
	return s.data[s.pos]
}

func (s *scanner) expect(c byte) error {
	if s.peek() != c {
		return s.syntaxError(fmt.Sprintf("expected %q", c))
	}
	s.pos++
	return nil
}

// capture is a value found by the scan, kept as a span of the input
// (start ≤ end) when its JSON text is the value itself (an unescaped
// string's contents, a number, a boolean), or as decoded text (start < 0)
// for strings with escapes. Spans become strings that share the object's
// JSON bytes, so capturing allocates nothing.
type capture struct {
	start, end int
	text       string
}

// stringEnd returns the offset just after the closing quote of the string
// that opens at s.pos, and whether the string has escapes. It jumps from
// quote to quote rather than looking at every byte.
func (s *scanner) stringEnd() (int, bool, error) {
	from := s.pos + 1
	escaped := false
	for {
		i := bytes.IndexByte(s.data[from:], '"')
		if i < 0 {
			return 0, false, s.syntaxError("unterminated string")
		}
		q := from + i
		backslashes := 0
		for k := q - 1; k > s.pos && s.data[k] == '\\'; k-- {
			backslashes++
		}
		if !escaped && bytes.IndexByte(s.data[from:q], '\\') >= 0 {
			escaped = true
		}
		if backslashes%2 == 0 {
			return q + 1, escaped, nil
		}
		from = q + 1 // an escaped quote
	}
}

// captureString captures the string at the current position.
func (s *scanner) captureString() (capture, error) {
	if s.peek() != '"' {
		return capture{}, s.syntaxError("expected string")
	}
	start := s.pos
	end, escaped, err := s.stringEnd()
	if err != nil {
		return capture{}, err
	}
	s.pos = end
	if !escaped {
		return capture{start: start + 1, end: end - 1}, nil
	}
	var text string
	if err := json.Unmarshal(s.data[start:end], &text); err != nil {
		return capture{}, fmt.Errorf("%w: %v", errSyntax, err)
	}
	return capture{start: -1, text: text}, nil
}

// skipValue moves past one JSON value of any kind.
func (s *scanner) skipValue() error {
	switch c := s.peek(); c {
	case '"':
		return s.skipString()
	case '{', '[':
		return s.skipContainer()
	case 0:
		return s.syntaxError("unexpected end of input")
	default:
		start := s.pos
		for s.pos < len(s.data) {
			switch s.data[s.pos] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				if s.pos == start {
					return s.syntaxError("expected value")
				}
				return nil
			}
			s.pos++
		}
		if s.pos == start {
			return s.syntaxError("expected value")
		}
		return nil
	}
}

// skipString moves past a string.
func (s *scanner) skipString() error {
	end, _, err := s.stringEnd()
	if err == nil {
		s.pos = end
	}
	return err
}

// skipContainer moves past an object or array, tracking nesting depth and
// strings (which may contain brackets).
func (s *scanner) skipContainer() error {
	depth := 0
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case '"':
			if err := s.skipString(); err != nil {
				return err
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				s.pos++
				return nil
			}
		}
		s.pos++
	}
	return s.syntaxError("unterminated object or array")
}

// captureScalar captures a scalar value as a field selector sees it:
// strings decoded, numbers and booleans as written, null as "". Objects and
// arrays are skipped and reported as not scalar.
func (s *scanner) captureScalar() (capture, bool, error) {
	switch c := s.peek(); c {
	case '"':
		v, err := s.captureString()
		return v, true, err
	case '{', '[':
		return capture{}, false, s.skipValue()
	default:
		start := s.pos
		if err := s.skipValue(); err != nil {
			return capture{}, false, err
		}
		text := s.data[start:s.pos]
		switch string(text) {
		case "null":
			return capture{}, true, nil
		case "true", "false":
			return capture{start: start, end: s.pos}, true, nil
		}
		if _, err := strconv.ParseFloat(string(text), 64); err != nil {
			return capture{}, false, s.syntaxError("bad literal " + strconv.Quote(string(text)))
		}
		return capture{start: start, end: s.pos}, true, nil
	}
}

// forEachMember calls fn for each member of the object at the current
// position, with the member's key and the offset where the key starts, and
// the scanner positioned at the member's value; fn must consume the value.
func (s *scanner) forEachMember(fn func(key capture, keyStart int) error) error {
	if err := s.expect('{'); err != nil {
		return err
	}
	if s.peek() == '}' {
		s.pos++
		return nil
	}
	for {
		keyStart := s.pos
		key, err := s.captureString()
		if err != nil {
			return err
		}
		if err := s.expect(':'); err != nil {
			return err
		}
		s.skipSpace()
		if err := fn(key, keyStart); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.pos++
		case '}':
			s.pos++
			return nil
		default:
			return s.syntaxError("expected ',' or '}'")
		}
	}
}

// bytes returns a capture's value as bytes (shared with the input for
// spans; do not keep them).
func (s *scanner) bytes(c capture) []byte {
	if c.start < 0 {
		return []byte(c.text)
	}
	return s.data[c.start:c.end]
}
