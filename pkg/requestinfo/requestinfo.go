// Package requestinfo reads what a request asks for from its method, path
// and query alone, as kube-apiserver's RequestInfoFactory does: a verb on a
// group/version/resource[/subresource], maybe namespaced and named, or a
// verb on a non-resource path (discovery, /version, /healthz, /metrics).
// Authorization, audit and routing all read the same Info, so what is
// authorized is what is served.
package requestinfo

import (
	"context"
	"net/http"
	"net/url"
	"strings"
)

// Info is what a request asks for.
type Info struct {
	// IsResourceRequest is false for non-resource paths, including the
	// discovery documents /api, /api/v1, /apis, /apis/g and /apis/g/v.
	IsResourceRequest bool
	// Path is the URL path.
	Path string
	// Verb is the API verb of a resource request (get, list, watch,
	// create, update, patch, delete, deletecollection) or the lowercase HTTP
	// method of a non-resource one.
	Verb string

	APIGroup    string
	APIVersion  string
	Namespace   string
	Resource    string
	Subresource string
	// Name is the object's name; for a list or watch with the field
	// selector metadata.name=N, it is N (as kube-apiserver sets it, so that
	// resourceNames rules can allow watching one object).
	Name string
	// FieldSelector is a list's or watch's fieldSelector parameter, as
	// given (the Node authorizer reads spec.nodeName from it).
	FieldSelector string
	// Parts are the path segments after the group version, without
	// "watch/" and "namespaces/{ns}/".
	Parts []string
	// WatchPath says the deprecated /watch/ path form was used.
	WatchPath bool
}

// namespaceSubresources are the subresources of a namespace itself:
// /api/v1/namespaces/{name}/status is the namespace's status, not a
// resource named "status" in the namespace.
var namespaceSubresources = map[string]bool{"status": true, "finalize": true}

// Parse reads r's Info.
func Parse(r *http.Request) *Info {
	return parse(r.Method, r.URL.Path, r.URL.Query())
}

func parse(method, path string, query url.Values) *Info {
	info := &Info{Path: path, Verb: strings.ToLower(method)}
	parts := splitPath(path)
	var rest []string
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		info.APIVersion, rest = parts[1], parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		info.APIGroup, info.APIVersion, rest = parts[1], parts[2], parts[3:]
	default:
		return info // a non-resource path (or discovery)
	}
	info.IsResourceRequest = true
	switch method {
	case http.MethodPost:
		info.Verb = "create"
	case http.MethodGet, http.MethodHead:
		info.Verb = "get"
	case http.MethodPut:
		info.Verb = "update"
	case http.MethodPatch:
		info.Verb = "patch"
	case http.MethodDelete:
		info.Verb = "delete"
	default:
		info.Verb = ""
	}
	if rest[0] == "watch" {
		info.WatchPath = true
		rest = rest[1:]
		if info.Verb == "get" {
			info.Verb = "watch"
		}
	}
	if len(rest) >= 2 && rest[0] == "namespaces" {
		info.Namespace = rest[1]
		if len(rest) > 2 && !namespaceSubresources[rest[2]] {
			rest = rest[2:]
		}
	}
	info.Parts = rest
	if len(rest) >= 1 {
		info.Resource = rest[0]
	}
	if len(rest) >= 2 {
		info.Name = rest[1]
	}
	if len(rest) >= 3 {
		info.Subresource = rest[2]
	}
	if info.Verb == "get" && info.Name == "" {
		info.Verb = "list"
		if isTrue(query.Get("watch")) {
			info.Verb = "watch"
		}
	}
	if info.Verb == "delete" && info.Name == "" {
		info.Verb = "deletecollection"
	}
	if info.Verb == "list" || info.Verb == "watch" || info.Verb == "deletecollection" {
		info.FieldSelector = query.Get("fieldSelector")
		if name, ok := nameFromFieldSelector(query.Get("fieldSelector")); ok {
			info.Name = name
		}
	}
	return info
}

// splitPath splits a URL path into its segments, ignoring the leading
// and trailing slash.
func splitPath(path string) []string {
	path = strings.Trim(path, "/")
	if path == "" {
		return nil
	}
	return strings.Split(path, "/")
}

// nameFromFieldSelector finds metadata.name=N (or ==) among a field
// selector's terms.
func nameFromFieldSelector(selector string) (string, bool) {
	for _, term := range strings.Split(selector, ",") {
		for _, op := range []string{"==", "="} {
			if field, value, ok := strings.Cut(term, op); ok && strings.TrimSpace(field) == "metadata.name" {
				return strings.TrimSpace(value), true
			}
		}
	}
	return "", false
}

// isTrue is how the watch parameter reads as true.
func isTrue(v string) bool { return v == "true" || v == "1" }

type contextKey struct{}

// WithInfo returns a context carrying info.
func WithInfo(ctx context.Context, info *Info) context.Context {
	return context.WithValue(ctx, contextKey{}, info)
}

// From returns the request's Info from its context, parsing the request if
// no filter stored one.
func From(r *http.Request) *Info {
	if info, ok := r.Context().Value(contextKey{}).(*Info); ok {
		return info
	}
	return Parse(r)
}

// WithRequestInfo stores each request's Info in its context for the
// handlers after it.
func WithRequestInfo(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r.WithContext(WithInfo(r.Context(), Parse(r))))
	})
}
