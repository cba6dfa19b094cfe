// The types and estimated costs of x-kubernetes-validations rules, as
// kube-apiserver 1.37 checks them when a CRD is written: each rule is
// type-checked with self (and oldSelf) of the type its schema node
// declares (k8s.io/apiserver's SchemaDeclType: objects with their
// properties as fields, lists, maps, timestamps for date-time strings,
// dyn for int-or-string), and its cost estimated with cel-go's estimator,
// sizes from maxItems, maxProperties and maxLength or, where unbounded,
// from the largest request (3 MiB), and the Kubernetes library's function
// costs. Rules are evaluated with a dynamic self (cel.go); these types
// serve the checks only.

package crdschema

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/common"
	"github.com/google/cel-go/common/types"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Kube-apiserver's limits of a CRD's rules (apiextensions validation, and
// k8s.io/apiserver's request size).
const (
	// StaticEstimatedCostLimit is the largest estimated cost of one rule
	// (times the most times its node can occur in an object).
	StaticEstimatedCostLimit = 10000000
	// StaticEstimatedCRDCostLimit is the largest estimated cost of all the
	// rules of a version's schema.
	StaticEstimatedCRDCostLimit = 100000000
	maxRequestSizeBytes         = int64(3 * 1024 * 1024)
)

// declType is a schema node's CEL type, with what the cost estimate
// needs: how many elements (items, properties, bytes) it may hold, and
// the smallest size of its JSON.
type declType struct {
	name        string
	cel         *cel.Type
	fields      map[string]*declType // an object's, by escaped name
	elem        *declType            // a list's items or a map's values
	maxElements int64
	minSize     int64
}

func (t *declType) isObject() bool { return t.fields != nil }

// schemaDeclType is SchemaDeclType of k8s.io/apiserver's cel/common for a
// structural schema; nil where CEL sees no field. name names its object
// types (name.field for their fields' objects).
func schemaDeclType(s *structuralschema.Structural, root bool, name string) *declType {
	if s == nil {
		return nil
	}
	maxLength := func() *int64 {
		if s.ValueValidation == nil {
			return nil
		}
		return s.ValueValidation.MaxLength
	}
	format := ""
	if s.ValueValidation != nil {
		format = s.ValueValidation.Format
	}
	if s.XIntOrString {
		t := &declType{name: "dyn", cel: cel.DynType, minSize: 1, maxElements: maxRequestSizeBytes - 2}
		if ml := maxLength(); ml != nil {
			t.maxElements = zeroIfNegative(*ml) * 4
		}
		return t
	}
	props := s.Properties
	if root {
		props = withTypeAndObjectMeta(s)
	}
	switch s.Type {
	case "array":
		if s.Items == nil {
			return nil
		}
		items := schemaDeclType(s.Items, s.Items.XEmbeddedResource, name+".@idx")
		if items == nil {
			return nil
		}
		maxItems := (maxRequestSizeBytes - 2) / (items.minSize + 1)
		if s.ValueValidation != nil && s.ValueValidation.MaxItems != nil {
			maxItems = zeroIfNegative(*s.ValueValidation.MaxItems)
		}
		return &declType{name: "list", cel: cel.ListType(items.cel), elem: items, maxElements: maxItems, minSize: 2}
	case "object":
		if s.AdditionalProperties != nil && s.AdditionalProperties.Structural != nil {
			values := schemaDeclType(s.AdditionalProperties.Structural, s.AdditionalProperties.Structural.XEmbeddedResource, name+".@elem")
			if values == nil {
				return nil
			}
			maxProperties := (maxRequestSizeBytes - 2) / (values.minSize + 6)
			if s.ValueValidation != nil && s.ValueValidation.MaxProperties != nil {
				maxProperties = zeroIfNegative(*s.ValueValidation.MaxProperties)
			}
			return &declType{name: "map", cel: cel.MapType(cel.StringType, values.cel), elem: values, maxElements: maxProperties, minSize: 2}
		}
		required := map[string]bool{}
		if s.ValueValidation != nil {
			for _, r := range s.ValueValidation.Required {
				required[r] = true
			}
		}
		t := &declType{name: name, cel: cel.ObjectType(name), fields: map[string]*declType{}, minSize: 2}
		for _, prop := range slices.Sorted(mapsKeys(props)) {
			p := props[prop]
			escaped, ok := escapeIdent(prop)
			if !ok {
				continue
			}
			ft := schemaDeclType(&p, p.XEmbeddedResource, name+"."+escaped)
			if ft == nil {
				continue
			}
			t.fields[escaped] = ft
			if required[prop] && p.Default.Object == nil {
				t.minSize += int64(len(prop)) + ft.minSize + 4
			}
		}
		return t
	case "string":
		switch format {
		case "byte":
			t := &declType{name: "bytes", cel: cel.BytesType, minSize: 2, maxElements: maxRequestSizeBytes - 2}
			if ml := maxLength(); ml != nil {
				t.maxElements = zeroIfNegative(*ml)
			}
			return t
		case "duration":
			return &declType{name: "duration", cel: cel.DurationType, minSize: 3, maxElements: 32}
		case "date":
			return &declType{name: "timestamp", cel: cel.TimestampType, minSize: 12, maxElements: 12}
		case "date-time":
			return &declType{name: "timestamp", cel: cel.TimestampType, minSize: 21, maxElements: 32}
		}
		t := &declType{name: "string", cel: cel.StringType, minSize: 2, maxElements: maxRequestSizeBytes - 2}
		switch {
		case maxLength() != nil:
			t.maxElements = zeroIfNegative(*maxLength()) * 4
		case s.ValueValidation != nil && len(s.ValueValidation.Enum) > 0:
			t.maxElements = 0
			for _, v := range s.ValueValidation.Enum {
				if str, ok := v.Object.(string); ok && int64(len(str)) > t.maxElements {
					t.maxElements = int64(len(str))
				}
			}
		}
		return t
	case "boolean":
		return &declType{name: "bool", cel: cel.BoolType, minSize: 4}
	case "number":
		return &declType{name: "double", cel: cel.DoubleType, minSize: 1}
	case "integer":
		return &declType{name: "int", cel: cel.IntType, minSize: 1}
	}
	return nil
}

func mapsKeys(m map[string]structuralschema.Structural) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func zeroIfNegative(v int64) int64 { return max(v, 0) }

// withTypeAndObjectMeta is a resource root's properties as CEL sees
// them: kind, apiVersion and metadata (name and generateName) declared.
func withTypeAndObjectMeta(s *structuralschema.Structural) map[string]structuralschema.Structural {
	props := make(map[string]structuralschema.Structural, len(s.Properties)+3)
	for k, v := range s.Properties {
		props[k] = v
	}
	str := structuralschema.Structural{Generic: structuralschema.Generic{Type: "string"}}
	props["kind"] = str
	props["apiVersion"] = str
	props["metadata"] = structuralschema.Structural{Generic: structuralschema.Generic{Type: "object"},
		Properties: map[string]structuralschema.Structural{"name": str, "generateName": str}}
	return props
}

var (
	celReservedSymbols = []string{"true", "false", "null", "in", "as", "break", "const", "continue", "else",
		"for", "function", "if", "import", "let", "loop", "package", "namespace", "return", "var", "void", "while"}
	escapeValid   = regexp.MustCompile(`^[a-zA-Z0-9_./-]*$`)
	escapeMatcher = regexp.MustCompile(`__|[-./]`)
)

// escapeIdent is a property's name as a CEL field (k8s.io/apiserver's
// Escape); false if it has none.
func escapeIdent(ident string) (string, bool) {
	if ident == "" || ('0' <= ident[0] && ident[0] <= '9') || !escapeValid.MatchString(ident) {
		return "", false
	}
	if slices.Contains(celReservedSymbols, ident) {
		return "__" + ident + "__", true
	}
	return escapeMatcher.ReplaceAllStringFunc(ident, func(s string) string {
		switch s {
		case "__":
			return "__underscores__"
		case ".":
			return "__dot__"
		case "-":
			return "__dash__"
		default:
			return "__slash__"
		}
	}), true
}

// declProvider declares the object types of a rule's self to the checker.
type declProvider struct {
	types.Provider
	objects map[string]*declType
}

func newDeclProvider(base types.Provider, root *declType) *declProvider {
	p := &declProvider{Provider: base, objects: map[string]*declType{}}
	var visit func(t *declType)
	visit = func(t *declType) {
		if t == nil {
			return
		}
		if t.isObject() {
			p.objects[t.name] = t
			for _, f := range t.fields {
				visit(f)
			}
		}
		visit(t.elem)
	}
	visit(root)
	return p
}

func (p *declProvider) FindStructType(name string) (*types.Type, bool) {
	if t, ok := p.objects[name]; ok {
		return types.NewTypeTypeWithParam(t.cel), true
	}
	return p.Provider.FindStructType(name)
}

func (p *declProvider) FindStructFieldNames(name string) ([]string, bool) {
	if t, ok := p.objects[name]; ok {
		return slices.Sorted(func(yield func(string) bool) {
			for k := range t.fields {
				if !yield(k) {
					return
				}
			}
		}), true
	}
	return p.Provider.FindStructFieldNames(name)
}

func (p *declProvider) FindStructFieldType(name, fieldName string) (*types.FieldType, bool) {
	t, ok := p.objects[name]
	if !ok {
		return p.Provider.FindStructFieldType(name, fieldName)
	}
	f, ok := t.fields[fieldName]
	if !ok {
		return nil, false
	}
	return &types.FieldType{Type: f.cel}, true
}

// typedEnv is the environment a node's rules are checked in: self and
// oldSelf (optional if optionalOldSelf) of the node's type.
func typedEnv(t *declType, optionalOldSelf bool) (*cel.Env, error) {
	old := t.cel
	if optionalOldSelf {
		old = cel.OptionalType(t.cel)
	}
	return celBaseEnv.Extend(cel.CustomTypeProvider(newDeclProvider(celBaseEnv.CELTypeProvider(), t)),
		cel.Variable("self", t.cel), cel.Variable("oldSelf", old))
}

// costEstimator is kube-apiserver's: sizes from the node's declType,
// call costs of the Kubernetes library's functions.
type costEstimator struct{ root *declType }

func (c *costEstimator) EstimateSize(element checker.AstNode) *checker.SizeEstimate {
	path := element.Path()
	if len(path) == 0 {
		return nil
	}
	n := c.root
	for _, name := range path[1:] {
		switch name {
		case "@items", "@values":
			n = n.elem
		case "@keys":
			if n.name != "map" {
				return nil
			}
			// kube-apiserver's map keys are its StringType, of no
			// maximum length set: 0.
			n = &declType{name: "string"}
			continue
		default:
			n = n.fields[name]
		}
		if n == nil {
			return nil
		}
	}
	return &checker.SizeEstimate{Min: 0, Max: uint64(n.maxElements)}
}

func (c *costEstimator) size(n checker.AstNode) checker.SizeEstimate {
	if sz := n.ComputedSize(); sz != nil {
		return *sz
	}
	if sz := c.EstimateSize(n); sz != nil {
		return *sz
	}
	return checker.SizeEstimate{Min: 0, Max: math.MaxUint64}
}

// itemsNode stands for a list's items, for their size.
type itemsNode struct {
	checker.AstNode
	path []string
	t    *types.Type
}

func (i itemsNode) Path() []string                      { return i.path }
func (i itemsNode) Type() *types.Type                   { return i.t }
func (i itemsNode) ComputedSize() *checker.SizeEstimate { return nil }

func (c *costEstimator) listElement(list checker.AstNode) checker.AstNode {
	params := list.Type().Parameters()
	if len(params) == 0 {
		return nil
	}
	var path []string
	if p := list.Path(); p != nil {
		path = append(slices.Clone(p), "@items")
	}
	return itemsNode{AstNode: list, path: path, t: params[0]}
}

// EstimateCallCost is k8s.io/apiserver's library cost estimator for the
// functions CRD rules may call.
func (c *costEstimator) EstimateCallCost(function, _ string, target *checker.AstNode, args []checker.AstNode) *checker.CallEstimate {
	one := checker.CostEstimate{Min: 1, Max: 1}
	switch function {
	case "isSorted", "sum", "max", "min", "indexOf", "lastIndexOf":
		if target == nil {
			return nil
		}
		if el := c.listElement(*target); el != nil {
			elCost := one
			if k := el.Type().Kind(); k == types.StringKind || k == types.BytesKind {
				elCost = elCost.Add(c.size(el).MultiplyByCostFactor(common.StringTraversalCostFactor))
			}
			return &checker.CallEstimate{CostEstimate: c.size(*target).MultiplyByCost(elCost)}
		}
		return &checker.CallEstimate{CostEstimate: c.size(*target).MultiplyByCostFactor(common.StringTraversalCostFactor)}
	case "url":
		if len(args) == 1 {
			sz := c.size(args[0])
			return &checker.CallEstimate{CostEstimate: sz.MultiplyByCostFactor(common.StringTraversalCostFactor), ResultSize: &sz}
		}
	case "lowerAscii", "upperAscii", "substring", "trim":
		if target != nil {
			sz := c.size(*target)
			return &checker.CallEstimate{CostEstimate: sz.MultiplyByCostFactor(common.StringTraversalCostFactor), ResultSize: &sz}
		}
	case "replace":
		if target != nil && len(args) >= 2 {
			return c.replaceCost(c.size(*target), c.size(args[0]), c.size(args[1]))
		}
	case "split":
		if target != nil {
			sz := c.size(*target)
			most := sz.Max
			if len(args) > 1 {
				if v := args[1].Expr().AsLiteral(); v != nil {
					if i, ok := v.Value().(int64); ok {
						most = uint64(i)
					}
				}
			}
			return &checker.CallEstimate{CostEstimate: sz.MultiplyByCostFactor(2 * common.StringTraversalCostFactor), ResultSize: &checker.SizeEstimate{Min: 0, Max: most}}
		}
	case "join":
		if target != nil {
			var sz checker.SizeEstimate
			listSize := c.size(*target)
			if el := c.listElement(*target); el != nil {
				sz = listSize.Multiply(c.size(el))
			}
			if len(args) > 0 {
				var seps checker.SizeEstimate
				if listSize.Min > 0 {
					seps.Min = listSize.Min - 1
				}
				if listSize.Max > 0 {
					seps.Max = listSize.Max - 1
				}
				sz = sz.Add(c.size(args[0]).Multiply(seps))
			}
			return &checker.CallEstimate{CostEstimate: sz.MultiplyByCostFactor(common.StringTraversalCostFactor), ResultSize: &sz}
		}
	case "find", "findAll":
		if target != nil && len(args) >= 1 {
			sz := c.size(*target)
			strCost := sz.Add(checker.SizeEstimate{Min: 1, Max: 1}).MultiplyByCostFactor(common.StringTraversalCostFactor)
			regexCost := c.size(args[0]).MultiplyByCostFactor(common.RegexStringLengthCostFactor)
			return &checker.CallEstimate{CostEstimate: strCost.Multiply(regexCost), ResultSize: &checker.SizeEstimate{Min: 0, Max: sz.Max}}
		}
	case "cidr", "isIP", "isCIDR", "quantity", "isQuantity", "semver", "isSemver":
		if len(args) >= 1 {
			return &checker.CallEstimate{CostEstimate: c.size(args[0]).MultiplyByCostFactor(common.StringTraversalCostFactor)}
		}
	case "ip":
		if target != nil { // a CIDR's IP: a field
			return &checker.CallEstimate{CostEstimate: one}
		}
		if len(args) >= 1 {
			return &checker.CallEstimate{CostEstimate: c.size(args[0]).MultiplyByCostFactor(common.StringTraversalCostFactor)}
		}
	case "ip.isCanonical":
		if len(args) >= 1 {
			return &checker.CallEstimate{CostEstimate: c.size(args[0]).MultiplyByCostFactor(2 * common.StringTraversalCostFactor)}
		}
	case "masked", "prefixLength", "family", "isUnspecified", "isLoopback", "isLinkLocalMulticast", "isLinkLocalUnicast", "isGlobalUnicast",
		"sign", "asInteger", "isInteger", "asApproximateFloat", "isGreaterThan", "isLessThan", "compareTo", "add", "sub", "major", "minor", "patch",
		"getScheme", "getHostname", "getHost", "getPort", "getEscapedPath", "getQuery":
		return &checker.CallEstimate{CostEstimate: one}
	case "containsIP", "containsCIDR":
		if len(args) >= 1 {
			// Two byte lists of 4 or 16 bytes compared; a CIDR masked
			// first; a string argument parsed.
			sz := checker.SizeEstimate{Min: 4, Max: 16}
			cost := sz.Add(sz).MultiplyByCostFactor(common.StringTraversalCostFactor)
			if function == "containsCIDR" {
				cost = cost.Add(sz.MultiplyByCostFactor(common.StringTraversalCostFactor)).Add(one)
			}
			if args[0].Type().Kind() == types.StringKind {
				cost = cost.Add(checker.CostEstimate(c.size(args[0])).MultiplyByCostFactor(common.StringTraversalCostFactor))
			}
			return &checker.CallEstimate{CostEstimate: cost}
		}
	case "validate":
		if len(args) >= 1 {
			return &checker.CallEstimate{CostEstimate: c.size(args[0]).MultiplyByCostFactor(common.StringTraversalCostFactor).MultiplyByCostFactor(128 * common.RegexStringLengthCostFactor)}
		}
	case "format.named":
		return &checker.CallEstimate{CostEstimate: one}
	case "_==_":
		if len(args) == 2 && args[0].Type().Equal(args[1].Type()) == types.True {
			if t := args[0].Type(); t.Kind() == types.OpaqueKind || t.Kind() == types.StructKind {
				switch t.TypeName() {
				case "net.IP", "net.CIDR", "kubernetes.Quantity", "kubernetes.Semver":
					return &checker.CallEstimate{CostEstimate: one}
				}
			}
		}
	}
	return nil
}

func (c *costEstimator) replaceCost(sz, toReplace, replaceWith checker.SizeEstimate) *checker.CallEstimate {
	var count, retained checker.SizeEstimate
	switch {
	case toReplace.Min == 0:
		count.Max = sz.Max
		if sz.Max < math.MaxUint64 {
			count.Max++
		}
		retained.Max = sz.Max
	case replaceWith.Max <= toReplace.Min:
		retained.Max = sz.Max
	default:
		count.Max = uint64(math.Ceil(float64(sz.Max) / float64(toReplace.Min)))
	}
	switch {
	case toReplace.Max == 0:
		count.Min = sz.Min
		if sz.Min < math.MaxUint64 {
			count.Min++
		}
		retained.Min = sz.Min
	case toReplace.Max <= replaceWith.Min:
		retained.Min = sz.Min
	default:
		count.Min = uint64(math.Ceil(float64(sz.Min) / float64(toReplace.Max)))
	}
	size := count.Multiply(replaceWith).Add(retained)
	return &checker.CallEstimate{CostEstimate: sz.MultiplyByCostFactor(2 * common.StringTraversalCostFactor), ResultSize: &size}
}

// multiplyCapped is a*b, or the largest uint64 past it.
func multiplyCapped(a, b uint64) uint64 {
	if a != 0 && math.MaxUint64/a < b {
		return math.MaxUint64
	}
	return a * b
}

// costError is kube-apiserver's message for an estimated cost past limit.
func costError(what string, cost, limit uint64) string {
	factor := float64(cost) / float64(limit)
	var shown string
	switch {
	case factor > 100:
		shown = "more than 100x"
	case factor < 1.5:
		shown = fmt.Sprintf("%fx", factor)
	default:
		shown = fmt.Sprintf("%.1fx", factor)
	}
	return fmt.Sprintf("%s exceeds budget by factor of %s (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)", what, shown)
}

// totalCost adds up the estimated costs of a schema's rules, keeping the
// four most expensive (those of at least 1% of the limit).
type totalCost struct {
	total         uint64
	mostExpensive []ruleCost
}

type ruleCost struct {
	path *field.Path
	cost uint64
}

func (c *totalCost) observe(path *field.Path, cost uint64) {
	if math.MaxUint64-c.total < cost {
		c.total = math.MaxUint64
	} else {
		c.total += cost
	}
	if cost < StaticEstimatedCRDCostLimit/100 {
		return
	}
	c.mostExpensive = append(c.mostExpensive, ruleCost{path, cost})
	sort.SliceStable(c.mostExpensive, func(i, j int) bool { return c.mostExpensive[i].cost > c.mostExpensive[j].cost })
	if len(c.mostExpensive) > 4 {
		c.mostExpensive = c.mostExpensive[:4]
	}
}

// errors are the total's, at the schema's root path.
func (c *totalCost) errors(root *field.Path) field.ErrorList {
	if c.total <= StaticEstimatedCRDCostLimit {
		return nil
	}
	rootField := func(p *field.Path) string { // "" for the root
		if p == nil {
			return ""
		}
		return p.String()
	}(root)
	var errs field.ErrorList
	for _, e := range c.mostExpensive {
		errs = append(errs, field.Forbidden(e.path, "contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema"))
	}
	return append(errs, &field.Error{Type: field.ErrorTypeForbidden, Field: rootField,
		Detail: costError("x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema", c.total, StaticEstimatedCRDCostLimit)})
}
