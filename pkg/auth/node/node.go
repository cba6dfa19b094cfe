// Package node is the Node authorizer of --authorization-mode Node, as
// kube-apiserver 1.37's: a kubelet (user system:node:<name> in group
// system:nodes) reads the Secrets, ConfigMaps, PersistentVolumeClaims,
// PersistentVolumes, ServiceAccounts (and their tokens), ResourceClaims and
// pods that the pods bound to its node reference, only its own Node, Lease
// and CSINode, lists pods only by spec.nodeName=<its name>; what it may do
// besides is the system:node ClusterRole's rules of the bootstrap policy.
// Everything else gets no opinion, for the next authorizer (RBAC).
//
// Where kube-apiserver keeps a graph of these relationships, updated by
// informers, this authorizer reads them when asked from the watch cache
// (the node's pods by the spec.nodeName index, then the claims they use):
// the same answers, at a cost per decision of the node's pods in the
// object's namespace. The edges kube-apiserver has from PersistentVolumes
// to Secrets, and its ResourceSlice rules, are not here.
package node

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/watchcache/watchcache/pkg/auth/authorizer"
	"github.com/watchcache/watchcache/pkg/auth/rbac"
	"github.com/watchcache/watchcache/pkg/auth/user"
	"github.com/watchcache/watchcache/pkg/podrefs"
	"github.com/watchcache/watchcache/pkg/resource"
	"github.com/watchcache/watchcache/pkg/storage"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/fields"
)

// Identity of nodes: users named NamePrefix+<node> in group Group.
const (
	NamePrefix = "system:node:"
	Group      = "system:nodes"
	// leaseNamespace holds the nodes' heartbeat Leases.
	leaseNamespace = "kube-node-lease"
)

// NameOf is the node that u is, and whether u is a node at all (a node's
// name may be empty: "unknown node").
func NameOf(u *user.Info) (string, bool) {
	if u == nil || !strings.HasPrefix(u.Name, NamePrefix) || !u.InGroup(Group) {
		return "", false
	}
	return strings.TrimPrefix(u.Name, NamePrefix), true
}

// Authorizer is the Node authorizer.
type Authorizer struct {
	registry *resource.Registry
	// rules are the system:node ClusterRole's.
	rules []rbacv1.PolicyRule
}

// New is the Node authorizer over registry's stores (the watch cache),
// allowing what rules (the system:node ClusterRole's) allow once the
// relationship checks pass.
func New(registry *resource.Registry, rules []rbacv1.PolicyRule) *Authorizer {
	return &Authorizer{registry: registry, rules: rules}
}

// noRelationship is the reason a node may not reach an object.
func noRelationship(node string) string {
	return fmt.Sprintf("no relationship found between node '%s' and this object", node)
}

// Authorize decides a node's request; other users' get no opinion. A
// reason starts with "node: ", as kube-apiserver's.
func (z *Authorizer) Authorize(ctx context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	d, reason, err := z.decide(ctx, a)
	if reason != "" {
		reason = "node: " + reason
	}
	return d, reason, err
}

func (z *Authorizer) decide(ctx context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	node, ok := NameOf(a.User)
	if !ok {
		return authorizer.NoOpinion, "", nil
	}
	if node == "" {
		return authorizer.NoOpinion, fmt.Sprintf("unknown node for user %q", a.User.Name), nil
	}
	if !a.ResourceRequest {
		return z.byRules(a)
	}
	switch a.APIGroup + "/" + a.Resource {
	case "/secrets", "/configmaps":
		return z.read(ctx, node, a)
	case "/persistentvolumeclaims":
		if a.Subresource == "status" {
			return z.statusUpdate(ctx, node, a)
		}
		return z.get(ctx, node, a)
	case "/persistentvolumes", "resource.k8s.io/resourceclaims", "storage.k8s.io/volumeattachments":
		return z.get(ctx, node, a)
	case "/serviceaccounts":
		if a.Subresource == "token" || a.Verb == "create" {
			return z.createToken(ctx, node, a)
		}
		return z.get(ctx, node, a)
	case "/pods":
		return z.pod(ctx, node, a)
	case "/nodes":
		return z.node(node, a)
	case "coordination.k8s.io/leases":
		return z.ownObject(node, a, "node lease", leaseNamespace)
	case "storage.k8s.io/csinodes":
		return z.ownObject(node, a, "CSINode", "")
	}
	return z.byRules(a)
}

// byRules allows what the system:node ClusterRole allows.
func (z *Authorizer) byRules(a authorizer.Attributes) (authorizer.Decision, string, error) {
	for i := range z.rules {
		if rbac.RuleAllows(&a, &z.rules[i]) {
			return authorizer.Allow, "", nil
		}
	}
	return authorizer.NoOpinion, "", nil
}

// read allows get, list and watch of one named object the node's pods
// reference.
func (z *Authorizer) read(ctx context.Context, node string, a authorizer.Attributes) (authorizer.Decision, string, error) {
	switch {
	case a.Verb != "get" && a.Verb != "list" && a.Verb != "watch":
		return authorizer.NoOpinion, "can only read resources of this type", nil
	case a.Subresource != "":
		return authorizer.NoOpinion, "cannot read subresource", nil
	case a.Namespace == "":
		return authorizer.NoOpinion, "can only read namespaced object of this type", nil
	}
	return z.related(ctx, node, a)
}

// get allows get of one object the node's pods reference.
func (z *Authorizer) get(ctx context.Context, node string, a authorizer.Attributes) (authorizer.Decision, string, error) {
	switch {
	case a.Verb != "get":
		return authorizer.NoOpinion, "can only get individual resources of this type", nil
	case a.Subresource != "":
		return authorizer.NoOpinion, "cannot get subresource", nil
	}
	return z.related(ctx, node, a)
}

// statusUpdate allows updates of the status of a claim the node's pods
// use.
func (z *Authorizer) statusUpdate(ctx context.Context, node string, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if a.Verb != "update" && a.Verb != "patch" {
		return authorizer.NoOpinion, "can only get/update/patch this type", nil
	}
	return z.related(ctx, node, a)
}

// createToken allows tokens of the ServiceAccounts the node's pods run
// as.
func (z *Authorizer) createToken(ctx context.Context, node string, a authorizer.Attributes) (authorizer.Decision, string, error) {
	switch {
	case a.Verb != "create" || a.Name == "":
		return authorizer.NoOpinion, "can only create tokens for individual service accounts", nil
	case a.Subresource != "token":
		return authorizer.NoOpinion, "can only create token subresource of serviceaccount", nil
	}
	return z.related(ctx, node, a)
}

// pod allows get of a pod bound to the node and lists and watches of
// spec.nodeName=<node>; the rest by the rules.
func (z *Authorizer) pod(ctx context.Context, node string, a authorizer.Attributes) (authorizer.Decision, string, error) {
	switch a.Verb {
	case "get":
		return z.get(ctx, node, a)
	case "list", "watch":
		sel, err := fields.ParseSelector(a.FieldSelector)
		if err != nil || !slices.ContainsFunc(sel.Requirements(), func(r fields.Requirement) bool {
			return r.Field == "spec.nodeName" && (r.Operator == "=" || r.Operator == "==") && r.Value == node
		}) {
			return authorizer.NoOpinion, "can only list/watch pods with spec.nodeName field selector", nil
		}
	}
	return z.byRules(a)
}

// node allows reads of the node's own Node only; the rest by the rules.
func (z *Authorizer) node(node string, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if a.Subresource == "" && (a.Verb == "get" || a.Verb == "list" || a.Verb == "watch") {
		if a.Name == "" {
			return authorizer.NoOpinion, fmt.Sprintf("node '%s' cannot read all nodes, only its own Node object", node), nil
		}
		if a.Name != node {
			return authorizer.NoOpinion, fmt.Sprintf("node '%s' cannot read '%s', only its own Node object", node, a.Name), nil
		}
	}
	return z.byRules(a)
}

// ownObject allows a node's own Lease or CSINode (named as the node; in
// namespace if given): get, create (NodeRestriction checks the name),
// update, patch, delete.
func (z *Authorizer) ownObject(node string, a authorizer.Attributes, kind, namespace string) (authorizer.Decision, string, error) {
	switch a.Verb {
	case "get", "create", "update", "patch", "delete":
	default:
		return authorizer.NoOpinion, fmt.Sprintf("can only get, create, update, patch, or delete a %s", kind), nil
	}
	if namespace != "" && a.Namespace != namespace {
		return authorizer.NoOpinion, fmt.Sprintf("can only access leases in the %q system namespace", namespace), nil
	}
	if a.Verb != "create" && a.Name != node {
		return authorizer.NoOpinion, fmt.Sprintf("can only access %s with the same name as the requesting node", kind), nil
	}
	return authorizer.Allow, "", nil
}

// related allows a's object if a pod bound to node references it.
func (z *Authorizer) related(ctx context.Context, node string, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if a.Name == "" {
		return authorizer.NoOpinion, "No Object name found", nil
	}
	ok, err := z.references(ctx, node, a.APIGroup, a.Resource, a.Namespace, a.Name)
	if err != nil || !ok {
		return authorizer.NoOpinion, noRelationship(node), nil
	}
	return authorizer.Allow, "", nil
}

// references reports whether the pods bound to node reference the object
// group/resource namespace/name, directly or (a PersistentVolume) through
// the claims they use.
func (z *Authorizer) references(ctx context.Context, node, group, res, namespace, name string) (bool, error) {
	switch group + "/" + res {
	case "storage.k8s.io/volumeattachments":
		var va struct {
			Spec struct{ NodeName string } `json:"spec"`
		}
		found, err := z.getObject(ctx, group, res, "", name, &va)
		return found && va.Spec.NodeName == node, err
	case "/pods":
		var pod corev1.Pod
		found, err := z.getObject(ctx, "", "pods", namespace, name, &pod)
		return found && pod.Spec.NodeName == node, err
	}
	pods, err := z.podsOn(ctx, node, namespace)
	if err != nil {
		return false, err
	}
	for i := range pods {
		refs := podrefs.Of(&pods[i])
		var names []string
		switch res {
		case "secrets":
			names = refs.Secrets
		case "configmaps":
			names = refs.ConfigMaps
		case "persistentvolumeclaims":
			names = refs.PersistentVolumeClaims
		case "resourceclaims":
			names = refs.ResourceClaims
		case "serviceaccounts":
			names = []string{refs.ServiceAccount}
		case "persistentvolumes":
			for _, claim := range refs.PersistentVolumeClaims {
				var pvc corev1.PersistentVolumeClaim
				found, err := z.getObject(ctx, "", "persistentvolumeclaims", pods[i].Namespace, claim, &pvc)
				if err != nil {
					return false, err
				}
				if found && pvc.Spec.VolumeName == name {
					return true, nil
				}
			}
		}
		if slices.Contains(names, name) {
			return true, nil
		}
	}
	return false, nil
}

// podsOn are the pods bound to node in namespace (all: ""), from the watch
// cache.
func (z *Authorizer) podsOn(ctx context.Context, node, namespace string) ([]corev1.Pod, error) {
	res := z.registry.Lookup("", "v1", "pods")
	store := z.registry.Store(res)
	if store == nil {
		return nil, nil
	}
	list, err := store.GetList(ctx, res.Scope(namespace), storage.ListOptions{ResourceVersion: "0",
		Fields: fields.OneTermEqualSelector("spec.nodeName", node)})
	if err != nil {
		return nil, err
	}
	pods := make([]corev1.Pod, len(list.Items))
	for i, o := range list.Items {
		if err := json.Unmarshal(o.JSON(), &pods[i]); err != nil {
			return nil, err
		}
	}
	return pods, nil
}

// getObject decodes into out the object from the watch cache; found is
// false if there is none.
func (z *Authorizer) getObject(ctx context.Context, group, plural, namespace, name string, out any) (bool, error) {
	res := z.registry.Lookup(group, "v1", plural)
	store := z.registry.Store(res)
	if store == nil {
		return false, nil
	}
	obj, err := store.Get(ctx, res.Key(namespace, name), storage.GetOptions{ResourceVersion: "0"})
	if storage.CodeOf(err) == storage.ErrNotFound {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, json.Unmarshal(obj.JSON(), out)
}
