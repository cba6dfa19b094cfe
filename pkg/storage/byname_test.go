package storage

import (
	"testing"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
)

// TestLookupByName: which options select by name, and where the objects
// they select can be, by scope and resource scope.
func TestLookupByName(t *testing.T) {
	byName := func(s string) ListOptions {
		sel, err := fields.ParseSelector(s)
		if err != nil {
			t.Fatal(err)
		}
		return ListOptions{Fields: sel}
	}
	withLabels := byName("metadata.name=web")
	withLabels.Labels = labels.SelectorFromSet(labels.Set{"app": "web"})
	for _, tc := range []struct {
		name          string
		opts          ListOptions
		scope         string
		clusterScoped bool
		want          NameLookup
		ok            bool
		// selected is SelectedName's name ("": none).
		selected string
	}{
		{"no selector", ListOptions{}, "ns/", false, NameLookup{}, false, ""},
		{"labels only", ListOptions{Labels: withLabels.Labels}, "ns/", false, NameLookup{}, false, ""},
		{"another field", byName("spec.nodeName=web"), "ns/", false, NameLookup{}, false, ""},
		{"name in a namespace", byName("metadata.name=web"), "ns/", false, NameLookup{"web", "ns/web"}, true, "web"},
		{"name ==", byName("metadata.name==web"), "ns/", false, NameLookup{"web", "ns/web"}, true, "web"},
		{"name with another field", byName("spec.nodeName=n1,metadata.name=web"), "ns/", false, NameLookup{"web", "ns/web"}, true, "web"},
		{"name with labels", withLabels, "ns/", false, NameLookup{"web", "ns/web"}, true, "web"},
		{"name and namespace", byName("metadata.name=web,metadata.namespace=ns"), "", false, NameLookup{Name: "web"}, true, "web"},
		{"all namespaces", byName("metadata.name=web"), "", false, NameLookup{Name: "web"}, true, "web"},
		{"cluster-scoped", byName("metadata.name=web"), "", true, NameLookup{"web", "web"}, true, "web"},
		{"two names: the first, no object has both", byName("metadata.name=a,metadata.name=b"), "ns/", false, NameLookup{"a", "ns/a"}, true, "a"},
		{"name not equal", byName("metadata.name!=web"), "ns/", false, NameLookup{}, false, ""},
		{"empty name", byName("metadata.name="), "ns/", false, NameLookup{}, false, ""},
		{"name with a slash", ListOptions{Fields: fields.OneTermEqualSelector("metadata.name", "a/b")}, "ns/", false, NameLookup{}, false, ""},
		{"deeper scope", byName("metadata.name=web"), "a/b/", false, NameLookup{}, false, "web"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := tc.opts.LookupByName(tc.scope, tc.clusterScoped)
			if got != tc.want || ok != tc.ok {
				t.Errorf("LookupByName(%q, %v) = %+v, %v; want %+v, %v", tc.scope, tc.clusterScoped, got, ok, tc.want, tc.ok)
			}
			if name, ok := tc.opts.SelectedName(); name != tc.selected || ok != (tc.selected != "") {
				t.Errorf("SelectedName() = %q, %v; want %q", name, ok, tc.selected)
			}
		})
	}
}
