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
