package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/watchcache/watchcache/pkg/resource"
	"github.com/watchcache/watchcache/pkg/storage"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// apiError is an error with its Kubernetes Status, ready to write.
type apiError struct {
	status metav1.Status
}

func (e *apiError) Error() string { return e.status.Message }

// newAPIError builds a failure Status.
func newAPIError(code int32, reason metav1.StatusReason, format string, args ...any) *apiError {
	return &apiError{status: metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure,
		Code:     code,
		Reason:   reason,
		Message:  fmt.Sprintf(format, args...),
	}}
}

func badRequest(format string, args ...any) *apiError {
	return newAPIError(http.StatusBadRequest, metav1.StatusReasonBadRequest, format, args...)
}

// notFoundPath is kube-apiserver's answer for a path it does not serve.
func notFoundPath() *apiError {
	e := newAPIError(http.StatusNotFound, metav1.StatusReasonNotFound, "the server could not find the requested resource")
	e.status.Details = &metav1.StatusDetails{}
	return e
}

// methodNotAllowed is kube-apiserver's answer for a verb a path does not
// serve (a deletecollection of namespaces, a PUT of a collection, a GET
// of a review).
func methodNotAllowed() *apiError {
	e := newAPIError(http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed, "the server does not allow this method on the requested resource")
	e.status.Details = &metav1.StatusDetails{}
	return e
}

// invalid is a 422 about one field of an object, as kube-apiserver words it.
func invalid(res *resource.Resource, name, field, detail string) *apiError {
	e := newAPIError(http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, "%s %q is invalid: %s: %s", res.Kind, name, field, detail)
	e.status.Details = &metav1.StatusDetails{Name: name, Group: res.Group, Kind: res.Kind,
		Causes: []metav1.StatusCause{{Type: metav1.CauseTypeFieldValueInvalid, Message: detail, Field: field}}}
	return e
}

// invalidObject is the 422 Invalid of an object that failed validation,
// with one cause per error.
func invalidObject(res *resource.Resource, name string, errs field.ErrorList) *apiError {
	return toAPIError(apierrors.NewInvalid(schema.GroupKind{Group: res.Group, Kind: res.Kind}, name, errs), res, name)
}

// notStatus is err as kube-apiserver answers an error that is not a
// Status (an apply's typed patch that fails, for one): 500 with err's
// text and no reason.
func notStatus(err error) error {
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		return err
	}
	return newAPIError(http.StatusInternalServerError, metav1.StatusReasonUnknown, "%s", err)
}

// toAPIError maps any error to its Status: the one place where storage
// error codes become HTTP (DESIGN.md §4).
func toAPIError(err error, res *resource.Resource, name string) *apiError {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		status := st.Status()
		status.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
		return &apiError{status: status}
	}
	var se *storage.Error
	if !errors.As(err, &se) {
		return newAPIError(http.StatusInternalServerError, metav1.StatusReasonInternalError, "Internal error occurred: %v", err)
	}
	plural, group := "", ""
	if res != nil {
		plural, group = res.Plural, res.Group
	}
	details := &metav1.StatusDetails{Name: name, Group: group, Kind: plural}
	var e *apiError
	switch se.Code {
	case storage.ErrNotFound:
		e = newAPIError(http.StatusNotFound, metav1.StatusReasonNotFound, "%s %q not found", qualified(res), name)
	case storage.ErrAlreadyExists:
		e = newAPIError(http.StatusConflict, metav1.StatusReasonAlreadyExists, "%s %q already exists", qualified(res), name)
	case storage.ErrConflict:
		e = newAPIError(http.StatusConflict, metav1.StatusReasonConflict, "Operation cannot be fulfilled on %s %q: %s", qualified(res), name, se.Message)
	case storage.ErrBadRequest:
		e, details = badRequest("%s", se.Message), nil
	case storage.ErrInvalid:
		kind := "object"
		if res != nil {
			kind = res.Kind
		}
		e = newAPIError(http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, "%s %q is invalid: %s", kind, name, se.Message)
		details.Kind = kind
	case storage.ErrExpired:
		e, details = newAPIError(http.StatusGone, metav1.StatusReasonExpired, "%s", se.Message), nil
		e.status.ListMeta.Continue = se.Continue
	case storage.ErrTooLargeResourceVersion:
		e = newAPIError(http.StatusGatewayTimeout, metav1.StatusReasonTimeout, "Timeout: %s", se.Message)
		details = &metav1.StatusDetails{RetryAfterSeconds: int32(se.RetryAfterSeconds),
			Causes: []metav1.StatusCause{{Type: metav1.CauseTypeResourceVersionTooLarge, Message: "Too large resource version"}}}
	case storage.ErrTooManyRequests:
		e = newAPIError(http.StatusTooManyRequests, metav1.StatusReasonTooManyRequests, "%s", se.Message)
		details = &metav1.StatusDetails{RetryAfterSeconds: int32(se.RetryAfterSeconds)}
	case storage.ErrUnavailable:
		e, details = newAPIError(http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, "%s", se.Error()), nil
	default:
		e, details = newAPIError(http.StatusInternalServerError, metav1.StatusReasonInternalError, "Internal error occurred: %s", se.Error()), nil
	}
	e.status.Details = details
	return e
}

// qualified is how kube-apiserver names a resource in messages: "pods",
// "widgets.example.com".
func qualified(res *resource.Resource) string {
	if res == nil {
		return "object"
	}
	return res.String()
}

// writeError writes err as a Status, with Retry-After when it has one.
func writeError(w http.ResponseWriter, err error, res *resource.Resource, name string) {
	e := toAPIError(err, res, name)
	if d := e.status.Details; d != nil && d.RetryAfterSeconds > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(d.RetryAfterSeconds)))
	}
	writeJSON(w, int(e.status.Code), &e.status)
}

// writeJSON writes v as a JSON response.
func writeJSON(w http.ResponseWriter, code int, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	writeRaw(w, code, data)
}

// writeRaw writes ready JSON bytes.
func writeRaw(w http.ResponseWriter, code int, data []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	w.WriteHeader(code)
	w.Write(data)
}
