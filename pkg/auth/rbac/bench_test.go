package rbac

import (
	"fmt"
	"testing"

	"github.com/watchcache/watchcache/pkg/auth/authorizer"
	"github.com/watchcache/watchcache/pkg/auth/user"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BenchmarkAuthorize authorizes one user among 1,000 bindings (one per
// node user, half ClusterRoleBindings, half RoleBindings, plus the
// system:authenticated discovery binding), as the kubelet scenario does.
func BenchmarkAuthorize(b *testing.B) {
	a := New(Stores{}, nil)
	x := &a.idx
	x.put(kindClusterRoles, "node", newClusterRole(&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "node"}, Rules: []rbacv1.PolicyRule{
		{Verbs: []string{"get", "list", "watch"}, APIGroups: []string{""}, Resources: []string{"configmaps", "secrets", "services"}},
		{Verbs: []string{"create", "update", "patch"}, APIGroups: []string{""}, Resources: []string{"events", "nodes/status"}},
		{Verbs: []string{"get", "list", "watch"}, APIGroups: []string{""}, Resources: []string{"pods", "nodes"}},
	}}))
	x.put(kindClusterRoles, "discovery", newClusterRole(&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "discovery"},
		Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"/api", "/api/*", "/apis", "/apis/*"}}}}))
	x.put(kindClusterRoleBindings, "discovery", newBinding(&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "discovery"},
		RoleRef:  rbacv1.RoleRef{Kind: "ClusterRole", Name: "discovery"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.GroupKind, Name: user.AllAuthenticated}}}))
	for i := range 1000 {
		name := fmt.Sprintf("node-%d", i)
		rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "node"}, Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: name}}}
		k := kindClusterRoleBindings
		if i%2 == 1 {
			rb.Namespace, k = fmt.Sprintf("ns-%d", i%10), kindRoleBindings
		}
		x.put(k, key(rb.Namespace, name), newBinding(rb))
	}
	u := &user.Info{Name: "node-500", Groups: []string{"system:nodes", user.AllAuthenticated}}
	for _, tc := range []struct {
		name  string
		attrs authorizer.Attributes
		want  authorizer.Decision
	}{
		{"allow", authorizer.Attributes{User: u, Verb: "list", ResourceRequest: true, Resource: "pods", Namespace: "ns-3"}, authorizer.Allow},
		{"deny", authorizer.Attributes{User: u, Verb: "delete", ResourceRequest: true, Resource: "pods", Namespace: "ns-3"}, authorizer.NoOpinion},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if d, _, _ := a.Authorize(b.Context(), tc.attrs); d != tc.want {
					b.Fatalf("got %v, want %v", d, tc.want)
				}
			}
		})
	}
}
