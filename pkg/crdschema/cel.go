package crdschema

import (
	"fmt"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/ext"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// CEL validation rules (x-kubernetes-validations), as kube-apiserver
// evaluates them: each rule of a schema node is a CEL expression over self
// (the node's value) and, for a transition rule, oldSelf (its value before
// an update; the rule is skipped when there was none); a rule that is not
// true fails with its message (or messageExpression's), reason and field
// path. The environment is cel-go's standard library with its strings,
// lists, sets, math, regex and optional-types extensions; kube-apiserver's own Kubernetes
// libraries (quantity, URL, IP, CIDR, semver, authorizer) are not here,
// and neither are its cost limits.

// CELLibraries are the CEL libraries of every expression the server
// evaluates (CRD validation rules, admission policies): cel-go's standard
// library and its strings, lists, sets, math, regex and optional-types
// extensions.
func CELLibraries() []cel.EnvOption {
	return []cel.EnvOption{cel.OptionalTypes(), ext.Strings(), ext.Lists(), ext.Sets(), ext.Math(), ext.Regex()}
}

// celEnv is the environment every rule is compiled in.
var celEnv = func() *cel.Env {
	env, err := cel.NewEnv(append(CELLibraries(),
		cel.Variable("self", cel.DynType),
		cel.Variable("oldSelf", cel.DynType))...,
	)
	if err != nil {
		panic(fmt.Sprintf("the CEL environment: %v", err)) // fixed options: a bug
	}
	return env
}()

// rule is one compiled validation rule.
type rule struct {
	apiextensionsv1.ValidationRule
	program    cel.Program
	message    cel.Program // messageExpression's, or nil
	transition bool        // uses oldSelf
}

// celNode is a schema node's rules and its children's, mirroring the
// structural schema.
type celNode struct {
	rules      []rule
	properties map[string]*celNode
	items      *celNode // of a list's items, or of a map's values
	isMap      bool     // items are additionalProperties
}

// compileRules compiles the rules of s and its children; nil if none has
// rules. Errors name the rule's path in the schema, as kube-apiserver
// reports them at CRD validation.
func compileRules(s *structuralschema.Structural, path *field.Path) (*celNode, field.ErrorList) {
	if s == nil {
		return nil, nil
	}
	var errs field.ErrorList
	n := &celNode{}
	for i, r := range s.XValidations {
		rp := path.Child("x-kubernetes-validations").Index(i)
		compiled, err := compileRule(r)
		if err != nil {
			errs = append(errs, field.Invalid(rp.Child("rule"), r.Rule, "compilation failed: "+err.Error()))
			continue
		}
		n.rules = append(n.rules, compiled)
	}
	for name, prop := range s.Properties {
		child, childErrs := compileRules(&prop, path.Child("properties").Key(name))
		errs = append(errs, childErrs...)
		if child != nil {
			if n.properties == nil {
				n.properties = map[string]*celNode{}
			}
			n.properties[name] = child
		}
	}
	if s.Items != nil {
		child, childErrs := compileRules(s.Items, path.Child("items"))
		errs = append(errs, childErrs...)
		n.items = child
	} else if s.AdditionalProperties != nil && s.AdditionalProperties.Structural != nil {
		child, childErrs := compileRules(s.AdditionalProperties.Structural, path.Child("additionalProperties"))
		errs = append(errs, childErrs...)
		n.items, n.isMap = child, true
	}
	if len(n.rules) == 0 && n.properties == nil && n.items == nil {
		return nil, errs
	}
	return n, errs
}

func compileRule(r apiextensionsv1.ValidationRule) (rule, error) {
	ast, iss := celEnv.Compile(r.Rule)
	if iss.Err() != nil {
		return rule{}, iss.Err()
	}
	prg, err := celEnv.Program(ast)
	if err != nil {
		return rule{}, err
	}
	out := rule{ValidationRule: r, program: prg, transition: strings.Contains(r.Rule, "oldSelf")}
	if r.MessageExpression != "" {
		mast, iss := celEnv.Compile(r.MessageExpression)
		if iss.Err() != nil {
			return rule{}, fmt.Errorf("messageExpression: %w", iss.Err())
		}
		if out.message, err = celEnv.Program(mast); err != nil {
			return rule{}, err
		}
	}
	return out, nil
}

// validate evaluates the rules of n on value (and old, the value at the
// same place before an update, if hasOld).
func (n *celNode) validate(path *field.Path, value, old any, hasOld bool) field.ErrorList {
	if n == nil || value == nil {
		return nil
	}
	var errs field.ErrorList
	for _, r := range n.rules {
		if r.transition && !hasOld {
			continue
		}
		errs = append(errs, r.evaluate(path, value, old)...)
	}
	switch v := value.(type) {
	case map[string]any:
		oldMap, _ := old.(map[string]any)
		for name, child := range n.properties {
			if x, ok := v[name]; ok {
				o, had := oldMap[name]
				errs = append(errs, child.validate(path.Child(name), x, o, hasOld && had)...)
			}
		}
		if n.isMap {
			for key, x := range v {
				o, had := oldMap[key]
				errs = append(errs, n.items.validate(path.Key(key), x, o, hasOld && had)...)
			}
		}
	case []any:
		// Items correlate with their old values only in maps and by
		// key; list items are checked without oldSelf.
		for i, x := range v {
			errs = append(errs, n.items.validate(path.Index(i), x, nil, false)...)
		}
	}
	return errs
}

// evaluate runs one rule on value.
func (r rule) evaluate(path *field.Path, value, old any) field.ErrorList {
	vars := map[string]any{"self": value, "oldSelf": old}
	out, _, err := r.program.Eval(vars)
	if err != nil {
		return field.ErrorList{field.Invalid(path, shown(value), "rule evaluation error: "+err.Error())}
	}
	if ok, isBool := out.Value().(bool); isBool && ok {
		return nil
	}
	msg := r.Message
	if r.message != nil {
		if m, _, err := r.message.Eval(vars); err == nil {
			if s, ok := m.Value().(string); ok && s != "" {
				msg = s
			}
		}
	}
	if msg == "" {
		msg = "failed rule: " + strings.TrimSpace(r.Rule)
	}
	if r.FieldPath != "" {
		for _, part := range strings.Split(strings.TrimPrefix(r.FieldPath, "."), ".") {
			path = path.Child(part)
		}
	}
	if r.Reason != nil {
		switch *r.Reason {
		case apiextensionsv1.FieldValueRequired:
			return field.ErrorList{field.Required(path, msg)}
		case apiextensionsv1.FieldValueForbidden:
			return field.ErrorList{field.Forbidden(path, msg)}
		case apiextensionsv1.FieldValueDuplicate:
			return field.ErrorList{field.Duplicate(path, msg)}
		}
	}
	return field.ErrorList{field.Invalid(path, shown(value), msg)}
}

// shown is how kube-apiserver shows the value a rule failed on: "object"
// or "array" for those, the value itself otherwise.
func shown(v any) any {
	switch v.(type) {
	case map[string]any:
		return "object"
	case []any:
		return "array"
	}
	return v
}
