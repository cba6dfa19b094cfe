// The NodeRestriction plugin: what a node (a kubelet) may write of the
// objects the Node authorizer lets it write.

package admission

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/watchcache/watchcache/pkg/jsontree"
	"github.com/watchcache/watchcache/pkg/pipeline"
	"github.com/watchcache/watchcache/pkg/podrefs"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// NodeRestriction is the NodeRestriction plugin (off by default, as in
// kube-apiserver), a validating stage: a node creates and updates only its
// own Node, without changing its taints or setting labels of the
// kubernetes.io and k8s.io namespaces other than a kubelet's (never
// node-restriction.kubernetes.io/); creates only mirror pods bound to it
// and owned by its Node, that reference no other object; updates the
// status (not the labels) and deletes only pods bound to it; creates only
// its own Lease and CSINode. (kube-apiserver runs it in the mutating
// phase; its checks of evictions, ResourceSlices and
// PodCertificateRequests are not here.)
type NodeRestriction struct{ Builtin *Builtin }

// kubeletLabels and kubeletLabelNamespaces are the labels of the
// kubernetes.io and k8s.io namespaces a kubelet may set on its Node.
var (
	kubeletLabels = []string{"kubernetes.io/hostname", "topology.kubernetes.io/zone", "topology.kubernetes.io/region",
		"failure-domain.beta.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/region", "beta.kubernetes.io/instance-type",
		"node.kubernetes.io/instance-type", "kubernetes.io/os", "kubernetes.io/arch", "beta.kubernetes.io/os", "beta.kubernetes.io/arch"}
	kubeletLabelNamespaces = []string{"kubelet.kubernetes.io", "node.kubernetes.io"}
)

// Validate checks a node's write.
func (s NodeRestriction) Validate(ctx context.Context, req *pipeline.Request) error {
	node, ok := nodeOf(req)
	if !ok {
		return nil
	}
	if node == "" {
		return forbidden(req, fmt.Errorf("could not determine node from user %q", req.User.Name))
	}
	switch req.Resource.Group + "/" + req.Resource.Plural {
	case "/pods":
		return s.pod(ctx, req, node)
	case "/nodes":
		return nodeWrite(req, node)
	case "coordination.k8s.io/leases":
		if req.Operation != admissionv1.Delete && req.Name != node {
			return forbidden(req, fmt.Errorf("can only access node lease with the same name as the requesting node"))
		}
	case "storage.k8s.io/csinodes":
		if req.Operation != admissionv1.Delete && req.Name != node {
			return forbidden(req, fmt.Errorf("can only access CSINode with the same name as the requesting node"))
		}
	}
	return nil
}

// nodeOf is the node that req's user is (the Node authorizer's identity:
// system:node:<name> in system:nodes).
func nodeOf(req *pipeline.Request) (string, bool) {
	u := req.User
	if u == nil || !strings.HasPrefix(u.Name, "system:node:") || !u.InGroup("system:nodes") {
		return "", false
	}
	return strings.TrimPrefix(u.Name, "system:node:"), true
}

func (s NodeRestriction) pod(ctx context.Context, req *pipeline.Request, node string) error {
	boundTo := func(obj map[string]any) string {
		name, _ := jsontree.Child(obj, "spec")["nodeName"].(string)
		return name
	}
	switch {
	case req.Operation == admissionv1.Delete:
		if boundTo(req.OldObject) != node {
			return forbidden(req, fmt.Errorf("node %q can only delete pods with spec.nodeName set to itself", node))
		}
	case req.Subresource == "status":
		if boundTo(req.OldObject) != node {
			return forbidden(req, fmt.Errorf("node %q can only update pod status for pods with spec.nodeName set to itself", node))
		}
		labels := func(obj map[string]any) any { return jsontree.Child(obj, "metadata")["labels"] }
		if !reflect.DeepEqual(labels(req.Object), labels(req.OldObject)) {
			return forbidden(req, fmt.Errorf("node %q cannot update labels through pod status", node))
		}
	case req.Operation == admissionv1.Create && req.Subresource == "":
		return s.mirrorPod(ctx, req, node)
	}
	return nil
}

// mirrorPod checks a node's new pod.
func (s NodeRestriction) mirrorPod(ctx context.Context, req *pipeline.Request, node string) error {
	var pod corev1.Pod
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(req.Object, &pod); err != nil {
		return err
	}
	refuse := func(format string, args ...any) error { return forbidden(req, fmt.Errorf(format, args...)) }
	if _, ok := pod.Annotations[mirrorPodAnnotation]; !ok {
		return refuse("pod does not have %q annotation, node %q can only create mirror pods", mirrorPodAnnotation, node)
	}
	if pod.Spec.NodeName != node {
		return refuse("node %q can only create pods with spec.nodeName set to itself", node)
	}
	if len(pod.OwnerReferences) > 1 {
		return refuse("node %q can only create pods with a single owner reference set to itself", node)
	}
	if len(pod.OwnerReferences) == 0 {
		return refuse("node %q can only create pods with an owner reference set to itself", node)
	}
	owner := pod.OwnerReferences[0]
	switch {
	case owner.APIVersion != "v1" || owner.Kind != "Node" || owner.Name != node:
		return refuse("node %q can only create pods with an owner reference set to itself", node)
	case owner.Controller == nil || !*owner.Controller:
		return refuse("node %q can only create pods with a controller owner reference set to itself", node)
	case owner.BlockOwnerDeletion != nil && *owner.BlockOwnerDeletion:
		return refuse("node %q must not set blockOwnerDeletion on an owner reference", node)
	}
	var self corev1.Node
	found, err := s.Builtin.get(ctx, "", "nodes", node, &self)
	if err != nil {
		return err
	}
	if !found || self.UID != owner.UID {
		return refuse("node %s UID mismatch: expected %s got %s", node, owner.UID, self.UID)
	}
	refs := podrefs.Of(&pod)
	for _, c := range []struct {
		what string
		any  bool
	}{
		{"a service account", refs.ServiceAccount != ""}, {"secrets", len(refs.Secrets) > 0},
		{"configmaps", len(refs.ConfigMaps) > 0}, {"persistentvolumeclaims", len(refs.PersistentVolumeClaims) > 0},
		{"resourceclaims", len(refs.ResourceClaims) > 0},
	} {
		if c.any {
			return refuse("node %q can not create pods that reference %s", node, c.what)
		}
	}
	return nil
}

// nodeWrite checks a node's create or update of a Node.
func nodeWrite(req *pipeline.Request, node string) error {
	if req.Operation == admissionv1.Delete {
		return nil
	}
	if req.Name != node {
		return forbidden(req, fmt.Errorf("node %q is not allowed to modify node %q", node, req.Name))
	}
	labels := func(obj map[string]any) map[string]any {
		l, _ := jsontree.Child(obj, "metadata")["labels"].(map[string]any)
		return l
	}
	if req.Operation == admissionv1.Create {
		if bad := forbiddenLabels(labels(req.Object), nil); len(bad) > 0 {
			return forbidden(req, fmt.Errorf("node %q is not allowed to set the following labels: %s", node, strings.Join(bad, ", ")))
		}
		return nil
	}
	taints := func(obj map[string]any) any { return jsontree.Child(obj, "spec")["taints"] }
	if !reflect.DeepEqual(taints(req.Object), taints(req.OldObject)) {
		return forbidden(req, fmt.Errorf("node %q is not allowed to modify taints", node))
	}
	if bad := forbiddenLabels(labels(req.Object), labels(req.OldObject)); len(bad) > 0 {
		return forbidden(req, fmt.Errorf("is not allowed to modify labels: %s", strings.Join(bad, ", ")))
	}
	return nil
}

// forbiddenLabels are the labels that differ between labels and old (set,
// changed or removed) that a kubelet may not set, sorted.
func forbiddenLabels(labels, old map[string]any) []string {
	var bad []string
	check := func(key string) {
		v, inNew := labels[key]
		w, inOld := old[key]
		if inNew == inOld && v == w {
			return
		}
		ns, _, _ := strings.Cut(key, "/")
		if !strings.Contains(key, "/") {
			ns = ""
		}
		within := func(ns, domain string) bool { return ns == domain || strings.HasSuffix(ns, "."+domain) }
		kubernetes := within(ns, "kubernetes.io") || within(ns, "k8s.io")
		kubelet := slices.Contains(kubeletLabels, key) || slices.ContainsFunc(kubeletLabelNamespaces, func(d string) bool { return within(ns, d) })
		if within(ns, "node-restriction.kubernetes.io") || (kubernetes && !kubelet) {
			if !slices.Contains(bad, key) {
				bad = append(bad, key)
			}
		}
	}
	for k := range labels {
		check(k)
	}
	for k := range old {
		check(k)
	}
	sort.Strings(bad)
	return bad
}
