// The serviceaccounts/token subresource: a TokenRequest's defaults,
// validation and the token issued for it.

package authn

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// TokenRequest defaults and bounds, kube-apiserver's.
const (
	defaultExpirationSeconds = 3600
	minExpirationSeconds     = 600
	maxExpirationSeconds     = 1 << 32
)

// TokenRequest answers a POST of serviceaccounts/<name>/token: body is an
// authentication.k8s.io/v1 TokenRequest; the answer is the same with
// status.token set. The ServiceAccount is read consistently, so a token
// can be requested right after it is created.
//
// Binding a token to an object (spec.boundObjectRef) is refused (422):
// tokens here are bound to their ServiceAccount only.
func (s *ServiceAccounts) TokenRequest(ctx context.Context, namespace, name string, body []byte) (any, error) {
	var req authenticationv1.TokenRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, apierrors.NewBadRequest("malformed TokenRequest: " + err.Error())
	}
	if len(req.Spec.Audiences) == 0 {
		req.Spec.Audiences = s.apiAudiences
	}
	if req.Spec.ExpirationSeconds == nil {
		seconds := int64(defaultExpirationSeconds)
		req.Spec.ExpirationSeconds = &seconds
	}
	if errs := validateTokenRequest(&req.Spec); len(errs) > 0 {
		return nil, apierrors.NewInvalid(schema.GroupKind{Group: authenticationv1.GroupName, Kind: "TokenRequest"}, name, errs)
	}
	uid, found, err := s.lookup(ctx, namespace, name, true)
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "serviceaccounts"}, name)
	}
	token, exp, err := s.Issue(namespace, name, uid, req.Spec.Audiences, time.Duration(*req.Spec.ExpirationSeconds)*time.Second)
	if err != nil {
		return nil, fmt.Errorf("signing a token: %w", err)
	}
	req.TypeMeta = metav1.TypeMeta{APIVersion: authenticationv1.SchemeGroupVersion.String(), Kind: "TokenRequest"}
	req.ObjectMeta = metav1.ObjectMeta{Name: name, Namespace: namespace, CreationTimestamp: metav1.NewTime(s.now().Truncate(time.Second))}
	req.Status = authenticationv1.TokenRequestStatus{Token: token, ExpirationTimestamp: metav1.NewTime(exp)}
	return &req, nil
}

// validateTokenRequest is kube-apiserver's validation of a TokenRequest's
// spec, with its messages.
func validateTokenRequest(spec *authenticationv1.TokenRequestSpec) field.ErrorList {
	var errs field.ErrorList
	path := field.NewPath("spec")
	if seconds := *spec.ExpirationSeconds; seconds < minExpirationSeconds {
		errs = append(errs, field.Invalid(path.Child("expirationSeconds"), seconds, "may not specify a duration less than 10 minutes"))
	} else if seconds > maxExpirationSeconds {
		errs = append(errs, field.TooLong(path.Child("expirationSeconds"), seconds, maxExpirationSeconds))
	}
	if spec.BoundObjectRef != nil {
		errs = append(errs, field.Forbidden(path.Child("boundObjectRef"), "tokens bound to objects are not supported by this server"))
	}
	return errs
}
