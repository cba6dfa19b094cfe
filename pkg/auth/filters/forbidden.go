// Package filters are the HTTP stages of the request pipeline between
// authentication and the API: impersonation and authorization. Each wraps
// the next handler and answers a refusal itself, as a Kubernetes Status.
package filters

import (
	"fmt"

	"github.com/watchcache/watchcache/pkg/auth/authorizer"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// forbidden is kube-apiserver's 403 for attributes the authorizer did not
// allow: `pods "p" is forbidden: User "u" cannot get resource "pods" in API
// group "" in the namespace "ns"`, then ": reason" if there is one.
func forbidden(a authorizer.Attributes, reason string) *apierrors.StatusError {
	msg := forbiddenMessage(a)
	if reason != "" {
		msg += ": " + reason
	}
	return apierrors.NewForbidden(schema.GroupResource{Group: a.APIGroup, Resource: a.Resource}, a.Name, fmt.Errorf("%s", msg))
}

func forbiddenMessage(a authorizer.Attributes) string {
	name := ""
	if a.User != nil {
		name = a.User.Name
	}
	if !a.ResourceRequest {
		return fmt.Sprintf("User %q cannot %s path %q", name, a.Verb, a.Path)
	}
	res := a.Resource
	if a.Subresource != "" {
		res += "/" + a.Subresource
	}
	if a.Namespace != "" {
		return fmt.Sprintf("User %q cannot %s resource %q in API group %q in the namespace %q", name, a.Verb, res, a.APIGroup, a.Namespace)
	}
	return fmt.Sprintf("User %q cannot %s resource %q in API group %q at the cluster scope", name, a.Verb, res, a.APIGroup)
}
