package e2e

import (
	"encoding/json"
	"net/http"
	"testing"
)

// TestTimeoutParameter: a ?timeout= that is not a duration is a 400 in
// kube-apiserver 1.37's words on every request but a watch.
func TestTimeoutParameter(t *testing.T) {
	ns := htNamespace(t, "timeoutparam")
	const want = `invalid timeout specified in the request URL - time: invalid duration "invalid"`
	for _, path := range []string{"/api/v1/namespaces/" + ns + "/configmaps?timeout=invalid", "/healthz?timeout=invalid", "/version?timeout=invalid"} {
		resp, data := htDo(t, "GET", path, "", nil)
		var st struct{ Message, Reason string }
		json.Unmarshal(data, &st)
		if resp.StatusCode != http.StatusBadRequest || st.Message != want || st.Reason != "BadRequest" {
			t.Errorf("%s: %d %s, want (kube-apiserver's) 400 %s", path, resp.StatusCode, data, want)
		}
	}
	if resp, data := htDo(t, "GET", "/api/v1/namespaces/"+ns+"/configmaps?timeout=2s", "", nil); resp.StatusCode != http.StatusOK {
		t.Errorf("timeout=2s: %d %s", resp.StatusCode, data)
	}
	if resp, data := htDo(t, "GET", "/api/v1/namespaces/"+ns+"/configmaps?watch=1&timeoutSeconds=1&timeout=invalid", "", nil); resp.StatusCode != http.StatusOK {
		t.Errorf("a watch: %d %s", resp.StatusCode, data)
	}
}
