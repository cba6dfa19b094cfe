package apply

import (
	"testing"

	"github.com/watchcache/watchcache/pkg/resource"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// pvcSchema is a document holding a PersistentVolumeClaim schema, naming
// its kind (as core/v1's document does) or not (as apps/v1's, which refers
// to it for StatefulSets).
func pvcSchema(named bool) []byte {
	gvk := ""
	if named {
		gvk = `,"x-kubernetes-group-version-kind":[{"group":"","version":"v1","kind":"PersistentVolumeClaim"}]`
	}
	return []byte(`{"components":{"schemas":{"io.k8s.api.core.v1.PersistentVolumeClaim":{"type":"object","properties":{` +
		`"apiVersion":{"type":"string"},"kind":{"type":"string"},"metadata":{"type":"object","x-kubernetes-preserve-unknown-fields":true},"spec":{"type":"object","properties":{"volumeName":{"type":"string"}}}}` + gvk + `}}}}`)
}

// TestForTypesByTheDocumentOfTheGroupVersion: a kind's objects are typed
// by its own group version's document, which names the kind, not by
// another's copy of its schema ("no corresponding type" on writes of
// PersistentVolumeClaims came from apps/v1's copy replacing core/v1's).
func TestForTypesByTheDocumentOfTheGroupVersion(t *testing.T) {
	pvcs := &resource.Resource{Version: "v1", Kind: "PersistentVolumeClaim", Plural: "persistentvolumeclaims",
		StrategicMergeType: corev1.PersistentVolumeClaim{}}
	m := New(map[schema.GroupVersion]TypeConverter{
		{Version: "v1"}:                NewTypeConverter(func() []byte { return pvcSchema(true) }),
		{Group: "apps", Version: "v1"}: NewTypeConverter(func() []byte { return pvcSchema(false) }),
	})
	fm, err := m.For(pvcs, "")
	if err != nil {
		t.Fatal(err)
	}
	pvc := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "PersistentVolumeClaim",
		"metadata": map[string]any{"name": "c"}, "spec": map[string]any{"volumeName": "v"}}}
	updated, err := fm.Update(&unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "PersistentVolumeClaim"}}, pvc, "test")
	if err != nil {
		t.Fatal(err)
	}
	if got := updated.(*unstructured.Unstructured).GetManagedFields(); len(got) != 1 {
		t.Errorf("managedFields %v: want one entry", got)
	}

	unknown := &resource.Resource{Group: "batch", Version: "v1", Kind: "Job", Plural: "jobs", StrategicMergeType: corev1.Pod{}}
	if _, err := m.For(unknown, ""); err == nil {
		t.Error("a group version without a document was given a field manager")
	}
}
