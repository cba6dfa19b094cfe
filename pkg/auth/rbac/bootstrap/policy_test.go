package bootstrap

import (
	"slices"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
)

func TestLoad(t *testing.T) {
	p, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	roles := map[string]*rbacv1.ClusterRole{}
	for i := range p.ClusterRoles {
		r := &p.ClusterRoles[i]
		roles[r.Name] = r
		if r.UID != "" || r.ResourceVersion != "" || !r.CreationTimestamp.IsZero() || r.Annotations["rbac.authorization.kubernetes.io/autoupdate"] != "true" {
			t.Errorf("clusterrole %s: metadata %+v", r.Name, r.ObjectMeta)
		}
	}
	for _, name := range []string{"cluster-admin", "admin", "edit", "view", "system:aggregate-to-admin", "system:aggregate-to-edit",
		"system:aggregate-to-view", "system:discovery", "system:basic-user", "system:public-info-viewer", "system:monitoring",
		"system:auth-delegator"} {
		if roles[name] == nil {
			t.Errorf("clusterrole %s missing", name)
		}
	}
	for _, name := range []string{"admin", "edit", "view"} {
		if r := roles[name]; r != nil && (r.AggregationRule == nil || len(r.Rules) != 0) {
			t.Errorf("%s: want an aggregationRule and no rules, got %+v %v", name, r.AggregationRule, r.Rules)
		}
	}
	bound := map[string][]rbacv1.Subject{}
	for _, b := range p.ClusterRoleBindings {
		bound[b.Name+"->"+b.RoleRef.Name] = b.Subjects
	}
	group := func(name string) rbacv1.Subject {
		return rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: name}
	}
	for binding, subject := range map[string]rbacv1.Subject{
		"cluster-admin->cluster-admin":                         group("system:masters"),
		"system:discovery->system:discovery":                   group("system:authenticated"),
		"system:basic-user->system:basic-user":                 group("system:authenticated"),
		"system:public-info-viewer->system:public-info-viewer": group("system:unauthenticated"),
	} {
		if !slices.Contains(bound[binding], subject) {
			t.Errorf("clusterrolebinding %s: subjects %v lack %v", binding, bound[binding], subject)
		}
	}
	if len(p.Roles) == 0 || len(p.RoleBindings) == 0 {
		t.Error("no namespaced bootstrap roles or bindings")
	}
}
