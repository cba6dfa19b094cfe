// PATCH: JSON patch, merge patch and strategic merge patch (built-in kinds
// only), read and applied to the current object, kube-apiserver's 422 of a
// patch that cannot apply, and the pipeline's Update.

package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"reflect"
	"strings"

	"github.com/watchcache/watchcache/pkg/apistatus"
	"github.com/watchcache/watchcache/pkg/encoding"
	"github.com/watchcache/watchcache/pkg/jsontree"
	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/pipeline"
	"github.com/watchcache/watchcache/pkg/resource"
	"github.com/watchcache/watchcache/pkg/storage"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/mergepatch"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kjson "sigs.k8s.io/json"
)

// checkPatchType accepts JSON patch and merge patch for every resource and
// strategic merge patch for built-in kinds (custom resources have no patch
// strategy, so kube-apiserver answers 415 for them too).
func checkPatchType(mt string, res *resource.Resource) *apierrors.StatusError {
	switch {
	case mt == encoding.JSONPatchType, mt == encoding.MergePatchType:
		return nil
	case mt == encoding.StrategicPatchType && res.StrategicMergeType != nil:
		return nil
	}
	supported := encoding.JSONPatchType + ", " + encoding.MergePatchType + ", " + encoding.ApplyPatchType
	if res.StrategicMergeType != nil {
		supported += ", " + encoding.StrategicPatchType
	}
	return apistatus.New(http.StatusUnsupportedMediaType, metav1.StatusReasonUnsupportedMediaType,
		"the body of the request was in an unknown format - accepted media types include: %s", supported)
}

// applyPatch applies a patch of the given media type to an object's JSON,
// failing as kube-apiserver does: a JSON patch that does not decode is a
// 400 and one that does not apply a 422 without detail; a strategic merge
// patch of a bad form a 400, one that cannot be merged a 422, and any
// other failure a 500.
func applyPatch(mt string, doc, patch []byte, res *resource.Resource) ([]byte, *apierrors.StatusError) {
	switch mt {
	case encoding.JSONPatchType:
		p, err := jsonpatch.DecodePatch(patch)
		if err != nil {
			return nil, apistatus.BadRequest("%v", err)
		}
		out, err := p.Apply(doc)
		if err != nil {
			return nil, unprocessable(err)
		}
		return out, nil
	case encoding.StrategicPatchType:
		out, err := strategicpatch.StrategicMergePatch(doc, patch, res.StrategicMergeType)
		switch {
		case err == nil:
			return out, nil
		case errors.Is(err, mergepatch.ErrBadJSONDoc), errors.Is(err, mergepatch.ErrBadPatchFormatForPrimitiveList),
			errors.Is(err, mergepatch.ErrBadPatchFormatForRetainKeys), errors.Is(err, mergepatch.ErrBadPatchFormatForSetElementOrderList),
			errors.Is(err, mergepatch.ErrUnsupportedStrategicMergePatchFormat):
			return nil, apistatus.BadRequest("%v", err)
		case errors.Is(err, mergepatch.ErrNoListOfLists), errors.Is(err, mergepatch.ErrPatchContentNotMatchRetainKeys):
			return nil, unprocessable(err)
		}
		return nil, apistatus.From(apistatus.Unknown(err), res.Subject(""))
	}
	out, err := jsonpatch.MergePatch(doc, patch)
	if err != nil {
		return nil, apistatus.BadRequest("%v", err)
	}
	return out, nil
}

// unprocessable is kube-apiserver's 422 for a patch that cannot be
// applied: a generic message, err's text in no detail.
func unprocessable(err error) *apierrors.StatusError {
	return apistatus.From(apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "", schema.GroupResource{}, "", err.Error(), 0, false), apistatus.Subject{})
}

// patchRequest is a JSON, merge or strategic merge patch with its
// fieldValidation mode.
type patchRequest struct {
	mediaType string
	body      []byte
	mode      encoding.FieldValidation
	// own are the patch's own duplicate fields (and its JSON patch
	// operations' unknown fields), reported before the patched object's.
	own []error
}

// jsonPatchOp is a JSON patch operation, decoded strictly for its unknown
// and duplicate fields; kube-apiserver's messages name its type.
type jsonPatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	From  string `json:"from"`
	Value any    `json:"value"`
}

// readPatch reads a patch request of media type mt: 400 if it is not JSON
// or does not decode as its type's patch (a strategic merge patch always
// decoded, others when checking fields: fieldValidation Strict or Warn),
// as kube-apiserver answers.
func readPatch(r *http.Request, mt string) (*patchRequest, *apierrors.StatusError) {
	body, aerr := encoding.ReadBody(r)
	if aerr != nil {
		return nil, aerr
	}
	p := &patchRequest{mediaType: mt, body: body}
	if p.mode, aerr = encoding.ParseFieldValidation(r); aerr != nil {
		return nil, aerr
	}
	if !json.Valid(body) {
		return nil, apistatus.BadRequest("invalid JSON patch")
	}
	var err error
	switch {
	case p.mode == encoding.ValidationIgnore && mt == encoding.StrategicPatchType:
		// Decoded in every mode, to be merged as a map.
		var patch map[string]any
		err = kjson.UnmarshalCaseSensitivePreserveInts(body, &patch)
	case p.mode == encoding.ValidationIgnore:
		// Other patches are decoded only as they apply.
	case mt == encoding.JSONPatchType:
		var ops []jsonPatchOp
		p.own, err = kjson.UnmarshalStrict(body, &ops)
		for i, e := range p.own {
			p.own[i] = fmt.Errorf("json patch %v", e)
		}
	default:
		var patch map[string]any
		p.own, err = kjson.UnmarshalStrict(body, &patch)
	}
	switch {
	case err != nil && mt == encoding.StrategicPatchType:
		return nil, apistatus.BadRequest("%v", err)
	case err != nil:
		// kube-apiserver decodes the operations as its handlers package's
		// jsonPatchOp, which its message names.
		return nil, apistatus.BadRequest("error decoding patch: %s", strings.ReplaceAll(err.Error(), reflect.TypeOf(jsonPatchOp{}).String(), "handlers.jsonPatchOp"))
	}
	return p, nil
}

// applyTo patches cur and decodes the result as decodeFields does (a
// strategic merge patch's result through the kind's type, as
// kube-apiserver converts it), with the unknown and duplicate fields to
// warn about (Warn), and cur decoded if it was on the way (nil otherwise:
// the caller decodes it). A result that does not decode, or has such
// fields under Strict, is kube-apiserver's 422 about the patch.
func (p *patchRequest) applyTo(cur *object.Object, res *resource.Resource) (obj, old map[string]any, problems []error, err error) {
	obj, old, problems, ok := p.mergeDecoded(cur, res)
	if !ok {
		patched, aerr := applyPatch(p.mediaType, cur.JSON(), p.body, res)
		if aerr != nil {
			return nil, nil, nil, aerr
		}
		if p.mediaType == encoding.StrategicPatchType {
			obj, problems, err = decodeConverted(patched, res, p.mode)
		} else {
			obj, problems, err = encoding.DecodeFields(patched, res, p.mode)
		}
	}
	problems = append(p.own[:len(p.own):len(p.own)], problems...)
	if err == nil && p.mode == encoding.ValidationStrict && len(problems) > 0 {
		err = runtime.NewStrictDecodingError(problems)
	}
	var invalid *apierrors.StatusError
	if err != nil && !errors.As(err, &invalid) {
		err = apistatus.From(apierrors.NewInvalid(schema.GroupKind{}, "", field.ErrorList{
			field.Invalid(field.NewPath("patch"), p.shown(cur, res), err.Error())}), res.Subject(""))
	}
	return obj, old, problems, err
}

// mergeDecoded is applyTo's common case (a kubelet's status) on decoded
// trees rather than JSON text: a merge patch that is an object, of a
// built-in kind's object, merged into cur decoded (jsontree.MergePatch;
// cur decoded once, for the update's old object too), its unknown fields
// found by converting the result to the kind's Go type rather than by
// decoding its JSON text strictly. It declines (ok false) whatever that
// text would answer otherwise or in another order: a number of the patch
// that is not an int32 (the converter reads 3.0 into an integer field,
// encoding/json refuses it), a value of the wrong type (encoding/json's
// message), more than one unknown field (encoding/json's order).
func (p *patchRequest) mergeDecoded(cur *object.Object, res *resource.Resource) (obj, old map[string]any, problems []error, ok bool) {
	if p.mediaType != encoding.MergePatchType || res.StrategicMergeType == nil {
		return nil, nil, nil, false
	}
	patch, err := jsontree.Decode(p.body)
	if err != nil || patch == nil || !smallIntegers(patch) {
		return nil, nil, nil, false
	}
	if old, err = jsontree.Decode(cur.JSON()); err != nil {
		return nil, nil, nil, false
	}
	obj = jsontree.DeepCopy(old).(map[string]any)
	jsontree.MergePatch(obj, patch)
	typed := reflect.New(reflect.TypeOf(res.StrategicMergeType)).Interface()
	err = runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(obj, typed, p.mode != encoding.ValidationIgnore)
	if strict, isStrict := runtime.AsStrictDecodingError(err); isStrict && len(strict.Errors()) == 1 {
		return obj, old, strict.Errors(), true
	}
	if err != nil {
		return nil, nil, nil, false
	}
	return obj, old, nil, true
}

// smallIntegers reports whether every number in v is an integer of int32's
// range (as decoded with its integers kept: int64; others float64).
func smallIntegers(v any) bool {
	switch v := v.(type) {
	case map[string]any:
		for _, x := range v {
			if !smallIntegers(x) {
				return false
			}
		}
	case []any:
		for _, x := range v {
			if !smallIntegers(x) {
				return false
			}
		}
	case int64:
		return v >= math.MinInt32 && v <= math.MaxInt32
	case float64:
		return false
	}
	return true
}

// decodeConverted decodes a built-in kind's object patched by a strategic
// merge patch, converted to the kind's type as kube-apiserver does, with
// its unknown fields unless mode is Ignore.
func decodeConverted(patched []byte, res *resource.Resource, mode encoding.FieldValidation) (map[string]any, []error, error) {
	var obj map[string]any
	if err := kjson.UnmarshalCaseSensitivePreserveInts(patched, &obj); err != nil {
		return nil, nil, apistatus.BadRequest("the patched object is not a JSON object: %v", err)
	}
	typed := reflect.New(reflect.TypeOf(res.StrategicMergeType)).Interface()
	err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(obj, typed, mode != encoding.ValidationIgnore)
	if strict, ok := runtime.AsStrictDecodingError(err); ok {
		return obj, strict.Errors(), nil
	}
	return obj, nil, err
}

// shown is the patch as kube-apiserver's 422 about it shows it: a
// strategic merge patch as a Go map, other patches applied to cur as
// kube-apiserver encodes it (a built-in kind's fields in its type's order,
// a custom resource's sorted).
func (p *patchRequest) shown(cur *object.Object, res *resource.Resource) string {
	if p.mediaType == encoding.StrategicPatchType {
		var patch map[string]any
		kjson.UnmarshalCaseSensitivePreserveInts(p.body, &patch)
		return fmt.Sprintf("%+v", patch)
	}
	var doc map[string]any
	if err := kjson.UnmarshalCaseSensitivePreserveInts(cur.JSON(), &doc); err != nil {
		return ""
	}
	encoded, err := res.Encode(doc)
	if err != nil {
		return ""
	}
	patched, _ := applyPatch(p.mediaType, encoded, p.body, res)
	return string(patched)
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
	updated, err := s.pipeline.Update(r.Context(), store, req.key(), func(cur *object.Object) (*pipeline.Request, pipeline.Encoder, error) {
		obj, old, problems, err := p.applyTo(cur, req.res)
		if err != nil {
			return nil, nil, err
		}
		warnings = problems
		return s.prepareUpdate(r.Context(), obj, old, req, cur)
	})
	if p.mode == encoding.ValidationWarn {
		encoding.AddWarnings(w.Header(), warnings)
	}
	if err != nil {
		apistatus.Write(w, err, req.res.Subject(req.name))
		return
	}
	s.writeObject(w, req, http.StatusOK, updated)
}
