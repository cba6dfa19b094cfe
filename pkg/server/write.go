package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"

	"github.com/watchcache/watchcache/pkg/apistatus"
	"github.com/watchcache/watchcache/pkg/defaults"
	"github.com/watchcache/watchcache/pkg/deletion"
	"github.com/watchcache/watchcache/pkg/encoding"
	"github.com/watchcache/watchcache/pkg/jsontree"
	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/resource"
	"github.com/watchcache/watchcache/pkg/storage"
	"github.com/watchcache/watchcache/pkg/strategy"
	"github.com/watchcache/watchcache/pkg/validation"
	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kjson "sigs.k8s.io/json"
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
		if err := s.requireNamespace(r.Context(), req, objectName(body)); err != nil {
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
		if err == nil {
			// The default admission plugins see the name as given, and
			// come before what the strategy sets (a pod's QoS class
			// reflects the LimitRanger's defaults).
			err = s.builtin.Admit(r.Context(), webhookRequest(r.Context(), req, admissionv1.Create, objectName(body), obj, nil))
		}
		if err == nil {
			defaults.ApplyOnCreate(req.res.Group, req.res.Kind, obj)
			obj, err = s.mutate(r.Context(), req, admissionv1.Create, name, obj, nil)
		}
		if err != nil {
			apistatus.Write(w, err, req.res.Subject(name))
			return
		}
		data, err := encodeValid(req.res, name, obj, nil)
		if err == nil {
			err = s.validate(r.Context(), req, admissionv1.Create, name, obj, nil)
		}
		if err == nil {
			err = s.admit(r.Context(), req, data)
		}
		if err != nil {
			apistatus.Write(w, err, req.res.Subject(name))
			return
		}
		created, err := store.Create(r.Context(), req.res.Key(req.namespace, name), data)
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
		s.written(r.Context(), req, created)
		if req.dryRun {
			encoding.WriteRaw(w, http.StatusCreated, created.Stored()) // never stored: no resourceVersion
			return
		}
		encoding.WriteRaw(w, http.StatusCreated, created.JSON())
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
// NamespaceLifecycle answers.
func (s *Server) requireNamespace(ctx context.Context, req *request, name string) error {
	store := s.registry.Store(s.namespaces)
	ns, err := store.Get(ctx, req.namespace, storage.GetOptions{ResourceVersion: "0"})
	if storage.CodeOf(err) == storage.ErrNotFound {
		ns, err = store.Get(ctx, req.namespace, storage.GetOptions{})
	}
	if err == nil && deletion.BeingDeleted(ns) {
		return apistatus.New(http.StatusForbidden, metav1.StatusReasonForbidden,
			"%s %q is forbidden: unable to create new content in namespace %s because it is being terminated", req.res.Plural, name, req.namespace)
	}
	return err
}

func (s *Server) update(w http.ResponseWriter, r *http.Request, req *request, store storage.Interface) {
	body, mode, aerr := readObjectBody(r, req.res)
	if aerr != nil {
		apistatus.Write(w, aerr, req.res.Subject(req.name))
		return
	}
	obj, aerr := encoding.DecodeObject(w, body, req.res, mode)
	if aerr == nil {
		aerr = checkConditionalUpdate(obj, req)
	}
	if aerr != nil {
		apistatus.Write(w, aerr, req.res.Subject(req.name))
		return
	}
	updated, err := store.GuaranteedUpdate(r.Context(), req.key(), nil, func(cur *object.Object) ([]byte, error) {
		// Each attempt prepares its own copy: preparing changes it.
		return s.prepareAdmittedUpdate(r.Context(), jsontree.DeepCopy(obj).(map[string]any), req, cur)
	}, nil)
	if err == nil {
		updated, err = deletion.FinishUpdate(r.Context(), req.res, store, updated)
	}
	if err != nil {
		apistatus.Write(w, err, req.res.Subject(req.name))
		return
	}
	s.written(r.Context(), req, updated)
	encoding.WriteRaw(w, http.StatusOK, updated.JSON())
}

// checkConditionalUpdate refuses a custom resource's update (PUT) without
// a resourceVersion, as kube-apiserver's custom resource strategies do
// (they do not allow unconditional updates; built-in kinds mostly do).
func checkConditionalUpdate(obj map[string]any, req *request) *apierrors.StatusError {
	if req.res.Definition == "" {
		return nil
	}
	if meta, _ := obj["metadata"].(map[string]any); meta["resourceVersion"] != nil && meta["resourceVersion"] != "" {
		return nil // a resourceVersion that is no string is prepareUpdate's 400
	}
	// Worded by resource, not kind: kube-apiserver's update handler checks it.
	return apistatus.From(apierrors.NewInvalid(schema.GroupKind{Group: req.res.Group, Kind: req.res.Plural}, req.name, field.ErrorList{
		field.Invalid(field.NewPath("metadata", "resourceVersion"), 0, "must be specified for an update")}), req.res.Subject(req.name))
}

func (s *Server) patch(w http.ResponseWriter, r *http.Request, req *request, store storage.Interface) {
	patchType := encoding.MediaType(r)
	if patchType == encoding.ApplyPatchType {
		s.serverSideApply(w, r, req, store)
		return
	}
	if aerr := checkPatchType(patchType, req.res); aerr != nil {
		apistatus.Write(w, aerr, req.res.Subject(req.name))
		return
	}
	p, aerr := readPatch(r, patchType)
	if aerr != nil {
		apistatus.Write(w, aerr, req.res.Subject(req.name))
		return
	}
	// The warnings are those of the attempt that decided the outcome (an
	// attempt on a stale cached object is redone).
	var warnings []error
	updated, err := store.GuaranteedUpdate(r.Context(), req.key(), nil, func(cur *object.Object) ([]byte, error) {
		obj, problems, err := p.applyTo(cur, req.res)
		if err != nil {
			return nil, err
		}
		warnings = problems
		return s.prepareAdmittedUpdate(r.Context(), obj, req, cur)
	}, nil)
	if p.mode == encoding.ValidationWarn {
		encoding.AddWarnings(w.Header(), warnings)
	}
	if err == nil {
		updated, err = deletion.FinishUpdate(r.Context(), req.res, store, updated)
	}
	if err != nil {
		apistatus.Write(w, err, req.res.Subject(req.name))
		return
	}
	s.written(r.Context(), req, updated)
	encoding.WriteRaw(w, http.StatusOK, updated.JSON())
}

// prepareUpdate turns the new state of an object (a PUT body or a patched
// object) into the bytes to store over cur: type and identity checked,
// uid and creationTimestamp kept, and a resourceVersion in it, if any,
// checked against cur's (optimistic concurrency, 409 on mismatch).
func (s *Server) prepareUpdate(ctx context.Context, obj map[string]any, req *request, cur *object.Object) ([]byte, error) {
	if aerr := checkTypeMeta(obj, req.res); aerr != nil {
		return nil, aerr
	}
	meta, aerr := metadataOf(obj)
	if aerr != nil {
		return nil, aerr
	}
	if aerr := checkIdentity(meta, req); aerr != nil {
		return nil, aerr
	}
	if aerr := preserveSystemFields(meta, req.res, cur.UID(), creationTimestamp(cur)); aerr != nil {
		return nil, aerr
	}
	rv, aerr := stringField(meta, "resourceVersion")
	if aerr != nil {
		return nil, aerr
	}
	if rv != "" && rv != storage.FormatResourceVersion(cur.ResourceVersion()) {
		return nil, storage.NewError(storage.ErrConflict, cur.Key(), "the object has been modified; please apply your changes to the latest version and try again")
	}
	delete(meta, "resourceVersion")
	defaults.Apply(req.res.Group, req.res.Kind, obj)
	validated := (req.subresource == "" || req.subresource == "scale") && (validation.Has(req.res.Group, req.res.Kind) || req.res.CustomSchema != nil)
	var old map[string]any
	if err := kjson.UnmarshalCaseSensitivePreserveInts(cur.JSON(), &old); err != nil {
		return nil, err
	}
	// As kube-apiserver defaults what it reads from etcd: an object
	// stored before a default existed compares as if it had it.
	defaults.Apply(req.res.Group, req.res.Kind, old)
	defaults.KeepOnUpdate(req.res.Group, req.res.Kind, obj, old)
	strategy.PrepareForUpdate(req.res, req.subresource, obj, old)
	strategy.KeepDeletion(obj, old)
	obj, err := s.trackUpdate(req, old, obj)
	if err == nil {
		obj, err = s.mutate(ctx, req, admissionv1.Update, req.name, obj, old)
	}
	if err != nil {
		return nil, err
	}
	var data []byte
	if validated {
		data, err = encodeValid(req.res, req.name, obj, old)
	} else {
		data, err = encodeObject(req.res, obj)
	}
	if err == nil {
		err = s.validate(ctx, req, admissionv1.Update, req.name, obj, old)
	}
	return data, err
}

// encodeValid encodes obj (encodeObject) and checks it, as stored, as a
// new object or, if old is not nil, as an update of old: 422 Invalid if it
// fails.
func encodeValid(res *resource.Resource, name string, obj, old map[string]any) ([]byte, error) {
	data, err := encodeObject(res, obj)
	if err != nil || !validation.Has(res.Group, res.Kind) && res.CustomSchema == nil {
		return data, err
	}
	var stored map[string]any
	if err := kjson.UnmarshalCaseSensitivePreserveInts(data, &stored); err != nil {
		return nil, err
	}
	var errs field.ErrorList
	switch {
	case res.CustomSchema != nil:
		errs = res.CustomSchema.Validate(stored, old)
	case old == nil:
		errs = validation.Validate(res.Group, res.Kind, stored)
	default:
		errs = validation.ValidateUpdate(res.Group, res.Kind, stored, old)
	}
	if len(errs) > 0 {
		return nil, invalidObject(res, name, errs)
	}
	return data, nil
}

// encodeObject is the JSON a built-in kind's object is stored as: through
// its Go type, as kube-apiserver encodes it, so that unknown fields are
// dropped and fields without omitempty are written with their zero values
// (a new Service's "status":{"loadBalancer":{}}). Custom resources are
// stored as they are.
func encodeObject(res *resource.Resource, obj map[string]any) ([]byte, error) {
	data, err := json.Marshal(obj)
	if err != nil || res.StrategicMergeType == nil {
		return data, err
	}
	typed := reflect.New(reflect.TypeOf(res.StrategicMergeType)).Interface()
	if err := json.Unmarshal(data, typed); err != nil {
		return nil, apistatus.BadRequest("the object is not a valid %s: %v", res.Kind, err)
	}
	return json.Marshal(typed)
}

// prepareAdmittedUpdate is prepareUpdate followed by the write's admission.
func (s *Server) prepareAdmittedUpdate(ctx context.Context, obj map[string]any, req *request, cur *object.Object) ([]byte, error) {
	data, err := s.prepareUpdate(ctx, obj, req, cur)
	if err != nil {
		return nil, err
	}
	return data, s.admit(ctx, req, data)
}

// admit asks Config.AdmitWrite, if any, about the bytes a write stores.
func (s *Server) admit(ctx context.Context, req *request, data []byte) error {
	if s.admitWrite == nil {
		return nil
	}
	return s.admitWrite(ctx, req.res, req.namespace, data)
}

// written tells Config.AfterWrite, if any, that a write of obj succeeded.
func (s *Server) written(ctx context.Context, req *request, obj *object.Object) {
	s.wroteAt(ctx, req, obj.ResourceVersion())
}

// wroteAt tells Config.AfterWrite, if any, that a write of req succeeded
// at revision rv (a dry run wrote nothing).
func (s *Server) wroteAt(ctx context.Context, req *request, rv uint64) {
	if s.afterWrite != nil && !req.dryRun {
		s.afterWrite(ctx, req.res, rv)
	}
}

// creationTimestamp reads an object's metadata.creationTimestamp.
func creationTimestamp(obj *object.Object) string {
	var meta struct {
		CreationTimestamp string `json:"creationTimestamp"`
	}
	json.Unmarshal(obj.AppendMetadata(nil), &meta)
	return meta.CreationTimestamp
}

// readObjectBody reads a create or update body as JSON, with its
// fieldValidation mode.
func readObjectBody(r *http.Request, res *resource.Resource) ([]byte, encoding.FieldValidation, *apierrors.StatusError) {
	mode, aerr := encoding.ParseFieldValidation(r)
	if aerr != nil {
		return nil, "", aerr
	}
	body, aerr := encoding.ReadJSONBody(r, res.Kind, res.StrategicMergeType != nil)
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
