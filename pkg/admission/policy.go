// ValidatingAdmissionPolicy: the CEL environment, the compiled policies, the
// match of a policy and its bindings against a request, the evaluation of
// its validations, and the denials worded as kube-apiserver words them.

package admission

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/watchcache/watchcache/pkg/crd/crdschema"
	"github.com/watchcache/watchcache/pkg/pipeline"
	"github.com/watchcache/watchcache/pkg/storage"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	kjson "sigs.k8s.io/json"
)

// ValidatingAdmissionPolicies, through their bindings, as kube-apiserver
// evaluates them: a binding selects a policy and narrows what it matches;
// the policy's matchConditions (CEL, all true) narrow it further; its CEL
// validations see object, oldObject, request, namespaceObject and its
// variables; each false one (or one failing to evaluate, under
// failurePolicy Fail) is a failure that the binding's actions make a
// denial (Deny: the first one denies the write, with its message and
// reason) or a warning (Warn). Not here: params (paramKind), the Audit
// action and auditAnnotations (the audit log has no admission
// annotations), the type-checking of expressions against the kinds'
// schemas and the policy's status (an expression that does not compile
// fails as the policy's failurePolicy says, when evaluated).

// policyEnv is the environment of policy expressions.
var policyEnv = func() *cel.Env {
	env, err := cel.NewEnv(append(crdschema.CELLibraries(),
		cel.Variable("object", cel.DynType), cel.Variable("oldObject", cel.DynType),
		cel.Variable("request", cel.DynType), cel.Variable("namespaceObject", cel.DynType),
		cel.Variable("params", cel.DynType), cel.Variable("variables", cel.MapType(cel.StringType, cel.DynType)))...)
	if err != nil {
		panic(fmt.Sprintf("the admission policy CEL environment: %v", err)) // fixed options: a bug
	}
	return env
}()

// compiledPolicy is a policy's expressions, compiled once per generation.
type compiledPolicy struct {
	generation  int64
	conditions  []namedProgram // matchConditions
	variables   []namedProgram
	validations []compiledValidation
	err         error // a compilation error: the policy fails as its failurePolicy says
}

type compiledValidation struct {
	admissionregistrationv1.Validation
	program, message cel.Program
}

// policyCache holds the compiled policies by uid.
type policyCache struct {
	mu       sync.Mutex
	compiled map[types.UID]*compiledPolicy
}

func (c *policyCache) get(p *admissionregistrationv1.ValidatingAdmissionPolicy) *compiledPolicy {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cp := c.compiled[p.UID]; cp != nil && cp.generation == p.Generation {
		return cp
	}
	comp := compiler{env: policyEnv}
	cp := &compiledPolicy{generation: p.Generation, conditions: comp.conditions(p.Spec.MatchConditions)}
	for _, v := range p.Spec.Variables {
		cp.variables = append(cp.variables, namedProgram{v.Name, v.Expression, comp.program(v.Expression)})
	}
	for _, v := range p.Spec.Validations {
		cv := compiledValidation{Validation: v, program: comp.program(v.Expression)}
		if v.MessageExpression != "" {
			cv.message = comp.program(v.MessageExpression)
		}
		cp.validations = append(cp.validations, cv)
	}
	cp.err = comp.err
	if c.compiled == nil {
		c.compiled = map[types.UID]*compiledPolicy{}
	}
	c.compiled[p.UID] = cp
	return cp
}

// validatePolicies evaluates the bound policies that match req.
func (w *Webhooks) validatePolicies(ctx context.Context, req *pipeline.Request) error {
	var bindings []admissionregistrationv1.ValidatingAdmissionPolicyBinding
	if err := w.list(ctx, "validatingadmissionpolicybindings", &bindings, req); err != nil || len(bindings) == 0 {
		return err
	}
	var policies []admissionregistrationv1.ValidatingAdmissionPolicy
	if err := w.list(ctx, "validatingadmissionpolicies", &policies, req); err != nil {
		return err
	}
	var nsObject map[string]any
	var denied error
	for _, b := range bindings {
		i := slices.IndexFunc(policies, func(p admissionregistrationv1.ValidatingAdmissionPolicy) bool { return p.Name == b.Spec.PolicyName })
		if i < 0 {
			continue
		}
		p := &policies[i]
		if matched, err := w.policyMatches(ctx, p.Spec.MatchConstraints, req); err != nil || !matched {
			if err != nil {
				return err
			}
			continue
		}
		if b.Spec.MatchResources != nil {
			if matched, err := w.policyMatches(ctx, b.Spec.MatchResources, req); err != nil || !matched {
				if err != nil {
					return err
				}
				continue
			}
		}
		if nsObject == nil && req.Namespace != "" {
			nsObject = w.namespaceObject(ctx, req.Namespace)
		}
		for _, f := range w.evaluate(w.policies.get(p), p, req, nsObject) {
			for _, action := range b.Spec.ValidationActions {
				switch action {
				case admissionregistrationv1.Deny:
					if denied == nil {
						reason := f.reason
						if reason == nil {
							reason = ptr.To(metav1.StatusReasonInvalid)
						}
						denied = denial(req, "ValidatingAdmissionPolicy", p.Name, b.Name, f.message, reason)
					}
				case admissionregistrationv1.Warn:
					pipeline.Warn(ctx, fmt.Sprintf("Validation failed for ValidatingAdmissionPolicy '%s' with binding '%s': %s", p.Name, b.Name, f.message))
				}
			}
		}
	}
	return denied
}

// policyMatches says whether match constraints (nil: nothing) select req.
// A policy's constraints without resource rules are invalid in
// kube-apiserver (they are refused there at create, here they match by
// selectors alone).
func (w *Webhooks) policyMatches(ctx context.Context, m *admissionregistrationv1.MatchResources, req *pipeline.Request) (bool, error) {
	if m == nil {
		return false, nil
	}
	named := func(rules []admissionregistrationv1.NamedRuleWithOperations) bool {
		return slices.ContainsFunc(rules, func(r admissionregistrationv1.NamedRuleWithOperations) bool {
			return ruleMatches(r.RuleWithOperations, req) && (len(r.ResourceNames) == 0 || slices.Contains(r.ResourceNames, req.Name))
		})
	}
	// A binding's constraints without resource rules narrow nothing by
	// resource; a policy's match only what their rules name.
	if len(m.ResourceRules) > 0 && !named(m.ResourceRules) || named(m.ExcludeResourceRules) {
		return false, nil
	}
	h := &webhook{namespaceSelector: m.NamespaceSelector, objectSelector: m.ObjectSelector,
		rules: []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{"*"},
			Rule: admissionregistrationv1.Rule{APIGroups: []string{"*"}, APIVersions: []string{"*"}, Resources: []string{"*/*"}}}}}
	return w.matches(ctx, h, req)
}

// namespaceObject is a namespace as policies see it (nil if missing).
func (w *Webhooks) namespaceObject(ctx context.Context, name string) map[string]any {
	store := w.Registry.Store(w.Registry.Lookup("", "v1", "namespaces"))
	ns, err := store.Get(ctx, name, storage.GetOptions{ResourceVersion: "0"})
	if err != nil {
		return nil
	}
	var out map[string]any
	if decodeJSON(ns.JSON(), &out) != nil {
		return nil
	}
	return out
}

// failure is a validation that a request failed, or that failed to
// evaluate under failurePolicy Fail.
type failure struct {
	message string
	reason  *metav1.StatusReason
}

// evaluate runs a policy's match conditions and validations on req and
// returns its failures.
func (w *Webhooks) evaluate(cp *compiledPolicy, p *admissionregistrationv1.ValidatingAdmissionPolicy, req *pipeline.Request, nsObject map[string]any) []failure {
	fail := func(err error) []failure {
		if p.Spec.FailurePolicy != nil && *p.Spec.FailurePolicy == admissionregistrationv1.Ignore {
			return nil
		}
		return []failure{{message: err.Error()}}
	}
	if cp.err != nil {
		return fail(cp.err)
	}
	vars := map[string]any{"object": orNil(req.Object), "oldObject": orNil(req.OldObject), "request": celRequest(req),
		"namespaceObject": orNil(nsObject), "params": nil}
	variables := map[string]any{}
	vars["variables"] = variables
	if matched, err := conditionsMatch(cp.conditions, vars); err != nil || !matched {
		if err != nil {
			return fail(err)
		}
		return nil
	}
	for _, v := range cp.variables {
		out, _, err := v.program.Eval(vars)
		if err != nil {
			return fail(fmt.Errorf("variable %q: %w", v.name, err))
		}
		variables[v.name] = out.Value()
	}
	var failures []failure
	for _, v := range cp.validations {
		out, _, err := v.program.Eval(vars)
		if err != nil {
			failures = append(failures, fail(expressionError(v.Expression, err))...)
			continue
		}
		if ok, _ := out.Value().(bool); ok {
			continue
		}
		msg := v.Message
		if v.message != nil {
			if m, _, err := v.message.Eval(vars); err == nil {
				if s, ok := m.Value().(string); ok && strings.TrimSpace(s) != "" {
					msg = strings.TrimSpace(s)
				}
			}
		}
		if msg == "" {
			msg = fmt.Sprintf("failed expression: %s", v.Expression)
		}
		failures = append(failures, failure{msg, v.Reason})
	}
	return failures
}

// expressionError is an expression's evaluation error as kube-apiserver
// words it.
func expressionError(expr string, err error) error {
	return fmt.Errorf("expression '%s' resulted in error: %w", expr, err)
}

// denial is a policy's refusal as kube-apiserver words it: Forbidden's
// message, with the reason given (403 Forbidden if none) and its code.
func denial(req *pipeline.Request, kind, policy, binding, msg string, reason *metav1.StatusReason) error {
	err := fmt.Errorf("%s '%s' with binding '%s' denied request: %s", kind, policy, binding, msg)
	gr := schema.GroupResource{Group: req.Resource.Group, Resource: req.Resource.Plural}
	status := apierrors.NewForbidden(gr, req.Name, err)
	if reason == nil || *reason == metav1.StatusReasonForbidden {
		return status
	}
	code := map[metav1.StatusReason]int32{metav1.StatusReasonUnauthorized: http.StatusUnauthorized,
		metav1.StatusReasonRequestEntityTooLarge: http.StatusRequestEntityTooLarge}[*reason]
	if code == 0 {
		code = http.StatusUnprocessableEntity
	}
	status.ErrStatus.Reason, status.ErrStatus.Code = *reason, code
	status.ErrStatus.Details.Causes = append(status.ErrStatus.Details.Causes, metav1.StatusCause{Message: err.Error()})
	return status
}

// orNil is obj, or an untyped nil for CEL when there is none.
func orNil(obj map[string]any) any {
	if obj == nil {
		return nil
	}
	return obj
}

// celRequest is the request variable of policy expressions.
func celRequest(req *pipeline.Request) map[string]any {
	r := map[string]any{
		"operation": string(req.Operation), "name": req.Name, "namespace": req.Namespace, "subResource": req.Subresource,
		"kind":     map[string]any{"group": req.Resource.Group, "version": req.Resource.Version, "kind": req.Resource.Kind},
		"resource": map[string]any{"group": req.Resource.Group, "version": req.Resource.Version, "resource": req.Resource.Plural},
		"dryRun":   req.DryRun,
	}
	if req.User != nil {
		groups := make([]any, len(req.User.Groups))
		for i, g := range req.User.Groups {
			groups[i] = g
		}
		r["userInfo"] = map[string]any{"username": req.User.Name, "uid": req.User.UID, "groups": groups}
	}
	return r
}

func decodeJSON(data []byte, out *map[string]any) error {
	return kjson.UnmarshalCaseSensitivePreserveInts(data, out)
}
