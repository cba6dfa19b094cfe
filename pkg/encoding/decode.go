// Reading a request body: its size limit, media type, JSON or protobuf to
// JSON, fieldValidation (Strict, Warn, Ignore) and the Warning headers of
// unknown or duplicate fields, as kube-apiserver's decoders.

package encoding

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"
	"strings"

	"github.com/watchcache/watchcache/pkg/apistatus"
	"github.com/watchcache/watchcache/pkg/jsontree"
	"github.com/watchcache/watchcache/pkg/resource"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kjson "sigs.k8s.io/json"
)

// MaxBodyBytes is the largest request body accepted (kube-apiserver's
// limit for objects is about 3 MiB).
const MaxBodyBytes = 3 << 20

// ReadBody reads a request body, refusing more than MaxBodyBytes (413).
func ReadBody(r *http.Request) ([]byte, *apierrors.StatusError) {
	data, err := io.ReadAll(io.LimitReader(r.Body, MaxBodyBytes+1))
	if err != nil {
		return nil, apistatus.BadRequest("reading the request body: %v", err)
	}
	if len(data) > MaxBodyBytes {
		return nil, apistatus.New(http.StatusRequestEntityTooLarge, metav1.StatusReasonRequestEntityTooLarge,
			"the request body is larger than the limit of %d bytes", MaxBodyBytes)
	}
	return data, nil
}

// MediaType returns the request's Content-Type without parameters.
func MediaType(r *http.Request) string {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil {
		return ""
	}
	return mt
}

// ReadJSONBody reads an object body of kind group/kind as JSON: JSON as
// is, protobuf (built-in kinds only) converted; other media types are 415.
func ReadJSONBody(r *http.Request, group, kind string, builtin bool) ([]byte, *apierrors.StatusError) {
	mt := MediaType(r)
	if mt != "application/json" && mt != "" && (mt != ProtobufType || !builtin) {
		accepted := "application/json"
		if builtin {
			accepted += ", " + ProtobufType
		}
		return nil, apistatus.New(http.StatusUnsupportedMediaType, metav1.StatusReasonUnsupportedMediaType,
			"the body of the request was in an unknown format - accepted media types include: %s", accepted)
	}
	body, aerr := ReadBody(r)
	if aerr != nil || mt != ProtobufType {
		return body, aerr
	}
	return protobufToJSON(body, group, kind)
}

// CannotHandle is kube-apiserver's 400 for a body its decoder refuses: the
// body's kind and version, the kind the request takes, and why.
func CannotHandle(kind, version, want string, err error) *apierrors.StatusError {
	return apistatus.BadRequest("%s in version %q cannot be handled as a %s: %v", kind, version, want, err)
}

// FieldValidation is the fieldValidation query parameter: what a write
// does about unknown and duplicate fields in its body.
type FieldValidation string

// The fieldValidation modes: refuse the write (400), warn of the fields
// (Warning headers, kube-apiserver's default), or say nothing.
const (
	ValidationStrict FieldValidation = "Strict"
	ValidationWarn   FieldValidation = "Warn"
	ValidationIgnore FieldValidation = "Ignore"
)

// ParseFieldValidation reads the request's fieldValidation mode.
func ParseFieldValidation(r *http.Request) (FieldValidation, *apierrors.StatusError) {
	switch v := FieldValidation(r.URL.Query().Get("fieldValidation")); v {
	case "":
		return ValidationWarn, nil // kube-apiserver's default
	case ValidationStrict, ValidationWarn, ValidationIgnore:
		return v, nil
	default:
		return "", apistatus.BadRequest("fieldValidation %q is invalid: must be Strict, Warn or Ignore", v)
	}
}

// DecodeObject decodes a create or update body as DecodeFields does and
// reports its unknown and duplicate fields as fieldValidation says: a 400
// (Strict) or warnings (Warn); a built-in kind's body that does not decode
// into its type is a 400 whatever the mode, as kube-apiserver answers.
func DecodeObject(w http.ResponseWriter, data []byte, res *resource.Resource, mode FieldValidation) (map[string]any, *apierrors.StatusError) {
	obj, problems, err := DecodeFields(data, res, mode)
	if err == nil && mode == ValidationStrict && len(problems) > 0 {
		err = runtime.NewStrictDecodingError(problems)
	}
	var aerr *apierrors.StatusError
	switch {
	case errors.As(err, &aerr):
		return nil, aerr
	case err != nil:
		return nil, CannotHandle(res.Kind, res.Version, res.Kind, err)
	}
	AddWarnings(w.Header(), problems)
	return obj, nil
}

// DecodeFields decodes a JSON object into a generic map (numbers kept
// exact), pruned and defaulted by a custom resource's schema, and returns
// with it, unless mode is Ignore, its unknown and duplicate fields, as
// kube-apiserver's strict decoding finds them: built-in kinds' against
// their k8s.io/api types, custom resources' against their schema (which
// also prunes their metadata) or, having none, only in metadata. A
// built-in kind's object that does not decode into its type is the error
// of that decoding ("json: cannot unmarshal ..."); data that is no JSON
// object, a 400 *apierrors.StatusError.
func DecodeFields(data []byte, res *resource.Resource, mode FieldValidation) (map[string]any, []error, error) {
	obj, err := jsontree.Decode(data)
	if err != nil {
		return nil, nil, apistatus.BadRequest("the request body is not a JSON object: %v", err)
	}
	if obj == nil {
		return nil, nil, apistatus.BadRequest("the request body is not a JSON object")
	}
	var pruned []string
	if res.CustomSchema != nil {
		pruned = res.CustomSchema.Prune(obj)
		res.CustomSchema.Default(obj)
	}
	var problems []error
	for _, path := range pruned {
		problems = append(problems, fmt.Errorf("unknown field %q", path))
	}
	if res.StrategicMergeType != nil {
		typed := reflect.New(reflect.TypeOf(res.StrategicMergeType)).Interface()
		strict, err := kjson.UnmarshalStrict(data, typed, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
		if err != nil {
			return nil, nil, err
		}
		problems = strict
	} else if mode != ValidationIgnore {
		problems = append(problems, strictMetadataErrors(data, res.CustomSchema == nil)...)
	}
	if mode == ValidationIgnore {
		return obj, nil, nil
	}
	return obj, problems, nil
}

// AddWarnings adds a Warning header for each of a write's unknown or
// duplicate fields (fieldValidation Warn).
func AddWarnings(h http.Header, problems []error) {
	for _, p := range problems {
		h.Add("Warning", fmt.Sprintf("299 - %q", p.Error()))
	}
}

// strictMetadataErrors checks a custom resource's object for duplicate
// fields anywhere and, if withMetadata (it has no schema, which would
// have pruned its metadata), for unknown fields in its metadata.
func strictMetadataErrors(data []byte, withMetadata bool) []error {
	var generic map[string]any
	out, _ := kjson.UnmarshalStrict(data, &generic, kjson.DisallowDuplicateFields)
	if !withMetadata {
		return out
	}
	var partial struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
	}
	strict, _ := kjson.UnmarshalStrict(data, &partial, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
	for _, e := range strict {
		// Only metadata has a schema; unknown top-level fields are the
		// resource's own.
		if strings.Contains(e.Error(), `"metadata.`) {
			out = append(out, e)
		}
	}
	return out
}

// The patch media types: JSON patch, merge patch, strategic merge patch
// (built-in kinds only) and server-side apply's.
const (
	JSONPatchType      = "application/json-patch+json"
	MergePatchType     = "application/merge-patch+json"
	StrategicPatchType = "application/strategic-merge-patch+json"
	ApplyPatchType     = "application/apply-patch+yaml"
)
