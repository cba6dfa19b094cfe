package object

import (
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

// readString reads a JSON string at the current position and returns its
// decoded value. Strings without escapes are returned without copying
// through a decoder.
func (s *scanner) readString() (string, error) {
	if s.peek() != '"' {
		return "", s.syntaxError("expected string")
	}
	start := s.pos
	s.pos++
	escaped := false
	for s.pos < len(s.data) {
		c := s.data[s.pos]
		switch {
		case c == '\\':
			escaped = true
			s.pos += 2
			continue
		case c == '"':
			s.pos++
			raw := s.data[start:s.pos]
			if !escaped {
				return string(raw[1 : len(raw)-1]), nil
			}
			var out string
			if err := json.Unmarshal(raw, &out); err != nil {
				return "", fmt.Errorf("%w: %v", errSyntax, err)
			}
			return out, nil
		case c < 0x20:
			return "", s.syntaxError("control character in string")
		}
		s.pos++
	}
	return "", s.syntaxError("unterminated string")
}

// skipValue moves past one JSON value of any kind.
func (s *scanner) skipValue() error {
	switch c := s.peek(); c {
	case '"':
		_, err := s.skipString()
		return err
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

// skipString moves past a string and reports whether it had escapes.
func (s *scanner) skipString() (bool, error) {
	s.pos++ // opening quote
	escaped := false
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case '\\':
			escaped = true
			s.pos += 2
			continue
		case '"':
			s.pos++
			return escaped, nil
		}
		s.pos++
	}
	return false, s.syntaxError("unterminated string")
}

// skipContainer moves past an object or array, tracking nesting depth and
// strings (which may contain brackets).
func (s *scanner) skipContainer() error {
	depth := 0
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case '"':
			if _, err := s.skipString(); err != nil {
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

// scalarText returns the text of a scalar value as a field selector sees it:
// strings decoded, numbers and booleans as written, null as "".
func (s *scanner) scalarText() (string, bool, error) {
	switch c := s.peek(); c {
	case '"':
		v, err := s.readString()
		return v, true, err
	case '{', '[':
		return "", false, s.skipValue()
	default:
		start := s.pos
		if err := s.skipValue(); err != nil {
			return "", false, err
		}
		text := string(s.data[start:s.pos])
		if text == "null" {
			return "", true, nil
		}
		if text == "true" || text == "false" {
			return text, true, nil
		}
		if _, err := strconv.ParseFloat(text, 64); err != nil {
			return "", false, s.syntaxError("bad literal " + strconv.Quote(text))
		}
		return text, true, nil
	}
}

// forEachMember calls fn for each member of the object at the current
// position, with the scanner positioned at the member's value; fn must
// consume the value.
func (s *scanner) forEachMember(fn func(key string, keyStart int) error) error {
	if err := s.expect('{'); err != nil {
		return err
	}
	if s.peek() == '}' {
		s.pos++
		return nil
	}
	for {
		keyStart := s.pos
		key, err := s.readString()
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
