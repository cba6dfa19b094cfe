package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// hpaV1Recording is testdata/hpa-v1.json, recorded from kube-apiserver
// 1.37 in namespace hpav1-wt (see its _comment).
type hpaV1Recording struct {
	V2Create      map[string]any   `json:"v2Create"`
	V2Status      map[string]any   `json:"v2Status"`
	V2            map[string]any   `json:"v2"`
	V1            map[string]any   `json:"v1"`
	V1Put         map[string]any   `json:"v1Put"`
	V2AfterV1Put  map[string]any   `json:"v2AfterV1Put"`
	V1Creates     []map[string]any `json:"v1Creates"`
	V1Created     []map[string]any `json:"v1Created"`
	V1CreatedAsV2 []map[string]any `json:"v1CreatedAsV2"`
	TableColumns  []any            `json:"tableColumns"`
	TableRows     [][]any          `json:"tableRows"`
}

// hpaComparable is an object as compared with the recording: in namespace
// ns, without uid, creationTimestamp, resourceVersion and managedFields'
// times.
func hpaComparable(t *testing.T, obj map[string]any, ns string) map[string]any {
	t.Helper()
	data, _ := json.Marshal(obj)
	data = []byte(strings.ReplaceAll(string(data), `"hpav1-wt"`, `"`+ns+`"`))
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	meta, _ := out["metadata"].(map[string]any)
	for _, f := range []string{"uid", "creationTimestamp", "resourceVersion"} {
		delete(meta, f)
	}
	// Without times, entries written in the same second sort otherwise.
	managed, _ := meta["managedFields"].([]any)
	for _, m := range managed {
		delete(m.(map[string]any), "time")
	}
	slices.SortFunc(managed, func(a, b any) int {
		return strings.Compare(fmt.Sprint(a.(map[string]any)["manager"], a.(map[string]any)["subresource"]),
			fmt.Sprint(b.(map[string]any)["manager"], b.(map[string]any)["subresource"]))
	})
	return out
}

// hpaCompare compares got with the recording, both without the metadata
// fields of ignore (the differences left, see the test).
func hpaCompare(t *testing.T, what string, got, want map[string]any, ns string, ignore ...string) {
	t.Helper()
	g, w := hpaComparable(t, got, ns), hpaComparable(t, want, ns)
	for _, f := range ignore {
		delete(g["metadata"].(map[string]any), f)
		delete(w["metadata"].(map[string]any), f)
	}
	if !reflect.DeepEqual(g, w) {
		gj, _ := json.MarshalIndent(g, "", " ")
		wj, _ := json.MarshalIndent(w, "", " ")
		t.Errorf("%s:\n%s\nwant (kube-apiserver's)\n%s", what, gj, wj)
	}
}

// TestHorizontalPodAutoscalersV1 replays testdata/hpa-v1.json: a v2 HPA
// with a CPU utilization and a pods metric, a behavior, current metrics
// and conditions, read as autoscaling/v1, is the reference's (what v1
// cannot express in its annotations); that v1 object written back loses
// nothing (the CPU metric comes last, as there); v1 HPAs created read as
// v2 as there; the Table of autoscaling/v1 HPAs has the same columns and
// cells.
//
// Differences left: an update through v1 that changes nothing of the v1
// object but the v2 metrics' order does not bump the generation (kube-
// apiserver compares the internal specs) and loses the managedFields
// entries of autoscaling/v2 (the field manager of v1 does not convert
// them); a v1 create without targetCPUUtilizationPercentage does not
// record it in managedFields (kube-apiserver records the defaulted,
// converted object's fields).
func TestHorizontalPodAutoscalersV1(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("testdata/hpa-v1.json")
	if err != nil {
		t.Fatal(err)
	}
	var rec hpaV1Recording
	if err := json.Unmarshal(data, &rec); err != nil {
		t.Fatal(err)
	}
	ns := htNamespace(t, "hpav1")
	v1Path, v2Path := "/apis/autoscaling/v1/namespaces/"+ns+"/horizontalpodautoscalers", "/apis/autoscaling/v2/namespaces/"+ns+"/horizontalpodautoscalers"
	inNS := func(obj map[string]any) map[string]any { return hpaComparable(t, obj, ns) }

	var v2 map[string]any
	htJSON(t, "POST", v2Path+"?fieldManager=kubectl-create", inNS(rec.V2Create), http.StatusCreated, &v2)
	v2["status"] = rec.V2Status
	htJSON(t, "PUT", v2Path+"/two-metrics/status?fieldManager=kubectl", v2, http.StatusOK, &v2)
	hpaCompare(t, "v2 with its status", v2, rec.V2, ns)

	var v1 map[string]any
	htJSON(t, "GET", v1Path+"/two-metrics", nil, http.StatusOK, &v1)
	hpaCompare(t, "v2 read as v1", v1, rec.V1, ns)
	var put map[string]any
	htJSON(t, "PUT", v1Path+"/two-metrics?fieldManager=kubectl", v1, http.StatusOK, &put)
	hpaCompare(t, "v1 written back", put, rec.V1Put, ns, "generation", "managedFields")
	htJSON(t, "GET", v2Path+"/two-metrics", nil, http.StatusOK, &v2)
	hpaCompare(t, "v1 written back, read as v2", v2, rec.V2AfterV1Put, ns, "generation", "managedFields")

	for i, body := range rec.V1Creates {
		var created, asV2 map[string]any
		var ignore []string
		if body["spec"].(map[string]any)["targetCPUUtilizationPercentage"] == nil {
			ignore = []string{"managedFields"}
		}
		htJSON(t, "POST", v1Path+"?fieldManager=kubectl", inNS(body), http.StatusCreated, &created)
		hpaCompare(t, "v1 created", created, rec.V1Created[i], ns, ignore...)
		htJSON(t, "GET", v2Path+"/"+rec.V1Created[i]["metadata"].(map[string]any)["name"].(string), nil, http.StatusOK, &asV2)
		hpaCompare(t, "v1 created, read as v2", asV2, rec.V1CreatedAsV2[i], ns, ignore...)
	}

	resp, got := htDo(t, "GET", v1Path, "", nil, "Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("Table: %d %s", resp.StatusCode, got)
	}
	var table struct {
		ColumnDefinitions []any `json:"columnDefinitions"`
		Rows              []struct {
			Cells []any `json:"cells"`
		} `json:"rows"`
	}
	if err := json.Unmarshal(got, &table); err != nil {
		t.Fatal(err)
	}
	var rows [][]any
	for _, r := range table.Rows {
		rows = append(rows, r.Cells[:len(r.Cells)-1]) // without Age
	}
	if !reflect.DeepEqual(table.ColumnDefinitions, rec.TableColumns) || !reflect.DeepEqual(rows, rec.TableRows) {
		t.Errorf("Table: %v %v, want %v %v", table.ColumnDefinitions, rows, rec.TableColumns, rec.TableRows)
	}
}
