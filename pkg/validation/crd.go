// The validation of a CustomResourceDefinition: kube-apiserver's
// apiextensions validation and a structural schema for every version.

package validation

import (
	"encoding/json"
	"reflect"

	"github.com/watchcache/watchcache/pkg/crd/crdschema"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// definition checks a CustomResourceDefinition as kube-apiserver does for
// what serving it needs: its name is plural.group, exactly one version is
// stored, every version has a structural schema. (A list of versions that
// fails is shown as JSON here, kube-apiserver shows its Go values.)
func definition() Check {
	return Check{Object: func(_ *field.Path, obj map[string]any) field.ErrorList {
		data, _ := json.Marshal(obj)
		var def apiextensionsv1.CustomResourceDefinition
		if err := json.Unmarshal(data, &def); err != nil {
			return field.ErrorList{field.Invalid(field.NewPath("spec"), nil, err.Error())}
		}
		var errs field.ErrorList
		if want := def.Spec.Names.Plural + "." + def.Spec.Group; def.Name != want {
			errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), def.Name, `must be spec.names.plural+"."+spec.group`))
		}
		versions := field.NewPath("spec", "versions")
		storage := 0
		for _, v := range def.Spec.Versions {
			if v.Storage {
				storage++
			}
		}
		if storage != 1 {
			errs = append(errs, field.Invalid(versions, obj["spec"].(map[string]any)["versions"], "must have exactly one version marked as storage version"))
		}
		errs = append(errs, schemas(&def)...)
		return errs
	}}
}

// schemas checks that every version has a structural schema; when all
// versions have the same one it is reported, as kube-apiserver reports
// it, at spec.validation.
func schemas(def *apiextensionsv1.CustomResourceDefinition) field.ErrorList {
	var errs field.ErrorList
	same := len(def.Spec.Versions) > 0
	for _, v := range def.Spec.Versions {
		same = same && reflect.DeepEqual(v.Schema, def.Spec.Versions[0].Schema)
	}
	for i, v := range def.Spec.Versions {
		path := field.NewPath("spec", "versions").Index(i).Child("schema", "openAPIV3Schema")
		if same {
			if i > 0 {
				break
			}
			path = field.NewPath("spec", "validation", "openAPIV3Schema")
		}
		if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			errs = append(errs, field.Required(field.NewPath("spec", "versions").Index(i).Child("schema", "openAPIV3Schema"), ""))
			continue
		}
		s, err := crdschema.New(v.Schema.OpenAPIV3Schema)
		if err != nil {
			errs = append(errs, field.Invalid(path, "", err.Error()))
			continue
		}
		errs = append(errs, structuralschema.ValidateStructural(path, s.Structural)...)
		errs = append(errs, s.RuleErrors(path)...)
	}
	return errs
}
