// The audit policy (--audit-policy-file): audit.k8s.io/v1's Policy, read
// from YAML or JSON and validated as kube-apiserver does, and its rules'
// matching: in order, the first rule matching a request gives its level,
// the stages left out and whether managedFields are.

package audit

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/watchcache/watchcache/pkg/auth/user"
	"github.com/watchcache/watchcache/pkg/requestinfo"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

// Policy is audit.k8s.io/v1's Policy.
type Policy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// Rules are tried in order; the first match decides. A request no rule
	// matches is not logged (level None).
	Rules []PolicyRule `json:"rules"`
	// OmitStages are left out of every rule's events.
	OmitStages []Stage `json:"omitStages,omitempty"`
	// OmitManagedFields drops metadata.managedFields from request and
	// response bodies, unless a rule says otherwise.
	OmitManagedFields bool `json:"omitManagedFields,omitempty"`
}

// PolicyRule is audit.k8s.io/v1's PolicyRule: an empty list matches
// everything.
type PolicyRule struct {
	Level             Level            `json:"level"`
	Users             []string         `json:"users,omitempty"`
	UserGroups        []string         `json:"userGroups,omitempty"`
	Verbs             []string         `json:"verbs,omitempty"`
	Resources         []GroupResources `json:"resources,omitempty"`
	Namespaces        []string         `json:"namespaces,omitempty"`
	NonResourceURLs   []string         `json:"nonResourceURLs,omitempty"`
	OmitStages        []Stage          `json:"omitStages,omitempty"`
	OmitManagedFields *bool            `json:"omitManagedFields,omitempty"`
}

// GroupResources are resources of one API group ("": the core group);
// Resources may be "*", "pods/log", "*/status" or "deployments/*".
type GroupResources struct {
	Group         string   `json:"group,omitempty"`
	Resources     []string `json:"resources,omitempty"`
	ResourceNames []string `json:"resourceNames,omitempty"`
}

// DefaultPolicy is the policy without --audit-policy-file: every request
// at Metadata, without the RequestReceived stage. kube-apiserver logs
// nothing without a policy; watchcache logged this way before policies
// were read, and keeps doing so (a deliberate difference).
func DefaultPolicy() *Policy {
	return &Policy{TypeMeta: metav1.TypeMeta{APIVersion: "audit.k8s.io/v1", Kind: "Policy"},
		OmitStages: []Stage{StageRequestReceived}, Rules: []PolicyRule{{Level: LevelMetadata}}}
}

// LoadPolicy reads and validates a policy file, with kube-apiserver's
// messages.
func LoadPolicy(path string) (*Policy, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("failed to read file path %q: %v", path, err)
	}
	p, err := ParsePolicy(data)
	if err != nil {
		return nil, fmt.Errorf("%v: from file %v", err, path)
	}
	return p, nil
}

// ParsePolicy decodes a policy (YAML or JSON) and validates it.
func ParsePolicy(data []byte) (*Policy, error) {
	var p Policy
	if err := yaml.Unmarshal(data, &p); err != nil {
		return nil, fmt.Errorf("failed decoding: %w", err)
	}
	if p.Kind == "" {
		return nil, fmt.Errorf("failed decoding: Object 'Kind' is missing in '%s'", strings.TrimSpace(string(data)))
	}
	if p.APIVersion != "audit.k8s.io/v1" || p.Kind != "Policy" {
		return nil, fmt.Errorf("unknown group version field %s, Kind=%s in policy", p.APIVersion, p.Kind)
	}
	if errs := validatePolicy(&p); len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	if len(p.Rules) == 0 {
		return nil, fmt.Errorf("loaded illegal policy with 0 rules")
	}
	return &p, nil
}

var (
	levels = []string{string(LevelNone), string(LevelMetadata), string(LevelRequest), string(LevelRequestResponse)}
	stages = []string{string(StageRequestReceived), string(StageResponseStarted), string(StageResponseComplete), string(StagePanic)}
)

// validatePolicy is kube-apiserver's ValidatePolicy.
func validatePolicy(p *Policy) field.ErrorList {
	errs := validateStages(p.OmitStages, field.NewPath("omitStages"))
	for i, r := range p.Rules {
		path := field.NewPath("rules").Index(i)
		switch {
		case r.Level == "":
			errs = append(errs, field.Required(path.Child("level"), ""))
		case !slices.Contains(levels, string(r.Level)):
			errs = append(errs, field.NotSupported(path.Child("level"), r.Level, levels))
		}
		errs = append(errs, validateStages(r.OmitStages, path.Child("omitStages"))...)
		if len(r.NonResourceURLs) > 0 && (len(r.Resources) > 0 || len(r.Namespaces) > 0) {
			errs = append(errs, field.Invalid(path.Child("nonResourceURLs"), r.NonResourceURLs, "rules cannot apply to both regular resources and non-resource URLs"))
		}
		for j, u := range r.NonResourceURLs {
			switch {
			case !strings.HasPrefix(u, "/") && u != "*":
				errs = append(errs, field.Invalid(path.Child("nonResourceURLs").Index(j), u, "non-resource URL rules must begin with a '/' character"))
			case strings.Contains(strings.TrimSuffix(u, "*"), "*"):
				errs = append(errs, field.Invalid(path.Child("nonResourceURLs").Index(j), u, "non-resource URL wildcards '*' must be the final character of the rule"))
			}
		}
		for _, gr := range r.Resources {
			if gr.Group != "" {
				if msgs := validation.IsDNS1123Subdomain(gr.Group); len(msgs) > 0 {
					errs = append(errs, field.Invalid(path.Child("resources").Child("group"), gr.Group, strings.Join(msgs, ",")))
				}
			}
			if len(gr.ResourceNames) > 0 && len(gr.Resources) == 0 {
				errs = append(errs, field.Invalid(path.Child("resources").Child("resourceNames"), gr.ResourceNames, "using resourceNames requires at least one resource"))
			}
		}
	}
	return errs
}

func validateStages(s []Stage, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, st := range s {
		if !slices.Contains(stages, string(st)) {
			errs = append(errs, field.NotSupported(path.Index(i), st, stages))
		}
	}
	return errs
}

// requestConfig is what the policy says of one request.
type requestConfig struct {
	level             Level
	omitStages        []Stage
	omitManagedFields bool
}

// evaluate is the first matching rule's config (level None if none
// matches). u is the authenticated user (nil: authentication failed).
func (p *Policy) evaluate(u *user.Info, info *requestinfo.Info) requestConfig {
	for i := range p.Rules {
		r := &p.Rules[i]
		if r.matches(u, info) {
			omitMF := p.OmitManagedFields
			if r.OmitManagedFields != nil {
				omitMF = *r.OmitManagedFields
			}
			return requestConfig{level: r.Level, omitStages: append(slices.Clone(p.OmitStages), r.OmitStages...), omitManagedFields: omitMF}
		}
	}
	return requestConfig{level: LevelNone, omitStages: p.OmitStages, omitManagedFields: p.OmitManagedFields}
}

// matches is kube-apiserver's ruleMatches.
func (r *PolicyRule) matches(u *user.Info, info *requestinfo.Info) bool {
	if len(r.Users) > 0 && (u == nil || !slices.Contains(r.Users, u.Name)) {
		return false
	}
	if len(r.UserGroups) > 0 && (u == nil || !slices.ContainsFunc(u.Groups, func(g string) bool { return slices.Contains(r.UserGroups, g) })) {
		return false
	}
	if len(r.Verbs) > 0 && !slices.Contains(r.Verbs, info.Verb) {
		return false
	}
	if len(r.Namespaces) > 0 || len(r.Resources) > 0 {
		return r.matchesResource(info)
	}
	if len(r.NonResourceURLs) > 0 {
		if info.IsResourceRequest {
			return false
		}
		return slices.ContainsFunc(r.NonResourceURLs, func(spec string) bool { return pathMatches(info.Path, spec) })
	}
	return true
}

// pathMatches: "*", the path itself, or a prefix ending in "*".
func pathMatches(path, spec string) bool {
	return spec == "*" || spec == path || strings.HasSuffix(spec, "*") && strings.HasPrefix(path, strings.TrimRight(spec, "*"))
}

// matchesResource is kube-apiserver's ruleMatchesResource: a subresource
// is matched as "resource/subresource", "*/subresource", "resource/*" or
// "*".
func (r *PolicyRule) matchesResource(info *requestinfo.Info) bool {
	if !info.IsResourceRequest {
		return false
	}
	if len(r.Namespaces) > 0 && !slices.Contains(r.Namespaces, info.Namespace) {
		return false // cluster-scoped resources have the namespace ""
	}
	if len(r.Resources) == 0 {
		return true
	}
	combined := info.Resource
	if info.Subresource != "" {
		combined += "/" + info.Subresource
	}
	for _, gr := range r.Resources {
		if gr.Group != info.APIGroup {
			continue
		}
		if len(gr.Resources) == 0 {
			return true
		}
		if len(gr.ResourceNames) > 0 && !slices.Contains(gr.ResourceNames, info.Name) {
			continue
		}
		for _, res := range gr.Resources {
			if res == combined || res == "*" ||
				info.Subresource != "" && strings.HasPrefix(res, "*/") && info.Subresource == strings.TrimPrefix(res, "*/") ||
				strings.HasSuffix(res, "/*") && info.Resource == strings.TrimSuffix(res, "/*") {
				return true
			}
		}
	}
	return false
}
