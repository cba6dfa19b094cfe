package rbac

import (
	"testing"

	"github.com/watchcache/watchcache/pkg/auth/authorizer"
	rbacv1 "k8s.io/api/rbac/v1"
)

func TestRuleAllows(t *testing.T) {
	res := func(verb, group, resource, sub, name string) authorizer.Attributes {
		return authorizer.Attributes{ResourceRequest: true, Verb: verb, APIGroup: group, Resource: resource, Subresource: sub, Name: name}
	}
	url := func(verb, path string) authorizer.Attributes { return authorizer.Attributes{Verb: verb, Path: path} }
	rule := func(verbs, groups, resources, names []string) rbacv1.PolicyRule {
		return rbacv1.PolicyRule{Verbs: verbs, APIGroups: groups, Resources: resources, ResourceNames: names}
	}
	s := func(v ...string) []string { return v }
	for _, tc := range []struct {
		name  string
		rule  rbacv1.PolicyRule
		attrs authorizer.Attributes
		want  bool
	}{
		{"exact", rule(s("get"), s(""), s("pods"), nil), res("get", "", "pods", "", "p"), true},
		{"other verb", rule(s("get"), s(""), s("pods"), nil), res("list", "", "pods", "", ""), false},
		{"verb star", rule(s("*"), s(""), s("pods"), nil), res("deletecollection", "", "pods", "", ""), true},
		{"other group", rule(s("get"), s(""), s("pods"), nil), res("get", "apps", "pods", "", ""), false},
		{"group star", rule(s("get"), s("*"), s("pods"), nil), res("get", "apps", "pods", "", ""), true},
		{"no groups", rule(s("get"), nil, s("pods"), nil), res("get", "", "pods", "", ""), false},
		{"resource star", rule(s("get"), s(""), s("*"), nil), res("get", "", "secrets", "", ""), true},
		{"resource star covers subresources", rule(s("get"), s(""), s("*"), nil), res("get", "", "pods", "log", ""), true},
		{"resource does not cover subresource", rule(s("get"), s(""), s("pods"), nil), res("get", "", "pods", "log", ""), false},
		{"resource/subresource", rule(s("get"), s(""), s("pods/log"), nil), res("get", "", "pods", "log", ""), true},
		{"resource/subresource not the resource", rule(s("get"), s(""), s("pods/log"), nil), res("get", "", "pods", "", ""), false},
		{"other subresource", rule(s("get"), s(""), s("pods/log"), nil), res("get", "", "pods", "exec", ""), false},
		{"star/subresource", rule(s("get"), s(""), s("*/scale"), nil), res("get", "", "deployments", "scale", ""), true},
		{"star/subresource other", rule(s("get"), s(""), s("*/scale"), nil), res("get", "", "deployments", "status", ""), false},
		{"star/subresource not a resource", rule(s("get"), s(""), s("*/scale"), nil), res("get", "", "deployments", "", ""), false},
		{"resource/star is no wildcard", rule(s("get"), s(""), s("pods/*"), nil), res("get", "", "pods", "log", ""), false},
		{"prefix is not the resource", rule(s("get"), s(""), s("pod/log"), nil), res("get", "", "pods", "log", ""), false},
		{"resource name", rule(s("get"), s(""), s("pods"), s("a", "b")), res("get", "", "pods", "", "b"), true},
		{"other resource name", rule(s("get"), s(""), s("pods"), s("a")), res("get", "", "pods", "", "c"), false},
		{"resource name, list has none", rule(s("list"), s(""), s("pods"), s("a")), res("list", "", "pods", "", ""), false},
		{"resource rule, non-resource request", rule(s("get"), s("*"), s("*"), nil), url("get", "/healthz"), false},
		{"url exact", rbacv1.PolicyRule{Verbs: s("get"), NonResourceURLs: s("/healthz")}, url("get", "/healthz"), true},
		{"url other", rbacv1.PolicyRule{Verbs: s("get"), NonResourceURLs: s("/healthz")}, url("get", "/healthz/etcd"), false},
		{"url prefix star", rbacv1.PolicyRule{Verbs: s("get"), NonResourceURLs: s("/healthz*")}, url("get", "/healthz/etcd"), true},
		{"url prefix star, exact", rbacv1.PolicyRule{Verbs: s("get"), NonResourceURLs: s("/api/*")}, url("get", "/api"), false},
		{"url star", rbacv1.PolicyRule{Verbs: s("*"), NonResourceURLs: s("*")}, url("post", "/anything"), true},
		{"url verb", rbacv1.PolicyRule{Verbs: s("get"), NonResourceURLs: s("*")}, url("post", "/metrics"), false},
		{"url rule, resource request", rbacv1.PolicyRule{Verbs: s("*"), NonResourceURLs: s("*")}, res("get", "", "pods", "", ""), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := RuleAllows(&tc.attrs, &tc.rule); got != tc.want {
				t.Errorf("RuleAllows(%+v, %+v) = %v, want %v", tc.attrs, tc.rule, got, tc.want)
			}
		})
	}
}

func TestCompactString(t *testing.T) {
	got := compactString(rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list"}})
	if want := `{APIGroups:[""], Resources:["secrets"], Verbs:["get" "list"]}`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	got = compactString(rbacv1.PolicyRule{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}})
	if want := `{NonResourceURLs:["/metrics"], Verbs:["get"]}`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}
