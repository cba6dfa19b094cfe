// The admission stages as the write pipeline (package pipeline) calls them:
// built-in plugins, create defaults, policies and webhooks, each a Mutate or a
// Validate in kube-apiserver's order.

package admission

import (
	"context"

	"github.com/watchcache/watchcache/pkg/defaults"
	"github.com/watchcache/watchcache/pkg/pipeline"
	admissionv1 "k8s.io/api/admission/v1"
)

// The stages of admission, by phase, as the write pipeline (package
// pipeline) runs them in kube-apiserver's order: each is a Mutating or a
// Validating stage there.
type (
	// MutatingPlugins is the mutating phase of the built-in plugins
	// (LimitRanger, Priority, DefaultStorageClass, DefaultIngressClass).
	MutatingPlugins struct{ Builtin *Builtin }
	// CreateDefaults applies what a kind's strategy sets on a new object
	// after its status was reset (defaults.ApplyOnCreate: a pod's phase
	// and QoS class, a claim's phase; defaults.SetRequester: a
	// CertificateSigningRequest's requester). It comes after the mutating
	// plugins, so that a pod's QoS class reflects the LimitRanger's
	// defaults.
	CreateDefaults struct{}
	// MutatingPolicies applies the MutatingAdmissionPolicies bound to a
	// write.
	MutatingPolicies struct{ Webhooks *Webhooks }
	// MutatingWebhooks calls the mutating webhooks that match a write.
	MutatingWebhooks struct{ Webhooks *Webhooks }
	// ValidatingPlugins is the validating phase of the built-in plugins.
	ValidatingPlugins struct{ Builtin *Builtin }
	// ValidatingPolicies evaluates the ValidatingAdmissionPolicies bound
	// to a write.
	ValidatingPolicies struct{ Webhooks *Webhooks }
	// ValidatingWebhooks calls the validating webhooks that match a write.
	ValidatingWebhooks struct{ Webhooks *Webhooks }
)

// Mutate runs the plugins' mutating phase on a create.
func (s MutatingPlugins) Mutate(ctx context.Context, req *pipeline.Request) (map[string]any, error) {
	return req.Object, s.Builtin.admit(ctx, req)
}

// Mutate applies the create defaults to req's object if req is a create.
func (CreateDefaults) Mutate(_ context.Context, req *pipeline.Request) (map[string]any, error) {
	if req.Operation == admissionv1.Create {
		defaults.ApplyOnCreate(req.Resource.Group, req.Resource.Kind, req.Object)
		if u := req.User; u != nil {
			defaults.SetRequester(req.Resource.Group, req.Resource.Kind, req.Object, u.Name, u.UID, u.Groups, u.Extra)
		}
	}
	return req.Object, nil
}

// Mutate applies the policies bound to req.
func (s MutatingPolicies) Mutate(ctx context.Context, req *pipeline.Request) (map[string]any, error) {
	return s.Webhooks.mutateByPolicies(ctx, req)
}

// Mutate calls the webhooks that match req.
func (s MutatingWebhooks) Mutate(ctx context.Context, req *pipeline.Request) (map[string]any, error) {
	return s.Webhooks.mutate(ctx, req)
}

// Validate runs the plugins' validating phase on a create or an update.
func (s ValidatingPlugins) Validate(ctx context.Context, req *pipeline.Request) error {
	return s.Builtin.validate(ctx, req)
}

// Validate evaluates the policies bound to req.
func (s ValidatingPolicies) Validate(ctx context.Context, req *pipeline.Request) error {
	return s.Webhooks.validatePolicies(ctx, req)
}

// Validate calls the webhooks that match req.
func (s ValidatingWebhooks) Validate(ctx context.Context, req *pipeline.Request) error {
	return s.Webhooks.validate(ctx, req)
}
