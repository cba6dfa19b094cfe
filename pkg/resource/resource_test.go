package resource

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBuiltins(t *testing.T) {
	reg, err := NewRegistry(Builtins()...)
	if err != nil {
		t.Fatal(err)
	}
	pods := reg.Lookup("", "v1", "pods")
	if pods == nil || !pods.Namespaced || !pods.Schema().Selectable("spec.nodeName") || !pods.Schema().Selectable("metadata.namespace") {
		t.Fatalf("pods = %+v", pods)
	}
	if got := pods.EtcdPrefix("/registry"); got != "/registry/core/pods" {
		t.Errorf("EtcdPrefix = %q", got)
	}
	if ns := reg.Lookup("", "v1", "namespaces"); ns == nil || ns.Namespaced || ns.Key("", "a") != "a" {
		t.Fatalf("namespaces = %+v", ns)
	}
	if pods.Key("ns", "a") != "ns/a" {
		t.Error("namespaced key")
	}
}

func TestLoadFile(t *testing.T) {
	dir := t.TempDir()
	write := func(body string) string {
		p := filepath.Join(dir, "r.yaml")
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	rs, err := LoadFile(write(`
resources:
- group: example.com
  version: v1
  kind: Widget
  plural: widgets
  shortNames: [wd]
  namespaced: true
  selectableFields: [spec.color]
  indexedFields: [spec.color]
`))
	if err != nil {
		t.Fatal(err)
	}
	reg, err := NewRegistry(append(Builtins(), rs...)...)
	if err != nil {
		t.Fatal(err)
	}
	w := reg.Lookup("example.com", "v1", "widgets")
	if w == nil || w.Singular != "widget" || w.GroupVersion() != "example.com/v1" || !w.Schema().Selectable("spec.color") {
		t.Fatalf("widgets = %+v", w)
	}
	if g := reg.Groups(); len(g["example.com"]) != 1 || g["example.com"][0] != "v1" || len(g["rbac.authorization.k8s.io"]) != 1 {
		t.Errorf("Groups = %v", g)
	}

	for body, want := range map[string]string{
		"resources:\n- {group: example.com, version: v1, kind: W, plural: ws, colour: red}": "unknown field",
		"resources:\n- {version: v1, kind: W, plural: ws}":                                  "need a group",
	} {
		if _, err := LoadFile(write(body)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("LoadFile(%q) = %v, want %q", body, err, want)
		}
	}
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
