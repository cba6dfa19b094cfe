// Privilege escalation prevention on RBAC writes (registry/rbac's escalation
// check): a role's rules or a binding's role must be held by the writer, or
// the writer has escalate/bind, unless only GC fields change.

package rbac

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/watchcache/watchcache/pkg/auth/authorizer"
	"github.com/watchcache/watchcache/pkg/auth/user"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// fullAuthority is cluster-admin's power: what it takes to set an
// aggregationRule, which can gather anything.
var fullAuthority = []rbacv1.PolicyRule{
	{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}},
	{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}},
}

// CheckEscalation is the RBAC registry's escalation prevention, to call
// before storing a create, update or patch of a Role, ClusterRole,
// RoleBinding or ClusterRoleBinding (resource: its plural, with or without
// ".rbac.authorization.k8s.io"; namespace: the request's, "" for the
// cluster-scoped kinds; newObj: the object to store, as JSON). It returns
// nil for other resources.
//
// As kube-apiserver: system:masters may do anything. A role passes if the
// user may "escalate" it or already holds every rule it grants (in that
// namespace; cluster-wide for ClusterRoles); setting or changing a
// ClusterRole's aggregationRule also takes full authority. A binding
// passes if the user may "bind" the role it refers to, or holds every rule
// of that role; a missing role is then a NotFound. An update that only
// changes ownerReferences or finalizers passes. Refusals are 403 Forbidden
// StatusErrors with upstream's messages.
//
// Whether the write is a create or an update is read from the index (the
// object exists or not): the "escalate" check names the role only on
// updates, as upstream's request attributes do.
func (a *Authorizer) CheckEscalation(ctx context.Context, u *user.Info, resource, namespace string, newObj []byte) error {
	k, ok := kindOf(resource)
	if !ok {
		return nil
	}
	if u == nil {
		return apierrors.NewInternalError(errors.New("no user on context"))
	}
	if u.InGroup(user.SystemPrivilegedGroup) {
		return nil
	}
	gr := schema.GroupResource{Group: rbacv1.GroupName, Resource: kindNames[k]}
	switch k {
	case kindRoles:
		var r rbacv1.Role
		if err := json.Unmarshal(newObj, &r); err != nil {
			return apierrors.NewBadRequest(fmt.Sprintf("decoding %s: %v", gr, err))
		}
		a.mu.RLock()
		old := a.idx.roles[key(namespace, r.Name)]
		a.mu.RUnlock()
		var oldMeta *metav1.ObjectMeta
		if old != nil {
			if onlyGCFields(&r, old, &r.ObjectMeta, &old.ObjectMeta) {
				return nil
			}
			oldMeta = &old.ObjectMeta
		}
		return a.checkRole(ctx, u, gr, namespace, &r.ObjectMeta, oldMeta, r.Rules, false)
	case kindClusterRoles:
		var r rbacv1.ClusterRole
		if err := json.Unmarshal(newObj, &r); err != nil {
			return apierrors.NewBadRequest(fmt.Sprintf("decoding %s: %v", gr, err))
		}
		a.mu.RLock()
		var old *rbacv1.ClusterRole
		if c := a.idx.clusterRoles[r.Name]; c != nil {
			old = c.role
		}
		a.mu.RUnlock()
		var oldMeta *metav1.ObjectMeta
		aggregating := hasAggregationRule(&r)
		if old != nil {
			if onlyGCFields(&r, old, &r.ObjectMeta, &old.ObjectMeta) {
				return nil
			}
			oldMeta = &old.ObjectMeta
			aggregating = aggregating || hasAggregationRule(old)
		}
		return a.checkRole(ctx, u, gr, "", &r.ObjectMeta, oldMeta, r.Rules, aggregating)
	default:
		// RoleBinding and ClusterRoleBinding have the same JSON shape (the
		// index keeps both as RoleBindings).
		var b rbacv1.RoleBinding
		if err := json.Unmarshal(newObj, &b); err != nil {
			return apierrors.NewBadRequest(fmt.Sprintf("decoding %s: %v", gr, err))
		}
		if k == kindClusterRoleBindings {
			namespace = ""
		}
		a.mu.RLock()
		old := a.idx.bindings[k][key(namespace, b.Name)]
		a.mu.RUnlock()
		if old != nil && onlyGCFields(&b, old.obj, &b.ObjectMeta, &old.obj.ObjectMeta) {
			return nil
		}
		return a.checkBinding(ctx, u, gr, namespace, &b)
	}
}

func hasAggregationRule(r *rbacv1.ClusterRole) bool {
	return r.AggregationRule != nil && len(r.AggregationRule.ClusterRoleSelectors) > 0
}

// checkRole checks a role's rules (and, aggregating, its aggregationRule);
// oldMeta is the stored object's metadata on an update, nil on a create.
func (a *Authorizer) checkRole(ctx context.Context, u *user.Info, gr schema.GroupResource, namespace string,
	meta, oldMeta *metav1.ObjectMeta, rules []rbacv1.PolicyRule, aggregating bool) error {
	name := ""
	if oldMeta != nil {
		name = meta.Name
	}
	d, _, _ := a.Authorize(ctx, authorizer.Attributes{User: u, Verb: "escalate", ResourceRequest: true,
		APIGroup: gr.Group, APIVersion: "*", Resource: gr.Resource, Namespace: namespace, Name: name})
	if d == authorizer.Allow {
		return nil
	}
	if err := a.confirmNoEscalation(u, namespace, rules); err != nil {
		return apierrors.NewForbidden(gr, meta.Name, err)
	}
	if aggregating && a.confirmNoEscalation(u, namespace, fullAuthority) != nil {
		return apierrors.NewForbidden(gr, meta.Name, errors.New("must have cluster-admin privileges to use the aggregationRule"))
	}
	return nil
}

// checkBinding checks a binding (in namespace, "" for a
// ClusterRoleBinding).
func (a *Authorizer) checkBinding(ctx context.Context, u *user.Info, gr schema.GroupResource, namespace string, b *rbacv1.RoleBinding) error {
	attrs := authorizer.Attributes{User: u, Verb: "bind", ResourceRequest: true, Namespace: namespace,
		APIGroup: b.RoleRef.APIGroup, APIVersion: "*", Name: b.RoleRef.Name}
	switch b.RoleRef.Kind {
	case "ClusterRole":
		attrs.Resource = "clusterroles"
	case "Role":
		attrs.Resource = "roles"
	}
	if attrs.Resource != "" {
		if d, _, _ := a.Authorize(ctx, attrs); d == authorizer.Allow {
			return nil
		}
	}
	a.mu.RLock()
	rules, err := a.idx.roleRefRules(b.RoleRef, namespace)
	a.mu.RUnlock()
	if apierrors.IsNotFound(err) {
		// As upstream, whose role getters answer with the binding
		// resource's NotFound.
		return apierrors.NewNotFound(gr, b.RoleRef.Name)
	}
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	if err := a.confirmNoEscalation(u, namespace, rules); err != nil {
		return apierrors.NewForbidden(gr, b.Name, err)
	}
	return nil
}

// onlyGCFields reports whether obj differs from old at most in the fields
// garbage collection changes (ownerReferences, finalizers), as upstream's
// IsOnlyMutatingGCFields; resourceVersion and managedFields are ignored
// too. obj is not modified.
func onlyGCFields[T any](obj, old *T, meta, oldMeta *metav1.ObjectMeta) bool {
	saved := *meta
	defer func() { *meta = saved }()
	meta.OwnerReferences, meta.Finalizers = oldMeta.OwnerReferences, oldMeta.Finalizers
	meta.SelfLink, meta.ManagedFields, meta.ResourceVersion = oldMeta.SelfLink, oldMeta.ManagedFields, oldMeta.ResourceVersion
	return equality.Semantic.DeepEqual(obj, old)
}
