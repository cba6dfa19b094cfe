package rbac_test

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/watchcache/watchcache/pkg/auth/authorizer"
	"github.com/watchcache/watchcache/pkg/auth/rbac"
	"github.com/watchcache/watchcache/pkg/auth/rbac/bootstrap"
	"github.com/watchcache/watchcache/pkg/auth/user"
	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/storage"
	rbacv1 "k8s.io/api/rbac/v1"
)

// getClusterRole reads a ClusterRole from its store.
func (e *env) getClusterRole(name string) *rbacv1.ClusterRole {
	e.t.Helper()
	o, err := e.stores.ClusterRoles.Get(e.ctx, name, storage.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	var r rbacv1.ClusterRole
	if err := json.Unmarshal(o.JSON(), &r); err != nil {
		e.t.Fatal(err)
	}
	return &r
}

// eventually polls cond for 10 s.
func (e *env) eventually(what string, cond func() bool) {
	e.t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			e.t.Fatalf("timed out waiting until %s", what)
		}
	}
}

func hasRule(rules []rbacv1.PolicyRule, group, resource, verb string) bool {
	a := authorizer.Attributes{ResourceRequest: true, APIGroup: group, Resource: resource, Verb: verb}
	for i := range rules {
		if rbac.RuleAllows(&a, &rules[i]) {
			return true
		}
	}
	return false
}

func TestBootstrapAndAggregation(t *testing.T) {
	e := newEnv(t)
	a := e.start()
	if err := bootstrap.Bootstrap(e.ctx, e.stores, nil); err != nil {
		t.Fatal(err)
	}
	e.eventually("view, edit and admin are aggregated", func() bool {
		return hasRule(e.getClusterRole("view").Rules, "", "pods", "list") &&
			hasRule(e.getClusterRole("edit").Rules, "", "secrets", "create") &&
			hasRule(e.getClusterRole("admin").Rules, rbacv1.GroupName, "rolebindings", "create")
	})
	view := e.getClusterRole("view")
	if hasRule(view.Rules, "", "secrets", "get") {
		t.Error("view grants secrets")
	}
	if view.Labels["kubernetes.io/bootstrapping"] != "rbac-defaults" || view.Annotations["rbac.authorization.kubernetes.io/autoupdate"] != "true" || view.UID == "" {
		t.Errorf("view's metadata: %+v", view.ObjectMeta)
	}

	// Non-resource URLs as kube-apiserver's bootstrap policy authorizes them.
	anonymous := &user.Info{Name: user.Anonymous, Groups: []string{user.AllUnauthenticated}}
	bob := &user.Info{Name: "bob", Groups: []string{user.AllAuthenticated}}
	for _, tc := range []struct {
		u    *user.Info
		path string
		want authorizer.Decision
	}{
		{anonymous, "/healthz", authorizer.Allow}, {anonymous, "/livez", authorizer.Allow},
		{anonymous, "/readyz", authorizer.Allow}, {anonymous, "/version", authorizer.Allow},
		{anonymous, "/metrics", authorizer.NoOpinion}, {anonymous, "/api", authorizer.NoOpinion},
		{anonymous, "/debug/pprof/", authorizer.NoOpinion},
		{bob, "/api", authorizer.Allow}, {bob, "/apis/apps/v1", authorizer.Allow}, {bob, "/openapi/v3", authorizer.Allow},
		{bob, "/metrics", authorizer.NoOpinion}, {bob, "/debug/pprof/", authorizer.NoOpinion},
	} {
		d, _, _ := a.Authorize(t.Context(), authorizer.Attributes{User: tc.u, Verb: "get", Path: tc.path})
		if d != tc.want {
			t.Errorf("%s get %s: %v, want %v", tc.u.Name, tc.path, d, tc.want)
		}
	}
	if can(t, a, anonymous, "list", "pods", "ns1") {
		t.Error("anonymous may list pods")
	}
	if d, _, _ := a.Authorize(t.Context(), authorizer.Attributes{User: bob, Verb: "create", ResourceRequest: true,
		APIGroup: "authorization.k8s.io", Resource: "selfsubjectaccessreviews"}); d != authorizer.Allow {
		t.Error("system:basic-user not bound to system:authenticated")
	}

	// A user bound to view in one namespace.
	e.create("rolebindings", roleBinding("ns1", "bob-view", "ClusterRole", "view", userSubject("bob")))
	if !can(t, a, bob, "list", "pods", "ns1") || can(t, a, bob, "list", "pods", "ns2") || can(t, a, bob, "get", "secrets", "ns1") {
		t.Error("view in ns1 does not give what it should")
	}

	// A new aggregate-to-view role extends view.
	widgets := clusterRole("widget-viewer", rule("get,list", "example.com", "widgets"))
	widgets.Labels = map[string]string{"rbac.authorization.k8s.io/aggregate-to-view": "true"}
	e.create("clusterroles", widgets)
	e.eventually("view includes widgets", func() bool { return hasRule(e.getClusterRole("view").Rules, "example.com", "widgets", "list") })
	e.eventually("admin includes widgets (through edit's label)", func() bool {
		return hasRule(e.getClusterRole("admin").Rules, "example.com", "widgets", "get")
	})
	e.eventually("bob may list widgets in ns1", func() bool {
		d, _, _ := a.Authorize(t.Context(), authorizer.Attributes{User: bob, Verb: "list", ResourceRequest: true, APIGroup: "example.com", Resource: "widgets", Namespace: "ns1"})
		return d == authorizer.Allow
	})
	e.remove("clusterroles", "widget-viewer")
	e.eventually("view loses widgets", func() bool { return !hasRule(e.getClusterRole("view").Rules, "example.com", "widgets", "list") })

	// The loss reaches admin through edit's label; once it has, the
	// aggregation has nothing left to write.
	e.eventually("admin loses widgets", func() bool { return !hasRule(e.getClusterRole("admin").Rules, "example.com", "widgets", "get") })

	// Bootstrap again: nothing to write. Then recreate what was lost.
	before, err := e.stores.ClusterRoles.CurrentResourceVersion(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	lists := func() map[string]uint64 {
		rvs := map[string]uint64{}
		for _, r := range []string{"roles", "rolebindings", "clusterroles", "clusterrolebindings"} {
			l, err := e.store(r).GetList(e.ctx, "", storage.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range l.Items {
				rvs[r+"/"+o.Key()] = o.ResourceVersion()
			}
		}
		return rvs
	}
	l1 := lists()
	if err := bootstrap.Bootstrap(e.ctx, e.stores, nil); err != nil {
		t.Fatal(err)
	}
	after, _ := e.stores.ClusterRoles.CurrentResourceVersion(e.ctx)
	if l2 := lists(); after != before || len(l1) != len(l2) {
		t.Errorf("second bootstrap wrote: revision %d -> %d, %d -> %d objects", before, after, len(l1), len(l2))
	}
	e.remove("clusterrolebindings", "system:public-info-viewer")
	trimmed := e.getClusterRole("system:discovery")
	trimmed.Rules = trimmed.Rules[:0]
	data, _ := json.Marshal(trimmed)
	if _, err := e.stores.ClusterRoles.GuaranteedUpdate(e.ctx, "system:discovery", nil,
		func(*object.Object) ([]byte, error) { return data, nil }, nil); err != nil {
		t.Fatal(err)
	}
	if err := bootstrap.Bootstrap(e.ctx, e.stores, nil); err != nil {
		t.Fatal(err)
	}
	if r := e.getClusterRole("system:discovery"); !slices.ContainsFunc(r.Rules, func(r rbacv1.PolicyRule) bool { return slices.Contains(r.NonResourceURLs, "/api") }) {
		t.Errorf("system:discovery's rules not restored: %v", r.Rules)
	}
	if _, err := e.stores.ClusterRoleBindings.Get(e.ctx, "system:public-info-viewer", storage.GetOptions{}); err != nil {
		t.Errorf("deleted binding not recreated: %v", err)
	}
}
