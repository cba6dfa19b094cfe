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
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// Managers makes the field managers of the resources of one set of
// OpenAPI documents.
type Managers struct {
	typed   managedfields.TypeConverter
	deduced managedfields.TypeConverter

	mu       sync.Mutex
	managers map[managerKey]*managedfields.FieldManager
}

type managerKey struct {
	res         *resource.Resource
	subresource string
}

// New reads the schemas of OpenAPI v3 documents (their
// components.schemas). A schema appears in every document that refers to
// it (a PersistentVolumeClaim in apps/v1's, for StatefulSets), but only the
// document of its own group version names its kind: the kinds a schema is
// named for in any document are kept, whatever the order of the documents.
func New(documents [][]byte) (*Managers, error) {
	models := map[string]*spec.Schema{}
	for _, doc := range documents {
		var d struct {
			Components struct {
				Schemas map[string]*spec.Schema `json:"schemas"`
			} `json:"components"`
		}
		if err := json.Unmarshal(doc, &d); err != nil {
			return nil, err
		}
		for name, s := range d.Components.Schemas {
			if seen := models[name]; seen != nil {
				if kinds := mergeKinds(seen.Extensions[gvkExtension], s.Extensions[gvkExtension]); len(kinds) > 0 {
					s.AddExtension(gvkExtension, kinds)
				}
			}
			models[name] = s
		}
	}
	typed, err := managedfields.NewTypeConverter(models, false)
	if err != nil {
		return nil, err
	}
	return &Managers{typed: typed, deduced: managedfields.NewDeducedTypeConverter(), managers: map[managerKey]*managedfields.FieldManager{}}, nil
}

// gvkExtension names the kinds a schema is the schema of.
const gvkExtension = "x-kubernetes-group-version-kind"

// mergeKinds returns the kinds of two values of gvkExtension, without
// repeats.
func mergeKinds(a, b any) []any {
	var kinds []any
	seen := map[string]bool{}
	for _, v := range []any{a, b} {
		list, _ := v.([]any)
		for _, k := range list {
			key := fmt.Sprint(k)
			if !seen[key] {
				seen[key] = true
				kinds = append(kinds, k)
			}
		}
	}
	return kinds
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
	var fm *managedfields.FieldManager
	var err error
	if res.StrategicMergeType != nil {
		fm, err = managedfields.NewDefaultFieldManager(m.typed, converter{}, defaulter{}, creater{}, kind, gv, subresource, nil)
	} else {
		tc := m.typed
		if res.CustomSchema == nil {
			tc = m.deduced
		}
		fm, err = managedfields.NewDefaultCRDFieldManager(tc, converter{}, defaulter{}, creater{}, kind, gv, subresource, nil)
	}
	if err != nil {
		return nil, err
	}
	m.managers[key] = fm
	return fm, nil
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

func (converter) ConvertToVersion(in runtime.Object, gv runtime.GroupVersioner) (runtime.Object, error) {
	u, ok := in.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("apply: cannot convert %T", in)
	}
	if target, ok := gv.KindForGroupVersionKinds([]schema.GroupVersionKind{u.GroupVersionKind()}); ok {
		u.SetAPIVersion(target.GroupVersion().String())
	}
	return u, nil
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
