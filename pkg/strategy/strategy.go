// Package strategy is what kube-apiserver's per-kind strategies do to an
// object on its way to storage, for the parts that are the same for every
// kind and so are data here (resource.Resource's Status, Generation and
// Scale): the status/spec split of the status subresource and
// metadata.generation counting spec changes.
//
// Objects are JSON objects decoded as map[string]any; the functions change
// them in place.
package strategy

import (
	"encoding/json"
	"reflect"

	"github.com/watchcache/watchcache/pkg/jsontree"
	"github.com/watchcache/watchcache/pkg/resource"
)

// PrepareForCreate readies a new object: a kind with a status subresource
// starts with no status (clients write it through /status; defaults may
// add, e.g., a pod's phase), and a kind that counts generations starts at
// generation 1.
func PrepareForCreate(res *resource.Resource, obj map[string]any) {
	if res.Status {
		delete(obj, "status")
	}
	if res.Generation {
		metadata(obj)["generation"] = int64(1)
	}
	if isNamespace(res) {
		prepareNamespaceCreate(obj)
	}
}

// PrepareForUpdate readies obj, the new state sent for an update of the
// object (subresource "") or of its status ("status") or a namespace's
// finalizers ("finalize"), over old, the stored state:
//   - an update of the object keeps old's status when the kind has a status
//     subresource, and a namespace's spec.finalizers;
//   - an update of a subresource keeps everything but its field (and the
//     resourceVersion the client sent, for its precondition) from old;
//     /status of a built-in kind also takes the metadata sent, but for what
//     its kind's strategy resets (statusMetadataResets);
//   - generation goes up by one when anything but metadata and status
//     changed (or the annotations, for a kind that counts them), and is
//     never the client's to set;
//   - a CertificateSigningRequest's spec stays old's and its conditions
//     are stamped (certificates.go).
func PrepareForUpdate(res *resource.Resource, subresource string, obj, old map[string]any) {
	if isCSR(res) {
		defer prepareCSRUpdate(subresource, obj, old)
	}
	if subresource == "status" && res.StrategicMergeType != nil {
		writeStatus(res, obj, old)
		return
	}
	if path := subresourcePaths[subresource]; path != nil {
		writeOnly(obj, old, path)
		return
	}
	if res.Status {
		if status, ok := old["status"]; ok {
			obj["status"] = status
		} else {
			delete(obj, "status")
		}
	}
	if isNamespace(res) {
		keepNamespaceFinalizers(obj, old)
	}
	if res.Generation {
		generation := generationOf(old)
		if specChanged(obj, old) || (res.GenerationAnnotations && annotationsChanged(obj, old)) {
			generation++
		}
		metadata(obj)["generation"] = generation
	}
}

// subresourcePaths are the one field each stored subresource writes.
var subresourcePaths = map[string][]string{
	"status":   {"status"},
	"finalize": {"spec", "finalizers"},
	"approval": {"status", "conditions"},
}

// statusMetadataResets are the metadata fields that kube-apiserver's status
// strategy of a built-in kind (group/plural) puts back from the stored
// object; the rest of the metadata a /status write sends is kept (a
// custom resource's /status keeps none of it).
var statusMetadataResets = map[string][]string{
	"apps/deployments": {"labels"},
	"/pods":            {"ownerReferences"},
	// All of their metadata but managedFields (recorded from kube-apiserver
	// 1.37: a status patch's labels are dropped).
	"flowcontrol.apiserver.k8s.io/flowschemas":                 {"labels", "annotations", "ownerReferences", "finalizers"},
	"flowcontrol.apiserver.k8s.io/prioritylevelconfigurations": {"labels", "annotations", "ownerReferences", "finalizers"},
}

// writeStatus makes obj, a /status write of a built-in kind, old with obj's
// status and metadata, but for its generation and the metadata its kind
// resets.
func writeStatus(res *resource.Resource, obj, old map[string]any) {
	status, hasStatus := obj["status"]
	meta, _ := obj["metadata"].(map[string]any)
	for k := range obj {
		delete(obj, k)
	}
	for k, v := range jsontree.DeepCopy(old).(map[string]any) {
		obj[k] = v
	}
	set(obj, []string{"status"}, status, hasStatus)
	if meta == nil {
		return
	}
	oldMeta := metadata(obj)
	for _, name := range append([]string{"generation"}, statusMetadataResets[res.Group+"/"+res.Plural]...) {
		value, ok := oldMeta[name]
		set(meta, []string{name}, value, ok)
	}
	obj["metadata"] = meta
}

// writeOnly makes obj old with the value obj has at path (absent if obj
// has none), keeping the resourceVersion the client sent for its
// precondition and obj's managedFields, which an apply has set to what it
// owns now.
func writeOnly(obj, old map[string]any, path []string) {
	value, hasValue := lookup(obj, path)
	rv, hasRV := metadata(obj)["resourceVersion"]
	managed, hasManaged := metadata(obj)["managedFields"]
	for k := range obj {
		delete(obj, k)
	}
	for k, v := range jsontree.DeepCopy(old).(map[string]any) {
		obj[k] = v
	}
	set(obj, path, value, hasValue)
	meta := metadata(obj)
	delete(meta, "resourceVersion")
	if hasRV {
		meta["resourceVersion"] = rv
	}
	if hasManaged {
		meta["managedFields"] = managed
	}
}

// lookup reads the value at path in obj.
func lookup(obj map[string]any, path []string) (any, bool) {
	var v any = obj
	for _, k := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[k]; !ok {
			return nil, false
		}
	}
	return v, true
}

// set writes value at path in obj, making the objects on the way, or
// removes what is at path when present is false.
func set(obj map[string]any, path []string, value any, present bool) {
	m := obj
	for _, k := range path[:len(path)-1] {
		next, ok := m[k].(map[string]any)
		if !ok {
			if !present {
				return
			}
			next = map[string]any{}
			m[k] = next
		}
		m = next
	}
	if present {
		m[path[len(path)-1]] = value
	} else {
		delete(m, path[len(path)-1])
	}
}

// specChanged reports whether anything but metadata and status differs.
func specChanged(obj, old map[string]any) bool {
	keys := map[string]bool{}
	for k := range obj {
		keys[k] = true
	}
	for k := range old {
		keys[k] = true
	}
	for k := range keys {
		if k == "metadata" || k == "status" {
			continue
		}
		if !equalJSON(obj[k], old[k]) {
			return true
		}
	}
	return false
}

// annotationsChanged reports whether metadata.annotations differ (absent
// and empty are the same, as for kube-apiserver's semantic equality).
func annotationsChanged(obj, old map[string]any) bool {
	a, _ := metadata(obj)["annotations"].(map[string]any)
	b, _ := metadata(old)["annotations"].(map[string]any)
	return len(a)+len(b) > 0 && !equalJSON(a, b)
}

// equalJSON compares two decoded JSON values (numbers may be float64,
// int64 or json.Number, depending on the decoder).
func equalJSON(a, b any) bool {
	if reflect.DeepEqual(a, b) {
		return true
	}
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && string(ja) == string(jb)
}

// generationOf reads metadata.generation (0 when absent).
func generationOf(obj map[string]any) int64 { return int64Field(metadata(obj), "generation") }

// metadata returns obj's metadata, adding an empty one if absent (callers
// have checked it is an object).
func metadata(obj map[string]any) map[string]any { return jsontree.Child(obj, "metadata") }

// ResetFields are the fields, as paths, that a write of res's subresource
// ("" for the object itself) does not change, because the strategy puts
// the stored ones back: what kube-apiserver's strategies list in their
// GetResetFields, which its field manager takes out of a write before
// recording who owns what. A write of the object leaves the status of a
// kind with a status subresource, a write of /status leaves the spec.
func ResetFields(res *resource.Resource, subresource string) [][]string {
	switch subresource {
	case "":
		if res.Status {
			return [][]string{{"status"}}
		}
	case "status":
		paths := [][]string{{"spec"}}
		if res.StrategicMergeType != nil {
			for _, name := range statusMetadataResets[res.Group+"/"+res.Plural] {
				paths = append(paths, []string{"metadata", name})
			}
		}
		return paths
	}
	return nil
}
