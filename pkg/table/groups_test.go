package table

import (
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestRowsAsKubeAPIServer compares the rows of objects of the other
// default groups' kinds with kube-apiserver 1.37's: testdata/rows.json
// holds, by group/resource, an object it stored and the cells of its row
// in kube-apiserver's Table, both without the creation time (the ages are
// "<unknown>") and a DeviceTaintRule's taint without timeAdded.
func TestRowsAsKubeAPIServer(t *testing.T) {
	data, err := os.ReadFile("testdata/rows.json")
	if err != nil {
		t.Fatal(err)
	}
	var recorded map[string]struct {
		Object json.RawMessage
		Cells  []any
	}
	if err := json.Unmarshal(data, &recorded); err != nil {
		t.Fatal(err)
	}
	for key, r := range recorded {
		group, resource, _ := strings.Cut(key, "/")
		if got := cells(t, group, resource, string(r.Object), time.Now()); !reflect.DeepEqual(got, r.Cells) {
			t.Errorf("%s:\n got %#v\nwant %#v", key, got, r.Cells)
		}
	}
}

// TestHPAMetrics checks the Targets cell of metrics of each type.
func TestHPAMetrics(t *testing.T) {
	obj := `{"metadata":{"name":"h"},"spec":{"scaleTargetRef":{"kind":"StatefulSet","name":"db"},"maxReplicas":3,"metrics":[` +
		`{"type":"External","external":{"metric":{"name":"q"},"target":{"type":"AverageValue","averageValue":"30"}}},` +
		`{"type":"Object","object":{"metric":{"name":"rps"},"describedObject":{"kind":"Service","name":"s"},"target":{"type":"Value","value":"2k"}}},` +
		`{"type":"ContainerResource","containerResource":{"name":"memory","container":"c","target":{"type":"AverageValue","averageValue":"1Gi"}}}]},` +
		`"status":{"currentMetrics":[{"type":"External","external":{"metric":{"name":"q"},"current":{"averageValue":"12"}}}]}}`
	want := []any{"h", "StatefulSet/db", "12/30 (avg), <unknown>/2k + 1 more...", "<unset>", 3.0, 0.0, "<unknown>"}
	if got := cells(t, "autoscaling", "horizontalpodautoscalers", obj, time.Now()); !reflect.DeepEqual(got, want) {
		t.Errorf("got %#v\nwant %#v", got, want)
	}
}
