package server

import (
	"net/http"
	"strings"

	"github.com/watchcache/watchcache/pkg/resource"
)

// request is a parsed resource request.
type request struct {
	verb      string // get, list, watch, create, update, patch, delete, deletecollection
	res       *resource.Resource
	namespace string // "" for cluster-scoped resources and all-namespace lists
	name      string
}

// key is the storage key of the named object.
func (r *request) key() string { return r.res.Key(r.namespace, r.name) }

// scope is the storage scope of a collection request.
func (r *request) scope() string {
	if r.namespace == "" {
		return ""
	}
	return r.namespace + "/"
}

// parseResourcePath parses /api/v1/... and /apis/{group}/{version}/...
// beyond the group version: [watch/][namespaces/{ns}/]{plural}[/{name}].
// It returns nil, nil for group-version paths without a resource
// (discovery).
func (s *Server) parseResourcePath(r *http.Request) (*request, *apiError) {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	var group, version string
	var rest []string
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		version, rest = parts[1], parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		group, version, rest = parts[1], parts[2], parts[3:]
	default:
		return nil, notFoundPath()
	}
	if len(rest) == 0 {
		return nil, nil
	}
	watchPath := false
	if rest[0] == "watch" {
		watchPath, rest = true, rest[1:]
	}
	req := &request{}
	var plural string
	switch {
	case len(rest) >= 3 && rest[0] == "namespaces":
		req.namespace, plural, rest = rest[1], rest[2], rest[3:]
	case len(rest) >= 1:
		plural, rest = rest[0], rest[1:]
	}
	switch len(rest) {
	case 0:
	case 1:
		req.name = rest[0]
	default:
		return nil, notFoundPath() // subresources are not served
	}
	req.res = s.registry.Lookup(group, version, plural)
	if req.res == nil || plural == "" || (req.namespace != "" && !req.res.Namespaced) {
		return nil, notFoundPath()
	}
	if req.res.Namespaced && req.name != "" && req.namespace == "" {
		return nil, notFoundPath()
	}
	watch := watchPath || isTrue(r.URL.Query().Get("watch"))
	switch r.Method {
	case http.MethodGet:
		switch {
		case watch:
			req.verb = "watch"
		case req.name == "":
			req.verb = "list"
		default:
			req.verb = "get"
		}
	case http.MethodPost:
		if req.name != "" || (req.res.Namespaced && req.namespace == "") {
			return nil, newAPIError(http.StatusMethodNotAllowed, "MethodNotAllowed", "POST is not allowed on this path: create in a namespace's collection")
		}
		req.verb = "create"
	case http.MethodPut:
		req.verb = "update"
	case http.MethodPatch:
		req.verb = "patch"
	case http.MethodDelete:
		req.verb = "delete"
		if req.name == "" {
			req.verb = "deletecollection"
		}
	default:
		return nil, newAPIError(http.StatusMethodNotAllowed, "MethodNotAllowed", "method %s is not allowed", r.Method)
	}
	if (req.verb == "update" || req.verb == "patch") && req.name == "" {
		return nil, newAPIError(http.StatusMethodNotAllowed, "MethodNotAllowed", "%s needs an object name in the path", r.Method)
	}
	if watch && r.Method != http.MethodGet {
		return nil, badRequest("watch is only allowed with GET")
	}
	return req, nil
}

func isTrue(v string) bool { return v == "true" || v == "1" }
