package apply

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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
		`"apiVersion":{"type":"string"},"kind":{"type":"string"},"spec":{"type":"object","properties":{"volumeName":{"type":"string"}}}}` + gvk + `}}}}`)
}

// TestNewKeepsKindsOfEveryDocument: whichever document comes last, the
// schema of a kind is found by its kind (the documents of a server are
// read in map order; "no corresponding type" on writes of
// PersistentVolumeClaims came from apps/v1's copy of its schema replacing
// core/v1's).
func TestNewKeepsKindsOfEveryDocument(t *testing.T) {
	pvc := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "PersistentVolumeClaim", "spec": map[string]any{"volumeName": "v"}}}
	for _, namedFirst := range []bool{true, false} {
		m, err := New([][]byte{pvcSchema(namedFirst), pvcSchema(!namedFirst)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.typed.ObjectToTyped(pvc); err != nil {
			t.Errorf("the document naming the kind first: %v: %v", namedFirst, err)
		}
	}
}
