package resource

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// RoundTrips never says yes wrongly: for every object recorded from the
// reference (served, less its resourceVersion, stored as Encode makes it)
// and for objects with empty lists and maps, where it reports true the
// stored JSON decodes back byte for byte; where protobuf loses an empty
// list it reports false.
func TestStorageCodecRoundTrips(t *testing.T) {
	reg, err := NewRegistry(Builtins()...)
	if err != nil {
		t.Fatal(err)
	}
	type sample struct {
		res  *Resource
		name string
		obj  map[string]any
	}
	var samples []sample
	_, served := referenceData(t)
	for _, s := range served {
		if strings.Contains(s.Path, "example.com") { // the recorded custom resource has no resource here
			continue
		}
		res, _, _ := lookupPath(t, reg, s.Path)
		delete(s.Object["metadata"].(map[string]any), "resourceVersion")
		samples = append(samples, sample{res, s.Path, s.Object})
	}
	for _, c := range []struct{ group, version, plural, json string }{
		{"rbac.authorization.k8s.io", "v1", "clusterroles", `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"x"},"rules":[]}`},
		{"", "v1", "pods", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x","namespace":"d"},"spec":{"containers":[]}}`},
		{"", "v1", "configmaps", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","namespace":"d","labels":{}},"data":{}}`},
		{"", "v1", "services", `{"apiVersion":"v1","kind":"Service","metadata":{"name":"x","namespace":"d"},"spec":{"ports":[],"selector":{}}}`},
		{"", "v1", "pods", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x","namespace":"d","finalizers":[]},"spec":{"containers":[{"name":"a","image":"b","args":[],"env":[]}]}}`},
		{"", "v1", "secrets", `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"x","namespace":"d"},"data":{"a":""}}`},
		{"apiextensions.k8s.io", "v1", "customresourcedefinitions", `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"as.b.c"},` +
			`"spec":{"group":"b.c","names":{"plural":"as","kind":"A"},"scope":"Namespaced","versions":[{"name":"v1","served":true,"storage":true}]}}`},
	} {
		var obj map[string]any
		if err := json.Unmarshal([]byte(c.json), &obj); err != nil {
			t.Fatal(err)
		}
		samples = append(samples, sample{reg.Lookup(c.group, c.version, c.plural), c.plural, obj})
	}
	yes, no := 0, 0
	for _, s := range samples {
		stored, err := s.res.Encode(s.obj)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		codec := s.res.StorageCodec()
		value, err := codec.Encode(stored)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		decoded, err := codec.Decode(value)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if !codec.RoundTrips(stored) {
			no++
			continue
		}
		yes++
		if !bytes.Equal(decoded, stored) {
			t.Errorf("%s: RoundTrips, but\n%s\ndecodes as\n%s", s.name, stored, decoded)
		}
	}
	if yes < 50 || no < 3 {
		t.Errorf("%d objects round-trip, %d not: want most of the reference's and the three with []", yes, no)
	}
	var cr map[string]any
	json.Unmarshal([]byte(`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"x"},"spec":{"a":[]}}`), &cr)
	widgets := &StorageCodec{apiVersion: "example.com/v1", kind: "Widget", json: true}
	stored, _ := json.Marshal(cr)
	value, _ := widgets.Encode(stored)
	if decoded, _ := widgets.Decode(value); !widgets.RoundTrips(stored) || !bytes.Equal(decoded, stored) {
		t.Errorf("a custom resource's JSON does not round-trip: %s", decoded)
	}
}
