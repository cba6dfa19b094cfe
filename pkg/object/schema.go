package object

import (
	"fmt"
	"strings"
)

// Schema says which fields of a resource's objects are selectable (by
// field selectors and indexes), as dotted JSON paths like "spec.nodeName".
// metadata.name and metadata.namespace are always selectable. It also says
// whether the objects are cluster-scoped (see WithClusterScope).
type Schema struct {
	paths []string
	index map[string]int
	root  *pathNode
	// clusterScoped: the objects have no namespace.
	clusterScoped bool
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
// metadata.name and metadata.namespace.
func NewSchema(selectable ...string) (*Schema, error) {
	s := &Schema{index: map[string]int{}, root: newPathNode()}
	meta := s.node("metadata")
	meta.role = roleMetadata
	s.node("metadata.resourceVersion").role = roleResourceVersion
	s.node("metadata.labels").role = roleLabels
	for _, p := range append([]string{"metadata.name", "metadata.namespace", "metadata.uid"}, selectable...) {
		if _, dup := s.index[p]; dup {
			continue
		}
		if p == "" || strings.HasPrefix(p, ".") || strings.HasSuffix(p, ".") || strings.Contains(p, "..") {
			return nil, fmt.Errorf("selectable field %q is not a dotted JSON path", p)
		}
		n := s.node(p)
		if n.role != roleNone || len(n.children) > 0 {
			return nil, fmt.Errorf("selectable field %q is not a scalar field", p)
		}
		n.field = len(s.paths)
		s.index[p] = n.field
		s.paths = append(s.paths, p)
	}
	// metadata.uid is captured but not selectable.
	delete(s.index, "metadata.uid")
	return s, nil
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
	for _, p := range s.paths {
		if _, ok := s.index[p]; ok {
			out = append(out, p)
		}
	}
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
