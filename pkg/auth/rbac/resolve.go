// Resolving the rules that apply to a user in a namespace: bindings by
// subject, their role's rules, and the description of the binding that
// allowed a request.

package rbac

import (
	"fmt"
	"strconv"

	"github.com/watchcache/watchcache/pkg/auth/user"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// visitor receives each rule that applies to a user, with the binding that
// grants it and the index of the binding's first subject matching the user,
// or (rule nil) an error resolving a binding's role. Returning false stops
// the visit.
type visitor func(b *binding, subject int, rule *rbacv1.PolicyRule, err error) bool

// visitRulesFor visits the rules that apply to u in namespace, as
// upstream's VisitRulesFor: ClusterRoleBindings first, then the
// namespace's RoleBindings. It costs one map lookup per user name and group
// in each scope; every binding is visited once (through the key of its
// first subject that matches u). The caller holds the read lock.
func (x *index) visitRulesFor(u *user.Info, namespace string, v visitor) {
	if !x.visitScope(u, "", v) || namespace == "" {
		return
	}
	x.visitScope(u, namespace, v)
}

func (x *index) visitScope(u *user.Info, namespace string, v visitor) bool {
	if !x.visitKey(u, subjectKey{namespace, 'u', u.Name}, v) {
		return false
	}
	for _, g := range u.Groups {
		if !x.visitKey(u, subjectKey{namespace, 'g', g}, v) {
			return false
		}
	}
	return true
}

func (x *index) visitKey(u *user.Info, k subjectKey, v visitor) bool {
	for b := range x.bySubject[k] {
		i := b.firstApplying(u)
		if i < 0 || b.keys[i] != k {
			continue // visited through another key
		}
		rules, err := x.roleRefRules(b.roleRef, b.namespace)
		if err != nil {
			if !v(b, i, nil, err) {
				return false
			}
			continue
		}
		for j := range rules {
			if !v(b, i, &rules[j], nil) {
				return false
			}
		}
	}
	return true
}

// firstApplying returns the index of the first subject of b that u is, -1
// if none.
func (b *binding) firstApplying(u *user.Info) int {
	for i, k := range b.keys {
		switch k.kind {
		case 'u':
			if k.name == u.Name {
				return i
			}
		case 'g':
			if u.InGroup(k.name) {
				return i
			}
		}
	}
	return -1
}

// roleRefRules returns the rules of the role a binding in namespace ("" for
// a ClusterRoleBinding) refers to, with upstream's errors (those of its
// listers) when the role is missing.
func (x *index) roleRefRules(ref rbacv1.RoleRef, namespace string) ([]rbacv1.PolicyRule, error) {
	switch ref.Kind {
	case "Role":
		r := x.roles[key(namespace, ref.Name)]
		if r == nil {
			return nil, apierrors.NewNotFound(schema.GroupResource{Group: rbacv1.GroupName, Resource: "role"}, ref.Name)
		}
		return r.Rules, nil
	case "ClusterRole":
		r := x.clusterRoles[ref.Name]
		if r == nil {
			return nil, apierrors.NewNotFound(schema.GroupResource{Group: rbacv1.GroupName, Resource: "clusterrole"}, ref.Name)
		}
		return r.role.Rules, nil
	default:
		return nil, fmt.Errorf("unsupported role reference kind: %q", ref.Kind)
	}
}

// describe names the binding and subject that allowed a request, in
// upstream's words ("ClusterRoleBinding "x" of ClusterRole "y" to Group
// "z"").
func (b *binding) describe(subject int) string {
	s := &b.subjects[subject]
	who := s.Kind + " " + strconv.Quote(s.Name)
	if s.Kind == rbacv1.ServiceAccountKind {
		ns := s.Namespace
		if ns == "" {
			ns = b.namespace
		}
		who = s.Kind + " " + strconv.Quote(s.Name+"/"+ns)
	}
	if b.namespace == "" {
		return "ClusterRoleBinding " + strconv.Quote(b.name) + " of " + b.roleRef.Kind + " " + strconv.Quote(b.roleRef.Name) + " to " + who
	}
	return "RoleBinding " + strconv.Quote(b.name+"/"+b.namespace) + " of " + b.roleRef.Kind + " " + strconv.Quote(b.roleRef.Name) + " to " + who
}
