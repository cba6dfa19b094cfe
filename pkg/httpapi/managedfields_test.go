package httpapi

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"testing"

	"github.com/watchcache/watchcache/pkg/benchdata"
	"github.com/watchcache/watchcache/pkg/jsontree"
	"github.com/watchcache/watchcache/pkg/openapi"
	"github.com/watchcache/watchcache/pkg/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// trackUpdate's managedFields of a built-in kind, made by the field
// manager from the Go objects, are those it makes from the maps of them
// (trackUpdateAsMaps, the objects as runtime.DefaultUnstructuredConverter
// makes them): over every built-in kind kube-apiserver served in the
// reference recording and a benchmark pod, for creates and updates (a
// label added, managedFields sent or not) and writes of status.
func TestTrackUpdateTypedAsMaps(t *testing.T) {
	reg, err := resource.NewRegistry(resource.Builtins()...)
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{openapi: openapi.New(reg)}
	type sample struct {
		name string
		obj  map[string]any
	}
	samples := []sample{{"benchdata pod", decodeJSON(t, benchdata.Pod(1, 10, 10))}}
	f, err := os.Open("../resource/testdata/reference-served.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var line struct {
			Path   string          `json:"path"`
			Object json.RawMessage `json:"object"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatal(err)
		}
		samples = append(samples, sample{line.Path, decodeJSON(t, line.Object)})
	}
	pod := jsontree.DeepCopy(samples[0].obj).(map[string]any)
	pod["status"] = map[string]any{"phase": "Running", "conditions": []any{
		map[string]any{"type": "Ready", "status": "True", "lastProbeTime": nil, "lastTransitionTime": "2026-11-28T10:00:00Z"}}}
	samples = append(samples, sample{"pod with status", pod})

	kinds := 0
	for _, sm := range samples {
		var res *resource.Resource
		for _, r := range reg.All() {
			if r.StrategicMergeType != nil && r.GroupVersion() == sm.obj["apiVersion"] && r.Kind == sm.obj["kind"] {
				res = r
			}
		}
		if res == nil {
			continue
		}
		kinds++
		withoutManaged := jsontree.DeepCopy(sm.obj).(map[string]any)
		delete(withoutManaged["metadata"].(map[string]any), "managedFields")
		copyOf := func(m map[string]any) map[string]any {
			if m == nil {
				return nil
			}
			return jsontree.DeepCopy(m).(map[string]any)
		}
		created, err := s.trackUpdateAsMaps(&request{res: res, manager: "creator"}, nil, copyOf(withoutManaged))
		if err != nil {
			t.Fatal(err)
		}
		changed := copyOf(created)
		if err := unstructured.SetNestedField(changed, "x", "metadata", "labels", "typedfm"); err != nil {
			t.Fatal(err)
		}
		changedManaged := copyOf(changed)
		changedManaged["metadata"].(map[string]any)["managedFields"] = jsontree.DeepCopy(sm.obj["metadata"].(map[string]any)["managedFields"])
		delete(changed["metadata"].(map[string]any), "managedFields")
		withoutStatus := copyOf(created)
		delete(withoutStatus, "status")
		type write struct {
			name, subresource string
			old, obj          map[string]any
		}
		writes := []write{
			{"create", "", nil, withoutManaged},
			{"create with managedFields", "", nil, sm.obj},
			{"update", "", created, changed},
			{"update with managedFields", "", created, changedManaged},
			{"update of nothing", "", created, withoutManaged},
		}
		if res.Status {
			writes = append(writes, write{"status", "status", withoutStatus, created})
		}
		for _, w := range writes {
			name := fmt.Sprintf("%s: %s", sm.name, w.name)
			req := &request{verb: "update", res: res, subresource: w.subresource, manager: "typedfm"}
			want, err := s.trackUpdateAsMaps(req, copyOf(w.old), copyOf(w.obj))
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			got, err := s.trackUpdate(req, copyOf(w.old), copyOf(w.obj))
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			managed, _, _ := unstructured.NestedSlice(want, "metadata", "managedFields")
			if len(managed) == 0 {
				t.Errorf("%s: no managedFields", name)
			}
			sameTimes(want, got)
			if !reflect.DeepEqual(got, want) {
				g, _ := json.Marshal(got)
				wj, _ := json.Marshal(want)
				t.Errorf("%s:\n got %s\nwant %s", name, g, wj)
			}
		}
	}
	if kinds < 40 {
		t.Errorf("%d built-in kinds compared, want every one of the recording's", kinds)
	}
}

// sameTimes sets the times of got's managedFields entries to want's
// (where both have one): the two writes may be a second apart.
func sameTimes(want, got map[string]any) {
	w, _, _ := unstructured.NestedSlice(want, "metadata", "managedFields")
	g, _, _ := unstructured.NestedFieldNoCopy(got, "metadata", "managedFields")
	gl, _ := g.([]any)
	for i := range min(len(w), len(gl)) {
		we, _ := w[i].(map[string]any)
		ge, _ := gl[i].(map[string]any)
		if _, ok := ge["time"].(string); ok {
			if wt, ok := we["time"].(string); ok {
				ge["time"] = wt
			}
		}
	}
}

// trackUpdateAsMaps is trackUpdate as it was before it gave the field
// manager Go objects: it gave it maps of them.
func (s *Server) trackUpdateAsMaps(req *request, old, obj map[string]any) (map[string]any, error) {
	fm, err := s.fieldManager(req)
	if err != nil {
		return nil, err
	}
	asMap := func(obj map[string]any) (map[string]any, error) {
		typed, err := asStored(req.res, obj)
		if err != nil {
			return nil, err
		}
		return runtime.DefaultUnstructuredConverter.ToUnstructured(typed)
	}
	live, tracked := old, obj
	if tracked, err = asMap(obj); err != nil {
		return nil, err
	}
	if old == nil {
		if live, err = asMap(map[string]any{"apiVersion": req.res.GroupVersion(), "kind": req.res.Kind}); err != nil {
			return nil, err
		}
	}
	out := fm.UpdateNoErrors(&unstructured.Unstructured{Object: live}, &unstructured.Unstructured{Object: tracked}, req.manager).(*unstructured.Unstructured)
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
