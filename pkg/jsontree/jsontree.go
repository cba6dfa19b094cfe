// Package jsontree holds the small operations on decoded JSON trees
// (map[string]any, []any and plain values: objects as decoded from
// storage) that the strategies, defaults, validation, admission and the
// controllers share: child objects made on demand, metadata lists dropped
// when empty, deep copies and dotted field paths, as kube-apiserver does
// with k8s.io/apimachinery's unstructured helpers (unstructured.NestedMap,
// SetNestedSlice, runtime.DeepCopyJSONValue).
package jsontree

// Child returns m[key] as an object, adding an empty one if it is absent
// (or not an object).
func Child(m map[string]any, key string) map[string]any {
	child, ok := m[key].(map[string]any)
	if !ok {
		child = map[string]any{}
		m[key] = child
	}
	return child
}

// SetList sets m[field] to list, or removes the field when list is empty,
// as kube-apiserver's JSON omits empty metadata lists.
func SetList(m map[string]any, field string, list []any) {
	if len(list) == 0 {
		delete(m, field)
	} else {
		m[field] = list
	}
}

// DeepCopy copies a JSON value, sharing nothing with it.
func DeepCopy(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[k] = DeepCopy(x)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = DeepCopy(x)
		}
		return out
	}
	return v
}

// JoinPath joins two dotted paths; "" is the empty path.
func JoinPath(prefix, path string) string {
	switch {
	case prefix == "":
		return path
	case path == "":
		return prefix
	}
	return prefix + "." + path
}

// MergePatch applies a JSON merge patch (RFC 7386) that is an object to
// doc, in place, as gopkg.in/evanphx/json-patch.v4's MergePatch (which
// kube-apiserver applies to JSON text) does, down to its quirks: a
// member's null deletes it; an object merges into an object; any other
// value replaces, with the nulls of the objects in it (at any depth, in
// lists too) dropped, except where it replaces an object (kept as given).
// doc takes values of patch, which must not be used afterwards.
func MergePatch(doc, patch map[string]any) {
	for k, v := range patch {
		if v == nil {
			delete(doc, k)
			continue
		}
		cur := doc[k]
		curObj, curIsObj := cur.(map[string]any)
		patchObj, patchIsObj := v.(map[string]any)
		switch {
		case cur == nil || !curIsObj:
			doc[k] = pruneNulls(v)
		case patchIsObj:
			MergePatch(curObj, patchObj)
		default:
			doc[k] = v
		}
	}
}

// pruneNulls drops the null members of the objects in v, at any depth.
func pruneNulls(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if x == nil {
				delete(v, k)
			} else {
				pruneNulls(x)
			}
		}
	case []any:
		for _, x := range v {
			pruneNulls(x)
		}
	}
	return v
}
