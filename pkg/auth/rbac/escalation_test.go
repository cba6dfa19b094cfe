package rbac_test

import (
	"encoding/json"
	"testing"

	"github.com/watchcache/watchcache/pkg/auth/user"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestEscalation checks escalation prevention against the messages
// kube-apiserver 1.37 gives (read off the reference server).
func TestEscalation(t *testing.T) {
	e := newEnv(t)
	a := e.start()
	e.create("clusterroles", clusterRole("viewer", rule("get,list,watch", "", "pods,configmaps")))
	e.create("clusterroles", clusterRole("rbac-writer", rule("create,update", "rbac.authorization.k8s.io", "roles,rolebindings,clusterroles,clusterrolebindings")))
	e.create("rolebindings", roleBinding("t1", "alice-view", "ClusterRole", "viewer", userSubject("alice")))
	e.create("clusterrolebindings", clusterRoleBinding("alice-rbac", "rbac-writer", userSubject("alice")))
	alice := &user.Info{Name: "alice", Groups: []string{"g1", user.AllAuthenticated}}

	// A role granting what alice lacks.
	err := a.CheckEscalation(t.Context(), alice, "roles", "t1", mustJSON(t, role("t1", "r1", rule("get", "", "secrets"))))
	want := `roles.rbac.authorization.k8s.io "r1" is forbidden: user "alice" (groups=["g1" "system:authenticated"]) is attempting to grant RBAC permissions not currently held:` +
		"\n" + `{APIGroups:[""], Resources:["secrets"], Verbs:["get"]}`
	if !apierrors.IsForbidden(err) || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
	// Several missing rules, compacted and sorted.
	err = a.CheckEscalation(t.Context(), alice, "roles", "t1", mustJSON(t, role("t1", "r2", rule("get,list,delete", "", "secrets,configmaps"))))
	want = `roles.rbac.authorization.k8s.io "r2" is forbidden: user "alice" (groups=["g1" "system:authenticated"]) is attempting to grant RBAC permissions not currently held:` +
		"\n" + `{APIGroups:[""], Resources:["configmaps"], Verbs:["delete"]}` +
		"\n" + `{APIGroups:[""], Resources:["secrets"], Verbs:["get" "list" "delete"]}`
	if !apierrors.IsForbidden(err) || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
	// What she holds in t1 she may grant there, not elsewhere.
	if err := a.CheckEscalation(t.Context(), alice, "roles", "t1", mustJSON(t, role("t1", "r3", rule("get", "", "pods")))); err != nil {
		t.Errorf("covered role refused: %v", err)
	}
	if err := a.CheckEscalation(t.Context(), alice, "roles", "t2", mustJSON(t, role("t2", "r3", rule("get", "", "pods")))); !apierrors.IsForbidden(err) {
		t.Errorf("role in another namespace: got %v, want Forbidden", err)
	}
	if err := a.CheckEscalation(t.Context(), alice, "clusterroles", "", mustJSON(t, clusterRole("c1", rule("get", "", "pods")))); !apierrors.IsForbidden(err) {
		t.Errorf("cluster role beyond cluster-wide rules: got %v, want Forbidden", err)
	}
	nonResource := clusterRole("cr2", rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/metrics"}})
	err = a.CheckEscalation(t.Context(), alice, "clusterroles", "", mustJSON(t, nonResource))
	want = `clusterroles.rbac.authorization.k8s.io "cr2" is forbidden: user "alice" (groups=["g1" "system:authenticated"]) is attempting to grant RBAC permissions not currently held:` +
		"\n" + `{NonResourceURLs:["/metrics"], Verbs:["get"]}`
	if err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
	agg := clusterRole("agg")
	agg.AggregationRule = &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"foo": "bar"}}}}
	err = a.CheckEscalation(t.Context(), alice, "clusterroles", "", mustJSON(t, agg))
	if want := `clusterroles.rbac.authorization.k8s.io "agg" is forbidden: must have cluster-admin privileges to use the aggregationRule`; err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}

	// Bindings: to a role whose rules she holds, yes; beyond, no; to a
	// missing role, NotFound (naming the binding resource, as upstream).
	if err := a.CheckEscalation(t.Context(), alice, "rolebindings", "t1", mustJSON(t, roleBinding("t1", "b1", "ClusterRole", "viewer", userSubject("bob")))); err != nil {
		t.Errorf("binding to a covered role refused: %v", err)
	}
	err = a.CheckEscalation(t.Context(), alice, "clusterrolebindings", "", mustJSON(t, clusterRoleBinding("x2", "viewer", userSubject("bob"))))
	want = `clusterrolebindings.rbac.authorization.k8s.io "x2" is forbidden: user "alice" (groups=["g1" "system:authenticated"]) is attempting to grant RBAC permissions not currently held:` +
		"\n" + `{APIGroups:[""], Resources:["configmaps"], Verbs:["get" "list" "watch"]}` +
		"\n" + `{APIGroups:[""], Resources:["pods"], Verbs:["get" "list" "watch"]}`
	if err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
	err = a.CheckEscalation(t.Context(), alice, "rolebindings", "t1", mustJSON(t, roleBinding("t1", "b2", "ClusterRole", "nonexist", userSubject("bob"))))
	if want := `rolebindings.rbac.authorization.k8s.io "nonexist" not found`; !apierrors.IsNotFound(err) || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}

	// The bind verb allows binding a role she does not hold, even a
	// missing one; escalate allows writing any role.
	e.create("clusterroles", clusterRole("binder", rbacv1.PolicyRule{Verbs: []string{"bind"}, APIGroups: []string{rbacv1.GroupName},
		Resources: []string{"clusterroles"}, ResourceNames: []string{"admin", "nonexist"}}))
	e.create("rolebindings", roleBinding("t1", "alice-bind", "ClusterRole", "binder", userSubject("alice")))
	e.create("clusterroles", clusterRole("admin", rule("*", "*", "*")))
	for _, ref := range []string{"admin", "nonexist"} {
		if err := a.CheckEscalation(t.Context(), alice, "rolebindings", "t1", mustJSON(t, roleBinding("t1", "b3", "ClusterRole", ref, userSubject("bob")))); err != nil {
			t.Errorf("bind %s in t1: %v", ref, err)
		}
	}
	if err := a.CheckEscalation(t.Context(), alice, "rolebindings", "t2", mustJSON(t, roleBinding("t2", "b3", "ClusterRole", "admin", userSubject("bob")))); !apierrors.IsForbidden(err) {
		t.Errorf("bind outside the namespace of the bind permission: got %v, want Forbidden", err)
	}
	e.create("clusterroles", clusterRole("escalator", rule("escalate", rbacv1.GroupName, "roles")))
	e.create("rolebindings", roleBinding("t1", "alice-escalate", "ClusterRole", "escalator", userSubject("alice")))
	if err := a.CheckEscalation(t.Context(), alice, "roles", "t1", mustJSON(t, role("t1", "r1", rule("*", "*", "*")))); err != nil {
		t.Errorf("escalate verb: %v", err)
	}

	// Superusers pass; other resources are not checked.
	admin := &user.Info{Name: "root", Groups: []string{user.SystemPrivilegedGroup}}
	if err := a.CheckEscalation(t.Context(), admin, "clusterroles", "", mustJSON(t, agg)); err != nil {
		t.Errorf("system:masters: %v", err)
	}
	if err := a.CheckEscalation(t.Context(), alice, "pods", "t1", []byte(`{}`)); err != nil {
		t.Errorf("pods: %v", err)
	}
	if err := a.CheckEscalation(t.Context(), alice, "roles", "t1", []byte(`{`)); !apierrors.IsBadRequest(err) {
		t.Errorf("bad JSON: got %v, want BadRequest", err)
	}
}
