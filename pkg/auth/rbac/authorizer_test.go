package rbac_test

import (
	"strings"
	"testing"

	"github.com/watchcache/watchcache/pkg/auth/authorizer"
	"github.com/watchcache/watchcache/pkg/auth/user"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func clusterRole(name string, rules ...rbacv1.PolicyRule) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
		ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}
}

func role(ns, name string, rules ...rbacv1.PolicyRule) *rbacv1.Role {
	return &rbacv1.Role{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Rules: rules}
}

func rule(verbs, groups, resources string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: words(verbs), APIGroups: strings.Split(groups, ","), Resources: words(resources)}
}

func roleBinding(ns, name, refKind, ref string, subjects ...rbacv1.Subject) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: refKind, Name: ref}, Subjects: subjects}
}

func clusterRoleBinding(name, ref string, subjects ...rbacv1.Subject) *rbacv1.ClusterRoleBinding {
	return &rbacv1.ClusterRoleBinding{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: ref}, Subjects: subjects}
}

func userSubject(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: name}
}

func groupSubject(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: name}
}

func saSubject(ns, name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}
}

// can asks the authorizer whether u may verb resource in ns.
func can(t *testing.T, z authorizer.Authorizer, u *user.Info, verb, resource, ns string) bool {
	t.Helper()
	d, _, err := z.Authorize(t.Context(), authorizer.Attributes{User: u, Verb: verb, ResourceRequest: true,
		Resource: resource, Namespace: ns, APIVersion: "v1"})
	if err != nil {
		t.Fatal(err)
	}
	if d == authorizer.Deny {
		t.Fatal("RBAC never denies")
	}
	return d == authorizer.Allow
}

var alice = &user.Info{Name: "alice", Groups: []string{"devs", user.AllAuthenticated}}

func TestBindingAppliesAndGoes(t *testing.T) {
	e := newEnv(t)
	a := e.start()
	if can(t, a, alice, "get", "pods", "ns1") {
		t.Fatal("allowed before any binding")
	}
	e.create("clusterroles", clusterRole("pod-reader", rule("get,list", "", "pods")))
	e.create("rolebindings", roleBinding("ns1", "alice-pods", "ClusterRole", "pod-reader", userSubject("alice")))
	if !can(t, a, alice, "get", "pods", "ns1") {
		t.Fatal("binding not applied after WaitFor")
	}
	d, reason, _ := a.Authorize(t.Context(), authorizer.Attributes{User: alice, Verb: "list", ResourceRequest: true, Resource: "pods", Namespace: "ns1"})
	if want := `RBAC: allowed by RoleBinding "alice-pods/ns1" of ClusterRole "pod-reader" to User "alice"`; d != authorizer.Allow || reason != want {
		t.Errorf("got %v %q, want Allow %q", d, reason, want)
	}
	// A RoleBinding to a ClusterRole applies in its namespace only.
	if can(t, a, alice, "get", "pods", "ns2") || can(t, a, alice, "get", "pods", "") {
		t.Error("RoleBinding applied outside its namespace")
	}
	if can(t, a, alice, "delete", "pods", "ns1") || can(t, a, alice, "get", "secrets", "ns1") {
		t.Error("allowed beyond the role's rules")
	}
	e.remove("rolebindings", "ns1/alice-pods")
	if can(t, a, alice, "get", "pods", "ns1") {
		t.Error("allowed after the binding was deleted")
	}
	// A ClusterRoleBinding to a group applies everywhere.
	e.create("clusterrolebindings", clusterRoleBinding("devs-pods", "pod-reader", groupSubject("devs")))
	if !can(t, a, alice, "list", "pods", "ns2") || !can(t, a, alice, "list", "pods", "") {
		t.Error("ClusterRoleBinding to a group not applied cluster-wide")
	}
	if can(t, a, &user.Info{Name: "alice"}, "list", "pods", "ns2") {
		t.Error("group binding applied to a user outside the group")
	}
	// Deleting the role takes the permission away, and the reason says why.
	e.remove("clusterroles", "pod-reader")
	d, reason, _ = a.Authorize(t.Context(), authorizer.Attributes{User: alice, Verb: "list", ResourceRequest: true, Resource: "pods"})
	if want := `RBAC: clusterrole.rbac.authorization.k8s.io "pod-reader" not found`; d != authorizer.NoOpinion || reason != want {
		t.Errorf("got %v %q, want NoOpinion %q", d, reason, want)
	}
}

func TestRoleAndServiceAccountSubjects(t *testing.T) {
	e := newEnv(t)
	a := e.start()
	e.create("roles", role("ns1", "cm", rule("get", "", "configmaps")))
	// A ServiceAccount subject without a namespace is the binding's.
	e.create("rolebindings", roleBinding("ns1", "sa", "Role", "cm", saSubject("", "builder"), saSubject("ns2", "deployer")))
	sa := func(ns, name string) *user.Info {
		return &user.Info{Name: user.ServiceAccountUsernamePrefix + ns + ":" + name,
			Groups: []string{user.AllServiceAccountsGroup, user.ServiceAccountGroupPrefix + ns, user.AllAuthenticated}}
	}
	if !can(t, a, sa("ns1", "builder"), "get", "configmaps", "ns1") {
		t.Error("ServiceAccount defaulted to the binding's namespace not allowed")
	}
	if !can(t, a, sa("ns2", "deployer"), "get", "configmaps", "ns1") {
		t.Error("ServiceAccount of another namespace not allowed")
	}
	if can(t, a, sa("ns2", "builder"), "get", "configmaps", "ns1") || can(t, a, sa("ns1", "builder"), "get", "configmaps", "ns2") {
		t.Error("ServiceAccount matched in the wrong namespace")
	}
	// A Role is found in the binding's namespace only.
	e.create("rolebindings", roleBinding("ns2", "sa", "Role", "cm", saSubject("", "builder")))
	if can(t, a, sa("ns2", "builder"), "get", "configmaps", "ns2") {
		t.Error("Role of ns1 applied through a RoleBinding of ns2")
	}
	rules, err := a.RulesFor(sa("ns2", "builder"), "ns2")
	if len(rules) != 0 || err == nil || !strings.Contains(err.Error(), `role.rbac.authorization.k8s.io "cm" not found`) {
		t.Errorf("RulesFor = %v, %v; want no rules and a not-found error", rules, err)
	}
	rules, err = a.RulesFor(sa("ns1", "builder"), "ns1")
	if err != nil || len(rules) != 1 || rules[0].Resources[0] != "configmaps" {
		t.Errorf("RulesFor = %v, %v; want the configmaps rule", rules, err)
	}
}

func TestSuperuser(t *testing.T) {
	e := newEnv(t)
	a := e.start()
	admin := &user.Info{Name: "admin", Groups: []string{user.SystemPrivilegedGroup}}
	if !can(t, a, admin, "delete", "secrets", "kube-system") {
		t.Error("system:masters not allowed")
	}
	if can(t, a, nil, "get", "pods", "") {
		t.Error("nil user allowed")
	}
}
