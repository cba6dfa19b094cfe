package e2e

import (
	"encoding/json"
	"net/http"
	"os"
	"reflect"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestNamespacesNoDeleteCollection checks that namespaces cannot be deleted
// by collection, which would bypass the protection of the system
// namespaces: kube-apiserver does not serve the verb (405), even in a dry
// run, and kube-public stays.
func TestNamespacesNoDeleteCollection(t *testing.T) {
	t.Parallel()
	want := `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",` +
		`"message":"the server does not allow this method on the requested resource","reason":"MethodNotAllowed","details":{},"code":405}`
	for _, path := range []string{
		"/api/v1/namespaces?labelSelector=kubernetes.io/metadata.name=kube-public",
		"/api/v1/namespaces?dryRun=All",
	} {
		resp, data := htDo(t, "DELETE", path, "", nil)
		if resp.StatusCode != http.StatusMethodNotAllowed || string(data) != want {
			t.Errorf("DELETE %s: %d %s, want 405 %s", path, resp.StatusCode, data, want)
		}
	}
	var ns struct {
		Metadata metav1.ObjectMeta      `json:"metadata"`
		Status   struct{ Phase string } `json:"status"`
	}
	htJSON(t, "GET", "/api/v1/namespaces/kube-public", nil, http.StatusOK, &ns)
	if ns.Metadata.DeletionTimestamp != nil || ns.Status.Phase != "Active" {
		t.Errorf("kube-public: %+v", ns)
	}
	var list metav1.APIResourceList
	htJSON(t, "GET", "/api/v1", nil, http.StatusOK, &list)
	for _, r := range list.APIResources {
		if r.Name == "namespaces" {
			if data, _ := json.Marshal(r.Verbs); string(data) != `["create","delete","get","list","patch","update","watch"]` {
				t.Errorf("namespaces' verbs: %s", data)
			}
		}
	}
}

// TestDiscoveryMatchesKubeAPIServer compares the discovery documents of the
// built-in groups with kube-apiserver 1.37's, byte for byte as JSON values:
// names, verbs, short names, categories, storageVersionHash, subresources
// and their order. testdata/discovery.json holds the reference's
// /apis, /apis/<group>, /api/v1 and /apis/<group>/<version> for the groups
// watchcache serves, each list without what watchcache does not serve
// (other groups; componentstatuses, pods/exec, pods/log, ... in /api/v1).
// The documents of a group version were recorded with
// `kubectl get --raw <path>` and those lists filtered.
func TestDiscoveryMatchesKubeAPIServer(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("testdata/discovery.json")
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]map[string]any
	if err := json.Unmarshal(data, &want); err != nil {
		t.Fatal(err)
	}
	for path, doc := range want {
		var got map[string]any
		htJSON(t, "GET", path, nil, http.StatusOK, &got)
		if path == "/apis" {
			// Other tests add groups of custom resources.
			groups, _ := got["groups"].([]any)
			got["groups"] = slices.DeleteFunc(groups, func(g any) bool { return want["/apis/"+g.(map[string]any)["name"].(string)] == nil })
		}
		if !reflect.DeepEqual(got, doc) {
			g, _ := json.MarshalIndent(got, "", " ")
			w, _ := json.MarshalIndent(doc, "", " ")
			t.Errorf("%s:\n%s\nwant\n%s", path, g, w)
		}
	}
}
