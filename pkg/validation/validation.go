// Package validation checks objects of the built-in kinds as
// kube-apiserver's validation does, for the errors users hit first
// (required fields, supported values, ranges, a workload's selector and
// template, immutable fields), as data: per kind, a list of checks, each a
// path and what must hold there. The errors are apimachinery's field
// errors, so that the server answers with kube-apiserver's 422 Status,
// messages and field paths.
//
// This is not all of kube-apiserver's validation: fields not checked here
// are stored as sent (after decoding into their Go types).
//
// Objects are JSON objects decoded as map[string]any with integers as
// int64.
package validation

import (
	"slices"
	"strings"

	"github.com/watchcache/watchcache/pkg/jsontree"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Check is one check at Path, dotted from the object (or from the
// fragment it is placed under); a segment "name[]" goes into every
// element of list "name". Test sees each value there (present says
// whether the field is set); Update checks see the old object's value at
// the same path as well (old is nil on create, and update checks are
// skipped then).
type Check struct {
	Path   string
	Test   func(p *field.Path, value any, present bool) field.ErrorList
	Update func(p *field.Path, value, old any) field.ErrorList
	// Object checks see the object at Path whole (Path "" is the object
	// itself), for checks across fields.
	Object func(p *field.Path, obj map[string]any) field.ErrorList
}

// Has reports whether kind group/kind has checks.
func Has(group, kind string) bool { return len(kinds[group+"/"+kind]) > 0 }

// Validate checks a new object of kind group/kind.
func Validate(group, kind string, obj map[string]any) field.ErrorList {
	return run(checksOf(group, kind, obj), obj, nil)
}

// ValidateUpdate checks obj, the new state of old, an object of kind
// group/kind: the checks of a new object, and those of an update.
func ValidateUpdate(group, kind string, obj, old map[string]any) field.ErrorList {
	return run(checksOf(group, kind, obj), obj, old)
}

// checksOf are the checks of obj, of kind group/kind: those of its
// version (its apiVersion's) if that has its own (versionKinds), else the
// kind's.
func checksOf(group, kind string, obj map[string]any) []Check {
	apiVersion, _ := obj["apiVersion"].(string)
	if checks, ok := versionKinds[apiVersion+"/"+kind]; ok {
		return checks
	}
	return kinds[group+"/"+kind]
}

func run(checks []Check, obj, old map[string]any) field.ErrorList {
	var errs field.ErrorList
	oldRoot := value{v: old, present: old != nil}
	for _, c := range checks {
		var segs []string
		if c.Path != "" {
			segs = strings.Split(c.Path, ".")
		}
		walk(nil, segs, value{obj, true}, oldRoot, func(p *field.Path, cur, old value) {
			switch {
			case c.Test != nil:
				errs = append(errs, c.Test(p, cur.v, cur.present)...)
			case c.Object != nil:
				if m, ok := cur.v.(map[string]any); ok {
					errs = append(errs, c.Object(p, m)...)
				}
			case c.Update != nil && cur.present && old.present:
				errs = append(errs, c.Update(p, cur.v, old.v)...)
			}
		})
	}
	return errs
}

// value is a value found at a path, or its absence.
type value struct {
	v       any
	present bool
}

// child is the value of field name of v.
func (v value) child(name string) value {
	m, _ := v.v.(map[string]any)
	c, ok := m[name]
	return value{c, ok}
}

// walk calls visit with the field path and the new and old values of
// every match of segs in cur (and the same place in old: same fields,
// same list indexes). A missing field is visited (present false) when its
// parent exists; the elements of a missing list are not.
func walk(p *field.Path, segs []string, cur, old value, visit func(p *field.Path, cur, old value)) {
	if len(segs) == 0 {
		visit(p, cur, old)
		return
	}
	if _, ok := cur.v.(map[string]any); !ok {
		return
	}
	name, isList := strings.CutSuffix(segs[0], "[]")
	cp := field.NewPath(name)
	if p != nil {
		cp = p.Child(name)
	}
	cur, old = cur.child(name), old.child(name)
	if !isList {
		walk(cp, segs[1:], cur, old, visit)
		return
	}
	list, _ := cur.v.([]any)
	oldList, _ := old.v.([]any)
	for i, item := range list {
		var oldItem value
		if i < len(oldList) {
			oldItem = value{oldList[i], true}
		}
		walk(cp.Index(i), segs[1:], value{item, true}, oldItem, visit)
	}
}

// under places checks under a path prefix.
func under(prefix string, lists ...[]Check) []Check {
	out := slices.Concat(lists...)
	for i := range out {
		out[i].Path = jsontree.JoinPath(prefix, out[i].Path)
	}
	return out
}
