package resource

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/watchcache/watchcache/pkg/benchdata"
	kjson "sigs.k8s.io/json"
)

// encodeThroughJSON is what Resource.Encode did before EncodeTyped: the
// map as JSON text, decoded into the kind's Go type and encoded again.
func encodeThroughJSON(t *testing.T, res *Resource, obj map[string]any) []byte {
	t.Helper()
	data, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	typed := reflect.New(reflect.TypeOf(res.StrategicMergeType)).Interface()
	if err := json.Unmarshal(data, typed); err != nil {
		t.Fatal(err)
	}
	if data, err = json.Marshal(typed); err != nil {
		t.Fatal(err)
	}
	return data
}

// EncodeTyped gives, for every kind kube-apiserver served in the reference
// recording and a benchmark pod, the JSON that encoding through JSON text
// gives, and StorageCodec.EncodeBuilt of its Go object the very value
// Encode of that JSON stores: the invariant storage.Built relies on.
func TestEncodeTypedMatchesJSON(t *testing.T) {
	reg := referenceRegistry(t)
	type sample struct {
		name string
		res  *Resource
		obj  []byte
	}
	var samples []sample
	for _, line := range readJSONLines[struct {
		Path   string          `json:"path"`
		Object json.RawMessage `json:"object"`
	}](t, "testdata/reference-served.jsonl") {
		res, _, _ := lookupPath(t, reg, line.Path)
		samples = append(samples, sample{line.Path, res, line.Object})
	}
	samples = append(samples, sample{"benchdata pod", reg.Lookup("", "v1", "pods"), benchdata.Pod(1, 10, 10)})
	typedKinds := 0
	for _, s := range samples {
		var obj map[string]any
		if err := kjson.UnmarshalCaseSensitivePreserveInts(s.obj, &obj); err != nil {
			t.Fatal(err)
		}
		if meta, ok := obj["metadata"].(map[string]any); ok {
			delete(meta, "resourceVersion") // as stored
		}
		data, typed, err := s.res.EncodeTyped(obj)
		if err != nil {
			t.Errorf("%s: %v", s.name, err)
			continue
		}
		if s.res.StrategicMergeType == nil {
			if typed != nil {
				t.Errorf("%s: a custom resource's Go object %T", s.name, typed)
			}
			continue
		}
		typedKinds++
		if want := encodeThroughJSON(t, s.res, obj); !bytes.Equal(data, want) {
			t.Errorf("%s: EncodeTyped\n%s\nthrough JSON text\n%s", s.name, data, want)
		}
		codec := s.res.StorageCodec()
		want, err := codec.Encode(data)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		got, err := codec.EncodeBuilt(data, typed)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: EncodeBuilt\n%q\nEncode\n%q", s.name, got, want)
		}
	}
	if typedKinds < 50 {
		t.Errorf("%d built-in objects compared", typedKinds)
	}
}

// An object the converter refuses is encoded through JSON text, with
// encoding/json's verdict: a 400 naming the kind.
func TestEncodeTypedRefusesAsJSONDoes(t *testing.T) {
	reg, err := NewRegistry(Builtins()...)
	if err != nil {
		t.Fatal(err)
	}
	pods := reg.Lookup("", "v1", "pods")
	_, _, err = pods.EncodeTyped(map[string]any{"apiVersion": "v1", "kind": "Pod", "spec": map[string]any{"priority": "high"}})
	if err == nil || err.Error() != `the object is not a valid Pod: json: cannot unmarshal string into Go struct field PodSpec.spec.priority of type int32` {
		t.Errorf("error %v", err)
	}
}
