// The storage layer's one error type, its codes (not found, already exists,
// conflict, too large resourceVersion, expired...), constructors and tests.

package storage

import (
	"errors"
	"fmt"
)

// ErrorCode classifies a storage error. The server maps each code to one
// Kubernetes Status (docs/design.md, "Errors"); nothing else decides HTTP
// codes.
type ErrorCode int

const (
	// ErrNotFound: the object does not exist (404 NotFound).
	ErrNotFound ErrorCode = iota + 1
	// ErrAlreadyExists: Create found the key taken (409 AlreadyExists).
	ErrAlreadyExists
	// ErrConflict: a UID or resourceVersion precondition failed (409 Conflict).
	ErrConflict
	// ErrBadRequest: a bad option combination, resourceVersion, continue
	// token or selector (400 BadRequest).
	ErrBadRequest
	// ErrInvalid: the object itself is unacceptable (422 Invalid).
	ErrInvalid
	// ErrExpired: the requested revision was compacted (410 Expired). For a
	// list continuation, Continue may carry an "inconsistent continue" token.
	ErrExpired
	// ErrTooLargeResourceVersion: the storage has not reached the requested
	// revision in time (504 Timeout, Retry-After: 1).
	ErrTooLargeResourceVersion
	// ErrTooManyRequests: the storage cannot serve now (cache initializing,
	// or a consistent read could not be made fresh): 429 with Retry-After.
	ErrTooManyRequests
	// ErrUnavailable: etcd cannot be reached (503 ServiceUnavailable).
	ErrUnavailable
	// ErrInternal: anything else (500).
	ErrInternal
)

var codeNames = map[ErrorCode]string{
	ErrNotFound: "NotFound", ErrAlreadyExists: "AlreadyExists", ErrConflict: "Conflict",
	ErrBadRequest: "BadRequest", ErrInvalid: "Invalid", ErrExpired: "Expired",
	ErrTooLargeResourceVersion: "TooLargeResourceVersion", ErrTooManyRequests: "TooManyRequests",
	ErrUnavailable: "Unavailable", ErrInternal: "Internal",
}

func (c ErrorCode) String() string {
	if n, ok := codeNames[c]; ok {
		return n
	}
	return fmt.Sprintf("ErrorCode(%d)", int(c))
}

// Error is the one error type of the storage layer.
type Error struct {
	Code ErrorCode
	// Key is the object or collection the request was about, if any.
	Key string
	// Message says what went wrong, for the client.
	Message string
	// ResourceVersion is the revision involved (the too-large or expired one).
	ResourceVersion uint64
	// Continue, on ErrExpired from a list continuation, is a token that
	// continues the list at the newest revision from where it stopped.
	Continue string
	// RetryAfterSeconds is the Retry-After for ErrTooManyRequests and
	// ErrTooLargeResourceVersion.
	RetryAfterSeconds int
	// Err is the underlying cause, if any.
	Err error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Message, e.Err)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

func (e *Error) Unwrap() error { return e.Err }

// NewError returns an Error with a formatted message.
func NewError(code ErrorCode, key string, format string, args ...any) *Error {
	return &Error{Code: code, Key: key, Message: fmt.Sprintf(format, args...)}
}

// NewNotFound is the error for a missing object.
func NewNotFound(key string) *Error {
	return &Error{Code: ErrNotFound, Key: key, Message: fmt.Sprintf("%q not found", key)}
}

// NewAlreadyExists is the error for a Create on a taken key.
func NewAlreadyExists(key string) *Error {
	return &Error{Code: ErrAlreadyExists, Key: key, Message: fmt.Sprintf("%q already exists", key)}
}

// NewBadRequest is the error for invalid options.
func NewBadRequest(format string, args ...any) *Error {
	return &Error{Code: ErrBadRequest, Message: fmt.Sprintf(format, args...)}
}

// NewTooLargeResourceVersion says the storage is behind rv; clients retry
// after a second.
func NewTooLargeResourceVersion(requested, current uint64) *Error {
	return &Error{
		Code: ErrTooLargeResourceVersion, ResourceVersion: requested, RetryAfterSeconds: 1,
		Message: fmt.Sprintf("Too large resource version: %d, current: %d", requested, current),
	}
}

// NewExpired says rv was compacted away.
func NewExpired(rv uint64, what string) *Error {
	return &Error{Code: ErrExpired, ResourceVersion: rv,
		Message: fmt.Sprintf("too old resource version: %d (%s)", rv, what)}
}

// CodeOf returns the code of a storage error, ErrInternal for any other
// non-nil error, and 0 for nil.
func CodeOf(err error) ErrorCode {
	if err == nil {
		return 0
	}
	var se *Error
	if errors.As(err, &se) {
		return se.Code
	}
	return ErrInternal
}

// IsNotFound reports whether err is ErrNotFound.
func IsNotFound(err error) bool { return CodeOf(err) == ErrNotFound }

// IsConflict reports whether err is ErrConflict.
func IsConflict(err error) bool { return CodeOf(err) == ErrConflict }
