package openapi

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	"github.com/watchcache/watchcache/pkg/encoding"
	"github.com/watchcache/watchcache/pkg/resource"
	"google.golang.org/protobuf/proto"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeproto "k8s.io/kube-openapi/pkg/util/proto"
)

func openAPITestServer(t *testing.T) (*Service, *resource.Registry) {
	t.Helper()
	widget := &resource.Resource{Group: "example.com", Version: "v1", Kind: "Widget", Plural: "widgets", Namespaced: true}
	reg, err := resource.NewRegistry(append(resource.Builtins(), widget)...)
	if err != nil {
		t.Fatal(err)
	}
	return New(reg), reg
}

// groupVersions counts the registry's group versions outside the core
// group (a document each, and a WatchEvent kind each).
func groupVersions(reg *resource.Registry) int {
	n := 0
	for _, versions := range reg.Groups() {
		n += len(versions)
	}
	return n
}

func openAPIGet(t *testing.T, s *Service, path string, header ...string) *httptest.ResponseRecorder {
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
	if err := json.Unmarshal(w.Body.Bytes(), &index); err != nil || len(index.Paths) != groupVersions(reg)+1 {
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
			if _, ok := op.Body.Content[encoding.StrategicPatchType]; ok != (res.StrategicMergeType != nil) {
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
	// A verb a resource does not serve has no operation: namespaces are
	// not deleted by collection.
	if ops := docs["api/v1"].Paths["/api/v1/namespaces"]; ops["delete"] != nil || ops["get"] == nil {
		t.Errorf("/api/v1/namespaces: delete %s, get %s", ops["delete"], ops["get"])
	}
	if ops := docs["api/v1"].Paths["/api/v1/namespaces/{namespace}/configmaps"]; ops["delete"] == nil {
		t.Error("/api/v1/namespaces/{namespace}/configmaps has no delete")
	}
	if w := openAPIGet(t, s, "/openapi/v3/apis/nope/v1"); w.Code != http.StatusNotFound {
		t.Errorf("unknown group version: %d", w.Code)
	}
}

// openAPIComponents fetches the schemas of a group version's v3 document.
func openAPIComponents(t *testing.T, s *Service, key string) map[string]map[string]any {
	t.Helper()
	var doc struct {
		Components struct{ Schemas map[string]map[string]any }
	}
	w := openAPIGet(t, s, "/openapi/v3/"+key)
	if err := json.Unmarshal(w.Body.Bytes(), &doc); w.Code != http.StatusOK || err != nil {
		t.Fatalf("/openapi/v3/%s: %d %v", key, w.Code, err)
	}
	return doc.Components.Schemas
}

// TestOpenAPIDescriptions checks the documentation of the schemas, as
// kubectl explain prints it: each type's and field's description is its
// k8s.io/api SwaggerDoc text; a field referring to a type carries its own
// description beside the reference; required fields, kinds' list schemas.
func TestOpenAPIDescriptions(t *testing.T) {
	s, _ := openAPITestServer(t)
	apps, core := openAPIComponents(t, s, "apis/apps/v1"), openAPIComponents(t, s, "api/v1")
	prop := func(schemas map[string]map[string]any, schema, field string) map[string]any {
		t.Helper()
		p, _ := schemas[schema]["properties"].(map[string]any)[field].(map[string]any)
		if p == nil {
			t.Fatalf("%s has no property %s: %v", schema, field, schemas[schema])
		}
		return p
	}
	for _, c := range []struct {
		schemas       map[string]map[string]any
		schema, field string
		want          string
	}{
		{apps, "io.k8s.api.apps.v1.DeploymentStrategy", "", appsv1.DeploymentStrategy{}.SwaggerDoc()[""]},
		{apps, "io.k8s.api.apps.v1.DeploymentSpec", "strategy", appsv1.DeploymentSpec{}.SwaggerDoc()["strategy"]},
		{apps, "io.k8s.api.apps.v1.DeploymentStrategy", "rollingUpdate", appsv1.DeploymentStrategy{}.SwaggerDoc()["rollingUpdate"]},
		{apps, "io.k8s.api.apps.v1.DeploymentList", "", appsv1.DeploymentList{}.SwaggerDoc()[""]},
		{apps, "io.k8s.api.apps.v1.DeploymentList", "items", appsv1.DeploymentList{}.SwaggerDoc()["items"]},
		{apps, "io.k8s.api.apps.v1.Deployment", "apiVersion", metav1.TypeMeta{}.SwaggerDoc()["apiVersion"]},
		{core, "io.k8s.api.core.v1.Container", "image", corev1.Container{}.SwaggerDoc()["image"]},
		{core, "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "name", metav1.ObjectMeta{}.SwaggerDoc()["name"]},
	} {
		got := c.schemas[c.schema]["description"]
		if c.field != "" {
			got = prop(c.schemas, c.schema, c.field)["description"]
		}
		if got != c.want || c.want == "" {
			t.Errorf("%s.%s: description %q, want %q", c.schema, c.field, got, c.want)
		}
	}
	strategy := prop(apps, "io.k8s.api.apps.v1.DeploymentSpec", "strategy")
	if ref := []any{map[string]any{"$ref": "#/components/schemas/io.k8s.api.apps.v1.DeploymentStrategy"}}; !reflect.DeepEqual(strategy["allOf"], ref) ||
		strategy["x-kubernetes-patch-strategy"] != "retainKeys" {
		t.Errorf("DeploymentSpec.strategy = %v", strategy)
	}
	if items := prop(apps, "io.k8s.api.apps.v1.DeploymentList", "items")["items"]; !reflect.DeepEqual(items, map[string]any{"$ref": "#/components/schemas/io.k8s.api.apps.v1.Deployment"}) {
		t.Errorf("DeploymentList.items.items = %v", items)
	}
	if gvk := apps["io.k8s.api.apps.v1.DeploymentList"]["x-kubernetes-group-version-kind"]; !reflect.DeepEqual(gvk, []any{map[string]any{"group": "apps", "version": "v1", "kind": "DeploymentList"}}) {
		t.Errorf("DeploymentList's kind: %v", gvk)
	}
	for schema, want := range map[string][]any{
		"io.k8s.api.apps.v1.DeploymentSpec":                             {"selector", "template"},
		"io.k8s.api.core.v1.Container":                                  {"name"},
		"io.k8s.api.apps.v1.DeploymentStrategy":                         nil,
		"io.k8s.apimachinery.pkg.apis.meta.v1.OwnerReference":           {"apiVersion", "kind", "name", "uid"},
		"io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelectorRequirement": {"key", "operator"},
	} {
		if got, _ := apps[schema]["required"].([]any); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: required %v, want %v", schema, got, want)
		}
	}
	// Types encoded their own way, documented in generated definitions.
	for name, want := range map[string]map[string]any{
		"io.k8s.apimachinery.pkg.apis.meta.v1.Time":       {"type": "string", "format": "date-time"},
		"io.k8s.apimachinery.pkg.util.intstr.IntOrString": {"format": "int-or-string", "oneOf": []any{map[string]any{"type": "integer"}, map[string]any{"type": "string"}}},
		"io.k8s.apimachinery.pkg.api.resource.Quantity":   {"oneOf": []any{map[string]any{"type": "string"}, map[string]any{"type": "number"}}},
	} {
		got := maps.Clone(core[name])
		if !strings.HasPrefix(fmt.Sprint(got["description"]), strings.TrimPrefix(name[strings.LastIndex(name, "."):], ".")+" ") {
			t.Errorf("%s: description %q", name, got["description"])
		}
		delete(got, "description")
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	crds := openAPIComponents(t, s, "apis/apiextensions.k8s.io/v1")
	const crdStatus = "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinitionStatus"
	if d, _ := prop(crds, crdStatus, "storedVersions")["description"].(string); !strings.HasPrefix(d, "storedVersions lists all versions") || crds[crdStatus]["required"] != nil {
		t.Errorf("%s: %v", crdStatus, crds[crdStatus])
	}
	widgets := openAPIComponents(t, s, "apis/example.com/v1")
	if d := prop(widgets, "com.example.v1.Widget", "metadata")["description"]; d != (metav1.PartialObjectMetadata{}).SwaggerDoc()["metadata"] {
		t.Errorf("Widget.metadata: description %q", d)
	}
}

// TestOpenAPIFacts checks that the facts recorded from kube-apiserver
// are laid over the reflected schemas: enums with the list of their values
// in the description, required fields as kube-apiserver's (none where
// the Go type's tags would say some), defaults (beside a reference, which
// is then wrapped in allOf), list and map types, full descriptions where
// SwaggerDoc's stop at a markdown table.
func TestOpenAPIFacts(t *testing.T) {
	s, _ := openAPITestServer(t)
	apps, core := openAPIComponents(t, s, "apis/apps/v1"), openAPIComponents(t, s, "api/v1")
	scheduling := openAPIComponents(t, s, "apis/scheduling.k8s.io/v1")
	prop := func(schemas map[string]map[string]any, schema, field string) map[string]any {
		t.Helper()
		p, _ := schemas[schema]["properties"].(map[string]any)[field].(map[string]any)
		if p == nil {
			t.Fatalf("%s has no property %s", schema, field)
		}
		return p
	}

	strategyType := prop(apps, "io.k8s.api.apps.v1.DeploymentStrategy", "type")
	if enum := strategyType["enum"]; !reflect.DeepEqual(enum, []any{"Recreate", "RollingUpdate"}) {
		t.Errorf("DeploymentStrategy.type: enum %v", enum)
	}
	if d, _ := strategyType["description"].(string); !strings.HasPrefix(d, appsv1.DeploymentStrategy{}.SwaggerDoc()["type"]+"\n\nPossible enum values:\n - `\"Recreate\"` Kill all") {
		t.Errorf("DeploymentStrategy.type: description %q", d)
	}
	if _, ok := scheduling["io.k8s.api.scheduling.v1.PriorityClass"]["required"]; ok {
		t.Errorf("PriorityClass: required %v, kube-apiserver's has none", scheduling["io.k8s.api.scheduling.v1.PriorityClass"]["required"])
	}
	if v := prop(scheduling, "io.k8s.api.scheduling.v1.PriorityClass", "value")["default"]; v != 0.0 {
		t.Errorf("PriorityClass.value: default %v", v)
	}
	if got := apps["io.k8s.api.apps.v1.StatefulSetSpec"]["required"]; !reflect.DeepEqual(got, []any{"selector", "template"}) {
		t.Errorf("StatefulSetSpec: required %v", got)
	}
	strategy := prop(apps, "io.k8s.api.apps.v1.DeploymentSpec", "strategy")
	if !reflect.DeepEqual(strategy["default"], map[string]any{}) || strategy["allOf"] == nil || strategy["$ref"] != nil {
		t.Errorf("DeploymentSpec.strategy = %v", strategy)
	}
	if p := prop(apps, "io.k8s.api.apps.v1.DeploymentSpec", "selector"); p["default"] != nil || p["allOf"] == nil {
		t.Errorf("DeploymentSpec.selector = %v", p)
	}
	containers := prop(core, "io.k8s.api.core.v1.PodSpec", "containers")
	if containers["x-kubernetes-list-type"] != "map" || !reflect.DeepEqual(containers["x-kubernetes-list-map-keys"], []any{"name"}) {
		t.Errorf("PodSpec.containers = %v", containers)
	}
	if lt := prop(core, "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "finalizers")["x-kubernetes-list-type"]; lt != "set" {
		t.Errorf("ObjectMeta.finalizers: list type %v", lt)
	}
	if mt := core["io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector"]["x-kubernetes-map-type"]; mt != "atomic" {
		t.Errorf("LabelSelector: map type %v", mt)
	}
	if items := prop(core, "io.k8s.api.core.v1.PersistentVolumeClaimSpec", "accessModes")["items"]; !reflect.DeepEqual(items,
		map[string]any{"type": "string", "enum": []any{"ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"}}) {
		t.Errorf("PersistentVolumeClaimSpec.accessModes.items = %v", items)
	}
	maxSkew, _ := prop(core, "io.k8s.api.core.v1.TopologySpreadConstraint", "maxSkew")["description"].(string)
	if short := (corev1.TopologySpreadConstraint{}).SwaggerDoc()["maxSkew"]; !strings.HasPrefix(maxSkew, short) || !strings.Contains(maxSkew, "| zone1 | zone2 | zone3 |") {
		t.Errorf("TopologySpreadConstraint.maxSkew: description %q", maxSkew)
	}
}

// TestOverlayFacts checks how facts are laid over a schema: values set or
// replaced, null removing a key, subschemas' facts going into them, a
// property's reference wrapped when it gets siblings, facts of properties
// the schema has not ignored.
func TestOverlayFacts(t *testing.T) {
	s := map[string]any{"type": "object", "required": []any{"a"}, "properties": map[string]any{
		"a": map[string]any{"$ref": "#/components/schemas/A"},
		"b": map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "description": "short"},
	}}
	var facts map[string]any
	if err := json.Unmarshal([]byte(`{"required": null, "x-kubernetes-map-type": "atomic", "properties": {
		"a": {"default": {}},
		"b": {"description": "long", "x-kubernetes-list-type": "set", "items": {"enum": ["x", "y"]}},
		"c": {"default": ""}}}`), &facts); err != nil {
		t.Fatal(err)
	}
	overlayFacts(s, facts)
	want := map[string]any{"type": "object", "x-kubernetes-map-type": "atomic", "properties": map[string]any{
		"a": map[string]any{"allOf": []any{map[string]any{"$ref": "#/components/schemas/A"}}, "default": map[string]any{}},
		"b": map[string]any{"type": "array", "items": map[string]any{"type": "string", "enum": []any{"x", "y"}},
			"description": "long", "x-kubernetes-list-type": "set"},
	}}
	if !reflect.DeepEqual(s, want) {
		t.Errorf("overlaid:\n%v\nwant\n%v", s, want)
	}
}

// TestOpenAPISchemaNames checks that the schemas of the built-in kinds'
// types are named as kube-apiserver names them (their generated
// OpenAPIModelName methods).
func TestOpenAPISchemaNames(t *testing.T) {
	seen := map[reflect.Type]bool{}
	var walk func(t reflect.Type)
	walk = func(typ reflect.Type) {
		for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice || typ.Kind() == reflect.Map {
			typ = typ.Elem()
		}
		if typ.Kind() != reflect.Struct || seen[typ] {
			return
		}
		seen[typ] = true
		if m, ok := reflect.Zero(typ).Interface().(interface{ OpenAPIModelName() string }); ok && m.OpenAPIModelName() != schemaName(typ) {
			t.Errorf("%v: schema %s, kube-apiserver's %s", typ, schemaName(typ), m.OpenAPIModelName())
		}
		for i := range typ.NumField() {
			walk(typ.Field(i).Type)
		}
	}
	for _, res := range resource.Builtins() {
		walk(reflect.TypeOf(res.StrategicMergeType))
	}
	if len(seen) < 300 {
		t.Errorf("only %d types", len(seen))
	}
}

// TestOpenAPIV2 checks /openapi/v2: a Swagger 2.0 document of all group
// versions whose references resolve, with the v3 documents' descriptions
// and kinds, in JSON and in the protobuf form client-go reads (and kubectl
// parses into its models), with an ETag; other media types are refused.
func TestOpenAPIV2(t *testing.T) {
	s, reg := openAPITestServer(t)
	w := openAPIGet(t, s, "/openapi/v2", "Accept", "application/json")
	if w.Code != http.StatusOK || w.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("/openapi/v2: %d %v", w.Code, w.Header())
	}
	var doc struct {
		Swagger     string
		Info        struct{ Title, Version string }
		Paths       map[string]map[string]any
		Definitions map[string]map[string]any
	}
	if err := json.Unmarshal(w.Body.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Swagger != "2.0" || doc.Info.Title != "Kubernetes" || len(doc.Paths) == 0 {
		t.Fatalf("swagger %q, info %v, %d paths", doc.Swagger, doc.Info, len(doc.Paths))
	}
	// Every reference resolves; no v3 construct is left.
	refs := 0
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				if ref, ok := e.(string); ok && k == "$ref" {
					refs++
					if name, ok := strings.CutPrefix(ref, "#/definitions/"); !ok || doc.Definitions[name] == nil {
						t.Errorf("unresolved reference %s", ref)
					}
				}
				if k == "requestBody" || k == "content" || k == "oneOf" {
					t.Errorf("v3 construct %s: %v", k, v)
				}
				if props, ok := e.(map[string]any); ok && k == "properties" {
					for _, p := range props { // named like anything
						walk(p)
					}
					continue
				}
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	var raw any
	if err := json.Unmarshal(w.Body.Bytes(), &raw); err != nil {
		t.Fatal(err)
	}
	walk(raw)
	if refs < 1000 {
		t.Errorf("only %d references", refs)
	}
	strategy, _ := doc.Definitions["io.k8s.api.apps.v1.DeploymentSpec"]["properties"].(map[string]any)["strategy"].(map[string]any)
	if want := map[string]any{"$ref": "#/definitions/io.k8s.api.apps.v1.DeploymentStrategy", "x-kubernetes-patch-strategy": "retainKeys",
		"description": appsv1.DeploymentSpec{}.SwaggerDoc()["strategy"]}; !reflect.DeepEqual(strategy, want) {
		t.Errorf("DeploymentSpec.strategy = %v, want %v", strategy, want)
	}
	if d := doc.Definitions["io.k8s.api.apps.v1.DeploymentStrategy"]["description"]; d != (appsv1.DeploymentStrategy{}).SwaggerDoc()[""] {
		t.Errorf("DeploymentStrategy: description %q", d)
	}
	if q := doc.Definitions["io.k8s.apimachinery.pkg.api.resource.Quantity"]; q["type"] != "string" {
		t.Errorf("Quantity = %v", q)
	}
	for _, res := range reg.All() {
		want := map[string]any{"group": res.Group, "version": res.Version, "kind": res.Kind}
		if !slices.ContainsFunc(slices.Collect(maps.Values(doc.Definitions)), func(d map[string]any) bool {
			gvks, _ := d["x-kubernetes-group-version-kind"].([]any)
			return slices.ContainsFunc(gvks, func(g any) bool { return reflect.DeepEqual(g, want) })
		}) {
			t.Errorf("no definition of %v", want)
		}
	}
	if gvks, _ := doc.Definitions["io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent"]["x-kubernetes-group-version-kind"].([]any); len(gvks) != groupVersions(reg)+1 {
		t.Errorf("WatchEvent's kinds: %v", gvks)
	}
	patch, _ := doc.Paths["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"].(map[string]any)
	if body, _ := patch["parameters"].([]any)[0].(map[string]any); body["in"] != "body" || !slices.Contains(patch["consumes"].([]any), any(encoding.StrategicPatchType)) {
		t.Errorf("PATCH of deployments: %v", patch)
	}

	etag := w.Header().Get("Etag")
	if w := openAPIGet(t, s, "/openapi/v2", "If-None-Match", etag); w.Code != http.StatusNotModified {
		t.Errorf("If-None-Match: %d", w.Code)
	}
	pb := openAPIGet(t, s, "/openapi/v2", "Accept", "application/com.github.proto-openapi.spec.v2@v1.0+protobuf")
	if pb.Code != http.StatusOK || pb.Header().Get("Content-Type") != swaggerProtobufType || pb.Header().Get("Etag") != etag {
		t.Fatalf("protobuf: %d %v", pb.Code, pb.Header())
	}
	var parsed openapi_v2.Document
	if err := proto.Unmarshal(pb.Body.Bytes(), &parsed); err != nil {
		t.Fatal(err)
	}
	models, err := kubeproto.NewOpenAPIData(&parsed)
	if err != nil {
		t.Fatal(err)
	}
	kind, _ := models.LookupModel("io.k8s.api.apps.v1.DeploymentStrategy").(*kubeproto.Kind)
	if kind == nil || kind.GetDescription() != (appsv1.DeploymentStrategy{}).SwaggerDoc()[""] || kind.Fields["rollingUpdate"] == nil {
		t.Errorf("DeploymentStrategy model: %v", kind)
	}
	if w := openAPIGet(t, s, "/openapi/v2", "Accept", "text/plain"); w.Code != http.StatusNotAcceptable {
		t.Errorf("text/plain: %d", w.Code)
	}
}
