// Package apply is server-side apply and the managedFields of every
// write, as kube-apiserver keeps them: built on apimachinery's
// managedfields (structured-merge-diff) with the kinds' real schemas from
// the server's OpenAPI documents (list-map keys, atomic fields), so that
// an apply merges with what other managers own and reports conflicts
// naming the fields and their managers.
//
// Objects are unstructured (map[string]any), in the version they are
// served in.
package apply

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/watchcache/watchcache/pkg/resource"
	"github.com/watchcache/watchcache/pkg/strategy"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// Managers makes the field managers of the resources of one set of
// OpenAPI documents.
type Managers struct {
	typed   map[schema.GroupVersion]TypeConverter
	deduced managedfields.TypeConverter

	mu       sync.Mutex
	managers map[managerKey]*managedfields.FieldManager
}

type managerKey struct {
	res         *resource.Resource
	subresource string
}

// TypeConverter makes (once, when first called) the type converter of
// one group version's OpenAPI document.
type TypeConverter func() (managedfields.TypeConverter, error)

// NewTypeConverter is the TypeConverter of an OpenAPI v3 document (its
// components.schemas), made when first asked for. A document holds every schema its kinds refer to,
// and names the kinds of its own group version
// (x-kubernetes-group-version-kind), so that each group version's kinds
// are typed by their own document alone: a server keeps the converters of
// the documents that did not change when another group version comes or
// goes.
func NewTypeConverter(document func() []byte) TypeConverter {
	return sync.OnceValues(func() (managedfields.TypeConverter, error) {
		var d struct {
			Components struct {
				Schemas map[string]*spec.Schema `json:"schemas"`
			} `json:"components"`
		}
		if err := json.Unmarshal(document(), &d); err != nil {
			return nil, err
		}
		return managedfields.NewTypeConverter(d.Components.Schemas, false)
	})
}

// New makes the field managers of the group versions typed.
func New(typed map[schema.GroupVersion]TypeConverter) *Managers {
	return &Managers{typed: typed, deduced: managedfields.NewDeducedTypeConverter(), managers: map[managerKey]*managedfields.FieldManager{}}
}

// For is the field manager of res (of its subresource: "" or "status").
// A custom resource without a schema has its fields deduced from its
// objects.
func (m *Managers) For(res *resource.Resource, subresource string) (*managedfields.FieldManager, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	key := managerKey{res, subresource}
	if fm := m.managers[key]; fm != nil {
		return fm, nil
	}
	gv := schema.GroupVersion{Group: res.Group, Version: res.Version}
	kind := gv.WithKind(res.Kind)
	tc := m.deduced
	if res.StrategicMergeType != nil || res.CustomSchema != nil {
		typed := m.typed[gv]
		if typed == nil {
			return nil, fmt.Errorf("apply: no OpenAPI document of %s", gv)
		}
		var err error
		if tc, err = typed(); err != nil {
			return nil, err
		}
	}
	reset := resetFields(res, subresource)
	var fm *managedfields.FieldManager
	var err error
	if res.StrategicMergeType != nil {
		fm, err = managedfields.NewDefaultFieldManager(tc, converter{}, defaulter{}, creater{}, kind, gv, subresource, reset)
	} else {
		fm, err = managedfields.NewDefaultCRDFieldManager(tc, converter{}, defaulter{}, creater{}, kind, gv, subresource, reset)
	}
	if err != nil {
		return nil, err
	}
	m.managers[key] = fm
	return fm, nil
}

// resetFields are the fields a write of res's subresource does not change
// (strategy.ResetFields), in the form of kube-apiserver's strategies'
// GetResetFields: its field manager records no owner for them, so that an
// apply of the object carrying a status owns none of it, and a later apply
// of /status by the same manager has no conflict with it.
func resetFields(res *resource.Resource, subresource string) map[fieldpath.APIVersion]fieldpath.Filter {
	paths := strategy.ResetFields(res, subresource)
	if len(paths) == 0 {
		return nil
	}
	set := fieldpath.NewSet()
	for _, path := range paths {
		elems := make([]any, len(path))
		for i, name := range path {
			elems[i] = name
		}
		set.Insert(fieldpath.MakePathOrDie(elems...))
	}
	return map[fieldpath.APIVersion]fieldpath.Filter{fieldpath.APIVersion(res.GroupVersion()): fieldpath.NewExcludeSetFilter(set)}
}

// ManagerName is the manager of a write that names none: the client's
// User-Agent up to its first "/", as kube-apiserver takes it, at most 128
// characters.
func ManagerName(fieldManager, userAgent string) string {
	if fieldManager != "" {
		return fieldManager
	}
	name, _, _ := strings.Cut(userAgent, "/")
	if len(name) > 128 {
		name = name[:128]
	}
	return name
}

// converter converts unstructured objects between versions of one kind
// by their apiVersion alone: the field managers see every object in the
// version it is served in.
type converter struct{}

func (converter) Convert(in, out, _ any) error {
	u, ok := in.(*unstructured.Unstructured)
	o, ok2 := out.(*unstructured.Unstructured)
	if !ok || !ok2 {
		return fmt.Errorf("apply: cannot convert %T to %T", in, out)
	}
	o.Object = runtime.DeepCopyJSON(u.Object)
	return nil
}

// ConvertToVersion sets in's apiVersion; in is unstructured or, for a
// built-in kind, its Go object (what httpapi's managedFields of a write
// other than an apply compare).
func (converter) ConvertToVersion(in runtime.Object, gv runtime.GroupVersioner) (runtime.Object, error) {
	kind := in.GetObjectKind()
	if target, ok := gv.KindForGroupVersionKinds([]schema.GroupVersionKind{kind.GroupVersionKind()}); ok {
		if u, ok := in.(*unstructured.Unstructured); ok {
			u.SetAPIVersion(target.GroupVersion().String())
		} else {
			kind.SetGroupVersionKind(target.GroupVersion().WithKind(kind.GroupVersionKind().Kind))
		}
	}
	return in, nil
}

func (converter) ConvertFieldLabel(_ schema.GroupVersionKind, label, value string) (string, string, error) {
	return label, value, nil
}

// defaulter defaults nothing: the server's defaults are applied to the
// result of every write.
type defaulter struct{}

func (defaulter) Default(runtime.Object) {}

// creater makes empty unstructured objects.
type creater struct{}

func (creater) New(kind schema.GroupVersionKind) (runtime.Object, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(kind)
	return u, nil
}
