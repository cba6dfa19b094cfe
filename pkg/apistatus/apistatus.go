// Package apistatus turns errors into the Kubernetes Status objects that
// kube-apiserver answers failures with, and writes them: the one Status
// writer, used by every filter and handler. It corresponds to
// kube-apiserver's endpoints/handlers/responsewriters (ErrorNegotiated)
// together with the storage-to-API error mapping of its generic registry.
//
// Errors are apimachinery's *apierrors.StatusError throughout, so that an
// error from a library (a validation, a webhook's refusal) and one built
// here are written the same way; a storage.Error becomes its Status here
// and nowhere else.
package apistatus

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/watchcache/watchcache/pkg/storage"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Subject is what a failed request was about, for the messages and
// details of the Status its error becomes: the resource (plural and
// group), its kind and the object's name. The zero Subject is "object".
type Subject struct {
	Group, Resource, Kind, Name string
}

// qualified is how kube-apiserver names a resource in messages: "pods",
// "widgets.example.com"; "object" when there is none.
func (s Subject) qualified() string {
	switch {
	case s.Resource == "":
		return "object"
	case s.Group == "":
		return s.Resource
	}
	return s.Resource + "." + s.Group
}

// New builds a failure Status error.
func New(code int32, reason metav1.StatusReason, format string, args ...any) *apierrors.StatusError {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure,
		Code:     code,
		Reason:   reason,
		Message:  fmt.Sprintf(format, args...),
	}}
}

// BadRequest is a 400 BadRequest.
func BadRequest(format string, args ...any) *apierrors.StatusError {
	return New(http.StatusBadRequest, metav1.StatusReasonBadRequest, format, args...)
}

// NotFoundPath is kube-apiserver's answer for a path it does not serve.
func NotFoundPath() *apierrors.StatusError {
	e := New(http.StatusNotFound, metav1.StatusReasonNotFound, "the server could not find the requested resource")
	e.ErrStatus.Details = &metav1.StatusDetails{}
	return e
}

// MethodNotAllowed is kube-apiserver's answer for a verb a path does not
// serve (a deletecollection of namespaces, a PUT of a collection, a GET
// of a review).
func MethodNotAllowed() *apierrors.StatusError {
	e := New(http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed, "the server does not allow this method on the requested resource")
	e.ErrStatus.Details = &metav1.StatusDetails{}
	return e
}

// Unknown is err as kube-apiserver answers an error that is not a Status
// (an apply's typed patch that fails, for one): 500 with err's text and
// no reason. A Status error is returned as it is.
func Unknown(err error) error {
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		return err
	}
	return New(http.StatusInternalServerError, metav1.StatusReasonUnknown, "%s", err)
}

// From maps any error to its Status: a Status error as it is (its
// TypeMeta set), a storage.Error by its code, anything else 500
// InternalError. This is the one place where storage error codes become
// HTTP (docs/design.md, "Errors").
func From(err error, about Subject) *apierrors.StatusError {
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		status := st.Status()
		status.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
		return &apierrors.StatusError{ErrStatus: status}
	}
	var se *storage.Error
	if !errors.As(err, &se) {
		return New(http.StatusInternalServerError, metav1.StatusReasonInternalError, "Internal error occurred: %v", err)
	}
	details := &metav1.StatusDetails{Name: about.Name, Group: about.Group, Kind: about.Resource}
	name := about.Name
	var e *apierrors.StatusError
	switch se.Code {
	case storage.ErrNotFound:
		e = New(http.StatusNotFound, metav1.StatusReasonNotFound, "%s %q not found", about.qualified(), name)
	case storage.ErrAlreadyExists:
		e = New(http.StatusConflict, metav1.StatusReasonAlreadyExists, "%s %q already exists", about.qualified(), name)
	case storage.ErrConflict:
		e = New(http.StatusConflict, metav1.StatusReasonConflict, "Operation cannot be fulfilled on %s %q: %s", about.qualified(), name, se.Message)
	case storage.ErrBadRequest:
		e, details = BadRequest("%s", se.Message), nil
	case storage.ErrInvalid:
		kind := "object"
		if about.Kind != "" {
			kind = about.Kind
		}
		e = New(http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, "%s %q is invalid: %s", kind, name, se.Message)
		details.Kind = kind
	case storage.ErrExpired:
		e, details = New(http.StatusGone, metav1.StatusReasonExpired, "%s", se.Message), nil
		e.ErrStatus.ListMeta.Continue = se.Continue
	case storage.ErrTooLargeResourceVersion:
		e = New(http.StatusGatewayTimeout, metav1.StatusReasonTimeout, "Timeout: %s", se.Message)
		details = &metav1.StatusDetails{RetryAfterSeconds: int32(se.RetryAfterSeconds),
			Causes: []metav1.StatusCause{{Type: metav1.CauseTypeResourceVersionTooLarge, Message: "Too large resource version"}}}
	case storage.ErrTooManyRequests:
		e = New(http.StatusTooManyRequests, metav1.StatusReasonTooManyRequests, "%s", se.Message)
		details = &metav1.StatusDetails{RetryAfterSeconds: int32(se.RetryAfterSeconds)}
	case storage.ErrUnavailable:
		e, details = New(http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, "%s", se.Error()), nil
	default:
		e, details = New(http.StatusInternalServerError, metav1.StatusReasonInternalError, "Internal error occurred: %s", se.Error()), nil
	}
	e.ErrStatus.Details = details
	return e
}

// StatusEncoder is a ResponseWriter that knows how its client wants a
// Status encoded: the API's, once it has negotiated the request's Accept
// header (protobuf, YAML). Other writers' Statuses are JSON.
type StatusEncoder interface {
	EncodeStatus(status *metav1.Status) (mediaType string, body []byte)
}

// Write writes err's Status (From) as the response with its code, and a
// Retry-After header when the Status has one: as w encodes it if w is a
// StatusEncoder, JSON otherwise.
func Write(w http.ResponseWriter, err error, about Subject) {
	status := &From(err, about).ErrStatus
	if d := status.Details; d != nil && d.RetryAfterSeconds > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(d.RetryAfterSeconds)))
	}
	mediaType := "application/json"
	var data []byte
	if enc, ok := w.(StatusEncoder); ok {
		mediaType, data = enc.EncodeStatus(status)
	} else {
		data, _ = json.Marshal(status) // a Status always encodes
	}
	w.Header().Set("Content-Type", mediaType)
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	w.WriteHeader(int(status.Code))
	w.Write(data)
}
