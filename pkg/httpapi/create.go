// POST of a new object: the body read and decoded, generated names (retried
// when taken), no creates in a terminating namespace or of a terminating
// CRD's resource, the pipeline's Create, and the 409 of a taken name.

package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/watchcache/watchcache/pkg/apistatus"
	"github.com/watchcache/watchcache/pkg/defaults"
	"github.com/watchcache/watchcache/pkg/deletion"
	"github.com/watchcache/watchcache/pkg/encoding"
	"github.com/watchcache/watchcache/pkg/resource"
	"github.com/watchcache/watchcache/pkg/storage"
	"github.com/watchcache/watchcache/pkg/strategy"
	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// generateNameAttempts bounds retries of a create whose generated name
// collided with an existing object.
const generateNameAttempts = 5

func (s *Server) create(w http.ResponseWriter, r *http.Request, req *request, store storage.Interface) {
	body, mode, aerr := readObjectBody(r, req.res)
	if aerr != nil {
		apistatus.Write(w, aerr, req.res.Subject(""))
		return
	}
	s.createObject(w, r, req, store, body, mode)
}

// createObject creates the object of a create body (or of an apply that
// found none) through the whole pipeline: metadata, defaults, strategy,
// managedFields, validation, admission, storage.
func (s *Server) createObject(w http.ResponseWriter, r *http.Request, req *request, store storage.Interface, body []byte, mode encoding.FieldValidation) {
	if err := forbidTerminating(req.res, body); err != nil {
		apistatus.Write(w, err, req.res.Subject(""))
		return
	}
	if req.res.Namespaced {
		if err := s.requireNamespace(r.Context(), req, body); err != nil {
			apistatus.Write(w, err, s.namespaces.Subject(req.namespace))
			return
		}
	}
	for attempt := 0; ; attempt++ {
		obj, aerr := encoding.DecodeObject(w, body, req.res, mode)
		if aerr != nil {
			apistatus.Write(w, aerr, req.res.Subject(""))
			return
		}
		given := givenName(obj)
		name, aerr := prepareCreate(obj, req)
		if aerr != nil {
			apistatus.Write(w, aerr, req.res.Subject(name))
			return
		}
		defaults.Apply(req.res.Group, req.res.Kind, obj)
		strategy.PrepareForCreate(req.res, obj)
		// Before what the strategy sets on a new object (a pod's status):
		// kube-apiserver records managedFields before its strategy runs.
		obj, err := s.trackUpdate(req, nil, obj)
		if err != nil {
			apistatus.Write(w, err, req.res.Subject(name))
			return
		}
		write := admissionRequest(r.Context(), req, admissionv1.Create, name, obj, nil)
		write.GivenName = given
		created, err := s.pipeline.Create(r.Context(), store, req.res.Key(req.namespace, name), write,
			func(obj map[string]any) ([]byte, any, error) { return encodeValid(req.res, name, "", obj, nil) })
		if storage.CodeOf(err) == storage.ErrAlreadyExists && attempt < generateNameAttempts && isGenerated(body) {
			mode = encoding.ValidationIgnore // warnings were given on the first attempt
			continue
		}
		if storage.CodeOf(err) == storage.ErrAlreadyExists {
			err = s.alreadyExists(r.Context(), req, store, name, err)
		}
		if err != nil {
			apistatus.Write(w, err, req.res.Subject(name))
			return
		}
		if req.dryRun {
			if err := encoding.WriteStored(w, http.StatusCreated, req.format, req.res, created); err != nil { // never stored: no resourceVersion
				apistatus.Write(w, err, req.res.Subject(name))
			}
			return
		}
		s.writeObject(w, req, http.StatusCreated, created)
		return
	}
}

// createMeta is the part of a create body read before it is decoded.
type createMeta struct {
	Metadata struct {
		Name         string `json:"name"`
		GenerateName string `json:"generateName"`
	} `json:"metadata"`
}

// forbidTerminating refuses a create of a custom resource whose definition
// is being deleted, as kube-apiserver does (before its admission plugins).
func forbidTerminating(res *resource.Resource, body []byte) error {
	if !res.Terminating {
		return nil
	}
	var meta createMeta
	json.Unmarshal(body, &meta)
	return apierrors.NewForbidden(schema.GroupResource{Group: res.Group, Resource: res.Plural}, meta.Metadata.Name,
		errors.New("create not allowed while custom resource definition is terminating"))
}

// isGenerated reports whether a create body asks for a generated name.
func isGenerated(body []byte) bool {
	var meta createMeta
	json.Unmarshal(body, &meta)
	return meta.Metadata.Name == "" && meta.Metadata.GenerateName != ""
}

// givenName is a decoded create body's name, or its generateName: the
// name as the request gave it (objectName without decoding the body
// again).
func givenName(obj map[string]any) string {
	meta, _ := obj["metadata"].(map[string]any)
	if name, _ := meta["name"].(string); name != "" {
		return name
	}
	name, _ := meta["generateName"].(string)
	return name
}

// objectName is a create body's name, or generateName, for messages.
func objectName(body []byte) string {
	var meta createMeta
	json.Unmarshal(body, &meta)
	if meta.Metadata.Name != "" {
		return meta.Metadata.Name
	}
	return meta.Metadata.GenerateName
}

// requireNamespace fails with NotFound unless the namespace exists. Like
// kube-apiserver's NamespaceLifecycle admission (an informer, then a live
// lookup on a miss), it reads at any resourceVersion first, which the watch
// cache answers from memory, and reads consistently only if that misses, so
// that a namespace created just before is seen. A consistent read first
// would cost every create an etcd round trip and progress notifications
// for the namespaces' cache, which sees no writes while objects are created.
//
// A namespace being deleted takes no new objects: 403, as kube-apiserver's
// NamespaceLifecycle answers, naming the object of the create body.
func (s *Server) requireNamespace(ctx context.Context, req *request, body []byte) error {
	store := s.registry.Store(s.namespaces)
	ns, err := store.Get(ctx, req.namespace, storage.GetOptions{ResourceVersion: "0"})
	if storage.CodeOf(err) == storage.ErrNotFound {
		ns, err = store.Get(ctx, req.namespace, storage.GetOptions{})
	}
	if err == nil && deletion.BeingDeleted(ns) {
		return apistatus.New(http.StatusForbidden, metav1.StatusReasonForbidden,
			"%s %q is forbidden: unable to create new content in namespace %s because it is being terminated", req.res.Plural, objectName(body), req.namespace)
	}
	return err
}

// readObjectBody reads a create or update body as JSON, with its
// fieldValidation mode.
func readObjectBody(r *http.Request, res *resource.Resource) ([]byte, encoding.FieldValidation, *apierrors.StatusError) {
	mode, aerr := encoding.ParseFieldValidation(r)
	if aerr != nil {
		return nil, "", aerr
	}
	body, aerr := encoding.ReadJSONBody(r, res.Group, res.Kind, res.StrategicMergeType != nil)
	return body, mode, aerr
}

// alreadyExists is the 409 of a create whose name is taken; kube-apiserver
// says so when the object there is being deleted (it goes once its
// finalizers are done, and the create may be retried then).
func (s *Server) alreadyExists(ctx context.Context, req *request, store storage.Interface, name string, err error) error {
	e := apistatus.From(err, req.res.Subject(name))
	if cur, err := store.Get(ctx, req.res.Key(req.namespace, name), storage.GetOptions{}); err == nil && deletion.BeingDeleted(cur) {
		e.ErrStatus.Message = "object is being deleted: " + e.ErrStatus.Message
	}
	return e
}
