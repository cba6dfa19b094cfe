// The namespace strategy: the kubernetes finalizer on create, spec.finalizers
// kept on update, and the kubernetes.io/metadata.name label.

package strategy

import "github.com/watchcache/watchcache/pkg/resource"

// FinalizerKubernetes is the finalizer every namespace starts with in
// spec.finalizers: the namespace controller removes it once the
// namespace's contents are gone.
const FinalizerKubernetes = "kubernetes"

// metadataNameLabel carries a namespace's name, as kube-apiserver's
// defaulting sets it, so that label selectors can pick namespaces by name.
const metadataNameLabel = "kubernetes.io/metadata.name"

func isNamespace(res *resource.Resource) bool { return res.Group == "" && res.Plural == "namespaces" }

// prepareNamespaceCreate is kube-apiserver's namespace strategy on create:
// phase Active, the kubernetes finalizer in spec.finalizers, the name
// label.
func prepareNamespaceCreate(obj map[string]any) {
	obj["status"] = map[string]any{"phase": "Active"}
	finalizers, _ := lookup(obj, []string{"spec", "finalizers"})
	list, _ := finalizers.([]any)
	for _, f := range list {
		if f == FinalizerKubernetes {
			labelNamespaceName(obj)
			return
		}
	}
	set(obj, []string{"spec", "finalizers"}, append(list, FinalizerKubernetes), true)
	labelNamespaceName(obj)
}

// keepNamespaceFinalizers keeps old's spec.finalizers in an update of a
// namespace: only /finalize changes them.
func keepNamespaceFinalizers(obj, old map[string]any) {
	path := []string{"spec", "finalizers"}
	v, ok := lookup(old, path)
	set(obj, path, v, ok)
	labelNamespaceName(obj)
}

// labelNamespaceName sets the kubernetes.io/metadata.name label to the
// namespace's name.
func labelNamespaceName(obj map[string]any) {
	meta := metadata(obj)
	name, _ := meta["name"].(string)
	if name == "" {
		return
	}
	labels, ok := meta["labels"].(map[string]any)
	if !ok {
		labels = map[string]any{}
		meta["labels"] = labels
	}
	labels[metadataNameLabel] = name
}
