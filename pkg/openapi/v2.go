// /openapi/v2: the Swagger 2.0 document converted from the v3 documents, in
// JSON or protobuf as the request accepts.

package openapi

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strings"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	"github.com/munnerz/goautoneg"
	"github.com/watchcache/watchcache/pkg/apistatus"
	"google.golang.org/protobuf/proto"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// /openapi/v2 is the Swagger 2.0 document of all group versions, as
// kube-apiserver serves it, made from their v3 documents when first asked
// for (kubectl asks only when v3 is missing, or to explain from v2): their
// components become definitions, a kind's x-kubernetes-group-version-kind
// lists merged; request bodies become body parameters, content types
// consumes and produces. v2 has a reference's siblings beside it, where v3
// wraps it in allOf; no defaults, as kube-apiserver's; and no oneOf: a
// value of several types one of which is a string (quantities,
// int-or-strings) is a string, as kube-apiserver's.
// It is served in JSON or in the protobuf form of gnostic's
// openapi_v2.Document, which client-go's OpenAPISchema asks for; both have
// the JSON's hash as their ETag.

// The media types of the protobuf form: the one kube-apiserver answers
// with, and the older one client-go asks for.
const (
	swaggerProtobufType    = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
	swaggerProtobufTypeOld = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
)

const definitionsPrefix = "#/definitions/"

// swaggerDocs are the v2 document in JSON and in protobuf.
type swaggerDocs struct {
	json, protobuf *openAPIDoc
}

// buildSwagger makes the v2 document of the v3 documents gv.
func buildSwagger(gv map[string]*groupVersionDoc) (*swaggerDocs, error) {
	var info any
	paths, definitions := map[string]any{}, map[string]any{}
	for _, key := range slices.Sorted(maps.Keys(gv)) {
		var doc struct {
			Info       any
			Paths      map[string]map[string]any
			Components struct{ Schemas map[string]map[string]any }
		}
		if err := json.Unmarshal(gv[key].doc().body, &doc); err != nil {
			return nil, fmt.Errorf("reading the OpenAPI v3 document of %s: %w", key, err)
		}
		info = doc.Info
		for path, item := range doc.Paths {
			paths[path] = swaggerPathItem(item)
		}
		for name, s := range doc.Components.Schemas {
			def := swaggerSchema(s)
			if prev, ok := definitions[name].(map[string]any); ok {
				def = mergeGVKs(prev, def)
			}
			definitions[name] = def
		}
	}
	doc := newOpenAPIDoc(struct { // in kube-apiserver's order
		Swagger     string         `json:"swagger"`
		Info        any            `json:"info"`
		Paths       map[string]any `json:"paths"`
		Definitions map[string]any `json:"definitions"`
	}{"2.0", info, paths, definitions})
	parsed, err := openapi_v2.ParseDocument(doc.body)
	if err != nil {
		return nil, fmt.Errorf("parsing the OpenAPI v2 document: %w", err)
	}
	pb, err := proto.Marshal(parsed)
	if err != nil {
		return nil, fmt.Errorf("encoding the OpenAPI v2 document: %w", err)
	}
	return &swaggerDocs{json: doc, protobuf: &openAPIDoc{body: pb, hash: doc.hash}}, nil
}

// mergeGVKs returns def with the group-version-kinds of prev, a schema of
// the same name in another group version, added.
func mergeGVKs(prev, def map[string]any) map[string]any {
	const key = "x-kubernetes-group-version-kind"
	prevGVKs, _ := prev[key].([]any)
	gvks, _ := def[key].([]any)
	for _, gvk := range prevGVKs {
		if !slices.ContainsFunc(gvks, func(g any) bool { return reflect.DeepEqual(g, gvk) }) {
			gvks = append(gvks, gvk)
		}
	}
	if len(gvks) > 0 {
		def[key] = gvks
	}
	return def
}

// swaggerSchema converts a v3 schema into v2.
func swaggerSchema(s map[string]any) map[string]any {
	out := make(map[string]any, len(s))
	for k, v := range s {
		switch k {
		case "$ref":
			out[k] = definitionRef(v)
		case "properties":
			props := map[string]any{}
			for name, p := range asMap(v) {
				props[name] = swaggerSchema(asMap(p))
			}
			out[k] = props
		case "items", "additionalProperties":
			if sub, ok := v.(map[string]any); ok {
				out[k] = swaggerSchema(sub)
			} else {
				out[k] = v // additionalProperties: a bool
			}
		case "allOf":
			all, _ := v.([]any)
			if len(all) == 1 && len(asMap(all[0])) == 1 && asMap(all[0])["$ref"] != nil {
				out["$ref"] = definitionRef(asMap(all[0])["$ref"]) // wrapped for its siblings
				continue
			}
			var subs []any
			for _, sub := range all {
				subs = append(subs, swaggerSchema(asMap(sub)))
			}
			out[k] = subs
		case "oneOf":
			alternatives, _ := v.([]any)
			if slices.ContainsFunc(alternatives, func(a any) bool { return asMap(a)["type"] == "string" }) {
				out["type"] = "string"
			}
		case "anyOf", "not", "nullable", "default":
			// Not in v2 (kube-apiserver's v2 has no defaults).
		default:
			out[k] = v
		}
	}
	return out
}

// definitionRef converts a reference to a component into one to a
// definition.
func definitionRef(ref any) string {
	s, _ := ref.(string)
	return definitionsPrefix + strings.TrimPrefix(s, schemaPrefix)
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// swaggerPathItem converts a v3 path item into v2.
func swaggerPathItem(item map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range item {
		if k == "parameters" {
			out[k] = swaggerParameters(v)
		} else {
			out[k] = swaggerOperation(asMap(v))
		}
	}
	return out
}

// swaggerParameters converts v3 parameters into v2: their schemas' types
// beside them.
func swaggerParameters(v any) []any {
	params, _ := v.([]any)
	out := make([]any, 0, len(params))
	for _, p := range params {
		param := map[string]any{}
		for k, v := range asMap(p) {
			if k == "schema" {
				maps.Copy(param, swaggerSchema(asMap(v)))
			} else {
				param[k] = v
			}
		}
		out = append(out, param)
	}
	return out
}

// swaggerOperation converts a v3 operation into v2: its request body a
// body parameter, the media types of bodies consumes and produces.
func swaggerOperation(op map[string]any) map[string]any {
	out := map[string]any{}
	var params []any
	for k, v := range op {
		switch k {
		case "parameters":
			params = append(params, swaggerParameters(v)...)
		case "requestBody":
			body := asMap(v)
			types, schema := swaggerContent(body["content"])
			params = append([]any{map[string]any{"name": "body", "in": "body", "required": body["required"] == true,
				"schema": schema}}, params...)
			out["consumes"] = types
		case "responses":
			responses := map[string]any{}
			var produces []string
			for code, r := range asMap(v) {
				resp := map[string]any{"description": asMap(r)["description"]}
				if content, ok := asMap(r)["content"]; ok {
					types, schema := swaggerContent(content)
					resp["schema"] = schema
					produces = append(produces, types...)
				}
				responses[code] = resp
			}
			out[k] = responses
			if len(produces) > 0 {
				slices.Sort(produces)
				out["produces"] = slices.Compact(produces)
			}
		default:
			out[k] = v
		}
	}
	if len(params) > 0 {
		out["parameters"] = params
	}
	return out
}

// swaggerContent returns the media types of a v3 body's content and its
// schema (the same in each) in v2.
func swaggerContent(v any) (types []string, schema map[string]any) {
	content := asMap(v)
	types = slices.Sorted(maps.Keys(content))
	if len(types) > 0 {
		schema = swaggerSchema(asMap(asMap(content[types[0]])["schema"]))
	}
	return types, schema
}

// serveSwagger serves /openapi/v2 in the first form the request accepts.
func serveSwagger(w http.ResponseWriter, r *http.Request, docs *openAPIDocs) {
	w.Header().Add("Vary", "Accept")
	accept := r.Header.Get("Accept")
	if accept == "" {
		accept = "*/*"
	}
	for _, clause := range goautoneg.ParseAccept(accept) {
		mediaType := clause.Type + "/" + clause.SubType
		protobuf := mediaType == swaggerProtobufType || mediaType == swaggerProtobufTypeOld
		if !protobuf && !acceptsJSON(mediaType) {
			continue
		}
		v2, err := docs.v2()
		if err != nil {
			apistatus.Write(w, apistatus.New(http.StatusInternalServerError, metav1.StatusReasonInternalError, "%v", err), apistatus.Subject{})
			return
		}
		if protobuf {
			serveOpenAPIDoc(w, r, v2.protobuf, swaggerProtobufType)
		} else {
			serveOpenAPIDoc(w, r, v2.json, "application/json")
		}
		return
	}
	apistatus.Write(w, apistatus.New(http.StatusNotAcceptable, metav1.StatusReasonNotAcceptable,
		"the OpenAPI v2 document is served as application/json or %s", swaggerProtobufType), apistatus.Subject{})
}
