// Classification: which FlowSchema a request matches, and its flow.

package flowcontrol

import (
	"slices"
	"strings"

	"github.com/watchcache/watchcache/pkg/auth/user"
	"github.com/watchcache/watchcache/pkg/requestinfo"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apimachinery/pkg/types"
)

// flowSchema is a FlowSchema as classification reads it.
type flowSchema struct {
	name       string
	uid        types.UID
	precedence int32
	// level names the priority level; levelUID is its uid.
	level    string
	levelUID types.UID
	// distinguisher is flowcontrolv1.FlowDistinguisherMethodByUserType,
	// ...ByNamespaceType or "" (one flow for the whole schema).
	distinguisher flowcontrolv1.FlowDistinguisherMethodType
	rules         []flowcontrolv1.PolicyRulesWithSubjects
}

func newFlowSchema(fs *flowcontrolv1.FlowSchema, levelUID types.UID) *flowSchema {
	s := &flowSchema{name: fs.Name, uid: fs.UID, precedence: fs.Spec.MatchingPrecedence, level: fs.Spec.PriorityLevelConfiguration.Name,
		levelUID: levelUID, rules: fs.Spec.Rules}
	if fs.Spec.DistinguisherMethod != nil {
		s.distinguisher = fs.Spec.DistinguisherMethod.Type
	}
	return s
}

// less orders schemas as they are tried: by matchingPrecedence, then by
// name.
func (s *flowSchema) less(o *flowSchema) int {
	if s.precedence != o.precedence {
		return int(s.precedence) - int(o.precedence)
	}
	return strings.Compare(s.name, o.name)
}

// matches reports whether a request of u for ri matches one of the
// schema's rules: one of its subjects, and one of its resource rules (a
// resource request) or non-resource rules.
func (s *flowSchema) matches(u *user.Info, ri *requestinfo.Info) bool {
	for _, r := range s.rules {
		if !slices.ContainsFunc(r.Subjects, func(sub flowcontrolv1.Subject) bool { return matchesSubject(sub, u) }) {
			continue
		}
		if ri.IsResourceRequest {
			if slices.ContainsFunc(r.ResourceRules, func(rr flowcontrolv1.ResourcePolicyRule) bool { return matchesResource(rr, ri) }) {
				return true
			}
		} else if slices.ContainsFunc(r.NonResourceRules, func(nr flowcontrolv1.NonResourcePolicyRule) bool { return matchesNonResource(nr, ri) }) {
			return true
		}
	}
	return false
}

// flow is the request's flow within the schema: its user's name, its
// namespace, or one flow for all.
func (s *flowSchema) flow(u *user.Info, ri *requestinfo.Info) string {
	switch s.distinguisher {
	case flowcontrolv1.FlowDistinguisherMethodByUserType:
		return u.Name
	case flowcontrolv1.FlowDistinguisherMethodByNamespaceType:
		return ri.Namespace
	}
	return ""
}

func matchesSubject(s flowcontrolv1.Subject, u *user.Info) bool {
	switch s.Kind {
	case flowcontrolv1.SubjectKindUser:
		return s.User != nil && (s.User.Name == flowcontrolv1.NameAll || s.User.Name == u.Name)
	case flowcontrolv1.SubjectKindGroup:
		return s.Group != nil && (s.Group.Name == flowcontrolv1.NameAll || u.InGroup(s.Group.Name))
	case flowcontrolv1.SubjectKindServiceAccount:
		if s.ServiceAccount == nil {
			return false
		}
		rest, ok := strings.CutPrefix(u.Name, user.ServiceAccountUsernamePrefix)
		if !ok {
			return false
		}
		ns, name, ok := strings.Cut(rest, ":")
		return ok && ns == s.ServiceAccount.Namespace && (s.ServiceAccount.Name == flowcontrolv1.NameAll || s.ServiceAccount.Name == name)
	}
	return false
}

// matchesAll reports whether list holds "*" or value.
func matchesAll(list []string, value string) bool {
	return slices.Contains(list, "*") || slices.Contains(list, value)
}

func matchesResource(r flowcontrolv1.ResourcePolicyRule, ri *requestinfo.Info) bool {
	if !matchesAll(r.Verbs, ri.Verb) || !matchesAll(r.APIGroups, ri.APIGroup) {
		return false
	}
	resource := ri.Resource
	if ri.Subresource != "" {
		resource += "/" + ri.Subresource
	}
	if !matchesAll(r.Resources, resource) {
		return false
	}
	if ri.Namespace == "" {
		return r.ClusterScope
	}
	return matchesAll(r.Namespaces, ri.Namespace)
}

// matchesNonResource: a URL of the rule is "*", the path, or a prefix of
// it ending in "*".
func matchesNonResource(r flowcontrolv1.NonResourcePolicyRule, ri *requestinfo.Info) bool {
	if !matchesAll(r.Verbs, ri.Verb) {
		return false
	}
	for _, u := range r.NonResourceURLs {
		if u == "*" || u == ri.Path || strings.HasSuffix(u, "*") && strings.HasPrefix(ri.Path, strings.TrimSuffix(u, "*")) {
			return true
		}
	}
	return false
}
