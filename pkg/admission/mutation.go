// MutatingAdmissionPolicy: the CEL environment and types of mutations
// (JSONPatch and ApplyConfiguration), their compilation, and the application
// of the bound policies that match a request to its object.

package admission

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"github.com/watchcache/watchcache/pkg/crd/crdschema"
	"github.com/watchcache/watchcache/pkg/pipeline"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
)

// MutatingAdmissionPolicies, through their bindings, as kube-apiserver
// applies them before the mutating webhooks: each mutation is a CEL
// expression over the same variables as a validating policy's, giving a
// list of JSONPatch{op, path, value} operations (patchType JSONPatch) or
// an Object{...} to merge into the object (patchType
// ApplyConfiguration). Deliberate difference: an apply configuration is
// merged as maps merged and lists replaced, without the schema's list-map
// keys that kube-apiserver's structured merge uses; no params or
// reinvocation. matchConditions (all true) narrow what a policy matches;
// one failing to evaluate fails the policy as its failurePolicy says.

// mutationTypes is the CEL type provider of mutation expressions: the
// JSONPatch type and the Object types of apply configurations
// (Object, Object.spec, Object.spec.template...), whose fields are
// anything. Other names are the standard registry's.
type mutationTypes struct{ *types.Registry }

func isApplyType(name string) bool { return name == "Object" || strings.HasPrefix(name, "Object.") }

func (p mutationTypes) FindStructType(name string) (*types.Type, bool) {
	if name == "JSONPatch" || isApplyType(name) {
		return types.NewTypeTypeWithParam(types.NewObjectType(name)), true
	}
	return p.Registry.FindStructType(name)
}

func (p mutationTypes) FindStructFieldNames(name string) ([]string, bool) {
	if name == "JSONPatch" {
		return []string{"op", "path", "from", "value"}, true
	}
	if isApplyType(name) {
		return nil, true
	}
	return p.Registry.FindStructFieldNames(name)
}

func (p mutationTypes) FindStructFieldType(name, field string) (*types.FieldType, bool) {
	switch {
	case name == "JSONPatch" && field != "value":
		return &types.FieldType{Type: types.StringType}, true
	case name == "JSONPatch" || isApplyType(name):
		return &types.FieldType{Type: types.DynType}, true
	}
	return p.Registry.FindStructFieldType(name, field)
}

// NewValue builds a JSONPatch or Object value as a map of its fields.
func (p mutationTypes) NewValue(name string, fields map[string]ref.Val) ref.Val {
	if name != "JSONPatch" && !isApplyType(name) {
		return p.Registry.NewValue(name, fields)
	}
	m := make(map[string]any, len(fields))
	for k, v := range fields {
		m[k] = toNative(v)
	}
	return types.DefaultTypeAdapter.NativeToValue(m)
}

// toNative converts a CEL value into plain JSON values.
func toNative(v ref.Val) any {
	switch x := v.(type) {
	case traits.Mapper:
		out := map[string]any{}
		it := x.Iterator()
		for it.HasNext() == types.True {
			k := it.Next()
			out[fmt.Sprint(k.Value())] = toNative(x.Get(k))
		}
		return out
	case traits.Lister:
		var out []any
		it := x.Iterator()
		for it.HasNext() == types.True {
			out = append(out, toNative(it.Next()))
		}
		return out
	}
	switch n := v.Value().(type) {
	case map[string]any, []any, string, bool, int64, float64, nil:
		return n
	case uint64:
		return int64(n)
	default:
		if native, err := v.ConvertToNative(reflect.TypeFor[any]()); err == nil {
			return native
		}
		return n
	}
}

// mutationEnv is the environment of mutation expressions.
var mutationEnv = func() *cel.Env {
	reg, err := types.NewRegistry()
	if err != nil {
		panic(err)
	}
	env, err := cel.NewEnv(append(crdschema.CELLibraries(), cel.CustomTypeProvider(mutationTypes{reg}),
		cel.Variable("object", cel.DynType), cel.Variable("oldObject", cel.DynType),
		cel.Variable("request", cel.DynType), cel.Variable("namespaceObject", cel.DynType),
		cel.Variable("params", cel.DynType), cel.Variable("variables", cel.MapType(cel.StringType, cel.DynType)))...)
	if err != nil {
		panic(fmt.Sprintf("the mutating admission policy CEL environment: %v", err)) // fixed options: a bug
	}
	return env
}()

// compiledMutations is a mutating policy's expressions, once per
// generation.
type compiledMutations struct {
	generation int64
	conditions []namedProgram // matchConditions
	variables  []namedProgram
	mutations  []compiledMutation
	err        error
}

type compiledMutation struct {
	patchType admissionregistrationv1.PatchType
	program   cel.Program
}

// mutationCache holds the compiled mutating policies by uid.
type mutationCache struct {
	mu       sync.Mutex
	compiled map[k8stypes.UID]*compiledMutations
}

func (c *mutationCache) get(p *admissionregistrationv1.MutatingAdmissionPolicy) *compiledMutations {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cm := c.compiled[p.UID]; cm != nil && cm.generation == p.Generation {
		return cm
	}
	comp := compiler{env: mutationEnv}
	cm := &compiledMutations{generation: p.Generation, conditions: comp.conditions(p.Spec.MatchConditions)}
	for _, v := range p.Spec.Variables {
		cm.variables = append(cm.variables, namedProgram{v.Name, v.Expression, comp.program(v.Expression)})
	}
	for _, m := range p.Spec.Mutations {
		var expr string
		switch {
		case m.JSONPatch != nil:
			expr = m.JSONPatch.Expression
		case m.ApplyConfiguration != nil:
			expr = m.ApplyConfiguration.Expression
		}
		cm.mutations = append(cm.mutations, compiledMutation{patchType: m.PatchType, program: comp.program(expr)})
	}
	cm.err = comp.err
	if c.compiled == nil {
		c.compiled = map[k8stypes.UID]*compiledMutations{}
	}
	c.compiled[p.UID] = cm
	return cm
}

// mutateByPolicies applies the bound mutating policies that match req to
// its object, in the order of their bindings' names.
func (w *Webhooks) mutateByPolicies(ctx context.Context, req *pipeline.Request) (map[string]any, error) {
	var bindings []admissionregistrationv1.MutatingAdmissionPolicyBinding
	if err := w.list(ctx, "mutatingadmissionpolicybindings", &bindings, req); err != nil || len(bindings) == 0 {
		return req.Object, err
	}
	var policies []admissionregistrationv1.MutatingAdmissionPolicy
	if err := w.list(ctx, "mutatingadmissionpolicies", &policies, req); err != nil {
		return nil, err
	}
	obj := req.Object
	for _, b := range bindings {
		i := slices.IndexFunc(policies, func(p admissionregistrationv1.MutatingAdmissionPolicy) bool { return p.Name == b.Spec.PolicyName })
		if i < 0 {
			continue
		}
		p := &policies[i]
		if matched, err := w.policyMatches(ctx, p.Spec.MatchConstraints, req); err != nil || !matched {
			if err != nil {
				return nil, err
			}
			continue
		}
		if b.Spec.MatchResources != nil {
			if matched, err := w.policyMatches(ctx, b.Spec.MatchResources, req); err != nil || !matched {
				if err != nil {
					return nil, err
				}
				continue
			}
		}
		r := *req
		r.Object = obj
		mutated, err := w.applyMutations(ctx, w.mutations.get(p), &r)
		if err != nil {
			if p.Spec.FailurePolicy != nil && *p.Spec.FailurePolicy == admissionregistrationv1.Ignore {
				continue
			}
			return nil, denial(req, "MutatingAdmissionPolicy", p.Name, b.Name, err.Error(), nil)
		}
		obj = mutated
	}
	return obj, nil
}

// applyMutations evaluates a policy's mutations in order on req's object.
func (w *Webhooks) applyMutations(ctx context.Context, cm *compiledMutations, req *pipeline.Request) (map[string]any, error) {
	if cm.err != nil {
		return nil, cm.err
	}
	obj := req.Object
	var nsObject map[string]any
	if req.Namespace != "" {
		nsObject = w.namespaceObject(ctx, req.Namespace)
	}
	conditionVars := map[string]any{"object": orNil(obj), "oldObject": orNil(req.OldObject), "request": celRequest(req),
		"namespaceObject": orNil(nsObject), "params": nil, "variables": map[string]any{}}
	if matched, err := conditionsMatch(cm.conditions, conditionVars); err != nil || !matched {
		return obj, err
	}
	for _, m := range cm.mutations {
		variables := map[string]any{}
		vars := map[string]any{"object": orNil(obj), "oldObject": orNil(req.OldObject), "request": celRequest(req),
			"namespaceObject": orNil(nsObject), "params": nil, "variables": variables}
		for _, v := range cm.variables {
			out, _, err := v.program.Eval(vars)
			if err != nil {
				return nil, fmt.Errorf("variable %q: %w", v.name, err)
			}
			variables[v.name] = out.Value()
		}
		out, _, err := m.program.Eval(vars)
		if err != nil {
			return nil, fmt.Errorf("mutation resulted in error: %w", err)
		}
		switch m.patchType {
		case admissionregistrationv1.PatchTypeJSONPatch:
			ops, _ := toNative(out).([]any)
			patch, _ := json.Marshal(ops)
			if obj, err = applyJSONPatch(obj, patch); err != nil {
				return nil, err
			}
		case admissionregistrationv1.PatchTypeApplyConfiguration:
			config, ok := toNative(out).(map[string]any)
			if !ok {
				return nil, fmt.Errorf("the apply configuration is not an Object")
			}
			obj = mergeObjects(obj, config)
		default:
			return nil, fmt.Errorf("unsupported patch type %q", m.patchType)
		}
	}
	return obj, nil
}

// mergeObjects merges an apply configuration into obj: objects merged
// field by field, anything else (lists included) replaced.
func mergeObjects(obj, config map[string]any) map[string]any {
	for k, v := range config {
		sub, isMap := v.(map[string]any)
		cur, curIsMap := obj[k].(map[string]any)
		if isMap && curIsMap {
			obj[k] = mergeObjects(cur, sub)
		} else {
			obj[k] = v
		}
	}
	return obj
}
