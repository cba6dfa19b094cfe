// Package table prints stored objects as the rows of a meta.k8s.io Table
// (what kubectl get asks for), with the columns kube-apiserver's printers
// give each built-in kind and Name and Age for custom resources.
//
// Columns are data: each kind is a list of column definitions, each with a
// cell computed from the values at a few JSON paths of the stored object.
// The values of all of a kind's paths are found in one scan of the JSON
// that skips everything else; most cells are one of a few reusable kinds
// (a value, a count, a "ready/desired" pair, container names, a selector,
// an age), and code computes only what kube-apiserver computes (pod and
// node status, a service's external IP and ports, a job's status...).
package table

import (
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"
)

// column is one column of a kind's table: its definition as served and
// the cell that fills it.
type column struct {
	name        string
	typ         string // string, integer, boolean, date
	format      string // "name" for the object's name
	description string
	priority    int32 // 0, or 1 for the columns of kubectl get -o wide
	// noDefinition: the cell is in every row, the column not in the
	// definitions (see undefined).
	noDefinition bool
	cell
}

// cell computes one cell of a row: value gets the values of the object at
// paths, in order (nil when absent), and the row. It returns a string, an
// int64, a bool or nil.
type cell struct {
	paths []string
	value func(v []raw, r *row) any
}

// row is what the cells of one object's row share.
type row struct {
	now time.Time // what ages are measured to
	pod *podRow   // a pod's summary, once a cell computed it
}

// Table is how one resource's objects are printed: the column definitions
// and the cells of each object's row.
type Table struct {
	columns []column
	// paths finds the values of every cell's paths; column i's values
	// are at offsets[i] onwards.
	paths   *pathNode
	offsets []int
	slots   int
	// definitions is the columnDefinitions JSON.
	definitions []byte
}

// newTable compiles the paths of the columns' cells and encodes their
// definitions.
func newTable(columns []column) *Table {
	t := &Table{columns: columns}
	type definition struct {
		Name        string `json:"name"`
		Type        string `json:"type"`
		Format      string `json:"format"`
		Description string `json:"description"`
		Priority    int32  `json:"priority"`
	}
	var paths []string
	defs := make([]definition, 0, len(columns))
	for _, c := range columns {
		t.offsets = append(t.offsets, len(paths))
		paths = append(paths, c.paths...)
		if !c.noDefinition {
			defs = append(defs, definition{c.name, c.typ, c.format, c.description, c.priority})
		}
	}
	t.paths, t.slots = compile(paths), len(paths)
	t.definitions, _ = json.Marshal(defs)
	return t
}

// For returns the table of the resource (group "" for the core group):
// kube-apiserver's columns for the built-in kinds, Name and Age for any
// other resource.
func For(group, resource string) *Table {
	if t := builtins[group+"/"+resource]; t != nil {
		return t
	}
	return custom
}

// AppendColumns appends the table's columnDefinitions, a JSON array.
func (t *Table) AppendColumns(buf []byte) []byte { return append(buf, t.definitions...) }

// AppendCells appends the cells of the row of one object, given its JSON
// as stored, as a JSON array; ages are measured to now.
func (t *Table) AppendCells(buf, obj []byte, now time.Time) []byte {
	v := make([]raw, t.slots)
	t.paths.capture(obj[space(obj, 0):], v)
	r := &row{now: now}
	buf = append(buf, '[')
	for i, c := range t.columns {
		if i > 0 {
			buf = append(buf, ',')
		}
		at := t.offsets[i]
		buf = appendValue(buf, c.value(v[at:at+len(c.paths)], r))
	}
	return append(buf, ']')
}

// appendValue appends a cell's value as JSON.
func appendValue(buf []byte, v any) []byte {
	switch v := v.(type) {
	case string:
		return appendString(buf, v)
	case int64:
		return strconv.AppendInt(buf, v, 10)
	case bool:
		return strconv.AppendBool(buf, v)
	}
	return append(buf, "null"...)
}

// appendString appends s as a JSON string, escaped as encoding/json
// escapes it.
func appendString(buf []byte, s string) []byte {
	const hex = "0123456789abcdef"
	buf = append(buf, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= utf8.RuneSelf:
			data, _ := json.Marshal(s[i:]) // invalid UTF-8, U+2028 and U+2029
			return append(buf, data[1:]...)
		case c == '"' || c == '\\':
			buf = append(buf, '\\', c)
		case c == '\n':
			buf = append(buf, '\\', 'n')
		case c == '\r':
			buf = append(buf, '\\', 'r')
		case c == '\t':
			buf = append(buf, '\\', 't')
		case c == '\b':
			buf = append(buf, '\\', 'b')
		case c == '\f':
			buf = append(buf, '\\', 'f')
		case c < ' ' || c == '<' || c == '>' || c == '&':
			buf = append(buf, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			buf = append(buf, c)
		}
	}
	return append(buf, '"')
}
