// Escalation errors' wording: the rules a user lacks, compacted and printed
// as kube-apiserver's rbac validation does.

package rbac

import (
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/watchcache/watchcache/pkg/auth/user"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/component-helpers/auth/rbac/validation"
)

// confirmNoEscalation returns upstream's error naming the rules u does not
// hold in namespace, nil if u holds them all.
func (a *Authorizer) confirmNoEscalation(u *user.Info, namespace string, rules []rbacv1.PolicyRule) error {
	owner, resolutionErr := a.RulesFor(u, namespace)
	covered, missing := validation.Covers(owner, rules)
	if covered {
		return nil
	}
	descriptions := sets.New[string]()
	for _, r := range compactRules(missing) {
		descriptions.Insert(compactString(r))
	}
	msg := fmt.Sprintf("user %q (groups=%q) is attempting to grant RBAC permissions not currently held:\n%s",
		u.Name, u.Groups, strings.Join(sets.List(descriptions), "\n"))
	if resolutionErr != nil {
		msg += fmt.Sprintf("; resolution errors: %v", []error{resolutionErr})
	}
	return errors.New(msg)
}

// simpleResource is what a simple rule applies to (see compactRules).
type simpleResource struct {
	group, resource   string
	resourceNameExist bool
	resourceName      string
}

// compactRules merges rules that each name one API group, one resource and
// at most one resource name, and differ only in verbs, as upstream's
// CompactRules (for the short list of missing rules in escalation errors).
func compactRules(rules []rbacv1.PolicyRule) []rbacv1.PolicyRule {
	compacted := make([]rbacv1.PolicyRule, 0, len(rules))
	simple := map[simpleResource]*rbacv1.PolicyRule{}
	var order []simpleResource
	for _, rule := range rules {
		res, ok := isSimpleResourceRule(&rule)
		if !ok {
			compacted = append(compacted, rule)
			continue
		}
		if existing, ok := simple[res]; ok {
			existing.Verbs = append(existing.Verbs, rule.Verbs...)
			continue
		}
		simple[res] = rule.DeepCopy()
		order = append(order, res)
	}
	for _, res := range order {
		compacted = append(compacted, *simple[res])
	}
	return compacted
}

func isSimpleResourceRule(rule *rbacv1.PolicyRule) (simpleResource, bool) {
	if len(rule.ResourceNames) > 1 || len(rule.NonResourceURLs) > 0 || len(rule.APIGroups) != 1 || len(rule.Resources) != 1 {
		return simpleResource{}, false
	}
	only := &rbacv1.PolicyRule{APIGroups: rule.APIGroups, Resources: rule.Resources, Verbs: rule.Verbs, ResourceNames: rule.ResourceNames}
	if !reflect.DeepEqual(only, rule) {
		return simpleResource{}, false
	}
	res := simpleResource{group: rule.APIGroups[0], resource: rule.Resources[0]}
	if len(rule.ResourceNames) == 1 {
		res.resourceNameExist, res.resourceName = true, rule.ResourceNames[0]
	}
	return res, true
}

// compactString is upstream's short form of a rule in escalation errors:
// {APIGroups:["g"], Resources:["r"], NonResourceURLs:[...],
// ResourceNames:[...], Verbs:["v"]}, empty parts left out.
func compactString(r rbacv1.PolicyRule) string {
	var parts []string
	add := func(name string, values []string) {
		if len(values) > 0 {
			parts = append(parts, fmt.Sprintf("%s:%q", name, values))
		}
	}
	add("APIGroups", r.APIGroups)
	add("Resources", r.Resources)
	add("NonResourceURLs", r.NonResourceURLs)
	add("ResourceNames", r.ResourceNames)
	add("Verbs", r.Verbs)
	return "{" + strings.Join(parts, ", ") + "}"
}
