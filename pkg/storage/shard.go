// ShardSelector (KEP-5866): parsing a shardSelector's shardRange() calls as
// CEL, their hex bounds, and whether an object's hashed field is in a range.

package storage

import (
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/google/cel-go/common"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	celparser "github.com/google/cel-go/parser"
	"github.com/watchcache/watchcache/pkg/object"
)

// ShardSelector is a parsed shardSelector (KEP-5866, the ShardedListAndWatch
// feature): it selects the objects whose ShardHash of one field,
// metadata.uid or metadata.namespace, falls in one of its ranges. An
// object's uid and namespace never change, so neither does whether a
// shard selector selects it: a watch on a shard sees every event of its
// objects and nothing of the others.
//
// Build one with ParseShardSelector; it is immutable.
type ShardSelector struct {
	// text is the selector as the request gave it, echoed back in a list's
	// metadata.shardInfo.
	text string
	// namespace says the hashed field is metadata.namespace, not
	// metadata.uid.
	namespace bool
	// ranges are the hash ranges, first and last hash included (the
	// selector's exclusive ends, less one, so that an end of 2^64 fits).
	ranges []hashRange
}

// hashRange is the hashes from first to last, both included.
type hashRange struct{ first, last uint64 }

// The fields a shardRange() may hash (CEL paths rooted at the object).
const (
	shardFieldUID       = "object.metadata.uid"
	shardFieldNamespace = "object.metadata.namespace"
)

// String is the selector as the request gave it.
func (s *ShardSelector) String() string { return s.text }

// Matches reports whether obj is in one of the selector's ranges: a
// comparison per range with the hash the record carries.
func (s *ShardSelector) Matches(obj *object.Object) bool {
	h := obj.UIDHash()
	if s.namespace {
		h = obj.NamespaceHash()
	}
	for _, r := range s.ranges {
		if r.first <= h && h <= r.last {
			return true
		}
	}
	return false
}

// shardParser parses shard selectors as CEL expressions (without
// evaluating them), as kube-apiserver does. It keeps no state between
// parses, so one serves every request.
var shardParser = sync.OnceValue(func() *celparser.Parser {
	p, err := celparser.NewParser(celparser.Macros())
	if err != nil {
		panic(err)
	}
	return p
})

// ParseShardSelector parses a shardSelector as metav1.ListOptions
// documents it and kube-apiserver accepts it: a CEL expression made of
// shardRange(field, 'start', 'end') calls joined by ||, where field is
// object.metadata.uid or object.metadata.namespace (the same in every
// call), start and end are string literals of a 0x-prefixed 16-digit
// lowercase hex number (end may also be '0x10000000000000000', 2^64), and
// start < end; an object is selected when the hash of its field is in
// [start, end) of one of the calls. The errors are kube-apiserver's
// wording; the caller answers them with 400 ("invalid shard selector: ...").
func ParseShardSelector(text string) (*ShardSelector, error) {
	expr := strings.TrimSpace(text)
	if expr == "" {
		return nil, fmt.Errorf("empty shard selector is not allowed; omit the parameter for unfiltered lists")
	}
	parsed, errs := shardParser().Parse(common.NewTextSource(expr))
	if errs != nil && len(errs.GetErrors()) > 0 {
		return nil, fmt.Errorf("CEL parse error: %s", errs.GetErrors()[0].Message)
	}
	s := &ShardSelector{text: text}
	field := ""
	err := forEachShardRange(parsed.Expr(), func(call ast.CallExpr) error {
		f, r, err := parseShardRange(call)
		if err != nil {
			return err
		}
		if field != "" && f != field {
			return fmt.Errorf("all shard ranges must use the same field, got %q and %q", field, f)
		}
		field = f
		s.ranges = append(s.ranges, r)
		return nil
	})
	if err != nil {
		return nil, err
	}
	s.namespace = field == shardFieldNamespace
	return s, nil
}

// forEachShardRange calls fn with each shardRange() call of an expression
// that must be one such call or several joined by ||, left to right.
func forEachShardRange(e ast.Expr, fn func(ast.CallExpr) error) error {
	if e.Kind() != ast.CallKind {
		return fmt.Errorf("unexpected expression kind %v; expected shardRange() call or || operator", kindName(e))
	}
	call := e.AsCall()
	switch name := call.FunctionName(); {
	case name == operators.LogicalOr && !call.IsMemberFunction():
		for _, arg := range call.Args() {
			if err := forEachShardRange(arg, fn); err != nil {
				return err
			}
		}
		return nil
	case name == "shardRange" && !call.IsMemberFunction():
		return fn(call)
	default:
		return fmt.Errorf("unsupported function %q; only shardRange() and || are allowed", name)
	}
}

// parseShardRange checks one shardRange(field, 'start', 'end') call.
func parseShardRange(call ast.CallExpr) (string, hashRange, error) {
	args := call.Args()
	if len(args) != 3 {
		return "", hashRange{}, fmt.Errorf("shardRange() requires exactly 3 arguments, got %d", len(args))
	}
	field, err := fieldPath(args[0])
	if err != nil {
		return "", hashRange{}, fmt.Errorf("shardRange() first argument: %w", err)
	}
	if field != shardFieldUID && field != shardFieldNamespace {
		return "", hashRange{}, fmt.Errorf("unsupported field path %q; supported: %s, %s", field, shardFieldUID, shardFieldNamespace)
	}
	start, startText, err := hexBound(args[1], "hexStart")
	if err != nil {
		return "", hashRange{}, err
	}
	end, endText, err := hexBound(args[2], "hexEnd")
	if err != nil {
		return "", hashRange{}, err
	}
	if !start.less(end) {
		return "", hashRange{}, fmt.Errorf("shard range start %s must be less than end %s", startText, endText)
	}
	// end > start >= 0, so end-1 fits in 64 bits even for 2^64.
	return field, hashRange{first: start.lo, last: end.minusOne()}, nil
}

// fieldPath returns the dotted path of an identifier or a chain of
// selections (object.metadata.uid).
func fieldPath(e ast.Expr) (string, error) {
	switch e.Kind() {
	case ast.IdentKind:
		return e.AsIdent(), nil
	case ast.SelectKind:
		operand, err := fieldPath(e.AsSelect().Operand())
		if err != nil {
			return "", err
		}
		return operand + "." + e.AsSelect().FieldName(), nil
	default:
		return "", fmt.Errorf("expected field path (e.g. object.metadata.uid), got expression kind %v", kindName(e))
	}
}

// bound is a range bound: a number in [0, 2^64], lo its low 64 bits and
// top set for 2^64 itself.
type bound struct {
	lo  uint64
	top bool
}

// less reports whether b < o.
func (b bound) less(o bound) bool {
	if b.top != o.top {
		return o.top
	}
	return b.lo < o.lo
}

// minusOne is b-1, for b > 0 (2^64-1 for 2^64, whose lo is 0).
func (b bound) minusOne() uint64 { return b.lo - 1 }

// maxBound is the exclusive end of the hash space, 2^64.
const maxBound = "0x10000000000000000"

// hexBound reads a range bound: a CEL string literal holding "0x" and 16
// lowercase hex digits, or maxBound. It returns the literal too.
func hexBound(e ast.Expr, name string) (bound, string, error) {
	if e.Kind() != ast.LiteralKind {
		return bound{}, "", fmt.Errorf("%s must be a string literal (e.g. '0xff'), got expression kind %v", name, kindName(e))
	}
	s, ok := e.AsLiteral().Value().(string)
	if !ok {
		return bound{}, "", fmt.Errorf("%s must be a string literal, got %T", name, e.AsLiteral().Value())
	}
	digits, ok := strings.CutPrefix(s, "0x")
	switch {
	case !ok:
		return bound{}, "", fmt.Errorf("%s must have '0x' prefix, got %q", name, s)
	case digits == "":
		return bound{}, "", fmt.Errorf("%s: hex value is required after '0x'", name)
	case len(digits) > 17:
		return bound{}, "", fmt.Errorf("%s: hex value too long (%d chars, max 17): %q", name, len(digits), digits)
	}
	for _, c := range digits {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return bound{}, "", fmt.Errorf("%s: invalid hex character %q in %q", name, string(c), s)
		}
	}
	switch len(digits) {
	case 17:
		if s != maxBound {
			return bound{}, "", fmt.Errorf("%s: 17-digit hex value must be '%s' (2^64), got %q", name, maxBound, s)
		}
		return bound{top: true}, s, nil
	case 16:
		v, err := strconv.ParseUint(digits, 16, 64)
		if err != nil { // not reached: 16 hex digits fit
			return bound{}, "", fmt.Errorf("%s: %v", name, err)
		}
		return bound{lo: v}, s, nil
	default:
		return bound{}, "", fmt.Errorf("%s must be a 0x-prefixed 16-digit hex value, got %q (did you mean %q?)", name, s, "0x"+strings.Repeat("0", 16-len(digits))+digits)
	}
}

// kindName names an expression's kind in errors (kube-apiserver's print
// cel-go's ExprKind, a bare number).
func kindName(e ast.Expr) string {
	switch e.Kind() {
	case ast.CallKind:
		return "call"
	case ast.ComprehensionKind:
		return "comprehension"
	case ast.IdentKind:
		return "identifier"
	case ast.ListKind:
		return "list"
	case ast.LiteralKind:
		return "literal"
	case ast.MapKind:
		return "map"
	case ast.SelectKind:
		return "select"
	case ast.StructKind:
		return "struct"
	}
	return "unspecified"
}
