// Matching one PolicyRule against request attributes: verbs, API groups,
// resources and subresources, resource names, non-resource URLs, as
// kube-apiserver's rbac RuleAllows.

package rbac

import (
	"strings"

	"github.com/watchcache/watchcache/pkg/auth/authorizer"
	rbacv1 "k8s.io/api/rbac/v1"
)

// RuleAllows reports whether rule allows the request, as kube-apiserver's
// RBAC authorizer decides it: verb, API group, resource (with
// "resource/subresource", "*" and "*/subresource") and resource name for
// resource requests; verb and URL (exact, "*", or a "prefix*") for the
// others.
func RuleAllows(a *authorizer.Attributes, rule *rbacv1.PolicyRule) bool {
	if a.ResourceRequest {
		return VerbMatches(rule, a.Verb) &&
			APIGroupMatches(rule, a.APIGroup) &&
			ResourceMatches(rule, a.Resource, a.Subresource) &&
			ResourceNameMatches(rule, a.Name)
	}
	return VerbMatches(rule, a.Verb) && NonResourceURLMatches(rule, a.Path)
}

// VerbMatches reports whether the rule names the verb or "*".
func VerbMatches(rule *rbacv1.PolicyRule, verb string) bool {
	for _, v := range rule.Verbs {
		if v == rbacv1.VerbAll || v == verb {
			return true
		}
	}
	return false
}

// APIGroupMatches reports whether the rule names the group or "*".
func APIGroupMatches(rule *rbacv1.PolicyRule, group string) bool {
	for _, g := range rule.APIGroups {
		if g == rbacv1.APIGroupAll || g == group {
			return true
		}
	}
	return false
}

// ResourceMatches reports whether the rule covers resource/subresource:
// "*", the exact "resource" or "resource/subresource", or
// "*/subresource". (As upstream, "resource/*" is not a wildcard.)
func ResourceMatches(rule *rbacv1.PolicyRule, resource, subresource string) bool {
	for _, r := range rule.Resources {
		if r == rbacv1.ResourceAll {
			return true
		}
		if subresource == "" {
			if r == resource {
				return true
			}
			continue
		}
		// r == resource+"/"+subresource, without building the string.
		if len(r) == len(resource)+1+len(subresource) && strings.HasPrefix(r, resource) &&
			r[len(resource)] == '/' && strings.HasSuffix(r, subresource) {
			return true
		}
		if len(r) == len(subresource)+2 && strings.HasPrefix(r, "*/") && strings.HasSuffix(r, subresource) {
			return true
		}
	}
	return false
}

// ResourceNameMatches reports whether the rule allows the name: any name if
// the rule lists none, else one of those listed.
func ResourceNameMatches(rule *rbacv1.PolicyRule, name string) bool {
	if len(rule.ResourceNames) == 0 {
		return true
	}
	for _, n := range rule.ResourceNames {
		if n == name {
			return true
		}
	}
	return false
}

// NonResourceURLMatches reports whether the rule covers the path: "*", the
// exact path, or a prefix ending in "*".
func NonResourceURLMatches(rule *rbacv1.PolicyRule, path string) bool {
	for _, u := range rule.NonResourceURLs {
		if u == rbacv1.NonResourceAll || u == path {
			return true
		}
		if strings.HasSuffix(u, "*") && strings.HasPrefix(path, strings.TrimRight(u, "*")) {
			return true
		}
	}
	return false
}
