package server

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/watchcache/watchcache/pkg/resource"
)

func openAPITestServer(t *testing.T) (*Server, *resource.Registry) {
	t.Helper()
	widget := &resource.Resource{Group: "example.com", Version: "v1", Kind: "Widget", Plural: "widgets", Namespaced: true}
	reg, err := resource.NewRegistry(append(resource.Builtins(), widget)...)
	if err != nil {
		t.Fatal(err)
	}
	return New(Config{Registry: reg}), reg
}

func openAPIGet(t *testing.T, s *Server, path string, header ...string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(http.MethodGet, path, nil)
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Set(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	return w
}

// TestOpenAPIV3 checks the documents as kubectl reads them: for each kind
// a PATCH operation tagged with its group-version-kind that has the
// fieldValidation query parameter (kubectl's QueryParamVerifierV3) and
// takes strategic merge patches for built-in kinds only; a schema tagged
// with the kind; and patch strategies in the built-in schemas.
func TestOpenAPIV3(t *testing.T) {
	s, reg := openAPITestServer(t)
	var index struct {
		Paths map[string]struct {
			ServerRelativeURL string `json:"serverRelativeURL"`
		} `json:"paths"`
	}
	w := openAPIGet(t, s, "/openapi/v3")
	if err := json.Unmarshal(w.Body.Bytes(), &index); err != nil || len(index.Paths) != len(reg.Groups())+1 {
		t.Fatalf("/openapi/v3: %v %s", err, w.Body)
	}
	type gvk struct{ Group, Version, Kind string }
	type operation struct {
		GVK        *gvk `json:"x-kubernetes-group-version-kind"`
		Parameters []struct{ Name, In string }
		Body       struct{ Content map[string]any } `json:"requestBody"`
	}
	docs := map[string]struct {
		Paths      map[string]map[string]json.RawMessage
		Components struct {
			Schemas map[string]struct {
				GVK        []gvk `json:"x-kubernetes-group-version-kind"`
				Properties map[string]map[string]any
			}
		}
	}{}
	for key, e := range index.Paths {
		w := openAPIGet(t, s, e.ServerRelativeURL, "Accept", "application/json")
		if w.Code != http.StatusOK || w.Header().Get("Cache-Control") != "public, immutable" {
			t.Fatalf("%s: %d %v", e.ServerRelativeURL, w.Code, w.Header())
		}
		doc := docs[key]
		if err := json.Unmarshal(w.Body.Bytes(), &doc); err != nil {
			t.Fatal(err)
		}
		docs[key] = doc

		etag := w.Header().Get("Etag")
		if w := openAPIGet(t, s, e.ServerRelativeURL, "If-None-Match", etag); w.Code != http.StatusNotModified {
			t.Errorf("If-None-Match: %d", w.Code)
		}
		if w := openAPIGet(t, s, "/openapi/v3/"+key+"?hash=stale"); w.Code != http.StatusMovedPermanently || w.Header().Get("Location") != e.ServerRelativeURL {
			t.Errorf("stale hash: %d %v", w.Code, w.Header())
		}
		if w := openAPIGet(t, s, e.ServerRelativeURL, "Accept", "application/com.github.proto-openapi.spec.v3@v1.0+protobuf"); w.Code != http.StatusNotAcceptable {
			t.Errorf("protobuf: %d", w.Code)
		}
	}
	for _, res := range reg.All() {
		if !res.Stored() {
			continue // no paths but a POST answered by an action
		}
		key := "api/v1"
		if res.Group != "" {
			key = "apis/" + res.GroupVersion()
		}
		doc := docs[key]
		want := gvk{res.Group, res.Version, res.Kind}
		patches := 0
		for path, item := range doc.Paths {
			var op operation
			if item["patch"] == nil || json.Unmarshal(item["patch"], &op) != nil || op.GVK == nil || *op.GVK != want {
				continue
			}
			patches++
			if !slices.ContainsFunc(op.Parameters, func(p struct{ Name, In string }) bool { return p.Name == "fieldValidation" && p.In == "query" }) {
				t.Errorf("%s PATCH: no fieldValidation parameter", path)
			}
			if _, ok := op.Body.Content[strategicPatchType]; ok != (res.StrategicMergeType != nil) {
				t.Errorf("%s PATCH: strategic merge patch %v", path, ok)
			}
		}
		if patches != 1 {
			t.Errorf("%s: %d PATCH operations", res, patches)
		}
		kinds := 0
		for _, sc := range doc.Components.Schemas {
			if slices.Contains(sc.GVK, want) {
				kinds++
			}
		}
		if kinds != 1 {
			t.Errorf("%s: %d schemas of its kind", res, kinds)
		}
	}
	containers := docs["api/v1"].Components.Schemas["io.k8s.api.core.v1.PodSpec"].Properties["containers"]
	if containers["x-kubernetes-patch-strategy"] != "merge" || containers["x-kubernetes-patch-merge-key"] != "name" {
		t.Errorf("PodSpec.containers = %v", containers)
	}
	if w := openAPIGet(t, s, "/openapi/v3/apis/nope/v1"); w.Code != http.StatusNotFound {
		t.Errorf("unknown group version: %d", w.Code)
	}
}
