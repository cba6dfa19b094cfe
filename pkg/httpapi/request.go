// A parsed resource request (resource, namespace, name, subresource) from
// the request info authorization saw, and the pipeline's Request of a write.

package httpapi

import (
	"context"
	"net/http"

	"github.com/watchcache/watchcache/pkg/apistatus"
	"github.com/watchcache/watchcache/pkg/auth/user"
	"github.com/watchcache/watchcache/pkg/encoding"
	"github.com/watchcache/watchcache/pkg/pipeline"
	"github.com/watchcache/watchcache/pkg/requestinfo"
	"github.com/watchcache/watchcache/pkg/resource"
	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// request is a parsed resource request.
type request struct {
	verb      string // get, list, watch, create, update, patch, delete, deletecollection
	res       *resource.Resource
	namespace string // "" for cluster-scoped resources and all-namespace lists
	name      string
	// subresource is set for requests of a subresource (serviceaccounts/token).
	subresource string
	// dryRun is set for writes with dryRun=All: nothing is written.
	dryRun bool
	// manager is a write's field manager (managedFields); force says an
	// apply takes fields other managers own.
	manager string
	force   bool
	// applied marks the write of an apply, whose fields the apply
	// recorded.
	applied bool
	// format is the answer's representation, negotiated from Accept.
	format encoding.Format
}

// key is the storage key of the named object.
func (r *request) key() string { return r.res.Key(r.namespace, r.name) }

// scope is the storage scope of a collection request.
func (r *request) scope() string { return r.res.Scope(r.namespace) }

// parseResourcePath turns the request's Info (what authorization saw) into
// a request of a served resource: [namespaces/{ns}/]{plural}[/{name}[/{sub}]]
// after /api/v1 or /apis/{group}/{version}.
func (s *Server) parseResourcePath(r *http.Request) (*request, *apierrors.StatusError) {
	info := requestinfo.From(r)
	if !info.IsResourceRequest || len(info.Parts) > 3 {
		return nil, apistatus.NotFoundPath()
	}
	req := &request{verb: info.Verb, subresource: info.Subresource}
	if len(info.Parts) >= 2 {
		req.name = info.Parts[1]
	}
	if info.Namespace != "" && !(info.Resource == "namespaces" && len(info.Parts) >= 2) {
		req.namespace = info.Namespace
	}
	req.res = s.registry.Lookup(info.APIGroup, info.APIVersion, info.Resource)
	if req.res == nil || (req.namespace != "" && !req.res.Namespaced) {
		return nil, apistatus.NotFoundPath()
	}
	if req.res.Namespaced && req.name != "" && req.namespace == "" {
		return nil, apistatus.NotFoundPath()
	}
	if req.subresource != "" && s.actions[ActionKey(req.res, req.subresource)] == nil && !hasStoredSubresource(req.res, req.subresource) {
		return nil, apistatus.NotFoundPath()
	}
	if req.verb == "" {
		return nil, apistatus.MethodNotAllowed()
	}
	watchParam := isTrue(r.URL.Query().Get("watch"))
	if (info.WatchPath || watchParam) && r.Method != http.MethodGet {
		return nil, apistatus.BadRequest("watch is only allowed with GET")
	}
	if watchParam {
		req.verb = "watch" // also on a named GET, which watches that object
	}
	if req.verb == "create" && (req.name != "" && req.subresource == "" || req.res.Namespaced && req.namespace == "") ||
		(req.verb == "update" || req.verb == "patch") && req.name == "" ||
		req.subresource == "" && !req.res.Allows(req.verb) {
		return nil, apistatus.MethodNotAllowed()
	}
	return req, nil
}

func isTrue(v string) bool { return v == "true" || v == "1" }

// admissionRequest is a write as the pipeline's stages see it.
func admissionRequest(ctx context.Context, req *request, op admissionv1.Operation, name string, obj, old map[string]any) *pipeline.Request {
	return &pipeline.Request{Resource: req.res, Subresource: req.subresource, Operation: op, Namespace: req.namespace, Name: name,
		Object: obj, OldObject: old, DryRun: req.dryRun, User: user.From(ctx)}
}
