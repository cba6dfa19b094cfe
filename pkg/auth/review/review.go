// Package review answers the API's reviews, which are asked by a POST and
// never stored: SelfSubjectAccessReview, LocalSubjectAccessReview and
// SubjectAccessReview (may this user do this?), SelfSubjectRulesReview
// (what may I do here?), SelfSubjectReview (who am I?) and TokenReview
// (whom is this token for?). kubectl auth can-i and kubectl auth whoami
// ask them.
package review

import (
	"context"
	"fmt"

	"github.com/watchcache/watchcache/pkg/auth/authorizer"
	"github.com/watchcache/watchcache/pkg/auth/user"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kjson "sigs.k8s.io/json"
)

// RulesResolver lists the rules that apply to a user in a namespace
// (RBAC's view, for SelfSubjectRulesReview).
type RulesResolver interface {
	RulesFor(u *user.Info, namespace string) ([]rbacv1.PolicyRule, error)
}

// TokenAuthenticator authenticates a bearer token for TokenReview: the
// user and the audiences the token is valid for, ok false if the token is
// not valid.
type TokenAuthenticator func(ctx context.Context, token string, audiences []string) (u *user.Info, tokenAudiences []string, ok bool, err error)

// Reviewer answers reviews with the server's authorizer, rules and
// token authenticator.
type Reviewer struct {
	Authorizer authorizer.Authorizer
	// Rules may be nil (authorization modes other than RBAC): rules reviews
	// then answer incomplete with no rules.
	Rules  RulesResolver
	Tokens TokenAuthenticator
}

var (
	authorizationGroup  = authorizationv1.SchemeGroupVersion.Group
	authenticationGroup = authenticationv1.SchemeGroupVersion.Group
)

// decode reads a review's JSON strictly enough: unknown fields are
// ignored, as kube-apiserver does by default, malformed JSON is a 400.
func decode(body []byte, into any, kind string) error {
	if err := kjson.UnmarshalCaseSensitivePreserveInts(body, into); err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("the request body is not a valid %s: %v", kind, err))
	}
	return nil
}

// invalid is the 422 of a review whose spec does not say what to review.
func invalid(group, kind string, errs field.ErrorList) error {
	return apierrors.NewInvalid(schema.GroupKind{Group: group, Kind: kind}, "", errs)
}

// SelfSubjectAccessReview answers whether the requesting user may do
// what the spec asks.
func (rv *Reviewer) SelfSubjectAccessReview(ctx context.Context, body []byte) (any, error) {
	var r authorizationv1.SelfSubjectAccessReview
	if err := decode(body, &r, "SelfSubjectAccessReview"); err != nil {
		return nil, err
	}
	if errs := checkAttributes(r.Spec.ResourceAttributes, r.Spec.NonResourceAttributes); len(errs) > 0 {
		return nil, invalid(authorizationGroup, "SelfSubjectAccessReview", errs)
	}
	r.Status = rv.access(ctx, user.From(ctx), r.Spec.ResourceAttributes, r.Spec.NonResourceAttributes)
	return &r, nil
}

// SubjectAccessReview answers whether the user the spec names may do what
// it asks.
func (rv *Reviewer) SubjectAccessReview(ctx context.Context, body []byte) (any, error) {
	var r authorizationv1.SubjectAccessReview
	if err := decode(body, &r, "SubjectAccessReview"); err != nil {
		return nil, err
	}
	errs := checkAttributes(r.Spec.ResourceAttributes, r.Spec.NonResourceAttributes)
	if r.Spec.User == "" && len(r.Spec.Groups) == 0 {
		errs = append(errs, field.Invalid(field.NewPath("spec", "user"), r.Spec.User, `at least one of user or group must be specified`))
	}
	if len(errs) > 0 {
		return nil, invalid(authorizationGroup, "SubjectAccessReview", errs)
	}
	r.Status = rv.access(ctx, subjectOf(r.Spec), r.Spec.ResourceAttributes, r.Spec.NonResourceAttributes)
	return &r, nil
}

// LocalSubjectAccessReview is a SubjectAccessReview in one namespace,
// the one of its path.
func (rv *Reviewer) LocalSubjectAccessReview(ctx context.Context, namespace string, body []byte) (any, error) {
	var r authorizationv1.LocalSubjectAccessReview
	if err := decode(body, &r, "LocalSubjectAccessReview"); err != nil {
		return nil, err
	}
	var errs field.ErrorList
	if r.Spec.ResourceAttributes == nil {
		errs = append(errs, field.Required(field.NewPath("spec", "resourceAttributes"), ""))
	} else if r.Spec.ResourceAttributes.Namespace == "" {
		r.Spec.ResourceAttributes.Namespace = namespace
	}
	if r.Spec.NonResourceAttributes != nil {
		errs = append(errs, field.Invalid(field.NewPath("spec", "nonResourceAttributes"), r.Spec.NonResourceAttributes, `disallowed on this kind of request`))
	}
	if r.Spec.User == "" && len(r.Spec.Groups) == 0 {
		errs = append(errs, field.Invalid(field.NewPath("spec", "user"), r.Spec.User, `at least one of user or group must be specified`))
	}
	if len(errs) > 0 {
		return nil, invalid(authorizationGroup, "LocalSubjectAccessReview", errs)
	}
	if r.Spec.ResourceAttributes.Namespace != namespace {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("spec.resourceAttributes.namespace must match namespace: %v", namespace))
	}
	if r.Namespace != "" && r.Namespace != namespace {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("metadata.namespace must match namespace: %v", namespace))
	}
	r.Namespace = namespace
	r.Status = rv.access(ctx, subjectOf(r.Spec), r.Spec.ResourceAttributes, nil)
	return &r, nil
}

// SelfSubjectRulesReview lists what the requesting user may do in a
// namespace.
func (rv *Reviewer) SelfSubjectRulesReview(ctx context.Context, body []byte) (any, error) {
	var r authorizationv1.SelfSubjectRulesReview
	if err := decode(body, &r, "SelfSubjectRulesReview"); err != nil {
		return nil, err
	}
	if r.Spec.Namespace == "" {
		return nil, apierrors.NewBadRequest("no namespace on request") // kube-apiserver's words
	}
	if rv.Rules == nil {
		r.Status = authorizationv1.SubjectRulesReviewStatus{Incomplete: true,
			ResourceRules: []authorizationv1.ResourceRule{}, NonResourceRules: []authorizationv1.NonResourceRule{}}
		return &r, nil
	}
	rules, err := rv.Rules.RulesFor(user.From(ctx), r.Spec.Namespace)
	r.Status = rulesStatus(rules)
	if err != nil {
		r.Status.Incomplete = true
		r.Status.EvaluationError = err.Error()
	}
	return &r, nil
}

// SelfSubjectReview tells the requesting user who the server thinks they
// are.
func (rv *Reviewer) SelfSubjectReview(ctx context.Context, body []byte) (any, error) {
	var r authenticationv1.SelfSubjectReview
	if err := decode(body, &r, "SelfSubjectReview"); err != nil {
		return nil, err
	}
	r.Status.UserInfo = user.From(ctx).APIUserInfo()
	return &r, nil
}

// TokenReview tells whom a token authenticates, for the audiences asked.
func (rv *Reviewer) TokenReview(ctx context.Context, body []byte) (any, error) {
	var r authenticationv1.TokenReview
	if err := decode(body, &r, "TokenReview"); err != nil {
		return nil, err
	}
	if r.Spec.Token == "" {
		return nil, apierrors.NewBadRequest("token is required for TokenReview in authentication")
	}
	u, auds, ok, err := rv.Tokens(ctx, r.Spec.Token, r.Spec.Audiences)
	switch {
	case err != nil:
		r.Status.Error = err.Error()
	case ok:
		r.Status.Authenticated = true
		r.Status.User = u.APIUserInfo()
		r.Status.Audiences = auds
	}
	return &r, nil
}

// access decides one access review for u.
func (rv *Reviewer) access(ctx context.Context, u *user.Info, ra *authorizationv1.ResourceAttributes, nra *authorizationv1.NonResourceAttributes) authorizationv1.SubjectAccessReviewStatus {
	a := authorizer.Attributes{User: u}
	if ra != nil {
		a.ResourceRequest = true
		a.Verb, a.APIGroup, a.APIVersion, a.Namespace = ra.Verb, ra.Group, ra.Version, ra.Namespace
		a.Resource, a.Subresource, a.Name = ra.Resource, ra.Subresource, ra.Name
		if ra.FieldSelector != nil {
			a.FieldSelector = ra.FieldSelector.RawSelector
		}
	} else {
		a.Verb, a.Path = nra.Verb, nra.Path
	}
	d, reason, err := rv.Authorizer.Authorize(ctx, a)
	status := authorizationv1.SubjectAccessReviewStatus{Allowed: d == authorizer.Allow, Denied: d == authorizer.Deny, Reason: reason}
	if err != nil {
		status.EvaluationError = err.Error()
	}
	return status
}

// checkAttributes requires exactly one of the two kinds of attributes.
func checkAttributes(ra *authorizationv1.ResourceAttributes, nra *authorizationv1.NonResourceAttributes) field.ErrorList {
	if (ra == nil) == (nra == nil) {
		return field.ErrorList{field.Invalid(field.NewPath("spec", "resourceAttributes"), ra,
			`exactly one of nonResourceAttributes or resourceAttributes must be specified`)}
	}
	return nil
}

// subjectOf is the user a SubjectAccessReview's spec names.
func subjectOf(spec authorizationv1.SubjectAccessReviewSpec) *user.Info {
	u := &user.Info{Name: spec.User, UID: spec.UID, Groups: spec.Groups}
	if len(spec.Extra) > 0 {
		u.Extra = map[string][]string{}
		for k, v := range spec.Extra {
			u.Extra[k] = v
		}
	}
	return u
}

// rulesStatus turns RBAC rules into a rules review's status.
func rulesStatus(rules []rbacv1.PolicyRule) authorizationv1.SubjectRulesReviewStatus {
	status := authorizationv1.SubjectRulesReviewStatus{ResourceRules: []authorizationv1.ResourceRule{},
		NonResourceRules: []authorizationv1.NonResourceRule{}}
	for _, r := range rules {
		if len(r.Resources) > 0 {
			status.ResourceRules = append(status.ResourceRules, authorizationv1.ResourceRule{Verbs: r.Verbs,
				APIGroups: r.APIGroups, Resources: r.Resources, ResourceNames: r.ResourceNames})
		}
		if len(r.NonResourceURLs) > 0 {
			status.NonResourceRules = append(status.NonResourceRules, authorizationv1.NonResourceRule{Verbs: r.Verbs,
				NonResourceURLs: r.NonResourceURLs})
		}
	}
	return status
}
