// managedFields on writes other than apply: the field manager of a resource
// and subresource (k8s.io/apiserver's managedfields) and the object as stored.

package httpapi

import (
	"reflect"
	"sync"

	"github.com/watchcache/watchcache/pkg/apistatus"
	"github.com/watchcache/watchcache/pkg/jsontree"
	"github.com/watchcache/watchcache/pkg/resource"
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
// its fields itself). A built-in kind's objects are compared as stored:
// through its Go type, as kube-apiserver decodes a body (unknown fields
// dropped, structs present even when empty), and a create from the type's
// zero value, so that the fields recorded are kube-apiserver's.
func (s *Server) trackUpdate(req *request, old, obj map[string]any) (map[string]any, error) {
	if req.applied {
		return obj, nil
	}
	fm, err := s.fieldManager(req)
	if err != nil {
		return nil, err
	}
	live, tracked := old, obj
	if req.res.StrategicMergeType != nil {
		if tracked, err = asStored(req.res, obj); err != nil {
			return nil, err
		}
		if old == nil {
			if live, err = zeroStored(req.res); err != nil {
				return nil, err
			}
		}
	}
	if live == nil {
		live = map[string]any{}
		(&unstructured.Unstructured{Object: live}).SetGroupVersionKind(req.res.GroupVersionKind())
	}
	out := fm.UpdateNoErrors(&unstructured.Unstructured{Object: live}, &unstructured.Unstructured{Object: tracked}, req.manager).(*unstructured.Unstructured)
	if req.res.StrategicMergeType == nil {
		return out.Object, nil
	}
	managed, found, _ := unstructured.NestedFieldNoCopy(out.Object, "metadata", "managedFields")
	meta, _ := obj["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
		obj["metadata"] = meta
	}
	if found {
		meta["managedFields"] = managed
	} else {
		delete(meta, "managedFields")
	}
	return obj, nil
}

// zeroStoredCache holds zeroStored's answers, by zeroKey.
var zeroStoredCache sync.Map

// zeroKey identifies a kind's empty object as stored.
type zeroKey struct {
	typ              reflect.Type
	apiVersion, kind string
}

// zeroStored is a new object of res's kind (only apiVersion and kind set)
// as stored (asStored), a copy of the one made the first time.
func zeroStored(res *resource.Resource) (map[string]any, error) {
	key := zeroKey{reflect.TypeOf(res.StrategicMergeType), res.GroupVersion(), res.Kind}
	zero, ok := zeroStoredCache.Load(key)
	if !ok {
		obj, err := asStored(res, map[string]any{"apiVersion": key.apiVersion, "kind": key.kind})
		if err != nil {
			return nil, err
		}
		zero, _ = zeroStoredCache.LoadOrStore(key, obj)
	}
	return jsontree.DeepCopy(zero).(map[string]any), nil
}

// asStored is obj as it would be stored (resource.Resource.Encode: through the kind's
// Go type), as a map, converted without JSON text (1.6× faster on a pod).
func asStored(res *resource.Resource, obj map[string]any) (map[string]any, error) {
	typed := reflect.New(reflect.TypeOf(res.StrategicMergeType)).Interface()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, typed); err != nil {
		return nil, apistatus.BadRequest("the object is not a valid %s: %v", res.Kind, err)
	}
	return runtime.DefaultUnstructuredConverter.ToUnstructured(typed)
}
