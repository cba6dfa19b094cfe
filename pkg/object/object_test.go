package object

import (
	"encoding/json"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
)

var podSchema = MustSchema("spec.nodeName", "status.phase")

func TestDecode(t *testing.T) {
	in := `{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p1","namespace":"ns","uid":"u-1","resourceVersion":"7","labels":{"b":"2","a":"1"}},"spec":{"nodeName":"node-\u00e9","containers":[{"name":"x"}]},"status":{"phase":"Running"}}`
	obj, clientRV, err := Decode(podSchema, "ns/p1", []byte(in), 42)
	if err != nil {
		t.Fatal(err)
	}
	if clientRV != "7" {
		t.Errorf("clientRV = %q, want 7", clientRV)
	}
	if obj.Name() != "p1" || obj.Namespace() != "ns" || obj.UID() != "u-1" || obj.ResourceVersion() != 42 || obj.Key() != "ns/p1" {
		t.Errorf("identity = %s %s %s %d %s", obj.Name(), obj.Namespace(), obj.UID(), obj.ResourceVersion(), obj.Key())
	}
	if got := obj.Labels().Map(); !reflect.DeepEqual(got, map[string]string{"a": "1", "b": "2"}) {
		t.Errorf("labels = %v", got)
	}
	if !labels.SelectorFromSet(labels.Set{"a": "1"}).Matches(obj.Labels()) || labels.SelectorFromSet(labels.Set{"a": "2"}).Matches(obj.Labels()) {
		t.Error("label selector matching is wrong")
	}
	if obj.Fields().Get("spec.nodeName") != "node-é" || obj.Fields().Get("status.phase") != "Running" || obj.Fields().Get("metadata.name") != "p1" {
		t.Errorf("fields = %v", obj.Fields().values)
	}
	if !fields.OneTermEqualSelector("spec.nodeName", "node-é").Matches(obj.Fields()) {
		t.Error("field selector does not match")
	}
	if obj.Fields().Has("metadata.uid") || !obj.Fields().Has("status.phase") {
		t.Error("selectable fields are wrong")
	}
	assertJSONEqual(t, obj.JSON(), `{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"42","name":"p1","namespace":"ns","uid":"u-1","labels":{"b":"2","a":"1"}},"spec":{"nodeName":"node-\u00e9","containers":[{"name":"x"}]},"status":{"phase":"Running"}}`)
	assertJSONEqual(t, obj.Stored(), `{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p1","namespace":"ns","uid":"u-1","labels":{"b":"2","a":"1"}},"spec":{"nodeName":"node-\u00e9","containers":[{"name":"x"}]},"status":{"phase":"Running"}}`)
}

func TestResourceVersionPositions(t *testing.T) {
	for _, in := range []string{
		`{"metadata":{"resourceVersion":"1"}}`,
		`{"metadata":{ "resourceVersion" : "1" , "name":"a"}}`,
		`{"metadata":{"name":"a","resourceVersion":"1"}}`,
		`{"metadata":{"name":"a", "resourceVersion":"1" }}`,
		`{"metadata":{"name":"a","resourceVersion":"1","uid":"u"}}`,
		`{"metadata":{}}`,
		`{"metadata":{"name":"a"}}`,
	} {
		obj, _, err := Decode(podSchema, "a", []byte(in), 9)
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		var m map[string]map[string]any
		if err := json.Unmarshal(obj.JSON(), &m); err != nil {
			t.Fatalf("%s: served form %s is not JSON: %v", in, obj.JSON(), err)
		}
		if m["metadata"]["resourceVersion"] != "9" {
			t.Errorf("%s: served form %s", in, obj.JSON())
		}
		var stored map[string]map[string]any
		if err := json.Unmarshal(obj.Stored(), &stored); err != nil {
			t.Fatalf("%s: stored form %s is not JSON: %v", in, obj.Stored(), err)
		}
		if _, has := stored["metadata"]["resourceVersion"]; has {
			t.Errorf("%s: stored form keeps resourceVersion: %s", in, obj.Stored())
		}
		var md map[string]any
		if err := json.Unmarshal(obj.AppendMetadata(nil), &md); err != nil || md["resourceVersion"] != "9" {
			t.Errorf("%s: metadata %s (%v)", in, obj.AppendMetadata(nil), err)
		}
		again := obj.WithResourceVersion(12345)
		if err := json.Unmarshal(again.AppendMetadata(nil), &md); err != nil || md["resourceVersion"] != "12345" {
			t.Errorf("%s: metadata after WithResourceVersion %s (%v)", in, again.AppendMetadata(nil), err)
		}
		if err := json.Unmarshal(again.JSON(), &m); err != nil || m["metadata"]["resourceVersion"] != "12345" {
			t.Errorf("%s: WithResourceVersion gave %s", in, again.JSON())
		}
		if !again.StoredEqual(obj) {
			t.Errorf("%s: stored forms differ after WithResourceVersion", in)
		}
	}
}

func TestStoredEqual(t *testing.T) {
	a, _, _ := Decode(podSchema, "a", []byte(`{"metadata":{"name":"a"},"x":1}`), 1)
	b, _, _ := Decode(podSchema, "a", []byte(`{"metadata":{"name":"a","resourceVersion":"1"},"x":1}`), 200)
	c, _, _ := Decode(podSchema, "a", []byte(`{"metadata":{"name":"a"},"x":2}`), 1)
	if !a.StoredEqual(b) || !b.StoredEqual(a) {
		t.Error("same stored form reported different")
	}
	if a.StoredEqual(c) {
		t.Error("different stored forms reported equal")
	}
}

func TestDecodeRejects(t *testing.T) {
	for _, in := range []string{
		``, `[]`, `{"metadata":[]}`, `{"kind":"x"}`, `{"metadata":{"name":"a"}`,
		`{"metadata":{"labels":{"a":1}}}`, `{"metadata":{}} x`,
		`{"metadata":{"name":tru}}`,
	} {
		if _, _, err := Decode(podSchema, "a", []byte(in), 1); err == nil {
			t.Errorf("Decode(%q) succeeded", in)
		}
	}
}

func TestSchemaRejects(t *testing.T) {
	for _, p := range []string{"", ".a", "a.", "a..b", "metadata", "metadata.labels"} {
		if _, err := NewSchema(p); err == nil {
			t.Errorf("NewSchema(%q) succeeded", p)
		}
	}
}

func assertJSONEqual(t *testing.T, got []byte, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("not JSON: %s: %v", got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("got %s\nwant %s", got, want)
	}
}

// FuzzDecode checks that whatever valid JSON Decode accepts, the served and
// stored forms are valid JSON that differ from the input only in
// metadata.resourceVersion.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"metadata":{"name":"a","resourceVersion":"1","labels":{"x":"y"}},"spec":{"nodeName":"n"}}`))
	f.Add([]byte(`{"metadata":{}}`))
	f.Add([]byte(`{"spec":{"nodeName":"n\u00e9"},"metadata":{"uid":"u","resourceVersion":"12","name":"a\"b","labels":{"k\n":"v","x":"y"}}}`))
	f.Add([]byte(`{"metadata":{"name":"a","labels":{"k":"v"},"resourceVersion":"3"},"spec":{"nodeName":"n"}}`))
	f.Add([]byte(`{"metadata":{"resourceVersion":1},"status":{"phase":null}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		obj, _, err := Decode(podSchema, "k", data, 77)
		if err != nil {
			return
		}
		var in map[string]any
		if json.Unmarshal(data, &in) != nil {
			return // the scanner is lenient on some invalid input; writers validate first
		}
		var served, stored map[string]any
		if err := json.Unmarshal(obj.JSON(), &served); err != nil {
			t.Fatalf("served form of %q is not JSON: %q", data, obj.JSON())
		}
		if err := json.Unmarshal(obj.Stored(), &stored); err != nil {
			t.Fatalf("stored form of %q is not JSON: %q", data, obj.Stored())
		}
		meta, ok := in["metadata"].(map[string]any)
		if !ok {
			t.Fatalf("accepted %q without a metadata object", data)
		}
		// The captured strings (shared with the served bytes) are the
		// values JSON decoding gives.
		if name, ok := meta["name"].(string); ok && obj.Name() != name {
			t.Fatalf("Name() = %q, want %q in %q", obj.Name(), name, data)
		}
		if uid, ok := meta["uid"].(string); ok && obj.UID() != uid {
			t.Fatalf("UID() = %q, want %q in %q", obj.UID(), uid, data)
		}
		if spec, ok := in["spec"].(map[string]any); ok {
			if node, ok := spec["nodeName"].(string); ok && obj.Fields().Get("spec.nodeName") != node {
				t.Fatalf("spec.nodeName = %q, want %q in %q", obj.Fields().Get("spec.nodeName"), node, data)
			}
		}
		if labels, ok := meta["labels"].(map[string]any); ok {
			want := map[string]string{}
			for k, v := range labels {
				want[k], _ = v.(string)
			}
			if got := obj.Labels().Map(); len(want) > 0 && !reflect.DeepEqual(got, want) {
				t.Fatalf("labels = %v, want %v in %q", got, want, data)
			}
		}
		delete(meta, "resourceVersion")
		if !reflect.DeepEqual(in, stored) {
			t.Fatalf("stored form %q of %q", obj.Stored(), data)
		}
		meta["resourceVersion"] = "77"
		if !reflect.DeepEqual(in, served) {
			t.Fatalf("served form %q of %q", obj.JSON(), data)
		}
		var servedMeta map[string]any
		if err := json.Unmarshal(obj.AppendMetadata(nil), &servedMeta); err != nil || !reflect.DeepEqual(servedMeta, meta) {
			t.Fatalf("metadata %q of %q", obj.AppendMetadata(nil), data)
		}
	})
}
