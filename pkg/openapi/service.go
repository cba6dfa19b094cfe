// Package openapi serves the API's OpenAPI documents as kube-apiserver's
// routes/openapi does, and the field managers (managedFields, server-side
// apply) typed by their schemas.
//
// OpenAPI v3 as kube-apiserver serves it: /openapi/v3 lists one document
// per group version, each at a URL carrying the document's hash, so that
// clients may cache it for good. kubectl reads these documents: the PATCH
// operation of a kind tells it whether the server validates fields itself
// (the fieldValidation query parameter; if not, kubectl validates against
// /openapi/v2, and refuses to create or apply without it) and whether the
// kind takes strategic merge patches, which client-side apply then computes
// from the kind's schema (patch strategies and merge keys); kubectl explain
// prints the schemas' types, required fields and descriptions. Built-in
// kinds get their real schemas, reflected from their k8s.io/api types,
// struct tags and documentation (see schema.go); custom resources,
// schemaless, an open object. /openapi/v2 serves the same as one Swagger
// 2.0 document, in JSON or in the protobuf form client-go asks for (see
// v2.go): kubectl falls back to it without v3 and explains from it
// with --output=plaintext-openapiv2.
package openapi

import (
	"bytes"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/watchcache/watchcache/pkg/apistatus"
	"github.com/watchcache/watchcache/pkg/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/managedfields"
)

// Service serves a registry's OpenAPI documents and gives the field
// managers typed by them.
type Service struct {
	registry *resource.Registry
	// docs are the documents, built anew when the registry changes;
	// rebuilds hold mu, so that the last stored is built from the newest
	// registry.
	docs atomic.Pointer[openAPIDocs]
	mu   sync.Mutex
}

// New returns the Service of registry's resources, kept up to date as
// resources are added and removed.
func New(registry *resource.Registry) *Service {
	s := &Service{registry: registry}
	s.docs.Store(buildOpenAPI(registry, nil))
	registry.OnChange(func(_, _ []*resource.Resource) { s.rebuild() })
	return s
}

// rebuild makes the documents of the registry as it is now, keeping
// those that did not change, and serves them.
func (s *Service) rebuild() *openAPIDocs {
	s.mu.Lock()
	defer s.mu.Unlock()
	docs := buildOpenAPI(s.registry, s.docs.Load())
	s.docs.Store(docs)
	return docs
}

// FieldManager is the field manager (managedFields, server-side apply) of
// res and, if subresource is "status", of its status subresource (scale
// and finalize write the object's own fields). A resource registered a
// moment ago (a CRD just established) may be newer than the documents,
// which the registry's subscribers rebuild after the resource is visible:
// the documents are then rebuilt at once, so that the first write of a new
// kind gets its managedFields too.
func (s *Service) FieldManager(res *resource.Resource, subresource string) (*managedfields.FieldManager, error) {
	docs := s.docs.Load()
	if !docs.of[res] && s.registry.Lookup(res.Group, res.Version, res.Plural) == res {
		docs = s.rebuild()
	}
	if subresource != "status" {
		subresource = ""
	}
	return docs.fields.For(res, subresource)
}

// ServeHTTP serves /openapi/v2, /openapi/v3 and the documents below it.
func (s *Service) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		apistatus.Write(w, apistatus.New(http.StatusMethodNotAllowed, "MethodNotAllowed", "method %s is not allowed", r.Method), apistatus.Subject{})
		return
	}
	if r.URL.Path == "/openapi/v2" {
		serveSwagger(w, r, s.docs.Load())
		return
	}
	if r.URL.Path == "/openapi/v3" {
		serveOpenAPIDoc(w, r, s.docs.Load().index(), "application/json")
		return
	}
	key, ok := strings.CutPrefix(r.URL.Path, "/openapi/v3/")
	gv := s.docs.Load().gv[key]
	if !ok || gv == nil {
		apistatus.Write(w, apistatus.NotFoundPath(), apistatus.Subject{})
		return
	}
	doc := gv.doc()
	w.Header().Set("Vary", "Accept")
	if !acceptsJSON(r.Header.Get("Accept")) {
		apistatus.Write(w, apistatus.New(http.StatusNotAcceptable, metav1.StatusReasonNotAcceptable,
			"OpenAPI documents are only served as application/json"), apistatus.Subject{})
		return
	}
	if hash := r.URL.Query().Get("hash"); hash != "" {
		if hash != doc.hash {
			// A stale hash: send the client to the current document.
			http.Redirect(w, r, r.URL.Path+"?hash="+url.QueryEscape(doc.hash), http.StatusMovedPermanently)
			return
		}
		w.Header().Set("Cache-Control", "public, immutable")
		w.Header().Set("Expires", time.Now().AddDate(1, 0, 0).UTC().Format(http.TimeFormat))
	}
	serveOpenAPIDoc(w, r, doc, "application/json")
}

// serveOpenAPIDoc writes a document of a media type with its ETag
// (http.ServeContent answers a matching If-None-Match with 304).
func serveOpenAPIDoc(w http.ResponseWriter, r *http.Request, doc *openAPIDoc, mediaType string) {
	w.Header().Set("Content-Type", mediaType)
	w.Header().Set("Etag", `"`+doc.hash+`"`)
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(doc.body))
}

// acceptsJSON reports whether an Accept header admits application/json.
func acceptsJSON(accept string) bool {
	if accept == "" {
		return true
	}
	for _, part := range strings.Split(accept, ",") {
		mt, _, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err == nil && (mt == "application/json" || mt == "application/*" || mt == "*/*") {
			return true
		}
	}
	return false
}
