package e2e

import (
	"net/http"
	"net/url"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestFieldSelectorsAsKubeAPIServer checks field selectors against what
// kube-apiserver 1.37 answers: a selectable field absent from the object
// selects as its type's zero ("false", "0"), fields are named as in its
// field sets (a Job's status.successful counts status.succeeded, an
// event's source falls back to reportingComponent), and a label that is
// not selectable is a 400 worded as its kind's conversion words it.
func TestFieldSelectorsAsKubeAPIServer(t *testing.T) {
	t.Parallel()
	ns := htNamespace(t, "fields")
	node := ns + "-node"
	t.Cleanup(func() { htDo(t, "DELETE", "/api/v1/nodes/"+node, "", nil) })
	create := func(path string, obj map[string]any) {
		t.Helper()
		htJSON(t, "POST", path, obj, http.StatusCreated, nil)
	}
	create("/api/v1/nodes", map[string]any{"apiVersion": "v1", "kind": "Node", "metadata": map[string]any{"name": node}})
	create("/apis/batch/v1/namespaces/"+ns+"/jobs", map[string]any{"apiVersion": "batch/v1", "kind": "Job", "metadata": map[string]any{"name": "j"},
		"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"restartPolicy": "Never",
			"containers": []any{map[string]any{"name": "c", "image": "busybox"}}}}}})
	create("/api/v1/namespaces/"+ns+"/pods", map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "p"},
		"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "busybox"}}}})
	create("/api/v1/namespaces/"+ns+"/replicationcontrollers", map[string]any{"apiVersion": "v1", "kind": "ReplicationController",
		"metadata": map[string]any{"name": "rc"}, "spec": map[string]any{"replicas": 0, "selector": map[string]any{"a": "b"},
			"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"a": "b"}},
				"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "busybox"}}}}}})
	create("/api/v1/namespaces/"+ns+"/events", map[string]any{"apiVersion": "v1", "kind": "Event", "metadata": map[string]any{"name": "e"},
		"involvedObject": map[string]any{"kind": "Pod", "name": "p", "namespace": ns}, "reportingComponent": "ctl", "reportingInstance": "i",
		"reason": "R", "type": "Normal", "message": "m"})
	create("/api/v1/namespaces/"+ns+"/services", map[string]any{"apiVersion": "v1", "kind": "Service", "metadata": map[string]any{"name": "s"},
		"spec": map[string]any{"type": "NodePort", "ports": []any{map[string]any{"port": 80}}}})

	for _, tc := range []struct {
		collection, selector string
		want                 []string
	}{
		{"/api/v1/nodes", "spec.unschedulable=false,metadata.name=" + node, []string{node}},
		{"/api/v1/nodes", "spec.unschedulable=,metadata.name=" + node, nil},
		{"/apis/batch/v1/namespaces/" + ns + "/jobs", "status.successful=0", []string{"j"}},
		{"/api/v1/namespaces/" + ns + "/replicationcontrollers", "status.replicas=0", []string{"rc"}},
		{"/api/v1/namespaces/" + ns + "/pods", "spec.hostNetwork=false", []string{"p"}},
		{"/api/v1/namespaces/" + ns + "/pods", "status.podIPs=", []string{"p"}},
		{"/api/v1/namespaces/" + ns + "/events", "source=ctl", []string{"e"}},
		{"/apis/events.k8s.io/v1/namespaces/" + ns + "/events", "regarding.kind=Pod,regarding.name=p,reportingController=ctl", []string{"e"}},
		{"/api/v1/namespaces/" + ns + "/services", "spec.type=NodePort", []string{"s"}},
	} {
		var list htList
		htJSON(t, "GET", tc.collection+"?fieldSelector="+url.QueryEscape(tc.selector), nil, http.StatusOK, &list)
		if got := list.names(); !slices.Equal(got, tc.want) {
			t.Errorf("%s with %s: %v, want %v", tc.collection, tc.selector, got, tc.want)
		}
	}

	for _, tc := range []struct{ collection, label, message string }{
		{"/api/v1/namespaces/" + ns + "/configmaps", "spec.x", `"spec.x" is not a known field selector: only "metadata.name", "metadata.namespace"`},
		{"/apis/apps/v1/namespaces/" + ns + "/replicasets", "status.replicas", `"status.replicas" is not a known field selector: only "metadata.name", "metadata.namespace"`},
		{"/api/v1/namespaces/" + ns + "/pods", "spec.x", "field label not supported: spec.x"},
		{"/apis/events.k8s.io/v1/namespaces/" + ns + "/events", "involvedObject.kind", "field label not supported: involvedObject.kind"},
		{"/apis/batch/v1/namespaces/" + ns + "/jobs", "status.succeeded", `field label "status.succeeded" not supported for Job`},
	} {
		for _, query := range []string{"?", "?watch=1&"} {
			var st metav1.Status
			htJSON(t, "GET", tc.collection+query+"fieldSelector="+url.QueryEscape(tc.label+"=1"), nil, http.StatusBadRequest, &st)
			if st.Reason != metav1.StatusReasonBadRequest || st.Message != tc.message || st.Details != nil {
				t.Errorf("%s%s%s: %+v, want %q", tc.collection, query, tc.label, st, tc.message)
			}
		}
	}
}
