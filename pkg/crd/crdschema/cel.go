// x-kubernetes-validations: the CEL environment, cost limits and program
// options, the compilation of a schema's rules and their evaluation on an
// object (with oldSelf for transition rules), as apiextensions-apiserver.

package crdschema

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/ext"
	"github.com/google/cel-go/interpreter"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// CEL validation rules (x-kubernetes-validations), as kube-apiserver
// evaluates them: each rule of a schema node is a CEL expression over self
// (the node's value) and, for a transition rule, oldSelf (its value before
// an update; the rule is skipped when there was none); a rule that is not
// true fails with its message (or messageExpression's), reason and field
// path. The environment is kube-apiserver 1.37's (CELLibraries), each
// evaluation bounded by its per-call cost limit. When the CRD is written,
// rules are type-checked against the schema and their costs estimated
// (cel_types.go); they are evaluated with a dynamic self. Not here: the
// runtime budget of a whole object.

// CELLibraries are the CEL libraries and settings of every expression the
// server evaluates (CRD validation rules, admission policies), those of
// kube-apiserver 1.37's base environment: cel-go's standard library with
// optional types, its strings (version 2), sets, lists (version 3) and
// two-variable comprehension extensions, and the Kubernetes libraries of
// cel_library.go.
func CELLibraries() []cel.EnvOption {
	return []cel.EnvOption{
		cel.HomogeneousAggregateLiterals(), cel.EagerlyValidateDeclarations(true), cel.DefaultUTCTimeZone(true),
		cel.CrossTypeNumericComparisons(true), cel.OptionalTypes(),
		cel.ASTValidators(cel.ValidateDurationLiterals(), cel.ValidateTimestampLiterals(), cel.ValidateRegexLiterals(),
			cel.ValidateHomogeneousAggregateLiterals()),
		ext.Strings(ext.StringsVersion(2)), ext.Sets(), ext.TwoVarComprehensions(), ext.Lists(ext.ListsVersion(3)),
		kubeLibraries(),
		cel.CostEstimatorOptions(checker.PresenceTestHasCost(false)),
	}
}

// PerCallCostLimit is the most an evaluation of one expression may cost,
// kube-apiserver's limit; past it, the evaluation fails with
// CostLimitExceeded.
const PerCallCostLimit = 1000000

// CostLimitExceeded begins the error of an evaluation stopped at
// PerCallCostLimit.
const CostLimitExceeded = "operation cancelled: actual cost limit exceeded"

// CELProgramOptions are the options of every program built in an
// environment of CELLibraries: its cost tracked and limited.
func CELProgramOptions() []cel.ProgramOption {
	return []cel.ProgramOption{cel.EvalOptions(cel.OptOptimize, cel.OptTrackCost), cel.CostLimit(PerCallCostLimit),
		cel.CostTrackerOptions(interpreter.PresenceTestHasCost(false))}
}

// celBaseEnv is the environment of CELLibraries, without variables.
var celBaseEnv = func() *cel.Env {
	env, err := cel.NewEnv(CELLibraries()...)
	if err != nil {
		panic(fmt.Sprintf("the CEL environment: %v", err)) // fixed options: a bug
	}
	return env
}()

// celEnv is the environment every rule is compiled in for evaluation.
var celEnv = func() *cel.Env {
	env, err := celBaseEnv.Extend(cel.Variable("self", cel.DynType), cel.Variable("oldSelf", cel.DynType))
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
	typ        string // the schema's type, shown for a rule's evaluation errors
	rules      []rule
	properties map[string]*celNode
	items      *celNode // of a list's items, or of a map's values
	isMap      bool     // items are additionalProperties
}

// compileRules compiles the rules of s and its children; nil if none has
// rules. As kube-apiserver at CRD validation, each rule is first
// type-checked against its node's type and its cost estimated
// (cel_types.go); errors name the rule's path in the schema, the
// estimated total at the root ("" here).
func compileRules(s *structuralschema.Structural, path *field.Path) (*celNode, field.ErrorList) {
	total := &totalCost{}
	one := uint64(1)
	n, errs := compileNode(s, path, schemaDeclType(s, true, "selfType"), &one, total)
	return n, append(errs, total.errors(path)...)
}

// compileNode compiles s's rules (decl its type, if CEL can see it;
// cardinality the most times it occurs in an object, nil if unbounded)
// and its children's.
func compileNode(s *structuralschema.Structural, path *field.Path, decl *declType, cardinality *uint64, total *totalCost) (*celNode, field.ErrorList) {
	if s == nil {
		return nil, nil
	}
	if decl == nil && len(s.XValidations) > 0 {
		decl = schemaDeclType(s, s.XEmbeddedResource, "selfType")
	}
	var errs field.ErrorList
	n := &celNode{typ: s.Type}
	// The cardinality of s's children: s's own times how many of them
	// each occurrence holds.
	var childCardinality *uint64
	if cardinality != nil {
		var each *uint64
		switch {
		case s.Type == "array" && s.ValueValidation != nil && s.ValueValidation.MaxItems != nil:
			each = ptr.To(uint64(zeroIfNegative(*s.ValueValidation.MaxItems)))
		case s.Type == "array":
		case s.Type == "object" && s.AdditionalProperties != nil && s.ValueValidation != nil && s.ValueValidation.MaxProperties != nil:
			each = ptr.To(uint64(zeroIfNegative(*s.ValueValidation.MaxProperties)))
		case s.Type == "object" && s.AdditionalProperties != nil:
		default:
			each = ptr.To(uint64(1))
		}
		if each != nil {
			childCardinality = ptr.To(multiplyCapped(*cardinality, *each))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(s.Properties)) {
		prop := s.Properties[name]
		var childDecl *declType
		if escaped, ok := escapeIdent(name); ok && decl != nil && decl.fields != nil {
			childDecl = decl.fields[escaped]
		}
		child, childErrs := compileNode(&prop, path.Child("properties").Key(name), childDecl, childCardinality, total)
		errs = append(errs, childErrs...)
		if child != nil {
			if n.properties == nil {
				n.properties = map[string]*celNode{}
			}
			n.properties[name] = child
		}
	}
	var elemDecl *declType
	if decl != nil {
		elemDecl = decl.elem
	}
	if s.Items != nil {
		child, childErrs := compileNode(s.Items, path.Child("items"), elemDecl, childCardinality, total)
		errs = append(errs, childErrs...)
		n.items = child
	} else if s.AdditionalProperties != nil && s.AdditionalProperties.Structural != nil {
		child, childErrs := compileNode(s.AdditionalProperties.Structural, path.Child("additionalProperties"), elemDecl, childCardinality, total)
		errs = append(errs, childErrs...)
		n.items, n.isMap = child, true
	}
	// As kube-apiserver reports them: the children's errors first.
	for i, r := range s.XValidations {
		rp := path.Child("x-kubernetes-validations").Index(i)
		compiled, ruleErrs := compileRule(r, rp, decl, cardinality, total)
		errs = append(errs, ruleErrs...)
		if len(ruleErrs) == 0 {
			n.rules = append(n.rules, compiled)
		}
	}
	if len(n.rules) == 0 && n.properties == nil && n.items == nil {
		return nil, errs
	}
	return n, errs
}

// compileRule checks r as kube-apiserver does (its type against decl, its
// estimated cost, added to total) and compiles it for evaluation.
func compileRule(r apiextensionsv1.ValidationRule, rp *field.Path, decl *declType, cardinality *uint64, total *totalCost) (rule, field.ErrorList) {
	// The rule is shown as kube-apiserver shows its internal type.
	shownRule := apiextensions.ValidationRule{Rule: r.Rule, Message: r.Message, MessageExpression: r.MessageExpression,
		Reason: (*apiextensions.FieldValueErrorReason)(r.Reason), FieldPath: r.FieldPath, OptionalOldSelf: r.OptionalOldSelf}
	var errs field.ErrorList
	if decl != nil && strings.TrimSpace(r.Rule) != "" {
		env, err := typedEnv(decl, ptr.Deref(r.OptionalOldSelf, false))
		if err != nil {
			return rule{}, field.ErrorList{field.InternalError(rp, err)}
		}
		estimator := &costEstimator{root: decl}
		scale := func(c uint64) uint64 {
			if cardinality != nil {
				return multiplyCapped(c, *cardinality)
			}
			return multiplyCapped(c, uint64(maxRequestSizeBytes/(decl.minSize+1)))
		}
		ast, iss := env.Compile(r.Rule)
		var ruleErr *field.Error
		switch {
		case iss.Err() != nil:
			ruleErr = field.Invalid(rp.Child("rule"), shownRule, "compilation failed: "+iss.Err().Error())
		case ast.OutputType() != cel.BoolType:
			ruleErr = field.Invalid(rp.Child("rule"), shownRule, "cel expression must evaluate to a bool")
		}
		var cost uint64
		if ruleErr == nil {
			if est, err := env.EstimateCost(ast, estimator); err == nil {
				cost = est.Max
			}
		}
		cost = scale(cost)
		if cost > StaticEstimatedCostLimit {
			errs = append(errs, field.Forbidden(rp.Child("rule"), costError("estimated rule cost", cost, StaticEstimatedCostLimit)))
		}
		total.observe(rp.Child("rule"), cost)
		if ruleErr != nil {
			return rule{}, append(errs, ruleErr)
		}
		if r.MessageExpression != "" {
			mast, iss := env.Compile(r.MessageExpression)
			switch {
			case iss.Err() != nil:
				errs = append(errs, field.Invalid(rp.Child("messageExpression"), shownRule, "messageExpression compilation failed: "+iss.Err().Error()))
			case mast.OutputType() != cel.StringType:
				errs = append(errs, field.Invalid(rp.Child("messageExpression"), shownRule, "messageExpression must evaluate to a string"))
			default:
				// Not scaled by the cardinality, as kube-apiserver's.
				if est, err := env.EstimateCost(mast, estimator); err == nil {
					mcost := est.Max
					if mcost > StaticEstimatedCostLimit {
						errs = append(errs, field.Forbidden(rp.Child("messageExpression"), costError("estimated messageExpression cost", mcost, StaticEstimatedCostLimit)))
					}
					total.observe(rp.Child("messageExpression"), mcost)
				}
			}
		}
		if len(errs) > 0 {
			return rule{}, errs
		}
	}
	ast, iss := celEnv.Compile(r.Rule)
	if iss.Err() != nil {
		return rule{}, field.ErrorList{field.Invalid(rp.Child("rule"), shownRule, "compilation failed: "+iss.Err().Error())}
	}
	prg, err := celEnv.Program(ast, CELProgramOptions()...)
	if err != nil {
		return rule{}, field.ErrorList{field.Invalid(rp.Child("rule"), shownRule, "program instantiation failed: "+err.Error())}
	}
	out := rule{ValidationRule: r, program: prg, transition: strings.Contains(r.Rule, "oldSelf")}
	if r.MessageExpression != "" {
		mast, iss := celEnv.Compile(r.MessageExpression)
		if iss.Err() != nil {
			return rule{}, field.ErrorList{field.Invalid(rp.Child("messageExpression"), shownRule, "messageExpression compilation failed: "+iss.Err().Error())}
		}
		if out.message, err = celEnv.Program(mast, CELProgramOptions()...); err != nil {
			return rule{}, field.ErrorList{field.Invalid(rp.Child("messageExpression"), shownRule, "messageExpression instantiation failed: "+err.Error())}
		}
	}
	return out, nil
}

// validate evaluates the rules of n on value (and old, the value at the
// same place before an update, if hasOld).
func (n *celNode) validate(path *field.Path, value, old any, hasOld bool) field.ErrorList {
	var v celValidation
	v.node(n, path, value, old, hasOld)
	return v.errs
}

// celValidation is the evaluation of an object's rules: their errors so
// far, and whether a rule exceeded its cost limit, which stops the rest.
type celValidation struct {
	errs    field.ErrorList
	stopped bool
}

func (v *celValidation) node(n *celNode, path *field.Path, value, old any, hasOld bool) {
	if n == nil || value == nil {
		return
	}
	for _, r := range n.rules {
		if v.stopped {
			return
		}
		if r.transition && !hasOld {
			continue
		}
		v.rule(n, r, path, value, old)
	}
	switch x := value.(type) {
	case map[string]any:
		oldMap, _ := old.(map[string]any)
		// In the order of names, as kube-apiserver reports them.
		for _, name := range slices.Sorted(maps.Keys(n.properties)) {
			child := n.properties[name]
			if c, ok := x[name]; ok {
				o, had := oldMap[name]
				v.node(child, path.Child(name), c, o, hasOld && had)
			}
		}
		if n.isMap {
			for _, key := range slices.Sorted(maps.Keys(x)) {
				o, had := oldMap[key]
				v.node(n.items, path.Key(key), x[key], o, hasOld && had)
			}
		}
	case []any:
		// Items correlate with their old values only in maps and by
		// key; list items are checked without oldSelf.
		for i, c := range x {
			v.node(n.items, path.Index(i), c, nil, false)
		}
	}
}

// rule evaluates one rule of node n on value, with kube-apiserver's
// messages: an evaluation error shows the schema's type as the value, a
// false rule on an object or array shows none.
func (v *celValidation) rule(n *celNode, r rule, path *field.Path, value, old any) {
	vars := map[string]any{"self": value, "oldSelf": old}
	out, _, err := r.program.Eval(vars)
	if err != nil {
		switch msg := err.Error(); {
		case strings.HasPrefix(msg, "no such overload"):
			v.errs = append(v.errs, field.Invalid(path, n.typ, fmt.Sprintf(
				"'%v': call arguments did not match a supported operator, function or macro signature for rule: %v", err, r.shown())))
		case strings.HasPrefix(msg, CostLimitExceeded):
			v.errs = append(v.errs, field.Invalid(path, n.typ, fmt.Sprintf(
				"'%v': no further validation rules will be run due to call cost exceeds limit for rule: %v", err, r.shown())))
			v.stopped = true
		default:
			v.errs = append(v.errs, field.Invalid(path, n.typ, fmt.Sprintf("%v evaluating rule: %v", err, r.shown())))
		}
		return
	}
	if ok, isBool := out.Value().(bool); isBool && ok {
		return
	}
	msg, ok := r.evalMessage(vars)
	if !ok {
		msg = strings.TrimSpace(r.Message)
		if msg == "" {
			msg = "failed rule: " + strings.TrimSpace(r.Rule)
		}
	}
	if r.FieldPath != "" {
		for _, part := range strings.Split(strings.TrimPrefix(r.FieldPath, "."), ".") {
			path = path.Child(part)
		}
	}
	var bad any = value
	if n.typ == "object" || n.typ == "array" {
		bad = field.OmitValueType{}
	}
	switch reason := ptr.Deref(r.Reason, ""); reason {
	case apiextensionsv1.FieldValueRequired:
		v.errs = append(v.errs, field.Required(path, msg))
	case apiextensionsv1.FieldValueForbidden:
		v.errs = append(v.errs, field.Forbidden(path, msg))
	case apiextensionsv1.FieldValueDuplicate:
		v.errs = append(v.errs, field.Duplicate(path, bad))
	default:
		v.errs = append(v.errs, field.Invalid(path, bad, msg))
	}
}

// maxMessageLength is the longest message a messageExpression may give.
const maxMessageLength = 5 * 1024

// evalMessage is the rule's messageExpression's message, if it has one
// that gives a non-empty single line of at most maxMessageLength bytes.
func (r rule) evalMessage(vars map[string]any) (string, bool) {
	if r.message == nil {
		return "", false
	}
	m, _, err := r.message.Eval(vars)
	if err != nil {
		return "", false
	}
	s, ok := m.Value().(string)
	s = strings.TrimSpace(s)
	if !ok || s == "" || len(s) > maxMessageLength || strings.Contains(s, "\n") {
		return "", false
	}
	return s, true
}

// shown is how kube-apiserver names a rule in an evaluation error: its
// message, or the rule itself.
func (r rule) shown() string {
	if m := strings.TrimSpace(r.Message); m != "" {
		return m
	}
	return strings.TrimSpace(r.Rule)
}
