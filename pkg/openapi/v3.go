// /openapi/v3: one document per group version, built when first asked and
// again when the registry changes, with the kinds' schemas, custom
// resources' schemas and each resource's paths.

package openapi

import (
	"crypto/sha512"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/watchcache/watchcache/pkg/apply"
	"github.com/watchcache/watchcache/pkg/discovery"
	"github.com/watchcache/watchcache/pkg/encoding"
	"github.com/watchcache/watchcache/pkg/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// openAPIDoc is one precomputed document.
type openAPIDoc struct {
	body []byte
	hash string // uppercase hex SHA-512 of body, as kube-apiserver's; the ETag
}

func newOpenAPIDoc(v any) *openAPIDoc {
	body, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("encoding an OpenAPI document: %v", err)) // maps of plain values only
	}
	return &openAPIDoc{body: body, hash: fmt.Sprintf("%X", sha512.Sum512(body))}
}

// openAPIDocs are the documents of a registry, made anew when it changes.
// A group version's document is built when first asked for (served, or
// its type converter needed by a write), so that a start or a custom
// resource definition established builds none.
type openAPIDocs struct {
	// index is /openapi/v3, built when first asked (from every document).
	index func() *openAPIDoc
	gv    map[string]*groupVersionDoc // "api/v1", "apis/example.com/v1" → document
	// v2 makes the /openapi/v2 documents from the v3 ones when first asked.
	v2 func() (*swaggerDocs, error)
	// fields are the field managers (managedFields, apply), typed by the
	// v3 documents' schemas.
	fields *apply.Managers
	// of holds the resources the documents were built from.
	of map[*resource.Resource]bool
}

// groupVersionDoc is the document of one group version, built when first
// asked, with its type converter.
type groupVersionDoc struct {
	// members are the resources it is built from: the next set of
	// documents keeps it while they are the same.
	members []*resource.Resource
	doc     func() *openAPIDoc
	typed   apply.TypeConverter
}

func newGroupVersionDoc(members []*resource.Resource) *groupVersionDoc {
	d := &groupVersionDoc{members: members}
	d.doc = sync.OnceValue(func() *openAPIDoc { return newOpenAPIDoc(groupVersionDocument(members, openAPIFacts())) })
	d.typed = apply.NewTypeConverter(func() []byte { return d.doc().body })
	return d
}

// buildOpenAPI makes the documents of reg's resources. The documents of
// prev (nil at first) whose group version has the same resources are
// kept: a custom resource definition established costs at most the
// document of its own group version, not those of the built-in kinds.
func buildOpenAPI(reg *resource.Registry, prev *openAPIDocs) *openAPIDocs {
	docs := &openAPIDocs{gv: map[string]*groupVersionDoc{}, of: map[*resource.Resource]bool{}}
	typed := map[schema.GroupVersion]apply.TypeConverter{}
	for _, res := range reg.All() {
		docs.of[res] = true
		key := openAPIKey(res)
		if docs.gv[key] != nil {
			continue
		}
		members := reg.InGroupVersion(res.GroupVersion())
		if kept := prev.groupVersion(key); kept != nil && slices.Equal(kept.members, members) {
			docs.gv[key] = kept
		} else {
			docs.gv[key] = newGroupVersionDoc(members)
		}
		typed[schema.GroupVersion{Group: res.Group, Version: res.Version}] = docs.gv[key].typed
	}
	docs.index = sync.OnceValue(func() *openAPIDoc {
		type entry struct {
			ServerRelativeURL string `json:"serverRelativeURL"`
		}
		index := map[string]entry{}
		for key, d := range docs.gv {
			index[key] = entry{ServerRelativeURL: "/openapi/v3/" + key + "?hash=" + d.doc().hash}
		}
		return newOpenAPIDoc(map[string]any{"paths": index})
	})
	docs.v2 = sync.OnceValues(func() (*swaggerDocs, error) { return buildSwagger(docs.gv) })
	docs.fields = apply.New(typed)
	return docs
}

// openAPIKey is the key of the document of a resource's group version in
// /openapi/v3: "api/v1", "apis/apps/v1".
func openAPIKey(res *resource.Resource) string {
	if res.Group == "" {
		return "api/" + res.Version
	}
	return "apis/" + res.Group + "/" + res.Version
}

// groupVersion is the document of key in docs (nil if none, or no docs).
func (docs *openAPIDocs) groupVersion(key string) *groupVersionDoc {
	if docs == nil {
		return nil
	}
	return docs.gv[key]
}

// groupVersionDocument is the OpenAPI v3 document of one group version,
// with facts laid over its components.
func groupVersionDocument(resources []*resource.Resource, facts map[string]map[string]any) map[string]any {
	sg := schemaGen{schemas: map[string]map[string]any{}, facts: facts}
	sg.ref(reflect.TypeFor[metav1.ObjectMeta]())
	sg.ref(reflect.TypeFor[metav1.ListMeta]())
	// As in kube-apiserver's scheme, Status is a kind of v1, delete options
	// and watch events are kinds of v1 and of every group version.
	status := reflect.TypeFor[metav1.Status]()
	for _, t := range []reflect.Type{status, reflect.TypeFor[metav1.DeleteOptions](), reflect.TypeFor[metav1.WatchEvent]()} {
		gvks := []map[string]string{{"group": "", "version": "v1", "kind": t.Name()}}
		if gv := resources[0]; gv.Group != "" && t != status {
			gvks = append(gvks, map[string]string{"group": gv.Group, "version": gv.Version, "kind": t.Name()})
		}
		sg.schemas[sg.ref(t)]["x-kubernetes-group-version-kind"] = gvks
	}
	sg.schemas[patchSchema] = map[string]any{"type": "object", "description": typeDocs(reflect.TypeFor[metav1.Patch]())[""]}
	paths := map[string]any{}
	for _, res := range resources {
		if !res.Stored() {
			kindSchemas(&sg, res) // its kind is known; its path is a POST answered by an action
			continue
		}
		addResourcePaths(paths, &sg, res)
	}
	return map[string]any{
		"openapi":    "3.0.0",
		"info":       map[string]any{"title": "Kubernetes", "version": discovery.Version.GitVersion},
		"paths":      paths,
		"components": map[string]any{"schemas": sg.schemas},
	}
}

const (
	patchSchema  = "io.k8s.apimachinery.pkg.apis.meta.v1.Patch"
	schemaPrefix = "#/components/schemas/"
)

// kindSchemas adds the schemas of a resource's kind and list kind and
// returns their names (no list for a kind that has none, the reviews). A
// custom resource's are those of partial object metadata, open to any
// other fields.
func kindSchemas(sg *schemaGen, res *resource.Resource) (object, list string) {
	gvk := func(kind string) []map[string]string {
		return []map[string]string{{"group": res.Group, "version": res.Version, "kind": kind}}
	}
	if res.StrategicMergeType != nil {
		t := reflect.TypeOf(res.StrategicMergeType)
		object = sg.ref(t)
		sg.schemas[object]["x-kubernetes-group-version-kind"] = gvk(res.Kind)
		if lt := listTypes()[t]; lt != nil {
			list = sg.ref(lt)
			sg.schemas[list]["x-kubernetes-group-version-kind"] = gvk(res.ListKind())
		}
		return object, list
	}
	object, list = reverseDomain(res.Group)+"."+res.Version+"."+res.Kind, reverseDomain(res.Group)+"."+res.Version+"."+res.ListKind()
	objectProps, listProps := map[string]any{}, map[string]any{}
	partial := reflect.TypeFor[metav1.PartialObjectMetadata]()
	sg.addFields(objectProps, partial, typeDocs(partial))
	typeMeta := reflect.TypeFor[metav1.TypeMeta]()
	sg.addFields(listProps, typeMeta, typeDocs(typeMeta))
	listProps["metadata"] = map[string]any{"allOf": []any{map[string]any{"$ref": schemaPrefix + sg.ref(reflect.TypeFor[metav1.ListMeta]())}},
		"description": typeDocs(reflect.TypeFor[metav1.PartialObjectMetadataList]())["metadata"]}
	listProps["items"] = map[string]any{"type": "array", "items": map[string]any{"$ref": schemaPrefix + object}}
	sg.schemas[object] = map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true,
		"description": res.Kind + " is a custom resource; its objects are not checked beyond their metadata.",
		"properties":  objectProps, "x-kubernetes-group-version-kind": gvk(res.Kind)}
	if res.CustomSchema != nil {
		sg.schemas[object] = customObjectSchema(res, objectProps)
		sg.schemas[object]["x-kubernetes-group-version-kind"] = gvk(res.Kind)
	}
	sg.schemas[list] = map[string]any{"type": "object", "required": []string{"items"}, "properties": listProps,
		"x-kubernetes-group-version-kind": gvk(res.ListKind())}
	return object, list
}

// customObjectSchema is a custom resource's schema as its definition gives
// it, with apiVersion, kind and metadata (from meta) where the definition
// leaves them out, as kube-apiserver publishes it.
func customObjectSchema(res *resource.Resource, meta map[string]any) map[string]any {
	data, _ := json.Marshal(res.CustomSchema.OpenAPI)
	var schema map[string]any
	json.Unmarshal(data, &schema)
	addEmbeddedProperties(schema, meta)
	props, _ := schema["properties"].(map[string]any)
	if props == nil {
		props = map[string]any{}
		schema["properties"] = props
	}
	for name, prop := range meta {
		if _, ok := props[name]; !ok || name == "metadata" {
			props[name] = prop
		}
	}
	return schema
}

// embeddedDescriptions are the descriptions kube-apiserver gives the
// apiVersion and kind of an embedded resource.
var embeddedDescriptions = map[string]string{
	"apiVersion": "apiVersion defines the versioned schema of this representation of an object. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources",
	"kind":       "kind is a string value representing the type of this object. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds",
}

// addEmbeddedProperties gives each x-kubernetes-embedded-resource object in
// schema the properties apiVersion and kind (required) and metadata (from
// meta, an object's), as kube-apiserver publishes them.
func addEmbeddedProperties(schema, meta map[string]any) {
	props, _ := schema["properties"].(map[string]any)
	for _, prop := range props {
		if sub, ok := prop.(map[string]any); ok {
			addEmbeddedProperties(sub, meta)
		}
	}
	for _, key := range []string{"items", "additionalProperties"} {
		if sub, ok := schema[key].(map[string]any); ok {
			addEmbeddedProperties(sub, meta)
		}
	}
	if embedded, _ := schema["x-kubernetes-embedded-resource"].(bool); !embedded {
		return
	}
	if props == nil {
		props = map[string]any{}
		schema["properties"] = props
	}
	props["metadata"] = meta["metadata"]
	required, _ := schema["required"].([]any)
	for _, name := range []string{"kind", "apiVersion"} {
		typeMeta := maps.Clone(meta[name].(map[string]any))
		typeMeta["description"] = embeddedDescriptions[name]
		props[name] = typeMeta
		if !slices.Contains(required, any(name)) {
			required = append(required, name)
		}
	}
	schema["required"] = required
}

var (
	// validationParams are the parameters of create, update and patch.
	validationParams = []any{queryParam("fieldValidation",
		"How to treat unknown and duplicate fields: Ignore, Warn (the default) or Strict.")}
	listQueryParams = []any{
		queryParam("allowWatchBookmarks", "Asks a watch for BOOKMARK events."),
		queryParam("continue", "The continue token of the previous page of a chunked list."),
		queryParam("fieldSelector", "Selects objects by fields."),
		queryParam("labelSelector", "Selects objects by labels."),
		queryParam("limit", "The most objects in one page of a list."),
		queryParam("resourceVersion", "The resourceVersion to list or watch from."),
		queryParam("resourceVersionMatch", "How resourceVersion applies to a list: Exact or NotOlderThan."),
		queryParam("sendInitialEvents", "Asks a watch to start with the current objects."),
		queryParam("timeoutSeconds", "How long a list or watch may last."),
		queryParam("watch", "Watches for changes instead of listing."),
	}
	getParams  = []any{queryParam("resourceVersion", "The resourceVersion to read at.")}
	jsonTypes  = []string{"application/json"}
	watchTypes = []string{"application/json", "application/json;stream=watch"}
)

// addResourcePaths adds a resource's paths, laid out and named as
// kube-apiserver's, and its kinds' schemas.
func addResourcePaths(paths map[string]any, sg *schemaGen, res *resource.Resource) {
	object, list := kindSchemas(sg, res)
	prefix, group := "/api/"+res.Version, "core"
	if res.Group != "" {
		prefix, group = "/apis/"+res.Group+"/"+res.Version, ""
		for i, part := range strings.Split(res.Group, ".") {
			if i > 0 {
				part = upperFirst(part)
			}
			group += part
		}
	}
	tag, gvName := group+"_"+res.Version, upperFirst(group)+upperFirst(res.Version) // core_v1, CoreV1
	gvk := map[string]string{"group": res.Group, "version": res.Version, "kind": res.Kind}
	op := func(action, id string, params []any, code, schema string, types []string) map[string]any {
		o := map[string]any{"operationId": id, "tags": []string{tag},
			"x-kubernetes-action": action, "x-kubernetes-group-version-kind": gvk,
			"responses": map[string]any{code: map[string]any{"description": "OK", "content": content(schema, types)},
				"401": map[string]any{"description": "Unauthorized"}}}
		if len(params) > 0 {
			o["parameters"] = params
		}
		return o
	}
	withBody := func(o map[string]any, schema string, types []string) map[string]any {
		o["requestBody"] = map[string]any{"required": true, "content": content(schema, types)}
		return o
	}
	patchTypes := []string{encoding.JSONPatchType, encoding.MergePatchType}
	if res.StrategicMergeType != nil {
		patchTypes = append(patchTypes, encoding.StrategicPatchType)
	}
	event := schemaName(reflect.TypeFor[metav1.WatchEvent]())
	deleteOptions := schemaName(reflect.TypeFor[metav1.DeleteOptions]())

	kind, nsKind := res.Kind, res.Kind
	collection, scopeParams := prefix+"/"+res.Plural, []any{}
	if res.Namespaced {
		nsKind = "Namespaced" + kind
		collection, scopeParams = prefix+"/namespaces/{namespace}/"+res.Plural, []any{pathParam("namespace")}
		paths[prefix+"/"+res.Plural] = map[string]any{
			"get": op("list", "list"+gvName+kind+"ForAllNamespaces", listQueryParams, "200", list, jsonTypes)}
		paths[prefix+"/watch/"+res.Plural] = map[string]any{
			"get": op("watchlist", "watch"+gvName+kind+"ListForAllNamespaces", listQueryParams, "200", event, watchTypes)}
	}
	itemParams := append([]any{pathParam("name")}, scopeParams...)
	collectionOps := map[string]any{
		"get":  op("list", "list"+gvName+nsKind, listQueryParams, "200", list, jsonTypes),
		"post": withBody(op("post", "create"+gvName+nsKind, validationParams, "201", object, jsonTypes), object, jsonTypes),
	}
	if res.Allows("deletecollection") {
		collectionOps["delete"] = op("deletecollection", "delete"+gvName+"Collection"+nsKind, listQueryParams, "200", list, jsonTypes)
	}
	withScope(collectionOps, scopeParams)
	paths[collection] = collectionOps
	paths[collection+"/{name}"] = map[string]any{"parameters": itemParams,
		"get":    op("get", "read"+gvName+nsKind, getParams, "200", object, jsonTypes),
		"put":    withBody(op("put", "replace"+gvName+nsKind, validationParams, "200", object, jsonTypes), object, jsonTypes),
		"patch":  withBody(op("patch", "patch"+gvName+nsKind, validationParams, "200", object, jsonTypes), patchSchema, patchTypes),
		"delete": withBody(op("delete", "delete"+gvName+nsKind, nil, "200", object, jsonTypes), deleteOptions, jsonTypes),
	}
	watchCollection := prefix + "/watch" + strings.TrimPrefix(collection, prefix)
	paths[watchCollection] = withScope(map[string]any{
		"get": op("watchlist", "watch"+gvName+nsKind+"List", listQueryParams, "200", event, watchTypes)}, scopeParams)
	paths[watchCollection+"/{name}"] = map[string]any{"parameters": itemParams,
		"get": op("watch", "watch"+gvName+nsKind, listQueryParams, "200", event, watchTypes)}
}

// withScope gives a path item its path parameters, none on a cluster-scoped
// collection: kube-apiserver leaves an empty list out, and kube-openapi's
// spec3 would drop it when writing the document again.
func withScope(item map[string]any, params []any) map[string]any {
	if len(params) > 0 {
		item["parameters"] = params
	}
	return item
}

// content is the content of a request or response body: one schema in
// each media type.
func content(schema string, types []string) map[string]any {
	out := map[string]any{}
	for _, t := range types {
		out[t] = map[string]any{"schema": map[string]any{"$ref": schemaPrefix + schema}}
	}
	return out
}

func upperFirst(s string) string { return strings.ToUpper(s[:1]) + s[1:] }

func queryParam(name, description string) map[string]any {
	return map[string]any{"name": name, "in": "query", "description": description, "schema": stringSchema()}
}

func pathParam(name string) map[string]any {
	return map[string]any{"name": name, "in": "path", "required": true, "schema": stringSchema()}
}

func stringSchema() map[string]any { return map[string]any{"type": "string"} }
