// CRD names: the names taken in a group, the names a definition is accepted
// with and its NamesAccepted and Established conditions, as
// apiextensions-apiserver's naming controller.

package crd

import (
	"fmt"
	"slices"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/sets"
)

// Names are a definition's names (spec.names, status.acceptedNames).
type Names = apiextensionsv1.CustomResourceDefinitionNames

// TakenNames are the names held in one group, as kube-apiserver's naming
// controller gathers them from the accepted names of the group's
// definitions: resource names (plurals, singulars, short names) and kinds
// (kinds and list kinds), each a namespace of its own.
type TakenNames struct {
	Resources, Kinds sets.Set[string]
}

// NewTakenNames returns an empty TakenNames.
func NewTakenNames() TakenNames {
	return TakenNames{Resources: sets.New[string](), Kinds: sets.New[string]()}
}

// Add takes in the names one definition (or built-in resource) holds.
func (t TakenNames) Add(n Names) {
	for _, name := range append([]string{n.Plural, n.Singular}, n.ShortNames...) {
		if name != "" {
			t.Resources.Insert(name)
		}
	}
	for _, kind := range []string{n.Kind, n.ListKind} {
		if kind != "" {
			t.Kinds.Insert(kind)
		}
	}
}

// Without returns n less the names t holds, each field on its own (a
// definition giving up names that an older one accepted at the same time).
func (t TakenNames) Without(n Names) Names {
	drop := func(name string, taken sets.Set[string]) string {
		if taken.Has(name) {
			return ""
		}
		return name
	}
	out := n
	out.Plural, out.Singular = drop(n.Plural, t.Resources), drop(n.Singular, t.Resources)
	out.Kind, out.ListKind = drop(n.Kind, t.Kinds), drop(n.ListKind, t.Kinds)
	out.ShortNames = slices.DeleteFunc(slices.Clone(n.ShortNames), t.Resources.Has)
	if len(out.ShortNames) == 0 {
		out.ShortNames = nil
	}
	return out
}

// AcceptNames decides, as kube-apiserver's naming controller does, which
// of the requested names a definition accepts, given those it accepted
// before and those taken in its group (its own accepted ones included).
// Each name (the short names as one) is accepted if it is the one
// accepted before or is not taken; else the one accepted before stays.
// Categories are always accepted. The NamesAccepted condition returned
// says the last conflict found, in the order plural, singular, short
// names, kind, list kind.
func AcceptNames(requested, accepted Names, taken TakenNames) (Names, apiextensionsv1.CustomResourceDefinitionCondition) {
	cond := apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.NamesAccepted,
		Status: apiextensionsv1.ConditionTrue, Reason: "NoConflicts", Message: "no conflicts found"}
	conflict := func(reason string, err error) {
		cond.Status, cond.Reason, cond.Message = apiextensionsv1.ConditionFalse, reason, err.Error()
	}
	out := accepted
	name := func(reason, req, acc string, taken sets.Set[string], dst *string) {
		if err := freeOrAccepted(req, acc, taken); err != nil {
			conflict(reason, err)
		} else {
			*dst = req
		}
	}
	name("PluralConflict", requested.Plural, accepted.Plural, taken.Resources, &out.Plural)
	name("SingularConflict", requested.Singular, accepted.Singular, taken.Resources, &out.Singular)
	if !slices.Equal(requested.ShortNames, accepted.ShortNames) {
		var errs []error
		for _, short := range requested.ShortNames {
			if slices.Contains(accepted.ShortNames, short) {
				continue
			}
			if err := freeOrAccepted(short, "", taken.Resources); err != nil {
				errs = append(errs, err)
			}
		}
		if err := utilerrors.NewAggregate(errs); err != nil {
			conflict("ShortNamesConflict", err)
		} else {
			out.ShortNames = requested.ShortNames
		}
	}
	name("KindConflict", requested.Kind, accepted.Kind, taken.Kinds, &out.Kind)
	name("ListKindConflict", requested.ListKind, accepted.ListKind, taken.Kinds, &out.ListKind)
	out.Categories = requested.Categories
	return out, cond
}

// freeOrAccepted fails unless requested is the name accepted before or is
// not taken.
func freeOrAccepted(requested, accepted string, taken sets.Set[string]) error {
	if requested == accepted || !taken.Has(requested) {
		return nil
	}
	return fmt.Errorf("%q is already in use", requested)
}

// EstablishedCondition is the Established condition of a definition
// whose names are decided: True when all were accepted (kube-apiserver's
// establishing controller, which follows the naming controller, says so
// at once); else the one it had (a definition established keeps being
// served under the names it accepted before) while it still holds a
// plural and a kind to be served under; else False, NotAccepted.
func EstablishedCondition(names Names, namesAccepted apiextensionsv1.CustomResourceDefinitionCondition, old *apiextensionsv1.CustomResourceDefinitionCondition) apiextensionsv1.CustomResourceDefinitionCondition {
	switch {
	case namesAccepted.Status == apiextensionsv1.ConditionTrue:
		return apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.Established,
			Status: apiextensionsv1.ConditionTrue, Reason: "InitialNamesAccepted", Message: "the initial names have been accepted"}
	case old != nil && (old.Status != apiextensionsv1.ConditionTrue || names.Plural != "" && names.Kind != ""):
		return *old
	}
	return apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.Established,
		Status: apiextensionsv1.ConditionFalse, Reason: "NotAccepted", Message: "not all names are accepted"}
}
