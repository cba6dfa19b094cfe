package e2e

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
)

// TestKubectlExplainDescriptions runs kubectl explain, which reads the
// OpenAPI v3 documents (and, with --output=plaintext-openapiv2,
// /openapi/v2 in protobuf), and compares its output with what it prints
// for kube-apiserver 1.37, recorded in testdata/explain (named after the
// arguments): descriptions, the types of fields, the values of enums with
// the text that explains them, descriptions past a markdown table.
func TestKubectlExplainDescriptions(t *testing.T) {
	k := newKubectl(t, "explain")
	for _, args := range [][]string{
		{"deployment.spec.strategy"},
		{"pods.spec.containers"},
		{"pods.spec.topologySpreadConstraints.maxSkew"},
		{"deployment.spec.strategy", "--output=plaintext-openapiv2"},
		{"pods.spec.containers", "--output=plaintext-openapiv2"},
	} {
		name := strings.ReplaceAll(strings.Join(args, ""), "--output=plaintext-", ".") + ".txt"
		want, err := os.ReadFile(filepath.Join("testdata", "explain", name))
		if err != nil {
			t.Fatal(err)
		}
		if got := k.must(append([]string{"explain"}, args...)...); got != string(want) {
			t.Errorf("kubectl explain %s printed\n%s\nkube-apiserver's:\n%s", strings.Join(args, " "), got, want)
		}
	}
}

// TestOpenAPIV2 reads /openapi/v2 as older clients do: a Swagger 2.0
// document of all group versions in JSON with an ETag that answers
// If-None-Match with 304, or in protobuf.
func TestOpenAPIV2(t *testing.T) {
	resp, body := htDo(t, http.MethodGet, "/openapi/v2", "", nil, "Accept", "application/json")
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" || resp.Header.Get("Etag") == "" {
		t.Fatalf("GET /openapi/v2: %d %v", resp.StatusCode, resp.Header)
	}
	var doc struct {
		Swagger     string
		Paths       map[string]json.RawMessage
		Definitions map[string]struct {
			Description string
			GVK         []struct{ Group, Version, Kind string } `json:"x-kubernetes-group-version-kind"`
		}
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatal(err)
	}
	deployment := doc.Definitions["io.k8s.api.apps.v1.Deployment"]
	if doc.Swagger != "2.0" || doc.Paths["/apis/apps/v1/namespaces/{namespace}/deployments"] == nil ||
		deployment.Description != (appsv1.Deployment{}).SwaggerDoc()[""] || len(deployment.GVK) != 1 || deployment.GVK[0].Kind != "Deployment" {
		t.Errorf("swagger %q, %d paths, Deployment %+v", doc.Swagger, len(doc.Paths), deployment)
	}
	if resp, _ := htDo(t, http.MethodGet, "/openapi/v2", "", nil, "If-None-Match", resp.Header.Get("Etag")); resp.StatusCode != http.StatusNotModified {
		t.Errorf("If-None-Match: %d", resp.StatusCode)
	}
	resp, body = htDo(t, http.MethodGet, "/openapi/v2", "", nil, "Accept", "application/com.github.proto-openapi.spec.v2@v1.0+protobuf")
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/com.github.proto-openapi.spec.v2.v1.0+protobuf" || len(body) == 0 {
		t.Errorf("protobuf: %d %v", resp.StatusCode, resp.Header)
	}
}
