// Request: one write as the pipeline's stages see it, and the sink of the
// warnings the stages give (the response's Warning headers).

package pipeline

import (
	"context"

	"github.com/watchcache/watchcache/pkg/auth/user"
	"github.com/watchcache/watchcache/pkg/resource"
	admissionv1 "k8s.io/api/admission/v1"
)

// Request is one write as the stages see it: what kube-apiserver's
// admission.Attributes say of it.
type Request struct {
	Resource    *resource.Resource
	Subresource string
	Operation   admissionv1.Operation // CREATE, UPDATE or DELETE
	Namespace   string
	Name        string
	// Object is the object to be stored (none for a delete); OldObject,
	// for an update or a delete, the stored one.
	Object, OldObject map[string]any
	DryRun            bool
	User              *user.Info
	// GivenName is, for a create, the name as the request gave it: its
	// generateName when the name is generated. The mutating built-in
	// plugins name the object by it in their messages, as kube-apiserver's
	// do, which run before the name is generated.
	GivenName string
	// Stored is the object's encoding as it will be stored, for the
	// validating stages (set once it is validated; none for a delete).
	Stored []byte
}

// warningsKey is the context key of a request's warning sink.
type warningsKey struct{}

// WithWarnings is ctx with the sink of the warnings the stages give on a
// request (for its response's Warning headers).
func WithWarnings(ctx context.Context, warn func(string)) context.Context {
	return context.WithValue(ctx, warningsKey{}, warn)
}

// Warn gives a warning to ctx's sink, if it has one.
func Warn(ctx context.Context, msg string) {
	if f, ok := ctx.Value(warningsKey{}).(func(string)); ok {
		f(msg)
	}
}
