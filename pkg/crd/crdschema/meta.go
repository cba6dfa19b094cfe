// The metadata of custom objects and of embedded resources
// (x-kubernetes-embedded-resource): coerced to ObjectMeta's fields and
// validated as apiextensions-apiserver does.

package crdschema

import (
	"encoding/json"
	"sort"
	"strings"

	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apimachinery/pkg/api/validate/content"
	metavalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kjson "sigs.k8s.io/json"
)

// The metadata of an object and of its embedded resources
// (x-kubernetes-embedded-resource) is an ObjectMeta, as kube-apiserver
// treats it: fields ObjectMeta does not have are dropped (and reported,
// for fieldValidation), apiVersion and kind are required of embedded
// resources, and their metadata is validated as an object's.

// coerceMetadata makes x's metadata, at path, an ObjectMeta's: it drops
// the fields ObjectMeta does not know and returns their paths
// ("spec.template.metadata.foo"). Metadata that does not decode as an
// ObjectMeta is left as it is, for validation to report. If always is
// false the metadata is rewritten only when it had unknown fields.
func coerceMetadata(x map[string]any, path *field.Path, always bool) []string {
	metadata, ok := x["metadata"].(map[string]any)
	if !ok {
		return nil
	}
	data, err := json.Marshal(metadata)
	if err != nil {
		return nil
	}
	var meta metav1.ObjectMeta
	strict, err := kjson.UnmarshalStrict(data, &meta)
	if err != nil {
		return nil
	}
	var unknown []string
	prefix := path.Child("metadata").String() + "."
	for _, e := range strict {
		if fe, ok := e.(kjson.FieldError); ok {
			unknown = append(unknown, prefix+fe.FieldPath())
		}
	}
	if len(unknown) == 0 && !always {
		return nil
	}
	coerced, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&meta)
	if err != nil {
		return nil
	}
	if meta.CreationTimestamp.IsZero() {
		delete(coerced, "creationTimestamp")
	}
	x["metadata"] = coerced
	return unknown
}

// coerceEmbedded coerces the metadata of the embedded resources in x
// (coerceMetadata) and returns the unknown fields' paths, sorted.
func coerceEmbedded(x any, s *structuralschema.Structural) []string {
	var unknown []string
	walkEmbedded(nil, x, s, func(path *field.Path, obj map[string]any) {
		unknown = append(unknown, coerceMetadata(obj, path, true)...)
	})
	sort.Strings(unknown)
	return unknown
}

// validateEmbedded checks the embedded resources in x as kube-apiserver
// does: apiVersion and kind required and well-formed, metadata a valid
// ObjectMeta (its name, if missing, not required).
func validateEmbedded(x any, s *structuralschema.Structural) field.ErrorList {
	var errs field.ErrorList
	walkEmbedded(nil, x, s, func(path *field.Path, obj map[string]any) {
		errs = append(errs, validateEmbeddedResource(path, obj)...)
	})
	return errs
}

// walkEmbedded calls f on every object in x (at path) whose schema is an
// embedded resource's, parents before their children; properties are
// visited in name order.
func walkEmbedded(path *field.Path, x any, s *structuralschema.Structural, f func(*field.Path, map[string]any)) {
	if s == nil {
		return
	}
	switch x := x.(type) {
	case map[string]any:
		if s.XEmbeddedResource {
			f(path, x)
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if prop, ok := s.Properties[k]; ok {
				walkEmbedded(path.Child(k), x[k], &prop, f)
			} else if s.AdditionalProperties != nil {
				walkEmbedded(path.Key(k), x[k], s.AdditionalProperties.Structural, f)
			}
		}
	case []any:
		for i, v := range x {
			walkEmbedded(path.Index(i), v, s.Items, f)
		}
	}
}

func validateEmbeddedResource(path *field.Path, x map[string]any) field.ErrorList {
	var errs field.ErrorList
	for _, k := range []string{"apiVersion", "kind"} {
		if _, ok := x[k]; !ok {
			errs = append(errs, field.Required(path.Child(k), ""))
		}
	}
	if v, ok := x["apiVersion"]; ok {
		p := path.Child("apiVersion")
		if apiVersion, isString := v.(string); !isString {
			errs = append(errs, field.Invalid(p, v, "must be a string"))
		} else if apiVersion == "" {
			errs = append(errs, field.Invalid(p, apiVersion, "must not be empty"))
		} else if _, err := schema.ParseGroupVersion(apiVersion); err != nil {
			errs = append(errs, field.Invalid(p, apiVersion, err.Error()))
		}
	}
	if v, ok := x["kind"]; ok {
		p := path.Child("kind")
		if kind, isString := v.(string); !isString {
			errs = append(errs, field.Invalid(p, v, "must be a string"))
		} else if kind == "" {
			errs = append(errs, field.Invalid(p, kind, "must not be empty"))
		} else if msgs := validation.IsDNS1035Label(strings.ToLower(kind)); len(msgs) > 0 {
			errs = append(errs, field.Invalid(p, kind, "may have mixed case, but should otherwise match: "+strings.Join(msgs, ",")))
		}
	}
	if v, ok := x["metadata"]; ok {
		p := path.Child("metadata")
		var meta metav1.ObjectMeta
		data, err := json.Marshal(v)
		if err == nil {
			err = json.Unmarshal(data, &meta)
		}
		if err != nil {
			return append(errs, field.Invalid(p, v, err.Error()))
		}
		if meta.Name == "" {
			meta.Name = "fakename" // a name is not required here
		}
		errs = append(errs, metavalidation.ValidateObjectMeta(&meta, meta.Namespace != "", pathSegmentName, p)...)
	}
	return errs
}

// pathSegmentName is the name rule of embedded resources' metadata: a
// name (or generateName prefix) usable as a URL path segment.
func pathSegmentName(name string, prefix bool) []string {
	if prefix {
		return content.IsPathSegmentPrefix(name)
	}
	return content.IsPathSegmentName(name)
}
