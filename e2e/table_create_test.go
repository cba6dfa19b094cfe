package e2e

import (
	"encoding/json"
	"net/http"
	"testing"
)

// TestCreateAsTable: a create asked for only as a Table is answered as
// kube-apiserver 1.37 answers it: a ConfigMap's as a Table of the created
// object (201), a SelfSubjectAccessReview's, an action that has no Table,
// 406 in its words.
func TestCreateAsTable(t *testing.T) {
	ns := htNamespace(t, "createtable")
	const accept = "application/json;as=Table;v=v1;g=meta.k8s.io"
	body := `{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","spec":{"resourceAttributes":{"verb":"get","resource":"pods"}}}`
	resp, data := htDo(t, "POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", "application/json", []byte(body), "Accept", accept)
	var st struct{ Message, Reason string }
	json.Unmarshal(data, &st)
	const want = "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf"
	if resp.StatusCode != http.StatusNotAcceptable || st.Reason != "NotAcceptable" || st.Message != want {
		t.Errorf("SelfSubjectAccessReview as Table: %d %s, want (kube-apiserver's) 406 %s", resp.StatusCode, data, want)
	}
	resp, data = htDo(t, "POST", "/api/v1/namespaces/"+ns+"/configmaps", "application/json", []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"tbl"}}`),
		"Accept", accept)
	var table struct {
		Kind, APIVersion string
		Rows             []struct {
			Cells  []any
			Object struct {
				Kind     string
				Metadata struct{ Name string }
			}
		}
	}
	json.Unmarshal(data, &table)
	if resp.StatusCode != http.StatusCreated || table.Kind != "Table" || table.APIVersion != "meta.k8s.io/v1" || len(table.Rows) != 1 ||
		table.Rows[0].Cells[0] != "tbl" || table.Rows[0].Object.Kind != "PartialObjectMetadata" || table.Rows[0].Object.Metadata.Name != "tbl" {
		t.Errorf("ConfigMap create as Table: %d %s, want (kube-apiserver's) 201 and a Table of one row", resp.StatusCode, data)
	}
}
