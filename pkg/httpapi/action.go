// Actions: POSTs that store nothing of their own (reviews, bindings, token
// requests), their request, their key in Config.Actions, and how they are
// served.

package httpapi

import (
	"context"
	"net/http"

	"github.com/watchcache/watchcache/pkg/apistatus"
	"github.com/watchcache/watchcache/pkg/encoding"
	"github.com/watchcache/watchcache/pkg/resource"
)

// Action answers a POST that stores nothing of its own: a review
// (SelfSubjectAccessReview, TokenReview, ...) or an action subresource
// (serviceaccounts/token). body is the request's object as JSON, its kind
// checked. The result is written as JSON with 201 Created, as
// kube-apiserver answers creates; an error is written as its Status
// (apimachinery StatusErrors keep their code, reason and causes).
type Action func(ctx context.Context, req ActionRequest) (any, error)

// ActionRequest is what an Action is asked.
type ActionRequest struct {
	// Namespace and Name are from the path (Name: the object whose
	// subresource is posted to).
	Namespace, Name string
	Body            []byte
	// DryRun says dryRun=All: an action that writes must not (one that
	// writes nothing, a review or a token request, answers as usual).
	DryRun bool
}

// ActionKey names an action in Config.Actions: the resource as
// "selfsubjectaccessreviews.authorization.k8s.io", or "serviceaccounts/token"
// for a subresource.
func ActionKey(res *resource.Resource, subresource string) string {
	if subresource == "" {
		return res.String()
	}
	return res.String() + "/" + subresource
}

// serveAction answers a POST of a create-only resource or of an action
// subresource.
func (s *Server) serveAction(w http.ResponseWriter, r *http.Request, req *request) {
	action := s.actions[ActionKey(req.res, req.subresource)]
	if req.verb != "create" || action == nil {
		apistatus.Write(w, apistatus.MethodNotAllowed(), req.res.Subject(req.name))
		return
	}
	// typed is the served resource of the body's kind, if there is one
	// (bindings for pods/binding; none for a TokenRequest): the body is
	// checked against its type as fieldValidation says.
	group, kind, typed := req.res.Group, req.res.Kind, req.res
	if sub := req.res.Subresource(req.subresource); sub != nil {
		group, kind, typed = sub.Group, sub.Kind, s.registry.ByKind(sub.Group, sub.Kind)
	}
	body, aerr := encoding.ReadJSONBody(r, group, kind, true) // every action's kind is built in
	if aerr == nil && typed != nil {
		var mode encoding.FieldValidation
		if mode, aerr = encoding.ParseFieldValidation(r); aerr == nil {
			_, aerr = encoding.DecodeObject(w, body, typed, mode)
		}
	}
	if aerr != nil {
		apistatus.Write(w, aerr, req.res.Subject(req.name))
		return
	}
	out, err := action(r.Context(), ActionRequest{Namespace: req.namespace, Name: req.name, Body: body, DryRun: req.dryRun})
	if err != nil {
		apistatus.Write(w, err, req.res.Subject(req.name))
		return
	}
	encoding.WriteValue(w, http.StatusCreated, req.format, out)
}
