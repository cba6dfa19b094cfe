package resource

import (
	"strings"
	"testing"

	"github.com/watchcache/watchcache/pkg/storage"
)

func TestBuiltins(t *testing.T) {
	reg, err := NewRegistry(Builtins()...)
	if err != nil {
		t.Fatal(err)
	}
	pods := reg.Lookup("", "v1", "pods")
	if pods == nil || !pods.Namespaced || !pods.Schema().Selectable("spec.nodeName") || !pods.Schema().Selectable("metadata.namespace") || pods.Schema().ClusterScoped() {
		t.Fatalf("pods = %+v", pods)
	}
	if got := pods.EtcdPrefix("/registry"); got != "/registry/pods" {
		t.Errorf("EtcdPrefix = %q", got)
	}
	if ns := reg.Lookup("", "v1", "namespaces"); ns == nil || ns.Namespaced || ns.Key("", "a") != "a" || !ns.Schema().ClusterScoped() {
		t.Fatalf("namespaces = %+v", ns)
	}
	if pods.Key("ns", "a") != "ns/a" {
		t.Error("namespaced key")
	}
}

// A custom resource added while serving is found and listed, tells the
// subscribers, and goes when removed.
func TestRegistryAddRemove(t *testing.T) {
	reg, err := NewRegistry(Builtins()...)
	if err != nil {
		t.Fatal(err)
	}
	var added, removed []*Resource
	reg.OnChange(func(a, r []*Resource) { added, removed = append(added, a...), append(removed, r...) })
	widgets := &Resource{Group: "example.com", Version: "v1", Kind: "Widget", Plural: "widgets", ShortNames: []string{"wd"},
		Namespaced: true, SelectableFields: []string{"spec.color"}, IndexedFields: []string{"spec.color"}}
	if err := reg.Add(map[*Resource]storage.Interface{widgets: nil}); err != nil {
		t.Fatal(err)
	}
	w := reg.Lookup("example.com", "v1", "widgets")
	if w != widgets || w.Singular != "widget" || w.GroupVersion() != "example.com/v1" || !w.Schema().Selectable("spec.color") || len(added) != 1 {
		t.Fatalf("widgets = %+v, added %v", w, added)
	}
	if g := reg.Groups(); len(g["example.com"]) != 1 || g["example.com"][0] != "v1" || len(g["rbac.authorization.k8s.io"]) != 1 {
		t.Errorf("Groups = %v", g)
	}
	again := &Resource{Group: "example.com", Version: "v1", Kind: "Gadget", Plural: "widgets"}
	if err := reg.Add(map[*Resource]storage.Interface{again: nil}); err == nil {
		t.Error("a second widgets accepted")
	}
	reg.Remove(widgets)
	if reg.Lookup("example.com", "v1", "widgets") != nil || reg.ByKind("example.com", "Widget") != nil || len(removed) != 1 {
		t.Errorf("after Remove: %v %v %v", reg.Lookup("example.com", "v1", "widgets"), reg.ByKind("example.com", "Widget"), removed)
	}
}

func TestRegistryRefuses(t *testing.T) {
	for _, bad := range []*Resource{
		{Group: "nodot", Version: "v1", Kind: "W", Plural: "ws"},
		{Group: "example.com", Version: "1", Kind: "W", Plural: "ws"},
		{Group: "example.com", Version: "v1", Kind: "w", Plural: "ws"},
		{Group: "example.com", Version: "v1", Kind: "W", Plural: "Ws"},
		{Group: "example.com", Version: "v1", Kind: "W", Plural: "ws", IndexedFields: []string{"spec.x"}},
		{Group: "example.com", Version: "v1", Kind: "W", Plural: "ws", SelectableFields: []string{"a..b"}},
	} {
		if _, err := NewRegistry(bad); err == nil {
			t.Errorf("NewRegistry(%+v) succeeded", bad)
		}
	}
	dup := []*Resource{{Version: "v1", Kind: "A", Plural: "as"}, {Version: "v1", Kind: "B", Plural: "as"}}
	if _, err := NewRegistry(dup...); err == nil {
		t.Error("duplicate plural accepted")
	}
}

// Every resource serves all verbs unless its row says otherwise: reviews
// only create, and namespaces are never deleted by collection (which would
// bypass the protection of the system namespaces), as in kube-apiserver.
func TestVerbs(t *testing.T) {
	reg, err := NewRegistry(Builtins()...)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		group, plural string
		verb          string
		want          bool
	}{
		{"", "namespaces", "deletecollection", false},
		{"", "namespaces", "delete", true},
		{"", "namespaces", "list", true},
		{"", "configmaps", "deletecollection", true},
		{"authorization.k8s.io", "selfsubjectaccessreviews", "create", true},
		{"authorization.k8s.io", "selfsubjectaccessreviews", "get", false},
	} {
		if got := reg.Lookup(tc.group, "v1", tc.plural).Allows(tc.verb); got != tc.want {
			t.Errorf("%s %s allowed: %v, want %v", tc.plural, tc.verb, got, tc.want)
		}
	}
	bad := &Resource{Group: "example.com", Version: "v1", Kind: "Widget", Plural: "widgets", Verbs: []string{"connect"}}
	if err := bad.Complete(); err == nil {
		t.Error("an unknown verb is accepted")
	}
}

// TestEncodeTypeMetaFirst: a built-in kind's object is stored with kind
// and apiVersion first and its Go type's zero values, whatever order its
// map had (controllers write maps); a custom resource's as it is.
func TestEncodeTypeMetaFirst(t *testing.T) {
	reg, err := NewRegistry(Builtins()...)
	if err != nil {
		t.Fatal(err)
	}
	obj := map[string]any{"metadata": map[string]any{"name": "a"}, "data": map[string]any{"k": "v"}, "apiVersion": "v1", "kind": "ConfigMap"}
	data, err := reg.Lookup("", "v1", "configmaps").Encode(obj)
	if err != nil || !strings.HasPrefix(string(data), `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a"}`) {
		t.Errorf("config map stored as %s (%v)", data, err)
	}
	widget := &Resource{Group: "example.com", Version: "v1", Kind: "Widget", Plural: "widgets"}
	if data, err := widget.Encode(map[string]any{"spec": 1, "apiVersion": "example.com/v1"}); err != nil || string(data) != `{"apiVersion":"example.com/v1","spec":1}` {
		t.Errorf("custom resource stored as %s (%v)", data, err)
	}
}
