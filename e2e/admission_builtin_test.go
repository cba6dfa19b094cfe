package e2e

import (
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"
)

// admissionStep is one request of testdata/admission.json, made in order
// in namespace NAMESPACE, and what kube-apiserver 1.37 answered to it
// (recorded from a real one): the code, and a Status's reason, message and
// details, or the values at the object's dotted paths fields (null if
// absent).
type admissionStep struct {
	Name        string          `json:"name"`
	Method      string          `json:"method"`
	Path        string          `json:"path"`
	ContentType string          `json:"contentType"`
	Body        json.RawMessage `json:"body"`
	Want        struct {
		Code   int                        `json:"code"`
		Status map[string]any             `json:"status"`
		Fields map[string]json.RawMessage `json:"fields"`
	} `json:"want"`
}

// TestBuiltinAdmission replays kube-apiserver's default admission plugins
// that read other objects, as recorded: Priority (a pod's priority and
// preemption policy from its PriorityClass or the global default, refusals
// of unknown classes, of other values and of a second global default),
// the system PriorityClasses (there from the start, not deletable),
// LimitRanger (container defaults with their annotation, min, max, ratio
// and pod totals) and DefaultStorageClass/DefaultIngressClass. The
// cluster-scoped objects it makes are deleted after it, and the watch
// cache has each object made before the next request, as admission reads
// them from it. (Recorded with the ServiceAccount plugin off: the two pods
// whose containers are compared whole opt out of its token volume, which
// TestServiceAccountAdmission checks.)
func TestBuiltinAdmission(t *testing.T) {
	ns := htNamespace(t, "admission")
	data, err := os.ReadFile("testdata/admission.json")
	if err != nil {
		t.Fatal(err)
	}
	var steps []admissionStep
	if err := json.Unmarshal(data, &steps); err != nil {
		t.Fatal(err)
	}
	var clusterScoped []string
	t.Cleanup(func() {
		for _, path := range clusterScoped {
			htDo(t, "DELETE", path, "", nil)
			waitFor(t, path+" gone from the cache", func() bool { return cachedStatus(t, path) == http.StatusNotFound })
		}
	})
	for _, s := range steps {
		path := strings.ReplaceAll(s.Path, "NAMESPACE", ns)
		contentType := s.ContentType
		if contentType == "" {
			contentType = "application/json"
		}
		resp, body := htDo(t, s.Method, path, contentType, s.Body)
		if resp.StatusCode != s.Want.Code {
			t.Fatalf("%s: answered %d, want %d: %s", s.Name, resp.StatusCode, s.Want.Code, body)
		}
		var got map[string]any
		if err := json.Unmarshal([]byte(strings.ReplaceAll(string(body), ns, "NAMESPACE")), &got); err != nil {
			t.Fatalf("%s: %v: %s", s.Name, err, body)
		}
		if s.Want.Status != nil {
			for k, want := range s.Want.Status {
				for _, d := range jsonDiff(k, want, got[k]) {
					t.Errorf("%s: %s", s.Name, d)
				}
			}
			continue
		}
		for path, wantJSON := range s.Want.Fields {
			var want any
			json.Unmarshal(wantJSON, &want)
			for _, d := range jsonDiff(path, want, fieldAt(got, path)) {
				t.Errorf("%s: %s", s.Name, d)
			}
		}
		if s.Method == "POST" && !strings.HasSuffix(path, "/pods") && !strings.HasSuffix(path, "/persistentvolumeclaims") {
			meta, _ := got["metadata"].(map[string]any)
			created := path + "/" + meta["name"].(string)
			if !strings.Contains(path, "/namespaces/") {
				clusterScoped = append(clusterScoped, created)
			}
			waitFor(t, created+" in the cache", func() bool { return cachedStatus(t, created) == http.StatusOK })
		}
	}
}

// cachedStatus is the code of a GET of path from the watch cache
// (resourceVersion=0).
func cachedStatus(t *testing.T, path string) int {
	resp, _ := htDo(t, "GET", path+"?resourceVersion=0", "", nil)
	return resp.StatusCode
}

// fieldAt is the value at a dotted path of a decoded object (nil if
// absent).
func fieldAt(obj any, path string) any {
	for _, p := range strings.Split(path, ".") {
		m, _ := obj.(map[string]any)
		obj = m[p]
	}
	return obj
}
