package crd

import (
	"reflect"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// widgetNames are the names of the definition holding them in the tests.
var widgetNames = Names{Plural: "widgets", Singular: "widget", ShortNames: []string{"wd"}, Kind: "Widget", ListKind: "WidgetList"}

// TestAcceptNames: each name is checked on its own against the names
// taken in the group; those refused keep what was accepted before and the
// condition names the last conflict, as kube-apiserver's naming controller
// decides (the cases as kube-apiserver 1.37 answered them).
func TestAcceptNames(t *testing.T) {
	taken := NewTakenNames()
	taken.Add(widgetNames)
	for _, c := range []struct {
		name                string
		requested, accepted Names
		want                Names
		reason, message     string
	}{
		{"free", Names{Plural: "gizmos", Singular: "gizmo", Kind: "Gizmo", ListKind: "GizmoList", Categories: []string{"all"}}, Names{},
			Names{Plural: "gizmos", Singular: "gizmo", Kind: "Gizmo", ListKind: "GizmoList", Categories: []string{"all"}}, "NoConflicts", "no conflicts found"},
		{"short name", Names{Plural: "widgets2", Singular: "widget", ShortNames: []string{"wd"}, Kind: "Widget2", ListKind: "Widget2List"}, Names{},
			Names{Plural: "widgets2", Kind: "Widget2", ListKind: "Widget2List"}, "ShortNamesConflict", `"wd" is already in use`},
		{"short names", Names{Plural: "boxes", Singular: "box", ShortNames: []string{"wd", "widget"}, Kind: "Box", ListKind: "BoxList"}, Names{},
			Names{Plural: "boxes", Singular: "box", Kind: "Box", ListKind: "BoxList"}, "ShortNamesConflict", `["wd" is already in use, "widget" is already in use]`},
		{"kind and list kind", Names{Plural: "gadgets", Singular: "gadget", Kind: "Widget", ListKind: "WidgetList"}, Names{},
			Names{Plural: "gadgets", Singular: "gadget"}, "ListKindConflict", `"WidgetList" is already in use`},
		{"kind", Names{Plural: "gadgets", Singular: "gadget", Kind: "WidgetList", ListKind: "GadgetList"}, Names{},
			Names{Plural: "gadgets", Singular: "gadget", ListKind: "GadgetList"}, "KindConflict", `"WidgetList" is already in use`},
		{"singular", Names{Plural: "sprockets", Singular: "widgets", Kind: "Sprocket", ListKind: "SprocketList"}, Names{},
			Names{Plural: "sprockets", Kind: "Sprocket", ListKind: "SprocketList"}, "SingularConflict", `"widgets" is already in use`},
		{"plural", Names{Plural: "wd", Singular: "x", Kind: "X", ListKind: "XList"}, Names{},
			Names{Singular: "x", Kind: "X", ListKind: "XList"}, "PluralConflict", `"wd" is already in use`},
		{"accepted before", widgetNames, widgetNames, widgetNames, "NoConflicts", "no conflicts found"},
		{"changed to a taken kind", Names{Plural: "gizmos", Kind: "Widget"}, Names{Plural: "gizmos", Kind: "Gizmo"},
			Names{Plural: "gizmos", Kind: "Gizmo"}, "KindConflict", `"Widget" is already in use`},
		{"short name added", Names{Plural: "gizmos", ShortNames: []string{"gz", "wd"}}, Names{Plural: "gizmos", ShortNames: []string{"gz"}},
			Names{Plural: "gizmos", ShortNames: []string{"gz"}}, "ShortNamesConflict", `"wd" is already in use`},
	} {
		got, cond := AcceptNames(c.requested, c.accepted, taken)
		status := apiextensionsv1.ConditionFalse
		if c.reason == "NoConflicts" {
			status = apiextensionsv1.ConditionTrue
		}
		if !reflect.DeepEqual(got, c.want) || cond.Type != apiextensionsv1.NamesAccepted || cond.Status != status || cond.Reason != c.reason || cond.Message != c.message {
			t.Errorf("%s: got %+v, %s %s %q; want %+v, %s %s %q", c.name, got, cond.Status, cond.Reason, cond.Message, c.want, status, c.reason, c.message)
		}
	}
}

// TestTakenNamesWithout: a definition gives up, name by name, those an
// older one holds.
func TestTakenNamesWithout(t *testing.T) {
	taken := NewTakenNames()
	taken.Add(widgetNames)
	got := taken.Without(Names{Plural: "widgets", Singular: "gizmo", ShortNames: []string{"gz", "wd"}, Kind: "Gizmo", ListKind: "WidgetList"})
	if want := (Names{Singular: "gizmo", ShortNames: []string{"gz"}, Kind: "Gizmo"}); !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

// TestEstablishedCondition: established once all names are accepted; else
// as it was while it still has names to be served under; else NotAccepted.
func TestEstablishedCondition(t *testing.T) {
	accepted := apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.NamesAccepted, Status: apiextensionsv1.ConditionTrue}
	refused := apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.NamesAccepted, Status: apiextensionsv1.ConditionFalse}
	established := apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue, Reason: "InitialNamesAccepted", Message: "the initial names have been accepted"}
	notAccepted := apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionFalse, Reason: "NotAccepted", Message: "not all names are accepted"}
	for _, c := range []struct {
		name          string
		names         Names
		namesAccepted apiextensionsv1.CustomResourceDefinitionCondition
		old           *apiextensionsv1.CustomResourceDefinitionCondition
		want          apiextensionsv1.CustomResourceDefinitionCondition
	}{
		{"accepted", widgetNames, accepted, nil, established},
		{"refused, never established", Names{Plural: "widgets2"}, refused, nil, notAccepted},
		{"refused, established before", widgetNames, refused, &established, established},
		{"refused, established, no kind left", Names{Plural: "widgets"}, refused, &established, notAccepted},
	} {
		if got := EstablishedCondition(c.names, c.namesAccepted, c.old); got != c.want {
			t.Errorf("%s: got %+v, want %+v", c.name, got, c.want)
		}
	}
}
