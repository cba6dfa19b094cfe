// The Kubernetes CEL libraries of regular expressions (find, findAll) and of
// lists (isSorted, sum, min, max, indexOf, lastIndexOf).

package crdschema

import (
	"regexp"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/cel-go/interpreter"
)

// The Kubernetes regex and lists libraries (see cel_library.go).

// finder is find or findAll on a string with a compiled pattern; the
// arguments after the pattern follow.
type finder func(s string, re *regexp.Regexp, rest []ref.Val) ref.Val

// find is the first match of re in s ("" if none).
func find(s string, re *regexp.Regexp, _ []ref.Val) ref.Val { return types.String(re.FindString(s)) }

// findAll is every match of re in s, or at most the limit given (when not
// negative).
func findAll(s string, re *regexp.Regexp, rest []ref.Val) ref.Val {
	n := int64(-1)
	if len(rest) == 1 {
		var ok bool
		if n, ok = rest[0].Value().(int64); !ok {
			return types.MaybeNoSuchOverloadErr(rest[0])
		}
	}
	return types.NewStringList(types.DefaultTypeAdapter, re.FindAllString(s, int(n)))
}

// withPattern calls f on a string argument and re, or on the pattern of
// the second argument compiled now if re is nil.
func (f finder) withPattern(re *regexp.Regexp) func(args ...ref.Val) ref.Val {
	return func(args ...ref.Val) ref.Val {
		s, ok := args[0].Value().(string)
		if !ok {
			return types.MaybeNoSuchOverloadErr(args[0])
		}
		if re == nil {
			pattern, ok := args[1].Value().(string)
			if !ok {
				return types.MaybeNoSuchOverloadErr(args[1])
			}
			compiled, err := regexp.Compile(pattern)
			if err != nil {
				return types.NewErr("Illegal regex: %v", err.Error())
			}
			return f(s, compiled, args[2:])
		}
		return f(s, re, args[2:])
	}
}

// optimization compiles a constant pattern once, when the program is
// built.
func (f finder) optimization(function string) *interpreter.RegexOptimization {
	return &interpreter.RegexOptimization{Function: function, RegexIndex: 1,
		Factory: func(call interpreter.InterpretableCall, pattern string) (interpreter.InterpretableCall, error) {
			re, err := regexp.Compile(pattern)
			if err != nil {
				return nil, err
			}
			return interpreter.NewCall(call.ID(), call.Function(), call.OverloadID(), call.Args(), f.withPattern(re)), nil
		}}
}

// Regular expressions: <string>.find(pattern), <string>.findAll(pattern)
// and <string>.findAll(pattern, limit).
func regexFunctions() []cel.EnvOption {
	s := cel.StringType
	return []cel.EnvOption{
		cel.Function("find", cel.MemberOverload("string_find_string", []*cel.Type{s, s}, s,
			cel.FunctionBinding(finder(find).withPattern(nil)))),
		cel.Function("findAll",
			cel.MemberOverload("string_find_all_string", []*cel.Type{s, s}, cel.ListType(s),
				cel.FunctionBinding(finder(findAll).withPattern(nil))),
			cel.MemberOverload("string_find_all_string_int", []*cel.Type{s, s, cel.IntType}, cel.ListType(s),
				cel.FunctionBinding(finder(findAll).withPattern(nil)))),
	}
}

// listElementTypes are the element types of the lists functions'
// overloads, by their names in the overload ids; sum takes the summable
// ones (with their zeros), isSorted, min and max the comparable ones.
var (
	comparableTypes = []struct {
		name string
		t    *cel.Type
	}{{"int", cel.IntType}, {"uint", cel.UintType}, {"double", cel.DoubleType}, {"bool", cel.BoolType},
		{"duration", cel.DurationType}, {"timestamp", cel.TimestampType}, {"string", cel.StringType}, {"bytes", cel.BytesType}}
	summableZeros = map[string]ref.Val{"int": types.Int(0), "uint": types.Uint(0), "double": types.Double(0),
		"duration": types.Duration{}}
)

// Lists: <list>.isSorted(), .sum(), .min(), .max() (an error on an empty
// list), .indexOf(x) and .lastIndexOf(x) (-1 if absent).
func listFunctions() []cel.EnvOption {
	var isSorted, sum, minimum, maximum []cel.FunctionOpt
	for _, et := range comparableTypes {
		list := []*cel.Type{cel.ListType(et.t)}
		isSorted = append(isSorted, cel.MemberOverload("list_"+et.name+"_is_sorted_bool", list, cel.BoolType,
			cel.UnaryBinding(func(l ref.Val) ref.Val {
				return fold(l, types.True, func(acc, prev, next ref.Val) (ref.Val, bool) {
					if prev == nil {
						return acc, false
					}
					cmp, ok := prev.(traits.Comparer)
					if !ok {
						return types.MaybeNoSuchOverloadErr(prev), true
					}
					if cmp.Compare(next) == types.IntOne {
						return types.False, true
					}
					return acc, false
				})
			})))
		minimum = append(minimum, cel.MemberOverload("list_"+et.name+"_min_"+et.name, list, et.t, cel.UnaryBinding(extreme("min", types.IntOne))))
		maximum = append(maximum, cel.MemberOverload("list_"+et.name+"_max_"+et.name, list, et.t, cel.UnaryBinding(extreme("max", types.IntNegOne))))
		if zero, ok := summableZeros[et.name]; ok {
			sum = append(sum, cel.MemberOverload("list_"+et.name+"_sum_"+et.name, list, et.t, cel.UnaryBinding(func(l ref.Val) ref.Val {
				return fold(l, zero, func(acc, _, next ref.Val) (ref.Val, bool) {
					adder, ok := acc.(traits.Adder)
					if !ok {
						return types.MaybeNoSuchOverloadErr(acc), true
					}
					out := adder.Add(next)
					return out, types.IsError(out)
				})
			})))
		}
	}
	a := cel.TypeParamType("A")
	return []cel.EnvOption{
		cel.Function("isSorted", isSorted...),
		cel.Function("sum", sum...),
		cel.Function("min", minimum...),
		cel.Function("max", maximum...),
		cel.Function("indexOf", cel.MemberOverload("list_a_index_of_int", []*cel.Type{cel.ListType(a), a}, cel.IntType,
			cel.BinaryBinding(func(l, x ref.Val) ref.Val { return index(l, x, false) }))),
		cel.Function("lastIndexOf", cel.MemberOverload("list_a_last_index_of_int", []*cel.Type{cel.ListType(a), a}, cel.IntType,
			cel.BinaryBinding(func(l, x ref.Val) ref.Val { return index(l, x, true) }))),
	}
}

// fold runs step over the items of a list with the previous item (nil for
// the first) until it says to stop, and returns its last result (acc for
// an empty list).
func fold(l ref.Val, acc ref.Val, step func(acc, prev, next ref.Val) (ref.Val, bool)) ref.Val {
	list, ok := l.(traits.Lister)
	if !ok {
		return types.MaybeNoSuchOverloadErr(l)
	}
	var prev ref.Val
	for it := list.Iterator(); it.HasNext() == types.True; {
		next := it.Next()
		var stop bool
		if acc, stop = step(acc, prev, next); stop {
			return acc
		}
		prev = next
	}
	return acc
}

// extreme is min (prefer: the kept item compares greater than the next,
// 1) or max (-1): the item kept over the list; an error if it is empty.
func extreme(name string, prefer ref.Val) func(ref.Val) ref.Val {
	return func(l ref.Val) ref.Val {
		var best ref.Val
		out := fold(l, types.NullValue, func(acc, _, next ref.Val) (ref.Val, bool) {
			cmp, ok := next.(traits.Comparer)
			if !ok {
				return types.MaybeNoSuchOverloadErr(next), true
			}
			if best == nil || best.(traits.Comparer).Compare(next) == prefer {
				best = cmp.(ref.Val)
			}
			return acc, false
		})
		switch {
		case types.IsError(out):
			return out
		case best == nil:
			return types.NewErr("%s called on empty list", name)
		}
		return best
	}
}

// index is the first (or last) position of x in a list, -1 if absent.
func index(l, x ref.Val, last bool) ref.Val {
	list, ok := l.(traits.Lister)
	if !ok {
		return types.MaybeNoSuchOverloadErr(l)
	}
	n := int64(list.Size().(types.Int))
	for i := range n {
		if last {
			i = n - 1 - i
		}
		if list.Get(types.Int(i)).Equal(x) == types.True {
			return types.Int(i)
		}
	}
	return types.Int(-1)
}
