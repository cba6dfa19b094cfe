package review

import (
	"context"
	"testing"

	"github.com/watchcache/watchcache/pkg/auth/authorizer"
	"github.com/watchcache/watchcache/pkg/auth/user"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

type staticRules []rbacv1.PolicyRule

func (r staticRules) RulesFor(*user.Info, string) ([]rbacv1.PolicyRule, error) { return r, nil }

func reviewer() *Reviewer {
	return &Reviewer{
		// bob may list pods in ns "a" only.
		Authorizer: authorizer.Func(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
			if a.User.Name == "bob" && a.Verb == "list" && a.Resource == "pods" && a.Namespace == "a" {
				return authorizer.Allow, "bound", nil
			}
			return authorizer.NoOpinion, "", nil
		}),
		Rules: staticRules{{Verbs: []string{"list"}, APIGroups: []string{""}, Resources: []string{"pods"}},
			{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz"}}},
		Tokens: func(_ context.Context, token string, _ []string) (*user.Info, []string, bool, error) {
			return &user.Info{Name: "bob"}, []string{"api"}, token == "good", nil
		},
	}
}

func TestAccessReviews(t *testing.T) {
	rv := reviewer()
	ctx := user.WithUser(context.Background(), &user.Info{Name: "bob"})
	for body, allowed := range map[string]bool{
		`{"spec":{"resourceAttributes":{"verb":"list","resource":"pods","namespace":"a"}}}`: true,
		`{"spec":{"resourceAttributes":{"verb":"list","resource":"pods","namespace":"b"}}}`: false,
		`{"spec":{"nonResourceAttributes":{"verb":"get","path":"/metrics"}}}`:               false,
	} {
		out, err := rv.SelfSubjectAccessReview(ctx, []byte(body))
		if err != nil || out.(*authorizationv1.SelfSubjectAccessReview).Status.Allowed != allowed {
			t.Errorf("%s: %v %+v, want allowed=%v", body, err, out, allowed)
		}
	}
	if _, err := rv.SelfSubjectAccessReview(ctx, []byte(`{"spec":{}}`)); !apierrors.IsInvalid(err) {
		t.Errorf("empty spec: %v, want 422", err)
	}
	if _, err := rv.SelfSubjectAccessReview(ctx, []byte(`{"spec":`)); !apierrors.IsBadRequest(err) {
		t.Errorf("malformed: %v, want 400", err)
	}
	out, err := rv.SubjectAccessReview(ctx, []byte(`{"spec":{"user":"bob","resourceAttributes":{"verb":"list","resource":"pods","namespace":"a"}}}`))
	if err != nil || !out.(*authorizationv1.SubjectAccessReview).Status.Allowed {
		t.Errorf("SubjectAccessReview: %v %+v", err, out)
	}
	if _, err := rv.SubjectAccessReview(ctx, []byte(`{"spec":{"resourceAttributes":{"verb":"list"}}}`)); !apierrors.IsInvalid(err) {
		t.Errorf("no user: %v, want 422", err)
	}
	out, err = rv.LocalSubjectAccessReview(ctx, "a", []byte(`{"spec":{"user":"bob","resourceAttributes":{"verb":"list","resource":"pods"}}}`))
	if err != nil || !out.(*authorizationv1.LocalSubjectAccessReview).Status.Allowed {
		t.Errorf("LocalSubjectAccessReview: %v %+v", err, out)
	}
	if _, err := rv.LocalSubjectAccessReview(ctx, "a", []byte(`{"spec":{"user":"bob","resourceAttributes":{"verb":"list","namespace":"b"}}}`)); !apierrors.IsBadRequest(err) {
		t.Errorf("other namespace: %v, want 400", err)
	}
}

func TestRulesAndIdentityReviews(t *testing.T) {
	rv := reviewer()
	ctx := user.WithUser(context.Background(), &user.Info{Name: "bob", Groups: []string{"system:authenticated"}})
	out, err := rv.SelfSubjectRulesReview(ctx, []byte(`{"spec":{"namespace":"a"}}`))
	st := out.(*authorizationv1.SelfSubjectRulesReview).Status
	if err != nil || len(st.ResourceRules) != 1 || len(st.NonResourceRules) != 1 || st.Incomplete {
		t.Errorf("rules: %v %+v", err, st)
	}
	if _, err := rv.SelfSubjectRulesReview(ctx, []byte(`{"spec":{}}`)); !apierrors.IsBadRequest(err) {
		t.Errorf("no namespace: %v", err)
	}
	out, err = rv.SelfSubjectReview(ctx, []byte(`{}`))
	if ui := out.(*authenticationv1.SelfSubjectReview).Status.UserInfo; err != nil || ui.Username != "bob" || len(ui.Groups) != 1 {
		t.Errorf("whoami: %v %+v", err, ui)
	}
	for token, want := range map[string]bool{"good": true, "bad": false} {
		out, err := rv.TokenReview(ctx, []byte(`{"spec":{"token":"`+token+`"}}`))
		if st := out.(*authenticationv1.TokenReview).Status; err != nil || st.Authenticated != want {
			t.Errorf("token %s: %v %+v", token, err, st)
		}
	}
	if _, err := rv.TokenReview(ctx, []byte(`{"spec":{}}`)); !apierrors.IsBadRequest(err) {
		t.Errorf("no token: %v", err)
	}
}
