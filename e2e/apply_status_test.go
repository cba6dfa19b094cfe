package e2e

import (
	"encoding/json"
	"net/http"
	"testing"
)

// statusAppliedDeployment is applied to a deployment's main resource with
// a status, then its status alone to /status, by the same manager.
const (
	statusAppliedDeployment = `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d1"},"spec":{"selector":{"matchLabels":{"app":"d1"}},` +
		`"template":{"metadata":{"labels":{"app":"d1"}},"spec":{"containers":[{"name":"c","image":"nginx"}]}}},` +
		`"status":{"conditions":[{"type":"Available","status":"True"}]}}`
	statusAppliedStatus = `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d1"},"status":{"conditions":[{"type":"Available","status":"True"}]}}`
)

// kubeStatusApplyFields are the managedFields kube-apiserver 1.37 records
// for them (manager, subresource, fieldsV1): the main resource's apply
// owns no status (its strategy resets it), /status's owns no spec.
var kubeStatusApplyFields = []string{
	`m  {"f:spec":{"f:selector":{},"f:template":{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"c\"}":{".":{},"f:image":{},"f:name":{}}}}}}}`,
	`m status {"f:status":{"f:conditions":{"k:{\"type\":\"Available\"}":{".":{},"f:status":{},"f:type":{}}}}}`,
}

// TestApplyStatusResetFields: an apply records ownership only of the
// fields its (sub)resource may change, as kube-apiserver's field manager
// resets the fields the strategy resets before recording them. An apply of
// a deployment with a status owns none of it, so the same manager's apply
// of /status then has no conflict.
func TestApplyStatusResetFields(t *testing.T) {
	ns := htNamespace(t, "applystatus")
	path := "/apis/apps/v1/namespaces/" + ns + "/deployments/d1"
	for _, step := range []struct{ path, body string }{
		{path, statusAppliedDeployment},
		{path + "/status", statusAppliedStatus},
	} {
		resp, data := htDo(t, "PATCH", step.path+"?fieldManager=m", "application/apply-patch+yaml", []byte(step.body))
		if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusCreated {
			t.Fatalf("apply %s: %d %s", step.path, resp.StatusCode, data)
		}
	}
	var d struct {
		Metadata struct {
			ManagedFields []struct {
				Manager, Subresource string
				FieldsV1             json.RawMessage
			}
		}
		Status map[string]any
	}
	htJSON(t, "GET", path, nil, http.StatusOK, &d)
	var got []string
	for _, f := range d.Metadata.ManagedFields {
		got = append(got, f.Manager+" "+f.Subresource+" "+string(f.FieldsV1))
	}
	if len(got) != len(kubeStatusApplyFields) {
		t.Fatalf("managedFields:\n%q\nwant (kube-apiserver's)\n%q", got, kubeStatusApplyFields)
	}
	for i := range got {
		if got[i] != kubeStatusApplyFields[i] {
			t.Errorf("managedFields[%d]:\n%s\nwant (kube-apiserver's)\n%s", i, got[i], kubeStatusApplyFields[i])
		}
	}
	if _, ok := d.Status["conditions"]; !ok {
		t.Errorf("status = %v", d.Status)
	}
}
