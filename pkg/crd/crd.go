// Package crd turns CustomResourceDefinitions into served resources, as
// kube-apiserver's apiextensions-apiserver does: one resource per served
// version, the storage version's store shared by the others (conversion
// None: only apiVersion differs, NopConverter), and the CRD's names, scope,
// selectable fields, subresources, structural schema and printer columns.
// Its subpackages hold the rest of apiextensions-apiserver's part:
// crdschema (structural schemas applied to objects), crdcontroller (the
// controllers that serve definitions) and crdfile (the --resources file's
// definitions applied at start).
package crd

import (
	"fmt"
	"strings"

	"github.com/watchcache/watchcache/pkg/crd/crdschema"
	"github.com/watchcache/watchcache/pkg/resource"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/version"
)

// Resources returns the resources crd serves, the storage version first.
func Resources(crd *apiextensionsv1.CustomResourceDefinition) ([]*resource.Resource, error) {
	storage := StorageVersion(crd)
	if storage == "" {
		return nil, fmt.Errorf("%s has no storage version", crd.Name)
	}
	names := crd.Status.AcceptedNames
	if names.Plural == "" {
		names = crd.Spec.Names
	}
	var out []*resource.Resource
	for _, v := range crd.Spec.Versions {
		if !v.Served && v.Name != storage {
			continue
		}
		r := &resource.Resource{
			Group: crd.Spec.Group, Version: v.Name, Kind: names.Kind, Plural: names.Plural, Singular: names.Singular,
			ShortNames: names.ShortNames, Categories: names.Categories,
			Namespaced: crd.Spec.Scope == apiextensionsv1.NamespaceScoped,
			Verbs:      customResourceVerbs, Generation: true, Definition: crd.Name, PrinterColumns: v.AdditionalPrinterColumns, NotServed: !v.Served,
			Terminating: crd.DeletionTimestamp != nil,
		}
		if v.Deprecated {
			r.DeprecationWarning = deprecationWarning(crd, v, names.Kind)
		}
		for _, f := range v.SelectableFields {
			r.SelectableFields = append(r.SelectableFields, strings.TrimPrefix(f.JSONPath, "."))
		}
		if sub := v.Subresources; sub != nil {
			r.Status = sub.Status != nil
			if sc := sub.Scale; sc != nil {
				r.Scale = true
				r.ScalePaths = &resource.ScalePaths{SpecReplicas: strings.TrimPrefix(sc.SpecReplicasPath, "."),
					StatusReplicas: strings.TrimPrefix(sc.StatusReplicasPath, ".")}
				if sc.LabelSelectorPath != nil {
					r.ScalePaths.LabelSelector = strings.TrimPrefix(*sc.LabelSelectorPath, ".")
				}
			}
		}
		if v.Schema != nil && v.Schema.OpenAPIV3Schema != nil {
			s, err := crdschema.New(v.Schema.OpenAPIV3Schema)
			if err != nil {
				return nil, fmt.Errorf("version %s: %w", v.Name, err)
			}
			r.CustomSchema = s
		}
		if v.Name != storage {
			r.StoredWith = &resource.GroupResource{Group: crd.Spec.Group, Plural: names.Plural}
		}
		if err := r.Complete(); err != nil {
			return nil, fmt.Errorf("version %s: %w", v.Name, err)
		}
		if v.Name == storage {
			out = append([]*resource.Resource{r}, out...)
		} else {
			out = append(out, r)
		}
	}
	return out, nil
}

// customResourceVerbs are a custom resource's verbs, in the order
// apiextensions-apiserver's discovery lists them.
var customResourceVerbs = []string{"delete", "deletecollection", "get", "list", "patch", "create", "update", "watch"}

// StorageVersion is the name of crd's storage version; "" if none.
func StorageVersion(crd *apiextensionsv1.CustomResourceDefinition) string {
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			return v.Name
		}
	}
	return ""
}

// deprecationWarning is the warning of a deprecated version: its own, or
// kube-apiserver's, naming the version of highest priority that is served
// and not deprecated.
func deprecationWarning(def *apiextensionsv1.CustomResourceDefinition, v apiextensionsv1.CustomResourceDefinitionVersion, kind string) string {
	if v.DeprecationWarning != nil {
		return *v.DeprecationWarning
	}
	msg := fmt.Sprintf("%s/%s %s is deprecated", def.Spec.Group, v.Name, kind)
	var preferred string
	for _, other := range def.Spec.Versions {
		if other.Served && !other.Deprecated && (preferred == "" || version.CompareKubeAwareVersionStrings(other.Name, preferred) > 0) {
			preferred = other.Name
		}
	}
	if preferred != "" {
		msg += fmt.Sprintf("; use %s/%s %s", def.Spec.Group, preferred, kind)
	}
	return msg
}
