// Schema: which fields of a resource's objects are selectable by field
// selectors, where their values come from, and the paths the scanner captures.

package object

import (
	"fmt"
	"slices"
	"strings"
)

// Schema says which fields of a resource's objects are selectable (by
// field selectors and indexes), by their labels like "spec.nodeName",
// each the dotted JSON path of its value unless a FieldValue says
// otherwise. metadata.name and metadata.namespace are always selectable.
// It also says whether the objects are cluster-scoped (see
// WithClusterScope).
type Schema struct {
	// paths are the captured JSON paths, by slot.
	paths []string
	// index is the slot of each selectable label's value: a path's, or
	// past the paths, one of derived.
	index map[string]int
	// derived are the labels whose values are made from the captures.
	derived []derivedField
	root    *pathNode
	// clusterScoped: the objects have no namespace.
	clusterScoped bool
}

// FieldValue says where a selectable field's value comes from when that
// is not simply the JSON path of its label, as kube-apiserver's field sets
// make it: the first of Paths that the object has (not empty), else Zero
// (the zero value of the field's type: "false", "0"). No Paths: the value
// is always Zero (a label kube-apiserver accepts but never sets).
type FieldValue struct {
	Paths []string
	Zero  string
}

// derivedField is a label's FieldValue: its slots and zero.
type derivedField struct {
	slots []int
	zero  string
}

type role int

const (
	roleNone role = iota
	roleMetadata
	roleResourceVersion
	roleLabels
)

// pathNode is one step of the paths the scanner looks for.
type pathNode struct {
	children map[string]*pathNode
	field    int // index into the values, or -1
	role     role
}

func newPathNode() *pathNode { return &pathNode{children: map[string]*pathNode{}, field: -1} }

// NewSchema returns the schema with the given selectable fields besides
// metadata.name and metadata.namespace, each the JSON path of its label.
func NewSchema(selectable ...string) (*Schema, error) {
	return NewSchemaWith(selectable, nil)
}

// NewSchemaWith returns the schema with the given selectable fields,
// whose values come from their JSON paths or, for those in values, as the
// FieldValue says.
func NewSchemaWith(selectable []string, values map[string]FieldValue) (*Schema, error) {
	s := &Schema{index: map[string]int{}, root: newPathNode()}
	meta := s.node("metadata")
	meta.role = roleMetadata
	s.node("metadata.resourceVersion").role = roleResourceVersion
	s.node("metadata.labels").role = roleLabels
	labels := append([]string{"metadata.name", "metadata.namespace", "metadata.uid"}, selectable...)
	for _, p := range labels {
		if _, dup := s.index[p]; dup {
			continue
		}
		v, ok := values[p]
		if !ok {
			slot, err := s.capture(p)
			if err != nil {
				return nil, err
			}
			s.index[p] = slot
			continue
		}
		d := derivedField{zero: v.Zero}
		for _, path := range v.Paths {
			slot, err := s.capture(path)
			if err != nil {
				return nil, err
			}
			d.slots = append(d.slots, slot)
		}
		s.index[p] = -1 - len(s.derived) // resolved below, past the paths
		s.derived = append(s.derived, d)
	}
	for p, i := range s.index {
		if i < 0 {
			s.index[p] = len(s.paths) - 1 - i
		}
	}
	// metadata.uid is captured but not selectable.
	delete(s.index, "metadata.uid")
	return s, nil
}

// capture returns the slot of a captured path, adding it if new.
func (s *Schema) capture(p string) (int, error) {
	if p == "" || strings.HasPrefix(p, ".") || strings.HasSuffix(p, ".") || strings.Contains(p, "..") {
		return 0, fmt.Errorf("selectable field %q is not a dotted JSON path", p)
	}
	n := s.node(p)
	if n.field >= 0 {
		return n.field, nil
	}
	if n.role != roleNone || len(n.children) > 0 {
		return 0, fmt.Errorf("selectable field %q is not a scalar field", p)
	}
	n.field = len(s.paths)
	s.paths = append(s.paths, p)
	return n.field, nil
}

// values are an object's field values by slot: the captures, then the
// derived fields made from them.
func (s *Schema) values(captured []string) []string {
	if len(s.derived) == 0 {
		return captured
	}
	for _, d := range s.derived {
		v := ""
		for _, slot := range d.slots {
			if v = captured[slot]; v != "" {
				break
			}
		}
		if v == "" {
			v = d.zero
		}
		captured = append(captured, v)
	}
	return captured
}

// MustSchema is NewSchema for fixed, known-good paths.
func MustSchema(selectable ...string) *Schema {
	s, err := NewSchema(selectable...)
	if err != nil {
		panic(err)
	}
	return s
}

// WithClusterScope returns the schema of the same objects in a
// cluster-scoped resource: they have no namespace, so each is stored under
// its name alone, and stores answer a list or watch of all the resource by
// metadata.name with a read of that one key. (Keys are "namespace/name"
// otherwise, and a list of all namespaces by name reads each namespace.)
func (s *Schema) WithClusterScope() *Schema {
	cp := *s // the paths, index and tree never change once built
	cp.clusterScoped = true
	return &cp
}

// ClusterScoped reports whether the schema is WithClusterScope's.
func (s *Schema) ClusterScoped() bool { return s.clusterScoped }

// Selectable reports whether field selectors may use the field.
func (s *Schema) Selectable(field string) bool {
	_, ok := s.index[field]
	return ok
}

// SelectableFields lists the selectable fields.
func (s *Schema) SelectableFields() []string {
	out := make([]string, 0, len(s.index))
	for p := range s.index {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b string) int { return s.index[a] - s.index[b] })
	return out
}

func (s *Schema) node(path string) *pathNode {
	n := s.root
	for _, step := range strings.Split(path, ".") {
		c := n.children[step]
		if c == nil {
			c = newPathNode()
			n.children[step] = c
		}
		n = c
	}
	return n
}
