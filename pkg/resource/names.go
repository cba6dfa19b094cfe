package resource

import (
	"fmt"
	"strings"

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
	// NameSignerPrefixed: ClusterTrustBundles'. A bundle of a signer
	// (spec.signerName) is named after it, its "/" as ":", then ":" and a
	// DNS-1123 subdomain ("kubernetes.io:kube-apiserver-serving:<hash>",
	// kube-controller-manager's); a bundle of no signer has a DNS-1123
	// subdomain without ":".
	NameSignerPrefixed
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
	{"certificates.k8s.io", "clustertrustbundles"}:        NameSignerPrefixed,
}

// NameRule is the rule the names of r's objects follow.
func (r *Resource) NameRule() NameRule {
	if r.Definition != "" || r.CustomSchema != nil {
		return NameDNSSubdomain
	}
	return nameRules[GroupResource{r.Group, r.Plural}]
}

// Check returns what is wrong with the name of obj by the rule (nil if
// nothing), in kube-apiserver's words. Only NameSignerPrefixed reads obj
// (its spec.signerName).
func (rule NameRule) Check(name string, obj map[string]any) []string {
	switch rule {
	case NameDNSLabel:
		return validation.IsDNS1123Label(name)
	case NamePathSegment:
		return path.IsValidPathSegmentName(name)
	case NameSignerPrefixed:
		spec, _ := obj["spec"].(map[string]any)
		signer, _ := spec["signerName"].(string)
		if signer == "" {
			if strings.Contains(name, ":") {
				return []string{`ClusterTrustBundle without signer name must not have ":" in its name`}
			}
			break
		}
		prefix := strings.ReplaceAll(signer, "/", ":") + ":"
		if !strings.HasPrefix(name, prefix) {
			return []string{fmt.Sprintf("ClusterTrustBundle for signerName %s must be named with prefix %s", signer, prefix)}
		}
		return validation.IsDNS1123Subdomain(strings.TrimPrefix(name, prefix))
	}
	return validation.IsDNS1123Subdomain(name)
}
