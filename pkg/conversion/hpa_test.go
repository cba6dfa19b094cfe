package conversion

import (
	"encoding/json"
	"os"
	"reflect"
	"testing"
)

// hpaRecording is what e2e/testdata/hpa-v1.json recorded from
// kube-apiserver 1.37 (see its _comment).
type hpaRecording struct {
	V2            json.RawMessage   `json:"v2"`
	V1            json.RawMessage   `json:"v1"`
	V2AfterV1Put  json.RawMessage   `json:"v2AfterV1Put"`
	V1Created     []json.RawMessage `json:"v1Created"`
	V1CreatedAsV2 []json.RawMessage `json:"v1CreatedAsV2"`
}

func readHPARecording(t *testing.T) hpaRecording {
	t.Helper()
	data, err := os.ReadFile("../../e2e/testdata/hpa-v1.json")
	if err != nil {
		t.Fatal(err)
	}
	var rec hpaRecording
	if err := json.Unmarshal(data, &rec); err != nil {
		t.Fatal(err)
	}
	return rec
}

// asJSON decodes a JSON object without its resourceVersion and
// generation (which the storage and the strategy set, not the
// conversion).
func asJSON(t *testing.T, data []byte) map[string]any {
	t.Helper()
	var obj map[string]any
	if err := json.Unmarshal(data, &obj); err != nil {
		t.Fatalf("%v: %s", err, data)
	}
	meta, _ := obj["metadata"].(map[string]any)
	delete(meta, "resourceVersion")
	delete(meta, "generation")
	return obj
}

func checkConverted(t *testing.T, what string, convert func([]byte) ([]byte, error), in, want []byte) []byte {
	t.Helper()
	got, err := convert(in)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if g, w := asJSON(t, got), asJSON(t, want); !reflect.DeepEqual(g, w) {
		t.Errorf("%s:\n%s\nwant\n%s", what, got, want)
	}
	return got
}

// The conversions give what kube-apiserver gave: a v2 HPA with two
// metrics, a behavior, current metrics and conditions read as v1 (the
// annotations), that v1 object converted back (the CPU metric last), and
// v1 HPAs created with and without a CPU target read as v2 (80% CPU by
// default).
func TestHPAConversionMatchesKubeAPIServer(t *testing.T) {
	rec := readHPARecording(t)
	v1 := checkConverted(t, "v2 read as v1", hpas{}.FromStorage, rec.V2, rec.V1)
	back := checkConverted(t, "v1 written back", hpas{}.ToStorage, v1, rec.V2AfterV1Put)
	checkConverted(t, "v1 written back, read as v1", hpas{}.FromStorage, back, rec.V1)
	for i, created := range rec.V1Created {
		stored := checkConverted(t, "v1 created, read as v2", hpas{}.ToStorage, created, rec.V1CreatedAsV2[i])
		checkConverted(t, "v1 created, read as v1", hpas{}.FromStorage, stored, created)
	}
}

// Every metric source and status survives v2 → v1 → v2 (values v1 has
// no pointer for come back as zero quantities, as kube-apiserver's do).
func TestHPAConversionAllMetricTypes(t *testing.T) {
	stored := []byte(`{"kind":"HorizontalPodAutoscaler","apiVersion":"autoscaling/v2","metadata":{"name":"h","namespace":"ns"},` +
		`"spec":{"scaleTargetRef":{"kind":"Deployment","name":"d","apiVersion":"apps/v1"},"minReplicas":1,"maxReplicas":3,"metrics":[` +
		`{"type":"Object","object":{"describedObject":{"kind":"Service","name":"s","apiVersion":"v1"},"metric":{"name":"rps"},"target":{"type":"Value","value":"10"}}},` +
		`{"type":"External","external":{"metric":{"name":"queue","selector":{"matchLabels":{"q":"a"}}},"target":{"type":"AverageValue","averageValue":"30"}}},` +
		`{"type":"ContainerResource","containerResource":{"name":"memory","container":"app","target":{"type":"Utilization","averageUtilization":50}}},` +
		`{"type":"Resource","resource":{"name":"memory","target":{"type":"AverageValue","averageValue":"1Gi"}}}]},` +
		`"status":{"desiredReplicas":0,"currentMetrics":[` +
		`{"type":"Object","object":{"metric":{"name":"rps"},"current":{"value":"5"},"describedObject":{"kind":"Service","name":"s","apiVersion":"v1"}}},` +
		`{"type":"External","external":{"metric":{"name":"queue"},"current":{"value":"0","averageValue":"3"}}},` +
		`{"type":"ContainerResource","containerResource":{"name":"memory","container":"app","current":{"averageValue":"0","averageUtilization":20}}}]}}`)
	served, err := hpas{}.FromStorage(stored)
	if err != nil {
		t.Fatal(err)
	}
	var v1 struct {
		Metadata struct{ Annotations map[string]string }
		Spec     map[string]any
	}
	json.Unmarshal(served, &v1)
	if v1.Spec["targetCPUUtilizationPercentage"] != nil || v1.Metadata.Annotations[hpaMetricsAnnotation] == "" ||
		v1.Metadata.Annotations[hpaCurrentMetricsAnnotation] == "" || len(v1.Metadata.Annotations) != 2 {
		t.Errorf("v1: %s", served)
	}
	back, err := hpas{}.ToStorage(served)
	if err != nil {
		t.Fatal(err)
	}
	if g, w := asJSON(t, back), asJSON(t, stored); !reflect.DeepEqual(g, w) {
		t.Errorf("round trip:\n%s\nwant\n%s", back, stored)
	}
}

// A behavior annotation written by hand gets autoscaling/v2's defaults;
// a malformed one is dropped; v2 objects never keep the annotations.
func TestHPABehaviorAnnotation(t *testing.T) {
	for ann, want := range map[string]string{
		`{"ScaleDown":{"StabilizationWindowSeconds":30}}`: `{"scaleUp":{"stabilizationWindowSeconds":0,"selectPolicy":"Max","policies":[{"type":"Pods","value":4,"periodSeconds":15},{"type":"Percent","value":100,"periodSeconds":15}]},` +
			`"scaleDown":{"stabilizationWindowSeconds":30,"selectPolicy":"Max","policies":[{"type":"Percent","value":100,"periodSeconds":15}]}}`,
		`{"ScaleDown":`: `null`,
		`{}`:            `null`,
	} {
		data, _ := json.Marshal(ann)
		served := `{"apiVersion":"autoscaling/v1","kind":"HorizontalPodAutoscaler","metadata":{"name":"h","annotations":{"` + hpaBehaviorAnnotation + `":` + string(data) + `}},` +
			`"spec":{"scaleTargetRef":{"kind":"Deployment","name":"d"},"maxReplicas":3}}`
		stored, err := hpas{}.ToStorage([]byte(served))
		if err != nil {
			t.Fatal(err)
		}
		var v2 struct {
			Metadata map[string]any
			Spec     struct{ Behavior json.RawMessage }
		}
		json.Unmarshal(stored, &v2)
		if v2.Metadata["annotations"] != nil || string(v2.Spec.Behavior) != want && !(want == "null" && v2.Spec.Behavior == nil) {
			t.Errorf("%s: %s, want behavior %s", ann, stored, want)
		}
	}
}
