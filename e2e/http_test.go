package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/watchcache/watchcache/pkg/app"
	"github.com/watchcache/watchcache/pkg/storage"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// htDo sends a request to testServer and returns the response with its
// whole body read.
func htDo(t testing.TB, method, path, contentType string, body []byte, header ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, testServer.URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := htClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the body: %v", method, path, err)
	}
	return resp, data
}

// htJSON sends a request expecting code and decodes the JSON answer into out
// (if not nil).
func htJSON(t testing.TB, method, path string, body any, code int, out any) *http.Response {
	t.Helper()
	var data []byte
	contentType := ""
	if body != nil {
		var err error
		if data, err = json.Marshal(body); err != nil {
			t.Fatal(err)
		}
		contentType = "application/json"
	}
	resp, got := htDo(t, method, path, contentType, data)
	if resp.StatusCode != code {
		t.Fatalf("%s %s: %d %s, want %d", method, path, resp.StatusCode, got, code)
	}
	if out != nil {
		if err := json.Unmarshal(got, out); err != nil {
			t.Fatalf("%s %s: the answer is not JSON: %v: %s", method, path, err, got)
		}
	}
	return resp
}

// htObject is the part of an object these tests look at.
type htObject struct {
	Kind       string            `json:"kind"`
	APIVersion string            `json:"apiVersion"`
	Metadata   metav1.ObjectMeta `json:"metadata"`
}

// htList is a list answer.
type htList struct {
	Kind       string          `json:"kind"`
	APIVersion string          `json:"apiVersion"`
	Metadata   metav1.ListMeta `json:"metadata"`
	Items      []htObject      `json:"items"`
}

// names returns the names of a list's items without rootCAConfigMap.
func (l *htList) names() []string {
	var names []string
	for _, item := range l.Items {
		names = append(names, item.Metadata.Name)
	}
	return withoutRootCA(names)
}

// htNamespace creates a namespace over HTTP, waits for its rootCAConfigMap,
// and deletes it when the test ends.
func htNamespace(t testing.TB, prefix string) string {
	t.Helper()
	var ns htObject
	htJSON(t, "POST", "/api/v1/namespaces", map[string]any{"apiVersion": "v1", "kind": "Namespace",
		"metadata": map[string]any{"generateName": prefix + "-"}}, http.StatusCreated, &ns)
	t.Cleanup(func() { htDo(t, "DELETE", "/api/v1/namespaces/"+ns.Metadata.Name, "", nil) })
	waitForRootCA(t, ns.Metadata.Name)
	return ns.Metadata.Name
}

func htConfigMapBody(name string, data map[string]string) map[string]any {
	return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name}, "data": data}
}

// TestHTTPStatus checks that failures are answered with the Status
// kube-apiserver gives, and that no failed request writes anything.
func TestHTTPStatus(t *testing.T) {
	t.Parallel()
	ns := htNamespace(t, "status")
	cms := "/api/v1/namespaces/" + ns + "/configmaps"
	widgets := "/apis/example.com/v1/namespaces/" + ns + "/widgets"

	var existing, conflict, w1 htObject
	htJSON(t, "POST", cms, htConfigMapBody("existing", map[string]string{"k": "v"}), http.StatusCreated, &existing)
	htJSON(t, "POST", cms, htConfigMapBody("conflict", map[string]string{"k": "v"}), http.StatusCreated, &conflict)
	staleRV := conflict.Metadata.ResourceVersion
	var updated htObject
	htJSON(t, "PUT", cms+"/conflict", map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "conflict", "resourceVersion": staleRV}, "data": map[string]string{"k": "v2"}}, http.StatusOK, &updated)
	htJSON(t, "POST", widgets, map[string]any{"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w1"}, "spec": map[string]any{"color": "red"}}, http.StatusCreated, &w1)
	// A continue token of this namespace's configmaps.
	var page htList
	htJSON(t, "GET", cms+"?limit=1", nil, http.StatusOK, &page)
	if page.Metadata.Continue == "" {
		t.Fatalf("a list of 2 with limit 1 has no continue token: %+v", page)
	}
	token := url.QueryEscape(page.Metadata.Continue)
	future := "9000000000000"

	mustJSON := func(v any) []byte {
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	big := mustJSON(htConfigMapBody("big", map[string]string{"k": strings.Repeat("x", 3<<20)}))
	missingNS := ns + "-missing"

	cases := []struct {
		name        string
		method      string
		path        string
		contentType string
		body        []byte
		code        int
		reason      metav1.StatusReason
		message     string // a substring of the message
		check       func(t *testing.T, st *metav1.Status, resp *http.Response)
	}{
		{name: "get missing configmap", method: "GET", path: cms + "/missing", code: 404, reason: metav1.StatusReasonNotFound,
			message: `configmaps "missing" not found`, check: func(t *testing.T, st *metav1.Status, _ *http.Response) {
				if d := st.Details; d == nil || d.Name != "missing" || d.Kind != "configmaps" || d.Group != "" {
					t.Errorf("details: %+v", d)
				}
			}},
		{name: "get missing widget", method: "GET", path: widgets + "/missing", code: 404, reason: metav1.StatusReasonNotFound,
			message: `widgets.example.com "missing" not found`, check: func(t *testing.T, st *metav1.Status, _ *http.Response) {
				if d := st.Details; d == nil || d.Name != "missing" || d.Kind != "widgets" || d.Group != "example.com" {
					t.Errorf("details: %+v", d)
				}
			}},
		{name: "delete missing", method: "DELETE", path: cms + "/missing", code: 404, reason: metav1.StatusReasonNotFound},
		{name: "update missing", method: "PUT", path: cms + "/missing", body: mustJSON(htConfigMapBody("missing", nil)), code: 404, reason: metav1.StatusReasonNotFound},
		{name: "patch missing", method: "PATCH", path: cms + "/missing", contentType: "application/merge-patch+json", body: []byte(`{}`), code: 404, reason: metav1.StatusReasonNotFound},
		{name: "create existing", method: "POST", path: cms, body: mustJSON(htConfigMapBody("existing", nil)), code: 409,
			reason: metav1.StatusReasonAlreadyExists, message: `configmaps "existing" already exists`,
			check: func(t *testing.T, st *metav1.Status, _ *http.Response) {
				if d := st.Details; d == nil || d.Name != "existing" || d.Kind != "configmaps" {
					t.Errorf("details: %+v", d)
				}
			}},
		{name: "update at a stale resourceVersion", method: "PUT", path: cms + "/conflict", body: mustJSON(map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "conflict", "resourceVersion": staleRV}, "data": map[string]string{"k": "stale"}}),
			code: 409, reason: metav1.StatusReasonConflict, message: "the object has been modified"},
		{name: "merge patch at a stale resourceVersion", method: "PATCH", path: cms + "/conflict", contentType: "application/merge-patch+json",
			body: []byte(`{"metadata":{"resourceVersion":"` + staleRV + `"},"data":{"k":"stale"}}`), code: 409, reason: metav1.StatusReasonConflict},
		{name: "delete with a stale precondition", method: "DELETE", path: cms + "/conflict",
			body: []byte(`{"kind":"DeleteOptions","apiVersion":"v1","preconditions":{"resourceVersion":"` + staleRV + `"}}`),
			code: 409, reason: metav1.StatusReasonConflict, message: "Precondition failed"},
		{name: "malformed resourceVersion", method: "GET", path: cms + "?resourceVersion=abc", code: 400, reason: metav1.StatusReasonBadRequest, message: `invalid resourceVersion "abc"`},
		{name: "negative resourceVersion", method: "GET", path: cms + "?resourceVersion=-1", code: 400, reason: metav1.StatusReasonBadRequest, message: "resourceVersion"},
		{name: "malformed resourceVersion on get", method: "GET", path: cms + "/existing?resourceVersion=1x", code: 400, reason: metav1.StatusReasonBadRequest, message: "resourceVersion"},
		{name: "malformed resourceVersion on watch", method: "GET", path: cms + "?watch=true&resourceVersion=x", code: 400, reason: metav1.StatusReasonBadRequest, message: "resourceVersion"},
		{name: "malformed continue", method: "GET", path: cms + "?continue=garbage!!", code: 400, reason: metav1.StatusReasonBadRequest, message: "invalid continue token"},
		{name: "continue of another collection", method: "GET", path: "/api/v1/namespaces/default/configmaps?continue=" + token, code: 400,
			reason: metav1.StatusReasonBadRequest, message: "invalid continue token"},
		{name: "continue with a different resourceVersion", method: "GET", path: cms + "?resourceVersion=1&continue=" + token, code: 400,
			reason: metav1.StatusReasonBadRequest, message: "inconsistent with the continue token"},
		{name: "continue with Exact", method: "GET", path: cms + "?resourceVersion=" + page.Metadata.ResourceVersion + "&resourceVersionMatch=Exact&continue=" + token,
			code: 400, reason: metav1.StatusReasonBadRequest, message: "resourceVersionMatch is forbidden when continue is provided"},
		{name: "malformed labelSelector", method: "GET", path: cms + "?labelSelector=" + url.QueryEscape("a in ("), code: 400, reason: metav1.StatusReasonBadRequest, message: "labelSelector"},
		{name: "malformed fieldSelector", method: "GET", path: cms + "?fieldSelector=" + url.QueryEscape("metadata.name"), code: 400, reason: metav1.StatusReasonBadRequest, message: "fieldSelector"},
		{name: "unsupported field selector", method: "GET", path: cms + "?fieldSelector=" + url.QueryEscape("spec.foo=1"), code: 400, reason: metav1.StatusReasonBadRequest, message: `"spec.foo" is not a known field selector: only "metadata.name", "metadata.namespace"`},
		{name: "unsupported field selector on watch", method: "GET", path: widgets + "?watch=1&fieldSelector=" + url.QueryEscape("spec.size=1"), code: 400, reason: metav1.StatusReasonBadRequest, message: "field label not supported: spec.size"},
		{name: "Exact without resourceVersion", method: "GET", path: cms + "?resourceVersionMatch=Exact", code: 400, reason: metav1.StatusReasonBadRequest,
			message: "resourceVersionMatch is forbidden unless resourceVersion is provided"},
		{name: "NotOlderThan without resourceVersion", method: "GET", path: cms + "?resourceVersionMatch=NotOlderThan", code: 400, reason: metav1.StatusReasonBadRequest,
			message: "resourceVersionMatch is forbidden unless resourceVersion is provided"},
		{name: "Exact at 0", method: "GET", path: cms + "?resourceVersion=0&resourceVersionMatch=Exact", code: 400, reason: metav1.StatusReasonBadRequest,
			message: `resourceVersionMatch "Exact" is forbidden for resourceVersion "0"`},
		{name: "unknown resourceVersionMatch", method: "GET", path: cms + "?resourceVersion=1&resourceVersionMatch=Newest", code: 400, reason: metav1.StatusReasonBadRequest,
			message: `resourceVersionMatch "Newest" is not supported`},
		{name: "sendInitialEvents on list", method: "GET", path: cms + "?sendInitialEvents=true&resourceVersionMatch=NotOlderThan&resourceVersion=1", code: 400,
			reason: metav1.StatusReasonBadRequest, message: "sendInitialEvents is forbidden for list"},
		{name: "negative limit", method: "GET", path: cms + "?limit=-1", code: 400, reason: metav1.StatusReasonBadRequest, message: "limit"},
		{name: "malformed limit", method: "GET", path: cms + "?limit=ten", code: 400, reason: metav1.StatusReasonBadRequest, message: `invalid limit "ten"`},
		{name: "malformed timeoutSeconds", method: "GET", path: cms + "?watch=1&timeoutSeconds=soon", code: 400, reason: metav1.StatusReasonBadRequest, message: "timeoutSeconds"},
		{name: "malformed allowWatchBookmarks", method: "GET", path: cms + "?watch=1&allowWatchBookmarks=maybe", code: 400, reason: metav1.StatusReasonBadRequest, message: "allowWatchBookmarks"},
		{name: "watch sendInitialEvents without resourceVersionMatch", method: "GET", path: cms + "?watch=1&sendInitialEvents=true", code: 400,
			reason: metav1.StatusReasonBadRequest, message: `sendInitialEvents requires setting resourceVersionMatch to "NotOlderThan"`},
		{name: "watch sendInitialEvents=false without resourceVersionMatch", method: "GET", path: cms + "?watch=1&sendInitialEvents=false&resourceVersion=0", code: 400,
			reason: metav1.StatusReasonBadRequest, message: `sendInitialEvents requires setting resourceVersionMatch to "NotOlderThan"`},
		{name: "watch NotOlderThan without sendInitialEvents", method: "GET", path: cms + "?watch=1&resourceVersion=1&resourceVersionMatch=NotOlderThan", code: 400,
			reason: metav1.StatusReasonBadRequest, message: "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided"},
		{name: "watch Exact", method: "GET", path: cms + "?watch=1&resourceVersion=1&resourceVersionMatch=Exact&sendInitialEvents=true", code: 400,
			reason: metav1.StatusReasonBadRequest, message: `resourceVersionMatch "Exact" is not supported for watch`},
		{name: "watch with a method other than GET", method: "DELETE", path: cms + "?watch=1", code: 400, reason: metav1.StatusReasonBadRequest, message: "watch"},
		{name: "list at a future resourceVersion", method: "GET", path: cms + "?resourceVersionMatch=NotOlderThan&resourceVersion=" + future, code: 504,
			reason: metav1.StatusReasonTimeout, message: "Too large resource version", check: htCheckRetryAfter},
		{name: "legacy list at a future resourceVersion", method: "GET", path: widgets + "?resourceVersion=" + future, code: 504,
			reason: metav1.StatusReasonTimeout, message: "Too large resource version", check: htCheckRetryAfter},
		{name: "get at a future resourceVersion", method: "GET", path: cms + "/existing?resourceVersion=" + future, code: 504,
			reason: metav1.StatusReasonTimeout, message: "Too large resource version", check: htCheckRetryAfter},
		{name: "watch at a future resourceVersion", method: "GET", path: cms + "?watch=1&sendInitialEvents=false&resourceVersionMatch=NotOlderThan&resourceVersion=" + future, code: 504,
			reason: metav1.StatusReasonTimeout, message: "Too large resource version", check: htCheckRetryAfter},
		{name: "watch list at a future resourceVersion", method: "GET", path: cms + "?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&resourceVersion=" + future, code: 504,
			reason: metav1.StatusReasonTimeout, message: "Too large resource version", check: htCheckRetryAfter},
		{name: "body over 3 MiB", method: "POST", path: cms, body: big, code: 413, reason: metav1.StatusReasonRequestEntityTooLarge, message: "limit"},
		{name: "unknown content type", method: "POST", path: cms, contentType: "text/plain", body: mustJSON(htConfigMapBody("text", nil)), code: 415,
			reason: metav1.StatusReasonUnsupportedMediaType, message: "application/json"},
		{name: "protobuf for a custom resource", method: "POST", path: widgets, contentType: "application/vnd.kubernetes.protobuf", body: []byte("k8s\x00"), code: 415,
			reason: metav1.StatusReasonUnsupportedMediaType},
		{name: "strategic merge patch of a custom resource", method: "PATCH", path: widgets + "/w1", contentType: "application/strategic-merge-patch+json",
			body: []byte(`{"spec":{"color":"blue"}}`), code: 415, reason: metav1.StatusReasonUnsupportedMediaType, message: "application/merge-patch+json"},
		{name: "update of a custom resource without resourceVersion", method: "PUT", path: widgets + "/w1",
			body: []byte(`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w1"},"spec":{"color":"blue"}}`), code: 422, reason: metav1.StatusReasonInvalid,
			message: `widgets.example.com "w1" is invalid: metadata.resourceVersion: Invalid value: 0: must be specified for an update`},
		{name: "patch as plain JSON", method: "PATCH", path: cms + "/existing", contentType: "application/json", body: []byte(`{"data":{"k":"x"}}`), code: 415,
			reason: metav1.StatusReasonUnsupportedMediaType},
		{name: "malformed JSON", method: "POST", path: cms, contentType: "application/json", body: []byte(`{"apiVersion":"v1","kind":`), code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "JSON that is not an object", method: "POST", path: cms, contentType: "application/json", body: []byte(`["a"]`), code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "malformed JSON update", method: "PUT", path: cms + "/existing", contentType: "application/json", body: []byte(`{`), code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "malformed merge patch", method: "PATCH", path: cms + "/existing", contentType: "application/merge-patch+json", body: []byte(`{"data":`), code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "malformed JSON patch", method: "PATCH", path: cms + "/existing", contentType: "application/json-patch+json", body: []byte(`{"op":"add"}`), code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "JSON patch on a missing path", method: "PATCH", path: cms + "/existing", contentType: "application/json-patch+json",
			body: []byte(`[{"op":"replace","path":"/spec/x","value":1}]`), code: 422, reason: metav1.StatusReasonInvalid},
		{name: "strict field validation", method: "POST", path: cms + "?fieldValidation=Strict", body: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"strict"},"bogus":1}`),
			code: 400, reason: metav1.StatusReasonBadRequest, message: `ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: unknown field "bogus"`},
		{name: "field of the wrong type", method: "POST", path: cms, body: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"typed"},"data":1}`),
			code: 400, reason: metav1.StatusReasonBadRequest,
			message: `ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot unmarshal number into Go struct field ConfigMap.data of type map[string]string`},
		{name: "unknown fieldValidation", method: "POST", path: cms + "?fieldValidation=Loose", body: mustJSON(htConfigMapBody("loose", nil)), code: 400,
			reason: metav1.StatusReasonBadRequest, message: "fieldValidation"},
		{name: "invalid name", method: "POST", path: cms, body: mustJSON(htConfigMapBody("Bad_Name", nil)), code: 422, reason: metav1.StatusReasonInvalid,
			message: `ConfigMap "Bad_Name" is invalid`, check: func(t *testing.T, st *metav1.Status, _ *http.Response) {
				if d := st.Details; d == nil || d.Name != "Bad_Name" || d.Kind != "ConfigMap" || len(d.Causes) != 1 || d.Causes[0].Field != "metadata.name" ||
					d.Causes[0].Type != metav1.CauseTypeFieldValueInvalid {
					t.Errorf("details: %+v", d)
				}
			}},
		{name: "invalid widget name", method: "POST", path: widgets, body: []byte(`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"a/b"}}`),
			code: 422, reason: metav1.StatusReasonInvalid},
		{name: "no name", method: "POST", path: cms, body: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{}}`), code: 422, reason: metav1.StatusReasonInvalid,
			message: "name or generateName is required"},
		{name: "invalid namespace name", method: "POST", path: "/api/v1/namespaces", body: []byte(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"a.b"}}`),
			code: 422, reason: metav1.StatusReasonInvalid},
		{name: "create in a missing namespace", method: "POST", path: "/api/v1/namespaces/" + missingNS + "/configmaps", body: mustJSON(htConfigMapBody("orphan", nil)),
			code: 404, reason: metav1.StatusReasonNotFound, message: fmt.Sprintf(`namespaces %q not found`, missingNS),
			check: func(t *testing.T, st *metav1.Status, _ *http.Response) {
				if d := st.Details; d == nil || d.Name != missingNS || d.Kind != "namespaces" {
					t.Errorf("details: %+v", d)
				}
			}},
		{name: "create a widget in a missing namespace", method: "POST", path: "/apis/example.com/v1/namespaces/" + missingNS + "/widgets",
			body: []byte(`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"orphan"}}`), code: 404, reason: metav1.StatusReasonNotFound},
		{name: "delete namespace default", method: "DELETE", path: "/api/v1/namespaces/default", code: 403, reason: metav1.StatusReasonForbidden, message: "default"},
		{name: "namespace of the body differs", method: "POST", path: cms, body: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","namespace":"default"}}`),
			code: 400, reason: metav1.StatusReasonBadRequest, message: "namespace"},
		{name: "kind of the body differs", method: "POST", path: cms, body: []byte(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"x"}}`),
			code: 400, reason: metav1.StatusReasonBadRequest, message: "kind"},
		{name: "name of the body differs", method: "PUT", path: cms + "/existing", body: mustJSON(htConfigMapBody("other", nil)),
			code: 400, reason: metav1.StatusReasonBadRequest, message: "name"},
		{name: "uid changed by update", method: "PUT", path: cms + "/existing", body: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"existing","uid":"other"}}`),
			code: 422, reason: metav1.StatusReasonInvalid, message: "metadata.uid"},
		{name: "dryRun", method: "POST", path: cms + "?dryRun=Some", body: mustJSON(htConfigMapBody("dry", nil)), code: 422, reason: metav1.StatusReasonInvalid, message: `CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: ["Some"]: supported values: "All"`},
		{name: "unknown resource", method: "GET", path: "/api/v1/namespaces/" + ns + "/gadgets", code: 404, reason: metav1.StatusReasonNotFound},
		{name: "subresource", method: "GET", path: cms + "/existing/status", code: 404, reason: metav1.StatusReasonNotFound},
		{name: "cluster-scoped resource under a namespace", method: "GET", path: "/api/v1/namespaces/" + ns + "/nodes", code: 404, reason: metav1.StatusReasonNotFound},
		{name: "POST to an object", method: "POST", path: cms + "/existing", body: mustJSON(htConfigMapBody("existing", nil)), code: 405, reason: metav1.StatusReasonMethodNotAllowed,
			message: "the server does not allow this method on the requested resource"},
		{name: "PUT to a collection", method: "PUT", path: cms, body: mustJSON(htConfigMapBody("existing", nil)), code: 405, reason: metav1.StatusReasonMethodNotAllowed,
			message: "the server does not allow this method on the requested resource"},
	}
	// The cases run in parallel within a group that ends when they all have.
	t.Run("cases", func(t *testing.T) {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				ct := tc.contentType
				if ct == "" && tc.body != nil {
					ct = "application/json"
				}
				resp, data := htDo(t, tc.method, tc.path, ct, tc.body)
				if resp.StatusCode != tc.code {
					t.Fatalf("%s %s: %d %s, want %d", tc.method, tc.path, resp.StatusCode, htShort(data), tc.code)
				}
				if mt := resp.Header.Get("Content-Type"); mt != "application/json" {
					t.Errorf("Content-Type %q", mt)
				}
				var st metav1.Status
				if err := json.Unmarshal(data, &st); err != nil {
					t.Fatalf("the answer is not a Status: %v: %s", err, data)
				}
				if st.Kind != "Status" || st.APIVersion != "v1" || st.Status != metav1.StatusFailure || st.Code != int32(tc.code) {
					t.Errorf("Status: %s", data)
				}
				if tc.reason != "" && st.Reason != tc.reason {
					t.Errorf("reason %q, want %q: %s", st.Reason, tc.reason, data)
				}
				if !strings.Contains(st.Message, tc.message) {
					t.Errorf("message %q does not contain %q", st.Message, tc.message)
				}
				if tc.check != nil {
					tc.check(t, &st, resp)
				}
			})
		}
	})

	t.Run("expired", func(t *testing.T) {
		t.Skip("the e2e server has no compaction and app.App does not expose its etcd: 410 Expired for a list at a compacted revision is covered by pkg/storage tests")
	})

	// No failed request wrote anything.
	var list htList
	htJSON(t, "GET", cms, nil, http.StatusOK, &list)
	if names := list.names(); !slices.Equal(names, []string{"conflict", "existing"}) {
		t.Errorf("configmaps after the failed requests: %v", names)
	}
	for _, item := range list.Items {
		want, ok := map[string]string{"existing": existing.Metadata.ResourceVersion, "conflict": updated.Metadata.ResourceVersion}[item.Metadata.Name]
		if ok && item.Metadata.ResourceVersion != want {
			t.Errorf("%s was written by a failed request: resourceVersion %s, want %s", item.Metadata.Name, item.Metadata.ResourceVersion, want)
		}
	}
	htJSON(t, "GET", widgets, nil, http.StatusOK, &list)
	if len(list.Items) != 1 || list.Items[0].Metadata.ResourceVersion != w1.Metadata.ResourceVersion {
		t.Errorf("widgets after the failed requests: %+v", list.Items)
	}
	htJSON(t, "GET", "/api/v1/namespaces/"+missingNS, nil, http.StatusNotFound, nil)
	htJSON(t, "GET", "/api/v1/namespaces/a.b", nil, http.StatusNotFound, nil)
	htJSON(t, "GET", "/api/v1/namespaces/default", nil, http.StatusOK, nil)
	htJSON(t, "GET", "/api/v1/configmaps?fieldSelector=metadata.namespace%3D"+missingNS, nil, http.StatusOK, &list)
	if len(list.Items) != 0 {
		t.Errorf("objects in the missing namespace: %v", list.names())
	}
}

func htCheckRetryAfter(t *testing.T, st *metav1.Status, resp *http.Response) {
	if ra := resp.Header.Get("Retry-After"); ra != "1" {
		t.Errorf("Retry-After %q, want 1", ra)
	}
	if d := st.Details; d == nil || d.RetryAfterSeconds != 1 || len(d.Causes) == 0 || d.Causes[0].Type != metav1.CauseTypeResourceVersionTooLarge {
		t.Errorf("details: %+v", d)
	}
}

func htShort(data []byte) string {
	if len(data) > 300 {
		return string(data[:300]) + "..."
	}
	return string(data)
}

// TestHTTPCreateWhileDeleting: a create of the name of an object that is
// being deleted (held by a finalizer) is refused as kube-apiserver refuses
// it, saying why.
func TestHTTPCreateWhileDeleting(t *testing.T) {
	t.Parallel()
	ns := htNamespace(t, "recreate")
	cms := "/api/v1/namespaces/" + ns + "/configmaps"
	body := htConfigMapBody("held", nil)
	body["metadata"].(map[string]any)["finalizers"] = []any{"example.com/hold"}
	htJSON(t, "POST", cms, body, http.StatusCreated, nil)
	htJSON(t, "DELETE", cms+"/held", nil, http.StatusOK, nil)
	t.Cleanup(func() {
		htDo(t, "PATCH", cms+"/held", "application/merge-patch+json", []byte(`{"metadata":{"finalizers":null}}`))
	})
	var st metav1.Status
	htJSON(t, "POST", cms, htConfigMapBody("held", nil), http.StatusConflict, &st)
	if want := `object is being deleted: configmaps "held" already exists`; st.Message != want || st.Reason != metav1.StatusReasonAlreadyExists {
		t.Errorf("create while deleting: %+v, want %q", st, want)
	}
}

// TestHTTPListAndWatchEncoding checks the wire form of lists and watch
// events.
func TestHTTPListAndWatchEncoding(t *testing.T) {
	t.Parallel()
	ns := htNamespace(t, "encoding")
	cms := "/api/v1/namespaces/" + ns + "/configmaps"
	for i := range 3 {
		htJSON(t, "POST", cms, htConfigMapBody(fmt.Sprintf("cm-%d", i), map[string]string{"i": fmt.Sprint(i)}), http.StatusCreated, nil)
	}

	resp, data := htDo(t, "GET", cms, "", nil)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("list: %d %s %s", resp.StatusCode, resp.Header.Get("Content-Type"), data)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatalf("the list is not valid JSON: %v: %s", err, data)
	}
	var list htList
	if err := json.Unmarshal(data, &list); err != nil {
		t.Fatal(err)
	}
	if list.Kind != "ConfigMapList" || list.APIVersion != "v1" || list.Metadata.ResourceVersion == "" || raw["items"] == nil {
		t.Errorf("list: %s", data)
	}
	if !slices.Equal(list.names(), []string{"cm-0", "cm-1", "cm-2"}) {
		t.Errorf("list items: %v", list.names())
	}
	for _, item := range list.Items {
		// As kube-apiserver's typed lists: items without kind and apiVersion.
		if item.Kind != "" || item.APIVersion != "" || item.Metadata.Namespace != ns || item.Metadata.ResourceVersion == "" || item.Metadata.UID == "" {
			t.Errorf("list item: %+v", item)
		}
	}

	// Paging: limit, continue and remainingItemCount (of cm-2 and
	// rootCAConfigMap).
	var page htList
	htJSON(t, "GET", cms+"?limit=2", nil, http.StatusOK, &page)
	if len(page.Items) != 2 || page.Metadata.Continue == "" || page.Metadata.RemainingItemCount == nil || *page.Metadata.RemainingItemCount != 2 {
		t.Errorf("first page: %+v", page)
	}
	var rest htList
	htJSON(t, "GET", cms+"?limit=2&continue="+url.QueryEscape(page.Metadata.Continue), nil, http.StatusOK, &rest)
	if !slices.Equal(rest.names(), []string{"cm-2"}) || rest.Metadata.Continue != "" || rest.Metadata.ResourceVersion != page.Metadata.ResourceVersion {
		t.Errorf("second page: %+v", rest)
	}

	// An empty list has "items": [], not null.
	emptyNS := htNamespace(t, "encoding-empty")
	_, data = htDo(t, "GET", "/apis/example.com/v1/namespaces/"+emptyNS+"/widgets", "", nil)
	if err := json.Unmarshal(data, &raw); err != nil || string(raw["items"]) != "[]" || !strings.Contains(string(raw["kind"]), "WidgetList") {
		t.Errorf("empty list: %v %s", err, data)
	}

	// Watch events are newline-delimited JSON objects {type, object}. Both
	// watches start after the list's resourceVersion, so they replay these
	// changes.
	htJSON(t, "PATCH", cms+"/cm-0", nil, http.StatusUnsupportedMediaType, nil) // a refused request is no event
	resp, data = htDo(t, "PATCH", cms+"/cm-0", "application/merge-patch+json", []byte(`{"data":{"i":"changed"}}`))
	if resp.StatusCode != 200 {
		t.Fatalf("patch: %d %s", resp.StatusCode, data)
	}
	htJSON(t, "DELETE", cms+"/cm-1", nil, http.StatusOK, nil)
	htJSON(t, "POST", cms, htConfigMapBody("cm-3", nil), http.StatusCreated, nil)
	type event struct{ typ, name string }
	all := []event{{"MODIFIED", "cm-0"}, {"DELETED", "cm-1"}, {"ADDED", "cm-3"}}
	from := "resourceVersion=" + list.Metadata.ResourceVersion + "&timeoutSeconds=1"
	for _, wc := range []struct {
		name string
		path string
		want []event
	}{
		{"watch parameter", cms + "?watch=true&" + from, all},
		{"watch path", "/api/v1/watch/namespaces/" + ns + "/configmaps?" + from, all},
		{"object watch path", "/api/v1/watch/namespaces/" + ns + "/configmaps/cm-1?" + from, all[1:2]},
		{"name selector", cms + "?watch=1&fieldSelector=metadata.name%3Dcm-3&" + from, all[2:]},
	} {
		path, wantEvents := wc.path, wc.want
		// Not parallel: a parallel subtest may wait for a free slot longer
		// than the cache's history window (75 s, under -race on 2 cores),
		// and its watch from the list's revision then rightly gets 410.
		t.Run(wc.name, func(t *testing.T) {
			start := time.Now()
			resp, err := htClient.Get(testServer.URL + path)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("watch: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
			}
			// The stream ends cleanly when timeoutSeconds passes.
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatalf("reading the watch: %v", err)
			}
			if d := time.Since(start); d < 900*time.Millisecond || d > 10*time.Second {
				t.Errorf("a watch with timeoutSeconds=1 lasted %v", d)
			}
			if len(body) == 0 || body[len(body)-1] != '\n' {
				t.Fatalf("the watch stream does not end with a newline: %q", body)
			}
			lines := strings.Split(strings.TrimSuffix(string(body), "\n"), "\n")
			if len(lines) != len(wantEvents) {
				t.Fatalf("%d events, want %d: %s", len(lines), len(wantEvents), body)
			}
			prev := list.Metadata.ResourceVersion
			for i, line := range lines {
				var ev map[string]json.RawMessage
				if err := json.Unmarshal([]byte(line), &ev); err != nil {
					t.Fatalf("event %d is not a JSON object: %v: %s", i, err, line)
				}
				if len(ev) != 2 || ev["type"] == nil || ev["object"] == nil {
					t.Errorf("event %d has fields other than type and object: %s", i, line)
				}
				var typ string
				var obj htObject
				json.Unmarshal(ev["type"], &typ)
				if err := json.Unmarshal(ev["object"], &obj); err != nil {
					t.Fatalf("event %d: %v", i, err)
				}
				if typ != wantEvents[i].typ || obj.Metadata.Name != wantEvents[i].name || obj.Kind != "ConfigMap" || obj.APIVersion != "v1" {
					t.Errorf("event %d: %s %s %s %s, want %s %s", i, typ, obj.APIVersion, obj.Kind, obj.Metadata.Name, wantEvents[i].typ, wantEvents[i].name)
				}
				if rv := obj.Metadata.ResourceVersion; len(rv) < len(prev) || len(rv) == len(prev) && rv <= prev {
					t.Errorf("event %d at resourceVersion %s, not after %s", i, rv, prev)
				}
				prev = obj.Metadata.ResourceVersion
			}
		})
	}
}

// TestHTTPHealth checks /healthz, /livez and /readyz as kube-apiserver
// answers them: "ok"; with ?verbose each check and "<endpoint> check
// passed"; ?exclude skips a check and warns of names it does not know; a
// check alone at /<endpoint>/<name>, 404 for a name it does not know.
func TestHTTPHealth(t *testing.T) {
	t.Parallel()
	for _, path := range []string{"/healthz", "/livez", "/readyz", "/livez/ping", "/livez/etcd", "/readyz/etcd-readiness", "/healthz/etcd"} {
		resp, data := htDo(t, "GET", path, "", nil)
		if resp.StatusCode != 200 || string(data) != "ok" {
			t.Errorf("%s: %d %q", path, resp.StatusCode, data)
		}
	}
	resp, data := htDo(t, "GET", "/readyz?verbose", "", nil)
	body := string(data)
	for _, want := range []string{"[+]ping ok\n[+]log ok\n[+]etcd ok\n[+]etcd-readiness ok\n", "[+]watch-cache-initialization ok\n", "[+]rbac ok\n"} {
		if resp.StatusCode != 200 || !strings.Contains(body, want) || !strings.HasSuffix(body, "readyz check passed\n") {
			t.Errorf("/readyz?verbose: %d %q, want %q in it", resp.StatusCode, body, want)
		}
	}
	resp, data = htDo(t, "GET", "/livez?verbose&exclude=etcd&exclude=nope&exclude=log&exclude=poststarthook/start-apiextensions-informers&"+
		"exclude=poststarthook/start-apiextensions-controllers&exclude=poststarthook/crd-informer-synced&"+
		"exclude=poststarthook/start-system-namespaces-controller&exclude=poststarthook/start-kube-apiserver-identity-lease-controller&"+
		"exclude=poststarthook/start-kube-apiserver-identity-lease-garbage-collector&exclude=poststarthook/rbac/bootstrap-roles&"+
		"exclude=poststarthook/scheduling/bootstrap-system-priority-classes", "", nil)
	if want := "[+]ping ok\n[+]log excluded: ok\n[+]etcd excluded: ok\n" +
		"[+]poststarthook/start-apiextensions-informers excluded: ok\n[+]poststarthook/start-apiextensions-controllers excluded: ok\n" +
		"[+]poststarthook/crd-informer-synced excluded: ok\n[+]poststarthook/start-system-namespaces-controller excluded: ok\n" +
		"[+]poststarthook/start-kube-apiserver-identity-lease-controller excluded: ok\n" +
		"[+]poststarthook/start-kube-apiserver-identity-lease-garbage-collector excluded: ok\n" +
		"[+]poststarthook/rbac/bootstrap-roles excluded: ok\n[+]poststarthook/scheduling/bootstrap-system-priority-classes excluded: ok\n" +
		"warn: some health checks cannot be excluded: no matches for \"nope\"\nlivez check passed\n"; resp.StatusCode != 200 || string(data) != want {
		t.Errorf("/livez?verbose&exclude=etcd&exclude=nope: %d %q, want %q", resp.StatusCode, data, want)
	}
	if resp, data := htDo(t, "GET", "/readyz/nope", "", nil); resp.StatusCode != 404 {
		t.Errorf("/readyz/nope: %d %q", resp.StatusCode, data)
	}
}

// TestHTTPMetrics checks that requests are counted by verb (kube-apiserver's
// labels: GET, LIST, POST, APPLY...), resource and code.
func TestHTTPMetrics(t *testing.T) {
	t.Parallel()
	ns := htNamespace(t, "metrics")
	htJSON(t, "GET", "/api/v1/namespaces/"+ns+"/secrets/missing", nil, http.StatusNotFound, nil)
	htJSON(t, "GET", "/apis/example.com/v1/namespaces/"+ns+"/widgets", nil, http.StatusOK, nil)
	htDo(t, "PATCH", "/api/v1/namespaces/"+ns+"/configmaps/applied?fieldManager=metrics-test", "application/apply-patch+yaml",
		[]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"applied"}}`))
	resp, data := htDo(t, "GET", "/metrics", "", nil)
	if resp.StatusCode != 200 {
		t.Fatalf("/metrics: %d", resp.StatusCode)
	}
	want := [][]string{
		{`verb="GET"`, `group=""`, `resource="secrets"`, `code="404"`},
		{`verb="LIST"`, `group="example.com"`, `resource="widgets"`, `code="200"`},
		{`verb="POST"`, `group=""`, `resource="namespaces"`, `code="201"`},
		{`verb="APPLY"`, `group=""`, `resource="configmaps"`, `code="201"`},
	}
	lines := strings.Split(string(data), "\n")
	for _, labels := range want {
		found := false
		for _, line := range lines {
			if !strings.HasPrefix(line, "apiserver_request_total{") {
				continue
			}
			all := true
			for _, l := range labels {
				all = all && strings.Contains(line, l)
			}
			found = found || all
		}
		if !found {
			t.Errorf("no apiserver_request_total with %v", labels)
		}
	}
	for _, name := range []string{"apiserver_request_duration_seconds_bucket{", "go_goroutines"} {
		if !strings.Contains(string(data), name) {
			t.Errorf("/metrics lacks %s", name)
		}
	}
}

// TestHTTPDiscovery checks the discovery documents.
func TestHTTPDiscovery(t *testing.T) {
	t.Parallel()
	var versions metav1.APIVersions
	htJSON(t, "GET", "/api", nil, http.StatusOK, &versions)
	if versions.Kind != "APIVersions" || !slices.Equal(versions.Versions, []string{"v1"}) {
		t.Errorf("/api: %+v", versions)
	}
	allVerbs := []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
	checkResources := func(path, groupVersion string, want map[string]metav1.APIResource) {
		t.Helper()
		var list metav1.APIResourceList
		htJSON(t, "GET", path, nil, http.StatusOK, &list)
		if list.Kind != "APIResourceList" || list.GroupVersion != groupVersion {
			t.Errorf("%s: kind %q groupVersion %q", path, list.Kind, list.GroupVersion)
		}
		got := map[string]metav1.APIResource{}
		for _, r := range list.APIResources {
			got[r.Name] = r
		}
		for name, w := range want {
			r, ok := got[name]
			if !ok {
				t.Errorf("%s lacks %s", path, name)
				continue
			}
			verbs := slices.Clone([]string(r.Verbs))
			slices.Sort(verbs)
			wantVerbs := allVerbs
			if w.Verbs != nil {
				wantVerbs = w.Verbs
			}
			if r.Kind != w.Kind || r.Namespaced != w.Namespaced || r.SingularName != w.SingularName || !slices.Equal(verbs, wantVerbs) ||
				(w.ShortNames != nil && !slices.Equal(r.ShortNames, w.ShortNames)) {
				t.Errorf("%s: %s is %+v", path, name, r)
			}
		}
	}
	checkResources("/api/v1", "v1", map[string]metav1.APIResource{
		"namespaces": {Kind: "Namespace", SingularName: "namespace", ShortNames: []string{"ns"},
			Verbs: []string{"create", "delete", "get", "list", "patch", "update", "watch"}},
		"configmaps": {Kind: "ConfigMap", SingularName: "configmap", Namespaced: true, ShortNames: []string{"cm"}},
		"pods":       {Kind: "Pod", SingularName: "pod", Namespaced: true, ShortNames: []string{"po"}},
		"nodes":      {Kind: "Node", SingularName: "node"},
	})
	checkResources("/apis/example.com/v1", "example.com/v1", map[string]metav1.APIResource{
		"widgets": {Kind: "Widget", SingularName: "widget", Namespaced: true, ShortNames: []string{"wd"}},
	})

	var groups metav1.APIGroupList
	htJSON(t, "GET", "/apis", nil, http.StatusOK, &groups)
	found := false
	for _, g := range groups.Groups {
		if g.Name == "example.com" {
			found = true
			if g.PreferredVersion.GroupVersion != "example.com/v1" || len(g.Versions) != 1 || g.Versions[0].Version != "v1" {
				t.Errorf("/apis: example.com is %+v", g)
			}
		}
	}
	if groups.Kind != "APIGroupList" || !found {
		t.Errorf("/apis: %+v", groups)
	}
	var group metav1.APIGroup
	htJSON(t, "GET", "/apis/example.com", nil, http.StatusOK, &group)
	if group.Kind != "APIGroup" || group.Name != "example.com" || group.PreferredVersion.Version != "v1" {
		t.Errorf("/apis/example.com: %+v", group)
	}
	for _, path := range []string{"/apis/nope.example.com", "/apis/example.com/v2", "/api/v2"} {
		resp, data := htDo(t, "GET", path, "", nil)
		if resp.StatusCode != 404 {
			t.Errorf("%s: %d %s, want 404", path, resp.StatusCode, data)
		}
	}
}

// TestHTTPTable checks Table answers (kubectl get).
func TestHTTPTable(t *testing.T) {
	t.Parallel()
	ns := htNamespace(t, "table")
	cms := "/api/v1/namespaces/" + ns + "/configmaps"
	for _, name := range []string{"a", "b"} {
		htJSON(t, "POST", cms, htConfigMapBody(name, map[string]string{"k": "v"}), http.StatusCreated, nil)
	}
	type table struct {
		Kind              string                         `json:"kind"`
		APIVersion        string                         `json:"apiVersion"`
		Metadata          metav1.ListMeta                `json:"metadata"`
		ColumnDefinitions []metav1.TableColumnDefinition `json:"columnDefinitions"`
		Rows              []struct {
			Cells  []any           `json:"cells"`
			Object json.RawMessage `json:"object"`
		} `json:"rows"`
	}
	get := func(path, accept string) table {
		t.Helper()
		resp, data := htDo(t, "GET", path, "", nil, "Accept", accept)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", path, resp.StatusCode, data)
		}
		var tb table
		if err := json.Unmarshal(data, &tb); err != nil {
			t.Fatalf("%s: %v: %s", path, err, data)
		}
		return tb
	}
	const accept = "application/json;as=Table;v=v1;g=meta.k8s.io"
	tb := get(cms, accept+", application/json")
	if tb.Kind != "Table" || tb.APIVersion != "meta.k8s.io/v1" || tb.Metadata.ResourceVersion == "" {
		t.Errorf("table: %+v", tb)
	}
	if len(tb.ColumnDefinitions) < 2 || tb.ColumnDefinitions[0].Name != "Name" {
		t.Errorf("columns: %+v", tb.ColumnDefinitions)
	}
	if len(tb.Rows) != 3 {
		t.Fatalf("rows: %+v", tb.Rows)
	}
	for i, name := range []string{"a", "b", rootCAConfigMap} {
		row := tb.Rows[i]
		var obj htObject
		json.Unmarshal(row.Object, &obj)
		if len(row.Cells) != len(tb.ColumnDefinitions) || row.Cells[0] != name || obj.Kind != "PartialObjectMetadata" || obj.Metadata.Name != name {
			t.Errorf("row %d: cells %v object %s", i, row.Cells, row.Object)
		}
	}
	// One object; the whole object when asked.
	tb = get(cms+"/a?includeObject=Object", accept)
	if tb.Kind != "Table" || len(tb.Rows) != 1 || tb.Rows[0].Cells[0] != "a" {
		t.Fatalf("table of one object: %+v", tb)
	}
	var obj htObject
	json.Unmarshal(tb.Rows[0].Object, &obj)
	if obj.Kind != "ConfigMap" || obj.Metadata.Name != "a" {
		t.Errorf("row object: %s", tb.Rows[0].Object)
	}
	if tb = get(cms, "application/json;as=Table;v=v1beta1;g=meta.k8s.io"); tb.APIVersion != "meta.k8s.io/v1beta1" {
		t.Errorf("v1beta1 table: %+v", tb)
	}
	// Plain JSON first: a list.
	if tb = get(cms, "application/json, "+accept); tb.Kind != "ConfigMapList" {
		t.Errorf("plain JSON first: kind %s", tb.Kind)
	}
	if tb = get("/apis/example.com/v1/namespaces/"+ns+"/widgets", accept); tb.Kind != "Table" || len(tb.Rows) != 0 {
		t.Errorf("empty widget table: %+v", tb)
	}
}

// TestHTTPWatchError checks the wire form of an ERROR event: a watch from
// resourceVersion 1 is, behind a ready watch cache (whose history starts
// later), an ERROR event carrying a 410 Expired Status, and then the end
// of the stream. Served from uncompacted etcd (no cache, or one not ready
// yet), or by a cache that started at revision 1, it replays instead; the
// test retries for a while, then skips.
func TestHTTPWatchError(t *testing.T) {
	t.Parallel()
	deadline := time.Now().Add(3 * time.Second)
	for {
		start := time.Now()
		resp, err := htClient.Get(testServer.URL + "/api/v1/namespaces?watch=1&resourceVersion=1&timeoutSeconds=30")
		if err != nil {
			t.Fatal(err)
		}
		r := bufio.NewReader(resp.Body)
		first, err := r.ReadBytes('\n')
		if resp.StatusCode != 200 || err != nil {
			resp.Body.Close()
			t.Fatalf("watch from 1: %d %v %s", resp.StatusCode, err, first)
		}
		var ev struct {
			Type   string          `json:"type"`
			Object json.RawMessage `json:"object"`
		}
		if err := json.Unmarshal(first, &ev); err != nil {
			resp.Body.Close()
			t.Fatalf("the first event is not JSON: %v: %s", err, first)
		}
		if ev.Type != "ERROR" {
			resp.Body.Close()
			if time.Now().After(deadline) {
				t.Skipf("the watch from 1 replays (%s): no ERROR to check", ev.Type)
			}
			time.Sleep(200 * time.Millisecond)
			continue
		}
		rest, err := io.ReadAll(r)
		resp.Body.Close()
		if err != nil || len(rest) > 0 {
			t.Errorf("after the ERROR: %v %s", err, rest)
		}
		// A stream that went on after its ERROR would last its 30 s.
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("the stream lasted %v after its ERROR", d)
		}
		var st metav1.Status
		if err := json.Unmarshal(ev.Object, &st); err != nil {
			t.Fatal(err)
		}
		if st.Kind != "Status" || st.APIVersion != "v1" || st.Status != metav1.StatusFailure || st.Code != 410 || st.Reason != metav1.StatusReasonExpired ||
			!strings.Contains(st.Message, "too old resource version: 1") {
			t.Errorf("ERROR event: %s", first)
		}
		return
	}
}

// TestHTTPCreateInNewNamespace: an object can be created in a namespace
// right after the namespace's creation was acknowledged, although the
// namespace check reads the watch cache first, which here sees namespaces
// 200 ms late (the check then reads consistently); and not in a namespace
// that does not exist.
func TestHTTPCreateInNewNamespace(t *testing.T) {
	a := startWrappedServer(t, app.Config{}, func(resource string, s storage.Interface) storage.Interface {
		if resource == "namespaces" {
			return lateWatches{s}
		}
		return s
	})
	for i := range 3 {
		ns := fmt.Sprintf("fresh-%d", i)
		initExpect(t, a, "POST", "/api/v1/namespaces", []byte(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"`+ns+`"}}`), http.StatusCreated)
		initExpect(t, a, "POST", "/api/v1/namespaces/"+ns+"/configmaps", initConfigMap("cm", nil), http.StatusCreated)
	}
	initExpect(t, a, "POST", "/api/v1/namespaces/never-created/configmaps", initConfigMap("cm", nil), http.StatusNotFound)
}

// watchLag is how late lateWatches delivers events.
const watchLag = 200 * time.Millisecond

// lateWatches is a store whose watches deliver every event watchLag after
// etcd's, as a cache behind etcd would see them.
type lateWatches struct{ storage.Interface }

func (s lateWatches) Watch(ctx context.Context, scope string, opts storage.ListOptions) (storage.Watcher, error) {
	w, err := s.Interface.Watch(ctx, scope, opts)
	if err != nil {
		return nil, err
	}
	late := &lateWatcher{Watcher: w, events: make(chan storage.Event), stopped: make(chan struct{})}
	go late.forward()
	return late, nil
}

type lateWatcher struct {
	storage.Watcher
	events   chan storage.Event
	stopped  chan struct{}
	stopOnce sync.Once
}

func (w *lateWatcher) ResultChan() <-chan storage.Event { return w.events }

func (w *lateWatcher) Stop() {
	w.stopOnce.Do(func() { close(w.stopped) })
	w.Watcher.Stop()
}

// forward delivers each event watchLag after it arrived.
func (w *lateWatcher) forward() {
	type stamped struct {
		ev storage.Event
		at time.Time
	}
	queue := make(chan stamped, 10000)
	go func() {
		defer close(queue)
		for ev := range w.Watcher.ResultChan() {
			queue <- stamped{ev, time.Now()}
		}
	}()
	defer close(w.events)
	for s := range queue {
		time.Sleep(time.Until(s.at.Add(watchLag)))
		select {
		case w.events <- s.ev:
		case <-w.stopped:
			return
		}
	}
}

// TestListItemsTypeMeta: as kube-apiserver 1.37's typed lists, a built-in
// kind's JSON (and YAML) list has items without kind and apiVersion, also
// those the server stored itself (the namespace's kube-root-ca.crt); a
// custom resource's items keep them, as do a Table's row objects and
// watch events.
func TestListItemsTypeMeta(t *testing.T) {
	t.Parallel()
	ns := htNamespace(t, "list-typemeta")
	waitForRootCA(t, ns)
	cms := "/api/v1/namespaces/" + ns + "/configmaps"
	htJSON(t, "POST", cms, htConfigMapBody("a", map[string]string{"k": "v"}), http.StatusCreated, nil)
	widgets := "/apis/example.com/v1/namespaces/" + ns + "/widgets"
	htJSON(t, "POST", widgets, map[string]any{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": map[string]any{"name": "w"}}, http.StatusCreated, nil)
	type typeMeta struct {
		Kind       string `json:"kind"`
		APIVersion string `json:"apiVersion"`
		Metadata   struct {
			Name            string `json:"name"`
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	items := func(path string, header ...string) []typeMeta {
		resp, data := htDo(t, "GET", path, "", nil, header...)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d %s", path, resp.StatusCode, data)
		}
		var list struct {
			Items []typeMeta `json:"items"`
			Rows  []struct {
				Object typeMeta `json:"object"`
			} `json:"rows"`
		}
		if err := json.Unmarshal(data, &list); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		for _, r := range list.Rows {
			list.Items = append(list.Items, r.Object)
		}
		return list.Items
	}
	got := items(cms)
	if len(got) != 2 {
		t.Fatalf("config maps: %+v", got)
	}
	for _, it := range got {
		if it.Kind != "" || it.APIVersion != "" || it.Metadata.Name == "" || it.Metadata.ResourceVersion == "" {
			t.Errorf("a ConfigMap list item: %+v", it)
		}
	}
	for _, it := range items(widgets) {
		if it.Kind != "Widget" || it.APIVersion != "example.com/v1" {
			t.Errorf("a Widget list item: %+v", it)
		}
	}
	for _, it := range items(cms+"?includeObject=Object", "Accept", "application/json;as=Table;v=v1;g=meta.k8s.io") {
		if it.Kind != "ConfigMap" || it.APIVersion != "v1" {
			t.Errorf("a Table row's object: %+v", it)
		}
	}
	resp, data := htDo(t, "GET", cms+"?watch=1&timeoutSeconds=1&resourceVersion=0", "", nil)
	if resp.StatusCode != http.StatusOK || !bytes.Contains(data, []byte(`"object":{"kind":"ConfigMap","apiVersion":"v1",`)) {
		t.Errorf("watch events: %d %s", resp.StatusCode, data)
	}
}
