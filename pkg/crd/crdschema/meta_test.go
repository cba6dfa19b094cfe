package crdschema

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestPruneMetadata: unknown fields of an object's metadata and of its
// embedded resources' metadata are dropped with the schema's, and reported
// in kube-apiserver's order (recorded from kube-apiserver 1.37): the
// object's metadata, the schema's fields, the embedded metadata sorted.
// Embedded metadata is stored as an ObjectMeta's (empty fields dropped).
func TestPruneMetadata(t *testing.T) {
	s := newSchema(t, shapes)
	var obj map[string]any
	json.Unmarshal([]byte(`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","zz":1,"aa":2,"labels":{"a":"b"}},"zzTop":1,
"spec":{"zz":1,"aa":2,"template":{"apiVersion":"v1","kind":"P","metadata":{"name":"t","zz":1,"aa":1,"labels":{},"annotations":{"x":"y"},"ownerReferences":[{"x":1}]},"spec":{"a":"b","q":1}},
"loose":{"apiVersion":"v1","kind":"K","metadata":{"name":"x","other":2},"zzz":1}}}`), &obj)
	obj = normalize(obj).(map[string]any)
	pruned := s.Prune(obj)
	want := "metadata.aa,metadata.zz,spec.aa,spec.template.spec.q,spec.zz,zzTop,spec.loose.metadata.other,spec.template.metadata.aa,spec.template.metadata.ownerReferences[0].x,spec.template.metadata.zz"
	if got := strings.Join(pruned, ","); got != want {
		t.Errorf("pruned\n%s\nwant\n%s", got, want)
	}
	data, _ := json.Marshal(obj)
	if got, want := string(data), `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"labels":{"a":"b"},"name":"w"},`+
		`"spec":{"loose":{"apiVersion":"v1","kind":"K","metadata":{"name":"x"},"zzz":1},`+
		`"template":{"apiVersion":"v1","kind":"P","metadata":{"annotations":{"x":"y"},"name":"t","ownerReferences":[{"apiVersion":"","kind":"","name":"","uid":""}]},"spec":{"a":"b"}}}}`; got != want {
		t.Errorf("pruned object\n%s\nwant\n%s", got, want)
	}
}

// TestPruneKeepsMetadata: an object's metadata without unknown fields is
// left as it is.
func TestPruneKeepsMetadata(t *testing.T) {
	s := newSchema(t, shapes)
	obj := decodeSpec(t, `{}`)
	obj["metadata"].(map[string]any)["creationTimestamp"] = nil
	pruned := s.Prune(obj)
	if _, kept := obj["metadata"].(map[string]any)["creationTimestamp"]; len(pruned) != 0 || !kept {
		t.Errorf("pruned %v, metadata %v", pruned, obj["metadata"])
	}
}
