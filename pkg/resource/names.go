package resource

import (
	"k8s.io/apimachinery/pkg/api/validation/path"
	"k8s.io/apimachinery/pkg/util/validation"
)

// NameRule is the rule an object's name must follow, as kube-apiserver's
// validation of its kind checks it.
type NameRule int

const (
	// NameDNSSubdomain: a DNS-1123 subdomain, most kinds' rule and custom
	// resources'.
	NameDNSSubdomain NameRule = iota
	// NameDNSLabel: a DNS-1123 label (no dots).
	NameDNSLabel
	// NamePathSegment: anything that can be a URL path segment (not "." or
	// "..", no "/" or "%"), as RBAC names such as "system:basic-user".
	NamePathSegment
)

// nameRules are the built-in kinds whose names are not DNS-1123
// subdomains (events.k8s.io/v1 Events are, though core/v1 Events are
// path segments).
var nameRules = map[GroupResource]NameRule{
	{"", "namespaces"}:                                    NameDNSLabel,
	{"", "services"}:                                      NameDNSLabel,
	{"apps", "statefulsets"}:                              NameDNSLabel,
	{"rbac.authorization.k8s.io", "roles"}:                NamePathSegment,
	{"rbac.authorization.k8s.io", "rolebindings"}:         NamePathSegment,
	{"rbac.authorization.k8s.io", "clusterroles"}:         NamePathSegment,
	{"rbac.authorization.k8s.io", "clusterrolebindings"}:  NamePathSegment,
	{"policy", "poddisruptionbudgets"}:                    NamePathSegment,
	{"", "events"}:                                        NamePathSegment,
	{"certificates.k8s.io", "certificatesigningrequests"}: NamePathSegment,
}

// NameRule is the rule the names of r's objects follow.
func (r *Resource) NameRule() NameRule {
	if r.Definition != "" || r.CustomSchema != nil {
		return NameDNSSubdomain
	}
	return nameRules[GroupResource{r.Group, r.Plural}]
}

// Check returns what is wrong with name by the rule (nil if nothing), in
// kube-apiserver's words.
func (rule NameRule) Check(name string) []string {
	switch rule {
	case NameDNSLabel:
		return validation.IsDNS1123Label(name)
	case NamePathSegment:
		return path.IsValidPathSegmentName(name)
	}
	return validation.IsDNS1123Subdomain(name)
}
