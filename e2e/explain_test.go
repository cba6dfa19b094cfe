package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// explainSection returns the words of the section of kubectl explain's
// output that starts at the line heading (as "DESCRIPTION:") and ends at
// the next heading or the end, joined by single spaces (kubectl wraps and
// indents the text).
func explainSection(out, heading string) string {
	_, rest, ok := strings.Cut(out, "\n"+heading+"\n")
	if !ok {
		return ""
	}
	var words []string
	for _, line := range strings.Split(rest, "\n") {
		if line != "" && line[0] != ' ' && strings.HasSuffix(line, ":") {
			break // the next heading
		}
		words = append(words, strings.Fields(line)...)
	}
	return strings.Join(words, " ")
}

// words joins the words of texts by single spaces.
func words(texts ...string) string {
	return strings.Join(strings.Fields(strings.Join(texts, " ")), " ")
}

// TestKubectlExplainDescriptions runs kubectl explain, which reads the OpenAPI v3
// documents (and, with --output=plaintext-openapiv2, /openapi/v2 in
// protobuf): a field's DESCRIPTION is its own description and its type's,
// the texts of k8s.io/api, as kube-apiserver serves them; FIELDS lists the
// type's fields with their types.
func TestKubectlExplainDescriptions(t *testing.T) {
	k := newKubectl(t, "explain")

	out := k.must("explain", "deployment.spec.strategy")
	for _, want := range []string{"GROUP:      apps\n", "KIND:       Deployment\n", "VERSION:    v1\n", "FIELD: strategy <DeploymentStrategy>\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("explain deployment.spec.strategy: no %q in\n%s", want, out)
		}
	}
	want := words(appsv1.DeploymentSpec{}.SwaggerDoc()["strategy"], appsv1.DeploymentStrategy{}.SwaggerDoc()[""])
	if got := explainSection(out, "DESCRIPTION:"); got != want {
		t.Errorf("explain deployment.spec.strategy: DESCRIPTION %q, want %q", got, want)
	}
	fields := explainSection(out, "FIELDS:")
	strategy := appsv1.DeploymentStrategy{}.SwaggerDoc()
	if want := words("rollingUpdate <RollingUpdateDeployment>", strategy["rollingUpdate"], "type <string>", strategy["type"]); fields != want {
		t.Errorf("explain deployment.spec.strategy: FIELDS %q, want %q", fields, want)
	}

	out = k.must("explain", "pods.spec.containers.image")
	if !strings.Contains(out, "KIND:       Pod\n") || !strings.Contains(out, "FIELD: image <string>\n") {
		t.Errorf("explain pods.spec.containers.image:\n%s", out)
	}
	if got, want := explainSection(out, "DESCRIPTION:"), words(corev1.Container{}.SwaggerDoc()["image"]); got != want {
		t.Errorf("explain pods.spec.containers.image: DESCRIPTION %q, want %q", got, want)
	}

	// From /openapi/v2, in the older layout.
	out = k.must("explain", "deployment.spec.strategy", "--output=plaintext-openapiv2")
	if !strings.Contains(out, "RESOURCE: strategy <Object>\n") {
		t.Errorf("explain --output=plaintext-openapiv2:\n%s", out)
	}
	if got, want := explainSection(out, "DESCRIPTION:"), want; got != want {
		t.Errorf("explain --output=plaintext-openapiv2: DESCRIPTION %q, want %q", got, want)
	}
	if got, want := explainSection(out, "FIELDS:"), words("rollingUpdate <Object>", strategy["rollingUpdate"], "type <string>", strategy["type"]); got != want {
		t.Errorf("explain --output=plaintext-openapiv2: FIELDS %q, want %q", got, want)
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
