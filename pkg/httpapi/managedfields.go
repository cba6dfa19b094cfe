// managedFields on writes other than apply: the field manager of a resource
// and subresource (k8s.io/apiserver's managedfields) and the object as stored.

package httpapi

import (
	"reflect"

	"github.com/watchcache/watchcache/pkg/apistatus"
	"github.com/watchcache/watchcache/pkg/jsontree"
	"github.com/watchcache/watchcache/pkg/resource"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/managedfields"
)

// fieldManager is the field manager of req's resource and subresource.
func (s *Server) fieldManager(req *request) (*managedfields.FieldManager, error) {
	return s.openapi.FieldManager(req.res, req.subresource)
}

// trackUpdate records in obj's managedFields what a write other than an
// apply (create, update, patch) changed of old (nil for a create), under
// req.manager, as kube-apiserver does on every write (an apply records
// its fields itself). A built-in kind's object is compared as stored:
// as its Go type, as kube-apiserver decodes a body (unknown fields
// dropped, structs present even when empty), and a create from the type's
// zero value, so that the fields recorded are kube-apiserver's. The field
// manager reads the Go objects themselves, not maps made back from them,
// and only the managedFields it gives are made maps (managedFieldsTree).
func (s *Server) trackUpdate(req *request, old, obj map[string]any) (map[string]any, error) {
	if req.applied {
		return obj, nil
	}
	fm, err := s.fieldManager(req)
	if err != nil {
		return nil, err
	}
	if req.res.StrategicMergeType == nil {
		live := old
		if live == nil {
			live = map[string]any{}
			(&unstructured.Unstructured{Object: live}).SetGroupVersionKind(req.res.GroupVersionKind())
		}
		out := fm.UpdateNoErrors(&unstructured.Unstructured{Object: live}, &unstructured.Unstructured{Object: obj}, req.manager)
		return out.(*unstructured.Unstructured).Object, nil
	}
	tracked, err := asStored(req.res, obj)
	if err != nil {
		return nil, err
	}
	var live runtime.Object = &unstructured.Unstructured{Object: old}
	if old == nil {
		live = newStored(req.res)
		live.GetObjectKind().SetGroupVersionKind(req.res.GroupVersionKind())
	}
	out, err := meta.Accessor(fm.UpdateNoErrors(live, tracked, req.manager))
	if err != nil {
		return nil, err
	}
	managed, err := managedFieldsTree(out.GetManagedFields())
	if err != nil {
		return nil, err
	}
	md, _ := obj["metadata"].(map[string]any)
	if md == nil {
		md = map[string]any{}
		obj["metadata"] = md
	}
	if managed != nil {
		md["managedFields"] = managed
	} else {
		delete(md, "managedFields")
	}
	return obj, nil
}

// newStored is a new, empty object of res's Go type.
func newStored(res *resource.Resource) runtime.Object {
	return reflect.New(reflect.TypeOf(res.StrategicMergeType)).Interface().(runtime.Object)
}

// asStored is obj as it would be stored (resource.Resource.Encode: through
// the kind's Go type), converted without JSON text.
func asStored(res *resource.Resource, obj map[string]any) (runtime.Object, error) {
	typed := newStored(res)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, typed); err != nil {
		return nil, apistatus.BadRequest("the object is not a valid %s: %v", res.Kind, err)
	}
	return typed, nil
}

// managedFieldsTree is entries as Unstructured.SetManagedFields makes
// them (nil for nil; each entry's map of metav1.ManagedFieldsEntry's JSON,
// empty fields omitted), without going through JSON text but for the
// field sets.
func managedFieldsTree(entries []metav1.ManagedFieldsEntry) ([]any, error) {
	if entries == nil {
		return nil, nil
	}
	list := make([]any, 0, len(entries))
	for _, e := range entries {
		m := map[string]any{}
		put := func(key, value string) {
			if value != "" {
				m[key] = value
			}
		}
		put("manager", e.Manager)
		put("operation", string(e.Operation))
		put("apiVersion", e.APIVersion)
		put("fieldsType", e.FieldsType)
		put("subresource", e.Subresource)
		if e.Time != nil {
			m["time"] = e.Time.ToUnstructured()
		}
		if e.FieldsV1 != nil {
			var fields any // FieldsV1 without bytes marshals as null
			if len(e.FieldsV1.Raw) > 0 {
				set, err := jsontree.Decode(e.FieldsV1.Raw)
				if err != nil {
					return nil, err
				}
				fields = set
			}
			m["fieldsV1"] = fields
		}
		list = append(list, m)
	}
	return list, nil
}
