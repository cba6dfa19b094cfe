// PUT of an object: conditional updates of custom resources, the new state
// prepared against the current one, the object encoded as stored and
// validated, the pipeline's Update.

package httpapi

import (
	"context"
	"net/http"

	"github.com/watchcache/watchcache/pkg/apistatus"
	"github.com/watchcache/watchcache/pkg/defaults"
	"github.com/watchcache/watchcache/pkg/encoding"
	"github.com/watchcache/watchcache/pkg/jsontree"
	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/pipeline"
	"github.com/watchcache/watchcache/pkg/resource"
	"github.com/watchcache/watchcache/pkg/storage"
	"github.com/watchcache/watchcache/pkg/strategy"
	"github.com/watchcache/watchcache/pkg/validation"
	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

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
	updated, err := s.pipeline.Update(r.Context(), store, req.key(), func(cur *object.Object) (*pipeline.Request, pipeline.Encoder, error) {
		// Each attempt prepares its own copy: preparing changes it.
		return s.prepareUpdate(r.Context(), jsontree.DeepCopy(obj).(map[string]any), nil, req, cur)
	})
	if err != nil {
		apistatus.Write(w, err, req.res.Subject(req.name))
		return
	}
	s.writeObject(w, req, http.StatusOK, updated)
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

// prepareUpdate turns the new state of an object (a PUT body or a patched
// object) into its write over cur, for the pipeline: type and identity
// checked, uid and creationTimestamp kept, a resourceVersion in it, if
// any, checked against cur's (optimistic concurrency, 409 on mismatch),
// defaults, the kind's strategy and managedFields applied; and the
// encoder that validates it (the status subresource's writes are not
// validated, as the kinds' status strategies check little, but where
// package validation checks a subresource: a CSR's status and approval).
// old, if not nil, is cur decoded, which prepareUpdate then owns.
func (s *Server) prepareUpdate(ctx context.Context, obj, old map[string]any, req *request, cur *object.Object) (*pipeline.Request, pipeline.Encoder, error) {
	if aerr := checkTypeMeta(obj, req.res); aerr != nil {
		return nil, nil, aerr
	}
	meta, aerr := metadataOf(obj)
	if aerr != nil {
		return nil, nil, aerr
	}
	if aerr := checkIdentity(meta, req); aerr != nil {
		return nil, nil, aerr
	}
	// cur decoded once (here unless the caller has): its
	// creationTimestamp, then the old object.
	if old == nil {
		var err error
		if old, err = jsontree.Decode(cur.JSON()); err != nil {
			return nil, nil, err
		}
	}
	created, _, _ := unstructured.NestedString(old, "metadata", "creationTimestamp")
	if aerr := preserveSystemFields(meta, req.res, cur.UID(), created); aerr != nil {
		return nil, nil, aerr
	}
	rv, aerr := stringField(meta, "resourceVersion")
	if aerr != nil {
		return nil, nil, aerr
	}
	if rv != "" && rv != storage.FormatResourceVersion(cur.ResourceVersion()) {
		return nil, nil, storage.NewError(storage.ErrConflict, cur.Key(), "the object has been modified; please apply your changes to the latest version and try again")
	}
	delete(meta, "resourceVersion")
	defaults.Apply(req.res.Group, req.res.Kind, obj)
	validated := (req.subresource == "" || req.subresource == "scale") && (validation.Has(req.res.Group, req.res.Kind) || req.res.CustomSchema != nil) ||
		validation.HasSubresource(req.res.Group, req.res.Kind, req.subresource)
	// As kube-apiserver defaults what it reads from etcd: an object
	// stored before a default existed compares as if it had it.
	defaults.Apply(req.res.Group, req.res.Kind, old)
	defaults.KeepOnUpdate(req.res.Group, req.res.Kind, obj, old)
	strategy.PrepareForUpdate(req.res, req.subresource, obj, old)
	strategy.KeepDeletion(obj, old)
	obj, err := s.trackUpdate(req, old, obj)
	if err != nil {
		return nil, nil, err
	}
	encode := func(obj map[string]any) ([]byte, any, error) {
		if validated {
			return encodeValid(req.res, req.name, req.subresource, obj, old)
		}
		return req.res.EncodeTyped(obj)
	}
	return admissionRequest(ctx, req, admissionv1.Update, req.name, obj, old), encode, nil
}

// encodeValid encodes obj (resource.Resource.EncodeTyped, a pipeline.Encoder) and checks it, as stored, as a
// new object or, if old is not nil, as an update of old through
// subresource: 422 Invalid if it fails.
func encodeValid(res *resource.Resource, name, subresource string, obj, old map[string]any) ([]byte, any, error) {
	data, typed, err := res.EncodeTyped(obj)
	if err != nil || !validation.Has(res.Group, res.Kind) && res.CustomSchema == nil && !validation.HasSubresource(res.Group, res.Kind, subresource) {
		return data, typed, err
	}
	stored, err := jsontree.Decode(data)
	if err != nil {
		return nil, nil, err
	}
	var errs field.ErrorList
	switch {
	case res.CustomSchema != nil:
		errs = res.CustomSchema.Validate(stored, old)
	case old == nil:
		errs = validation.Validate(res.Group, res.Kind, stored)
	case validation.HasSubresource(res.Group, res.Kind, subresource):
		errs = validation.ValidateSubresourceUpdate(res.Group, res.Kind, subresource, stored, old)
	default:
		errs = validation.ValidateUpdate(res.Group, res.Kind, stored, old)
	}
	if len(errs) > 0 {
		return nil, nil, invalidObject(res, name, errs)
	}
	return data, typed, nil
}
