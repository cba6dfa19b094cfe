// Package crdschema applies a custom resource version's structural schema
// to its objects as apiextensions-apiserver's custom resource handler does
// (k8s.io/apiextensions-apiserver/pkg/apiserver/schema: pruning,
// defaulting, validation and CEL rules): unknown fields pruned (and
// reported, for fieldValidation), defaults set, and the object validated,
// with kube-apiserver's field errors. Built on the structural schema and
// pruning packages of k8s.io/apiextensions-apiserver and kube-openapi's
// validator (the parts that do not depend on k8s.io/apiserver).
//
// Objects are JSON objects decoded as map[string]any with integers as
// int64.
package crdschema

import (
	"fmt"
	"strings"

	"github.com/watchcache/watchcache/pkg/jsontree"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	"k8s.io/apimachinery/pkg/util/validation/field"
	openapierrors "k8s.io/kube-openapi/pkg/validation/errors"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"k8s.io/kube-openapi/pkg/validation/strfmt"
	"k8s.io/kube-openapi/pkg/validation/validate"
)

// Schema is one custom resource version's schema, ready to apply.
type Schema struct {
	// Structural is the structural form of the schema.
	Structural *structuralschema.Structural
	// OpenAPI is the schema as OpenAPI, for validation and documents.
	OpenAPI   *spec.Schema
	validator *validate.SchemaValidator
	// rules are the compiled x-kubernetes-validations (nil: none);
	// ruleErrors those that did not compile, at paths in the schema.
	rules      *celNode
	ruleErrors field.ErrorList
}

// New converts a CRD version's schema.
func New(v1 *apiextensionsv1.JSONSchemaProps) (*Schema, error) {
	var internal apiextensions.JSONSchemaProps
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v1, &internal, nil); err != nil {
		return nil, err
	}
	s, err := structuralschema.NewStructural(&internal)
	if err != nil {
		return nil, err
	}
	rules, ruleErrors := compileRules(s, nil)
	return &Schema{Structural: s, OpenAPI: s.ToKubeOpenAPI(), validator: validate.NewSchemaValidator(validationOpenAPI(s), nil, "", strfmt.Default),
		rules: rules, ruleErrors: ruleErrors}, nil
}

// validationOpenAPI is the schema as kube-apiserver's validator sees it:
// an x-kubernetes-int-or-string value has the types integer and string.
func validationOpenAPI(s *structuralschema.Structural) *spec.Schema {
	openapi := s.ToKubeOpenAPI()
	var visit func(*spec.Schema)
	visit = func(n *spec.Schema) {
		if n == nil {
			return
		}
		if intOrString, _ := n.Extensions.GetBool("x-kubernetes-int-or-string"); intOrString {
			n.Type = spec.StringOrArray{"integer", "string"}
		}
		for name, prop := range n.Properties {
			visit(&prop)
			n.Properties[name] = prop
		}
		if n.Items != nil {
			visit(n.Items.Schema)
		}
		if n.AdditionalProperties != nil {
			visit(n.AdditionalProperties.Schema)
		}
	}
	visit(openapi)
	return openapi
}

// RuleErrors are the x-kubernetes-validations that do not compile, their
// paths under root (the schema's own path in its definition).
func (s *Schema) RuleErrors(root *field.Path) field.ErrorList {
	var out field.ErrorList
	for _, e := range s.ruleErrors {
		moved := *e
		moved.Field = root.String()
		if e.Field != "" {
			moved.Field += "." + e.Field
		}
		out = append(out, &moved)
	}
	return out
}

// Prune removes the fields obj has that the schema does not know (unless
// it preserves unknown fields there), and those of its metadata and its
// embedded resources' metadata that ObjectMeta does not know, and returns
// their paths ("spec.foo"), for fieldValidation's warnings and errors, in
// kube-apiserver's order: metadata's, the schema's, embedded metadata's.
func (s *Schema) Prune(obj map[string]any) []string {
	unknown := coerceMetadata(obj, nil, false)
	unknown = append(unknown, pruning.PruneWithOptions(obj, s.Structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})...)
	return append(unknown, coerceEmbedded(obj, s.Structural)...)
}

// Default sets the schema's defaults of the fields obj lacks, in objects
// obj has (and in the objects defaults create), as kube-apiserver does
// before pruning.
func (s *Schema) Default(obj map[string]any) { applyDefaults(obj, s.Structural) }

func applyDefaults(x any, s *structuralschema.Structural) {
	if s == nil {
		return
	}
	switch x := x.(type) {
	case map[string]any:
		for name, prop := range s.Properties {
			if _, ok := x[name]; !ok && prop.Default.Object != nil {
				x[name] = toInt64s(jsontree.DeepCopy(prop.Default.Object))
			}
		}
		for name, v := range x {
			if prop, ok := s.Properties[name]; ok {
				applyDefaults(v, &prop)
			} else if s.AdditionalProperties != nil {
				applyDefaults(v, s.AdditionalProperties.Structural)
			}
		}
	case []any:
		for _, item := range x {
			applyDefaults(item, s.Items)
		}
	}
}

// toInt64s turns the integers of a default (decoded from the CRD's JSON
// as float64 or int64) into int64, as objects hold them.
func toInt64s(v any) any {
	switch v := v.(type) {
	case float64:
		if v == float64(int64(v)) {
			return int64(v)
		}
	case map[string]any:
		for k, x := range v {
			v[k] = toInt64s(x)
		}
	case []any:
		for i, x := range v {
			v[i] = toInt64s(x)
		}
	}
	return v
}

// Validate checks obj against the schema, its embedded resources, its
// list types' uniqueness and its validation rules (old, if not nil, is
// the object before an update, for transition rules); the errors are
// kube-apiserver's (field path, reason, message) for each failing field,
// in its order.
func (s *Schema) Validate(obj, old map[string]any) field.ErrorList {
	result := s.validator.Validate(obj)
	var errs field.ErrorList
	for _, err := range result.Errors {
		errs = append(errs, toFieldErrors(err)...)
	}
	errs = append(errs, validateEmbedded(obj, s.Structural)...)
	// Lists of an old object that broke uniqueness may stay broken.
	if old == nil || len(listtype.ValidateListSetsAndMaps(nil, s.Structural, old)) == 0 {
		errs = append(errs, listtype.ValidateListSetsAndMaps(nil, s.Structural, obj)...)
	}
	if s.rules == nil {
		return errs
	}
	if blocking(errs) {
		return append(errs, field.Invalid(nil, nil, "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation"))
	}
	var oldValue any
	if old != nil {
		oldValue = old
	}
	return append(errs, s.rules.validate(nil, obj, oldValue, old != nil)...)
}

// blockingErrors are the kinds of error after which kube-apiserver does
// not evaluate validation rules, the object not being of the schema's
// shape.
var blockingErrors = map[field.ErrorType]bool{
	field.ErrorTypeNotSupported: true,
	field.ErrorTypeRequired:     true,
	field.ErrorTypeTooLong:      true,
	field.ErrorTypeTooMany:      true,
	field.ErrorTypeTypeInvalid:  true,
}

// blocking tells whether errs has an error of a blocking kind.
func blocking(errs field.ErrorList) bool {
	for _, e := range errs {
		if blockingErrors[e.Type] {
			return true
		}
	}
	return false
}

// toFieldErrors converts a kube-openapi validation error as
// kube-apiserver's apiextensions validation does.
func toFieldErrors(err error) field.ErrorList {
	var verr *openapierrors.Validation
	switch e := err.(type) {
	case *openapierrors.Validation:
		verr = e
	case *openapierrors.CompositeError:
		var out field.ErrorList
		for _, inner := range e.Errors {
			out = append(out, toFieldErrors(inner)...)
		}
		return out
	default:
		return field.ErrorList{field.Invalid(nil, "", err.Error())}
	}
	path := pathOf(verr.Name)
	value := verr.Value
	if value == nil {
		value = ""
	}
	switch verr.Code() {
	case openapierrors.RequiredFailCode:
		return field.ErrorList{field.Required(path, "")}
	case openapierrors.EnumFailCode:
		var values []string
		for _, v := range verr.Values {
			values = append(values, fmt.Sprint(v))
		}
		return field.ErrorList{field.NotSupported(path, verr.Value, values)}
	case openapierrors.TooLongFailCode:
		max, _ := verr.Valid.(int64)
		return field.ErrorList{field.TooLongMaxLength(path, value, int(max))}
	case openapierrors.MaxItemsFailCode:
		max, _ := verr.Valid.(int64)
		actual, _ := verr.Value.(int64)
		return field.ErrorList{field.TooMany(path, int(actual), int(max))}
	case openapierrors.InvalidTypeCode:
		return field.ErrorList{field.TypeInvalid(path, value, verr.Error())}
	}
	return field.ErrorList{field.Invalid(path, value, verr.Error())}
}

// pathOf turns a validation error's name ("spec.size", "spec.items[1]")
// into a field path.
func pathOf(name string) *field.Path {
	name = strings.TrimPrefix(name, ".")
	if name == "" {
		return nil
	}
	var p *field.Path
	for _, part := range strings.Split(name, ".") {
		if p == nil {
			p = field.NewPath(part)
		} else {
			p = p.Child(part)
		}
	}
	return p
}
