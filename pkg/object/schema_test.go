package object

import "testing"

// TestWithClusterScope: the cluster-scoped schema selects the same fields,
// and the schema it was made from stays namespaced.
func TestWithClusterScope(t *testing.T) {
	ns := MustSchema("spec.nodeName")
	cluster := ns.WithClusterScope()
	if ns.ClusterScoped() || !cluster.ClusterScoped() {
		t.Fatalf("ClusterScoped: %v for the schema, %v for WithClusterScope's; want false, true", ns.ClusterScoped(), cluster.ClusterScoped())
	}
	for _, f := range []string{"metadata.name", "metadata.namespace", "spec.nodeName"} {
		if !cluster.Selectable(f) {
			t.Errorf("%s is not selectable in the cluster-scoped schema", f)
		}
	}
	obj, _, err := Decode(cluster, "n1", []byte(`{"metadata":{"name":"n1"},"spec":{"nodeName":"x"}}`), 3)
	if err != nil {
		t.Fatal(err)
	}
	if obj.Name() != "n1" || obj.Fields().Get("spec.nodeName") != "x" {
		t.Errorf("decoded with the cluster-scoped schema: name %q, spec.nodeName %q", obj.Name(), obj.Fields().Get("spec.nodeName"))
	}
}

// TestFieldValues: fields whose values are not their JSON paths select as
// kube-apiserver's field sets hold them: an absent or null field as its
// type's zero, a fallback path when the first is empty, a field with no
// paths always as its zero; plain fields stay "" when absent.
func TestFieldValues(t *testing.T) {
	s, err := NewSchemaWith([]string{"spec.unschedulable", "source", "reportingComponent", "status.podIPs", "status.phase"},
		map[string]FieldValue{
			"spec.unschedulable": {Paths: []string{"spec.unschedulable"}, Zero: "false"},
			"source":             {Paths: []string{"source.component", "reportingComponent"}},
			"status.podIPs":      {},
		})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		json string
		want map[string]string
	}{
		{`{"metadata":{"name":"a"}}`, map[string]string{"spec.unschedulable": "false", "source": "", "status.podIPs": "", "status.phase": ""}},
		{`{"metadata":{"name":"a"},"spec":{"unschedulable":null},"reportingComponent":"ctl"}`,
			map[string]string{"spec.unschedulable": "false", "source": "ctl", "reportingComponent": "ctl"}},
		{`{"metadata":{"name":"a"},"spec":{"unschedulable":true},"source":{"component":"kubelet"},"reportingComponent":"ctl","status":{"podIPs":[{"ip":"1.2.3.4"}],"phase":"Running"}}`,
			map[string]string{"spec.unschedulable": "true", "source": "kubelet", "reportingComponent": "ctl", "status.podIPs": "", "status.phase": "Running"}},
	} {
		obj, _, err := Decode(s, "a", []byte(tc.json), 1)
		if err != nil {
			t.Fatal(err)
		}
		for f, want := range tc.want {
			if got := obj.Fields().Get(f); got != want {
				t.Errorf("%s: %s = %q, want %q", tc.json, f, got, want)
			}
		}
		if obj.Name() != "a" {
			t.Errorf("name %q", obj.Name())
		}
	}
	for _, f := range []string{"spec.unschedulable", "source", "status.podIPs", "metadata.name"} {
		if !s.Selectable(f) {
			t.Errorf("%s is not selectable", f)
		}
	}
	if s.Selectable("source.component") || s.Selectable("metadata.uid") {
		t.Error("a path captured only for another field is selectable")
	}
}
