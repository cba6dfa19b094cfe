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

	// aborts undo what stages took for this write (OnAbort).
	aborts []func(context.Context)
}

// OnAbort registers undo, which gives back what a stage took for the write
// (an IP, a node port), to run if the write is then not stored: a later
// stage refuses it, storage fails, or an update's attempt is retried on a
// newer object. It runs once, with a context that outlives the request.
// Like kube-apiserver's transaction rollback, it also runs when storage's
// outcome is unknown (a timeout); the repair passes mend that case.
func (r *Request) OnAbort(undo func(context.Context)) {
	r.aborts = append(r.aborts, undo)
}

// abort runs the undos of r, the last registered first.
func (r *Request) abort(ctx context.Context) {
	ctx = context.WithoutCancel(ctx)
	for i := len(r.aborts) - 1; i >= 0; i-- {
		r.aborts[i](ctx)
	}
	r.aborts = nil
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
