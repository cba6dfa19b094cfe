package e2e

import (
	"encoding/json"
	"fmt"
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

// statusMetadataPatch is merged through /status; kubeStatusMetadata are
// the labels (of the request's, "l"), annotations, finalizers and owners
// kube-apiserver 1.37 keeps from it: all for a namespace (its status
// strategy resets the spec only), all but the labels for a deployment, and
// the status it carries.
// The owner (%s) is one that exists, that the garbage collector leaves
// them.
const statusMetadataPatch = `{"metadata":{"labels":{"l":"v"},"annotations":{"a":"b"},"finalizers":["example.com/f"],` +
	`"ownerReferences":[%s]},"spec":{"replicas":5,"finalizers":["x/y"]},"status":{"observedGeneration":7,"phase":"Active"}}`

var kubeStatusMetadata = map[string]string{
	"namespace":  `label "v" annotations map[a:b] finalizers [example.com/f] owners 1 spec.finalizers [kubernetes]`,
	"deployment": `label "" annotations map[a:b] finalizers [example.com/f] owners 1 spec.replicas 1 observedGeneration 7`,
}

// TestStatusWriteMetadata: a merge patch of /status keeps the metadata it
// carries but for what the kind's status strategy resets.
func TestStatusWriteMetadata(t *testing.T) {
	ns := htNamespace(t, "statusmeta")
	htDo(t, "PATCH", "/apis/apps/v1/namespaces/"+ns+"/deployments/d1?fieldManager=m", "application/apply-patch+yaml", []byte(statusAppliedDeployment))
	owner := func(apiVersion, kind, path string) string {
		var o htObject
		htJSON(t, "GET", path, nil, http.StatusOK, &o)
		return fmt.Sprintf(`{"apiVersion":%q,"kind":%q,"name":%q,"uid":%q}`, apiVersion, kind, o.Metadata.Name, o.Metadata.UID)
	}
	for kind, path := range map[string]string{"namespace": "/api/v1/namespaces/" + ns, "deployment": "/apis/apps/v1/namespaces/" + ns + "/deployments/d1"} {
		ref := owner("rbac.authorization.k8s.io/v1", "ClusterRole", "/apis/rbac.authorization.k8s.io/v1/clusterroles/admin")
		if kind == "deployment" {
			ref = owner("v1", "ConfigMap", "/api/v1/namespaces/"+ns+"/configmaps/"+rootCAConfigMap)
		}
		resp, data := htDo(t, "PATCH", path+"/status", "application/merge-patch+json", []byte(fmt.Sprintf(statusMetadataPatch, ref)))
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d %s", path, resp.StatusCode, data)
		}
		var o struct {
			Metadata struct {
				Labels          map[string]string
				Annotations     map[string]string
				Finalizers      []string
				OwnerReferences []any
			}
			Spec struct {
				Replicas   *int
				Finalizers []string
			}
			Status struct{ ObservedGeneration int }
		}
		htJSON(t, "GET", path, nil, http.StatusOK, &o)
		got := fmt.Sprintf("label %q annotations %v finalizers %v owners %d", o.Metadata.Labels["l"], o.Metadata.Annotations, o.Metadata.Finalizers, len(o.Metadata.OwnerReferences))
		if kind == "namespace" {
			got += fmt.Sprintf(" spec.finalizers %v", o.Spec.Finalizers)
		} else {
			got += fmt.Sprintf(" spec.replicas %d observedGeneration %d", *o.Spec.Replicas, o.Status.ObservedGeneration)
		}
		if got != kubeStatusMetadata[kind] {
			t.Errorf("%s after a /status merge patch:\n%s\nwant (kube-apiserver's)\n%s", kind, got, kubeStatusMetadata[kind])
		}
		// Let the namespace and the deployment go.
		htDo(t, "PATCH", path, "application/merge-patch+json", []byte(`{"metadata":{"finalizers":null,"ownerReferences":null}}`))
	}
}
