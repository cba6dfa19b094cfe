// Reflecting Go types (k8s.io/api's, with their doc comments) into OpenAPI v3
// schemas named as kube-apiserver names them.

package openapi

import (
	"encoding/json"
	"reflect"
	"strings"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsopenapi "k8s.io/apiextensions-apiserver/pkg/generated/openapi"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// The schemas of the built-in kinds are reflected from their Go types, as
// kube-apiserver's are generated from the same types: a component per
// struct type, named after its package and name, with the properties its
// JSON tags name, its patch strategies and the documentation of the type
// and its fields. That documentation is the text of the types' comments,
// which k8s.io/api and meta/v1 carry as generated SwaggerDoc methods (the
// text kube-openapi's generator takes from the comments, but for the list
// of an enum type's values it appends); the types without them,
// apiextensions.k8s.io's and meta/v1's Time and the like, have it in
// apiextensions-apiserver's generated OpenAPI definitions. Those also give
// their types' required fields; the others' are those not omitempty, as
// kube-openapi's generator has them unless the comments' +optional or
// +required markers say otherwise. What only the markers give (enums,
// defaults, list and map types, those required fields) and the full
// descriptions are laid over the reflected schemas from the facts
// recorded from kube-apiserver (see facts.go).

// schemaGen reflects Go types into OpenAPI v3 schemas, one component per
// struct type.
type schemaGen struct {
	schemas map[string]map[string]any
	// facts are laid over each component by name (nil: none).
	facts map[string]map[string]any
}

// ref makes sure a struct type has its component and returns its name.
func (sg *schemaGen) ref(t reflect.Type) string {
	name := schemaName(t)
	if _, done := sg.schemas[name]; done {
		return name
	}
	docs := typeDocs(t)
	s := customSchema(t)
	if s == nil {
		props := map[string]any{}
		s = map[string]any{"type": "object", "properties": props}
		sg.schemas[name] = s // before its fields, which may refer to it
		required := sg.addFields(props, t, docs)
		if g, ok := generatedTypes()[name]; ok {
			required = g.required
		}
		if len(required) > 0 {
			s["required"] = required
		}
		if len(props) == 0 {
			delete(s, "properties") // as kube-openapi's spec.Schema writes it
		}
	}
	if d := docs[""]; d != "" {
		s["description"] = d
	}
	overlayFacts(s, sg.facts[name])
	sg.schemas[name] = s
	return name
}

// addFields adds the JSON fields of a struct type, inlined ones included,
// with their descriptions and patch strategies, and returns the names of
// the required ones.
func (sg *schemaGen) addFields(props map[string]any, t reflect.Type, docs map[string]string) (required []string) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if name == "" && (f.Anonymous || strings.Contains(opts, "inline")) && ft.Kind() == reflect.Struct {
			required = append(required, sg.addFields(props, ft, typeDocs(ft))...)
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		s := sg.schema(f.Type)
		if d := docs[name]; d != "" {
			s["description"] = d
		}
		if v := f.Tag.Get("patchStrategy"); v != "" {
			s["x-kubernetes-patch-strategy"] = v
		}
		if v := f.Tag.Get("patchMergeKey"); v != "" {
			s["x-kubernetes-patch-merge-key"] = v
		}
		wrapRef(s)
		props[name] = s
		if !strings.Contains(opts, "omitempty") {
			required = append(required, name)
		}
	}
	return required
}

// wrapRef wraps the $ref of a property schema that has other keys beside
// it in allOf, as kube-apiserver does: siblings of a $ref are ignored.
func wrapRef(s map[string]any) {
	if ref, ok := s["$ref"]; ok && len(s) > 1 {
		delete(s, "$ref")
		s["allOf"] = []any{map[string]any{"$ref": ref}}
	}
}

// schema is the (new, modifiable) schema of a value of type t.
func (sg *schemaGen) schema(t reflect.Type) map[string]any {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		return map[string]any{"$ref": schemaPrefix + sg.ref(t)}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int64, reflect.Uint, reflect.Uint64:
		return map[string]any{"type": "integer", "format": "int64"}
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Uint8, reflect.Uint16, reflect.Uint32:
		return map[string]any{"type": "integer", "format": "int32"}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number", "format": "double"}
	case reflect.String:
		return stringSchema()
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return map[string]any{"type": "string", "format": "byte"}
		}
		return map[string]any{"type": "array", "items": sg.schema(t.Elem())}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": sg.schema(t.Elem())}
	}
	return map[string]any{"x-kubernetes-preserve-unknown-fields": true}
}

// objectJSON are the types encoded as JSON objects of no fixed fields.
var objectJSON = map[reflect.Type]bool{
	reflect.TypeFor[metav1.FieldsV1]():      true,
	reflect.TypeFor[runtime.RawExtension](): true,
}

// customSchema is the schema of a struct type whose JSON form is not its Go
// structure, nil for the others. Like kube-openapi's generator, it takes
// the types' OpenAPISchemaType, OpenAPISchemaFormat and OpenAPIV3OneOfTypes
// methods (times, quantities, int-or-strings); other types encoded their
// own way are objects of any fields or any values.
func customSchema(t reflect.Type) map[string]any {
	v := reflect.Zero(t).Interface()
	if _, ok := v.(json.Marshaler); !ok {
		if _, ok := reflect.New(t).Interface().(json.Marshaler); !ok {
			return nil
		}
	}
	s := map[string]any{}
	if f, ok := v.(interface{ OpenAPISchemaFormat() string }); ok && f.OpenAPISchemaFormat() != "" {
		s["format"] = f.OpenAPISchemaFormat()
	}
	if o, ok := v.(interface{ OpenAPIV3OneOfTypes() []string }); ok {
		var oneOf []any
		for _, typ := range o.OpenAPIV3OneOfTypes() {
			oneOf = append(oneOf, map[string]any{"type": typ})
		}
		s["oneOf"] = oneOf
	} else if o, ok := v.(interface{ OpenAPISchemaType() []string }); ok && len(o.OpenAPISchemaType()) == 1 {
		s["type"] = o.OpenAPISchemaType()[0]
	} else if objectJSON[t] {
		s["type"] = "object"
	}
	return s
}

// typeDocs is the documentation of a type: its description under "", its
// fields' under their JSON names.
func typeDocs(t reflect.Type) map[string]string {
	if d, ok := reflect.Zero(t).Interface().(interface{ SwaggerDoc() map[string]string }); ok {
		return d.SwaggerDoc()
	}
	return generatedTypes()[schemaName(t)].docs
}

// intOrStringDoc is the description kube-apiserver gives IntOrString.
const intOrStringDoc = "IntOrString is a type that can hold an int32 or a string.  When used in JSON or YAML marshalling and " +
	"unmarshalling, it produces or consumes the inner type.  This allows you to have, for example, a JSON field that can " +
	"accept a name or number."

// generatedType is what a type's generated OpenAPI definition tells beyond
// its Go type: its documentation and required fields (from the comments'
// +optional and +required markers).
type generatedType struct {
	docs     map[string]string
	required []string
}

// generatedTypes are the types of apiextensions-apiserver's generated
// OpenAPI definitions (apiextensions.k8s.io's, meta/v1's, autoscaling/v1's)
// by schema name, and IntOrString.
var generatedTypes = sync.OnceValue(func() map[string]generatedType {
	defs := apiextensionsopenapi.GetOpenAPIDefinitions(func(string) spec.Ref { return spec.Ref{} })
	types := make(map[string]generatedType, len(defs)+1)
	for name, def := range defs {
		docs := map[string]string{"": def.Schema.Description}
		for field, p := range def.Schema.Properties {
			docs[field] = p.Description
		}
		types[name] = generatedType{docs: docs, required: def.Schema.Required}
	}
	types[schemaName(reflect.TypeFor[intstr.IntOrString]())] = generatedType{docs: map[string]string{"": intOrStringDoc}}
	return types
})

// listTypes are the list types of the built-in kinds (those of client-go's
// scheme, apiextensions.k8s.io's and apiregistration.k8s.io's) by the type
// of their items.
var listTypes = sync.OnceValue(func() map[reflect.Type]reflect.Type {
	apiextensions := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(apiextensions); err != nil {
		panic(err)
	}
	if err := apiregistrationv1.AddToScheme(apiextensions); err != nil {
		panic(err)
	}
	lists := map[reflect.Type]reflect.Type{}
	for _, scheme := range []*runtime.Scheme{clientgoscheme.Scheme, apiextensions} {
		for _, t := range scheme.AllKnownTypes() {
			if f, ok := t.FieldByName("Items"); ok && f.Type.Kind() == reflect.Slice && f.Type.Elem().Kind() == reflect.Struct {
				lists[f.Type.Elem()] = t
			}
		}
	}
	return lists
})

// schemaName names a type's schema as kube-apiserver does: its package
// path, domain reversed, and its name ("io.k8s.api.core.v1.Pod").
func schemaName(t reflect.Type) string {
	domain, rest, _ := strings.Cut(t.PkgPath(), "/")
	return reverseDomain(domain) + "." + strings.ReplaceAll(rest, "/", ".") + "." + t.Name()
}

// reverseDomain turns "example.com" into "com.example".
func reverseDomain(domain string) string {
	labels := strings.Split(domain, ".")
	for i, j := 0, len(labels)-1; i < j; i, j = i+1, j-1 {
		labels[i], labels[j] = labels[j], labels[i]
	}
	return strings.Join(labels, ".")
}
