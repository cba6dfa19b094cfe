package server

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	kjson "sigs.k8s.io/json"
)

// TestDropUnknownFields: the fields a pod's Go type does not have go, at
// every depth (in spec, in a container of a list, in a map's value); what
// it has stays, those of types that decode themselves (quantities, times,
// int-or-string, managedFields' fieldsV1) whatever their content.
func TestDropUnknownFields(t *testing.T) {
	const body = `{"apiVersion":"v1","kind":"Pod","bogus":1,
	"metadata":{"name":"p","labels":{"a":"b"},"creationTimestamp":"2026-01-01T00:00:00Z","extra":true,
	  "managedFields":[{"manager":"m","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{}},"what":1}]},
	"spec":{"foo":"bar","containers":[{"name":"c","image":"i","bar":2,
	  "resources":{"limits":{"cpu":"1"}},"ports":[{"containerPort":80,"x":1}],
	  "livenessProbe":{"httpGet":{"port":"http","y":1}}}],
	  "overhead":{"memory":"1Gi"}},
	"status":{"phase":"Running","z":[]}}`
	const want = `{"apiVersion":"v1","kind":"Pod",
	"metadata":{"name":"p","labels":{"a":"b"},"creationTimestamp":"2026-01-01T00:00:00Z",
	  "managedFields":[{"manager":"m","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{}}}]},
	"spec":{"containers":[{"name":"c","image":"i",
	  "resources":{"limits":{"cpu":"1"}},"ports":[{"containerPort":80}],
	  "livenessProbe":{"httpGet":{"port":"http"}}}],
	  "overhead":{"memory":"1Gi"}},
	"status":{"phase":"Running"}}`
	var obj, wantObj map[string]any
	if err := kjson.UnmarshalCaseSensitivePreserveInts([]byte(body), &obj); err != nil {
		t.Fatal(err)
	}
	if err := kjson.UnmarshalCaseSensitivePreserveInts([]byte(want), &wantObj); err != nil {
		t.Fatal(err)
	}
	dropUnknownFields(obj, reflect.TypeFor[corev1.Pod]())
	if !reflect.DeepEqual(obj, wantObj) {
		t.Errorf("got\n%v\nwant\n%v", obj, wantObj)
	}
}
