// The Kubernetes CEL libraries of k8s.io/apiserver/pkg/cel/library: URLs, IPs,
// CIDRs, quantities and named formats, as one cel.Library.

package crdschema

import (
	"fmt"
	"net/netip"
	"net/url"
	"reflect"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"k8s.io/apimachinery/pkg/api/resource"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/kube-openapi/pkg/validation/strfmt"
)

// The Kubernetes CEL libraries that kube-apiserver adds to cel-go's, with
// its function names, overloads, results and error messages: URLs
// (url, isURL, getScheme...), IP addresses (ip, isIP, ip.isCanonical,
// family...), CIDRs (cidr, isCIDR, containsIP...), quantities (quantity,
// isQuantity, add, compareTo...), named formats (format.dns1123Label()...
// validate), regular expressions (find, findAll) and lists (isSorted, sum,
// min, max, indexOf, lastIndexOf). Not here: the authorizer and semver
// libraries, and the libraries' own cost estimates (each of their calls
// costs 1 here).

// kubeType is one of the libraries' CEL types, whose values are Go values
// of type T.
type kubeType[T any] struct {
	*types.Type
	equal func(a, b T) bool
	// str is the value's string() conversion, nil if it has none.
	str func(T) string
}

// kubeValue is a value of a kubeType.
type kubeValue[T any] struct {
	v T
	t *kubeType[T]
}

func (t *kubeType[T]) of(v T) ref.Val { return kubeValue[T]{v, t} }

// ConvertToNative gives the Go value, or its string form.
func (k kubeValue[T]) ConvertToNative(typeDesc reflect.Type) (any, error) {
	if reflect.TypeOf(k.v).AssignableTo(typeDesc) {
		return k.v, nil
	}
	if k.t.str != nil && typeDesc.Kind() == reflect.String {
		return k.t.str(k.v), nil
	}
	return nil, fmt.Errorf("type conversion error from '%s' to '%v'", k.t.TypeName(), typeDesc)
}

// ConvertToType converts to the value's own type, type or (where the type
// has one) string.
func (k kubeValue[T]) ConvertToType(typeVal ref.Type) ref.Val {
	switch {
	case typeVal.TypeName() == k.t.TypeName():
		return k
	case typeVal == types.TypeType:
		return k.t.Type
	case typeVal == types.StringType && k.t.str != nil:
		return types.String(k.t.str(k.v))
	}
	return types.NewErr("type conversion error from '%s' to '%s'", k.t.TypeName(), typeVal)
}

// Equal compares values of the same type.
func (k kubeValue[T]) Equal(other ref.Val) ref.Val {
	o, ok := other.(kubeValue[T])
	if !ok || o.t != k.t {
		return types.MaybeNoSuchOverloadErr(other)
	}
	return types.Bool(k.t.equal(k.v, o.v))
}

// Type is the value's CEL type.
func (k kubeValue[T]) Type() ref.Type { return k.t.Type }

// Value is the Go value.
func (k kubeValue[T]) Value() any { return k.v }

var (
	urlType = &kubeType[*url.URL]{Type: cel.ObjectType("kubernetes.URL"),
		equal: func(a, b *url.URL) bool { return a.String() == b.String() }}
	ipType = &kubeType[netip.Addr]{Type: cel.OpaqueType("net.IP"),
		equal: func(a, b netip.Addr) bool { return a == b }, str: netip.Addr.String}
	cidrType = &kubeType[netip.Prefix]{Type: cel.OpaqueType("net.CIDR"),
		equal: func(a, b netip.Prefix) bool { return a == b }, str: netip.Prefix.String}
	quantityType = &kubeType[*resource.Quantity]{Type: cel.ObjectType("kubernetes.Quantity"),
		equal: func(a, b *resource.Quantity) bool { return a.Equal(*b) }}
	formatType = &kubeType[*namedFormat]{Type: cel.ObjectType("kubernetes.NamedFormat"),
		equal: func(a, b *namedFormat) bool { return a == b }}
)

// arg1 adapts a function of one T to a CEL unary binding.
func arg1[T any](f func(T) ref.Val) cel.OverloadOpt {
	return cel.UnaryBinding(func(v ref.Val) ref.Val {
		x, ok := v.Value().(T)
		if !ok {
			return types.MaybeNoSuchOverloadErr(v)
		}
		return f(x)
	})
}

// arg2 adapts a function of a T and a U to a CEL binary binding.
func arg2[T, U any](f func(T, U) ref.Val) cel.OverloadOpt {
	return cel.BinaryBinding(func(a, b ref.Val) ref.Val {
		x, ok := a.Value().(T)
		if !ok {
			return types.MaybeNoSuchOverloadErr(a)
		}
		y, ok := b.Value().(U)
		if !ok {
			return types.MaybeNoSuchOverloadErr(b)
		}
		return f(x, y)
	})
}

// kubeLibrary is the Kubernetes libraries as one cel.Library.
type kubeLibrary struct {
	compile []cel.EnvOption
	program []cel.ProgramOption
}

// kubeLibraries is the Kubernetes libraries' environment option. (Built
// by a function, not by kubeLibrary's methods, so that Go initializes the
// types it refers to before an environment built at package
// initialization.)
func kubeLibraries() cel.EnvOption {
	lib := kubeLibrary{compile: []cel.EnvOption{cel.Types(ipType.Type, cidrType.Type)},
		program: []cel.ProgramOption{cel.OptimizeRegex(finder(find).optimization("find"), finder(findAll).optimization("findAll"))}}
	for _, fns := range [][]cel.EnvOption{urlFunctions(), ipFunctions(), cidrFunctions(), quantityFunctions(),
		formatFunctions(), regexFunctions(), listFunctions()} {
		lib.compile = append(lib.compile, fns...)
	}
	return cel.Lib(lib)
}

// LibraryName names the library, once per environment.
func (kubeLibrary) LibraryName() string { return "watchcache.kubernetes" }

// CompileOptions declares the libraries' types and functions.
func (l kubeLibrary) CompileOptions() []cel.EnvOption { return l.compile }

// ProgramOptions compiles the constant patterns of find and findAll once.
func (l kubeLibrary) ProgramOptions() []cel.ProgramOption { return l.program }

// URLs: url(s) parses an absolute URI or absolute path (as url's
// ParseRequestURI, then Parse for the parts), isURL(s) says whether it
// would.
func urlFunctions() []cel.EnvOption {
	str := func(name string, part func(*url.URL) string) cel.EnvOption {
		return cel.Function(name, cel.MemberOverload("url_"+name, []*cel.Type{urlType.Type}, cel.StringType,
			arg1(func(u *url.URL) ref.Val { return types.String(part(u)) })))
	}
	return []cel.EnvOption{
		cel.Function("url", cel.Overload("string_to_url", []*cel.Type{cel.StringType}, urlType.Type, arg1(func(s string) ref.Val {
			if _, err := url.ParseRequestURI(s); err != nil {
				return types.NewErr("URL parse error during conversion from string: %v", err)
			}
			u, err := url.Parse(s)
			if err != nil {
				return types.NewErr("URL parse error during conversion from string: %v", err)
			}
			return urlType.of(u)
		}))),
		cel.Function("isURL", cel.Overload("is_url_string", []*cel.Type{cel.StringType}, cel.BoolType, arg1(func(s string) ref.Val {
			_, err := url.ParseRequestURI(s)
			return types.Bool(err == nil)
		}))),
		str("getScheme", func(u *url.URL) string { return u.Scheme }),
		str("getHost", func(u *url.URL) string { return u.Host }),
		str("getHostname", (*url.URL).Hostname),
		str("getPort", (*url.URL).Port),
		str("getEscapedPath", (*url.URL).EscapedPath),
		cel.Function("getQuery", cel.MemberOverload("url_get_query", []*cel.Type{urlType.Type},
			cel.MapType(cel.StringType, cel.ListType(cel.StringType)), arg1(func(u *url.URL) ref.Val {
				query := map[ref.Val]ref.Val{}
				for k, v := range u.Query() {
					query[types.String(k)] = types.NewStringList(types.DefaultTypeAdapter, v)
				}
				return types.NewRefValMap(types.DefaultTypeAdapter, query)
			}))),
	}
}

// parseIP parses an IPv4 or IPv6 address without zone, not IPv4-mapped.
func parseIP(s string) (netip.Addr, error) {
	addr, err := netip.ParseAddr(s)
	switch {
	case err != nil:
		return netip.Addr{}, fmt.Errorf("IP Address %q parse error during conversion from string: %v", s, err)
	case addr.Zone() != "":
		return netip.Addr{}, fmt.Errorf("IP address %q with zone value is not allowed", s)
	case addr.Is4In6():
		return netip.Addr{}, fmt.Errorf("IPv4-mapped IPv6 address %q is not allowed", s)
	}
	return addr, nil
}

// parseCIDR parses a prefix (host bits allowed), not IPv4-mapped.
func parseCIDR(s string) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("network address parse error during conversion from string: %v", err)
	}
	if p.Addr().Is4In6() {
		return netip.Prefix{}, fmt.Errorf("IPv4-mapped IPv6 address %q is not allowed", s)
	}
	return p, nil
}

func ipFunctions() []cel.EnvOption {
	test := func(name string, f func(netip.Addr) bool) cel.EnvOption {
		return cel.Function(name, cel.MemberOverload("ip_"+name, []*cel.Type{ipType.Type}, cel.BoolType,
			arg1(func(a netip.Addr) ref.Val { return types.Bool(f(a)) })))
	}
	return []cel.EnvOption{
		cel.Function("ip", cel.Overload("string_to_ip", []*cel.Type{cel.StringType}, ipType.Type, arg1(stringToIP))),
		cel.Function("isIP", cel.Overload("is_ip", []*cel.Type{cel.StringType}, cel.BoolType, arg1(func(s string) ref.Val {
			_, err := parseIP(s)
			return types.Bool(err == nil)
		}))),
		cel.Function("ip.isCanonical", cel.Overload("ip_is_canonical", []*cel.Type{cel.StringType}, cel.BoolType,
			arg1(func(s string) ref.Val {
				a, err := parseIP(s)
				if err != nil {
					return types.NewErr("%v", err)
				}
				return types.Bool(a.String() == s)
			}))),
		cel.Function("family", cel.MemberOverload("ip_family", []*cel.Type{ipType.Type}, cel.IntType, arg1(func(a netip.Addr) ref.Val {
			if a.Is4() {
				return types.Int(4)
			}
			return types.Int(6)
		}))),
		test("isUnspecified", netip.Addr.IsUnspecified),
		test("isLoopback", netip.Addr.IsLoopback),
		test("isLinkLocalMulticast", netip.Addr.IsLinkLocalMulticast),
		test("isLinkLocalUnicast", netip.Addr.IsLinkLocalUnicast),
		test("isGlobalUnicast", netip.Addr.IsGlobalUnicast),
		cel.Function("string",
			cel.Overload("ip_to_string", []*cel.Type{ipType.Type}, cel.StringType,
				arg1(func(a netip.Addr) ref.Val { return types.String(a.String()) })),
			cel.Overload("cidr_to_string", []*cel.Type{cidrType.Type}, cel.StringType,
				arg1(func(p netip.Prefix) ref.Val { return types.String(p.String()) }))),
	}
}

func stringToIP(s string) ref.Val {
	a, err := parseIP(s)
	if err != nil {
		return types.NewErr("%v", err)
	}
	return ipType.of(a)
}

// containsCIDR says whether p holds all of q.
func containsCIDR(p, q netip.Prefix) ref.Val {
	return types.Bool(p.Overlaps(q) && p.Bits() <= q.Bits())
}

func cidrFunctions() []cel.EnvOption {
	containsIP := func(p netip.Prefix, a netip.Addr) ref.Val { return types.Bool(p.Contains(a)) }
	return []cel.EnvOption{
		cel.Function("cidr", cel.Overload("string_to_cidr", []*cel.Type{cel.StringType}, cidrType.Type, arg1(func(s string) ref.Val {
			p, err := parseCIDR(s)
			if err != nil {
				return types.NewErr("network address parse error during conversion from string: %v", err)
			}
			return cidrType.of(p)
		}))),
		cel.Function("isCIDR", cel.Overload("is_cidr", []*cel.Type{cel.StringType}, cel.BoolType, arg1(func(s string) ref.Val {
			_, err := parseCIDR(s)
			return types.Bool(err == nil)
		}))),
		cel.Function("containsIP",
			cel.MemberOverload("cidr_contains_ip_string", []*cel.Type{cidrType.Type, cel.StringType}, cel.BoolType,
				arg2(func(p netip.Prefix, s string) ref.Val {
					a, err := parseIP(s)
					if err != nil {
						return types.NewErr("%v", err)
					}
					return containsIP(p, a)
				})),
			cel.MemberOverload("cidr_contains_ip_ip", []*cel.Type{cidrType.Type, ipType.Type}, cel.BoolType, arg2(containsIP))),
		cel.Function("containsCIDR",
			cel.MemberOverload("cidr_contains_cidr_string", []*cel.Type{cidrType.Type, cel.StringType}, cel.BoolType,
				arg2(func(p netip.Prefix, s string) ref.Val {
					q, err := parseCIDR(s)
					if err != nil {
						return types.NewErr("network address parse error during conversion from string: %v", err)
					}
					return containsCIDR(p, q)
				})),
			cel.MemberOverload("cidr_contains_cidr", []*cel.Type{cidrType.Type, cidrType.Type}, cel.BoolType, arg2(containsCIDR))),
		cel.Function("ip", cel.MemberOverload("cidr_ip", []*cel.Type{cidrType.Type}, ipType.Type,
			arg1(func(p netip.Prefix) ref.Val { return ipType.of(p.Addr()) }))),
		cel.Function("prefixLength", cel.MemberOverload("cidr_prefix_length", []*cel.Type{cidrType.Type}, cel.IntType,
			arg1(func(p netip.Prefix) ref.Val { return types.Int(p.Bits()) }))),
		cel.Function("masked", cel.MemberOverload("cidr_masked", []*cel.Type{cidrType.Type}, cidrType.Type,
			arg1(func(p netip.Prefix) ref.Val { return cidrType.of(p.Masked()) }))),
	}
}

// Quantities: quantity(s) parses a resource.Quantity, isQuantity(s) says
// whether it would; quantities compare, add and subtract (quantities or
// integers) and convert to numbers.
func quantityFunctions() []cel.EnvOption {
	q := quantityType.Type
	cmp := func(name string, t *cel.Type, result func(int) ref.Val) cel.EnvOption {
		return cel.Function(name, cel.MemberOverload("quantity_"+name, []*cel.Type{q, q}, t,
			arg2(func(a, b *resource.Quantity) ref.Val { return result(a.Cmp(*b)) })))
	}
	// arith is add or sub, of a quantity or an integer.
	arith := func(name string, op func(a *resource.Quantity, b resource.Quantity)) cel.EnvOption {
		apply := func(a *resource.Quantity, b resource.Quantity) ref.Val {
			out := a.DeepCopy()
			op(&out, b)
			return quantityType.of(&out)
		}
		return cel.Function(name,
			cel.MemberOverload("quantity_"+name, []*cel.Type{q, q}, q,
				arg2(func(a, b *resource.Quantity) ref.Val { return apply(a, *b) })),
			cel.MemberOverload("quantity_"+name+"_int", []*cel.Type{q, cel.IntType}, q,
				arg2(func(a *resource.Quantity, b int64) ref.Val {
					return apply(a, *resource.NewQuantity(b, resource.DecimalExponent))
				})))
	}
	return []cel.EnvOption{
		cel.Function("quantity", cel.Overload("string_to_quantity", []*cel.Type{cel.StringType}, q, arg1(func(s string) ref.Val {
			v, err := resource.ParseQuantity(s)
			if err != nil {
				return types.WrapErr(err)
			}
			return quantityType.of(&v)
		}))),
		cel.Function("isQuantity", cel.Overload("is_quantity_string", []*cel.Type{cel.StringType}, cel.BoolType, arg1(func(s string) ref.Val {
			_, err := resource.ParseQuantity(s)
			return types.Bool(err == nil)
		}))),
		// sign is a global function in kube-apiserver: sign(q), not q.sign().
		cel.Function("sign", cel.Overload("quantity_sign", []*cel.Type{q}, cel.IntType,
			arg1(func(a *resource.Quantity) ref.Val { return types.Int(a.Sign()) }))),
		cmp("isGreaterThan", cel.BoolType, func(c int) ref.Val { return types.Bool(c > 0) }),
		cmp("isLessThan", cel.BoolType, func(c int) ref.Val { return types.Bool(c < 0) }),
		cmp("compareTo", cel.IntType, func(c int) ref.Val { return types.Int(c) }),
		cel.Function("asApproximateFloat", cel.MemberOverload("quantity_get_float", []*cel.Type{q}, cel.DoubleType,
			arg1(func(a *resource.Quantity) ref.Val { return types.Double(a.AsApproximateFloat64()) }))),
		cel.Function("asInteger", cel.MemberOverload("quantity_get_int", []*cel.Type{q}, cel.IntType, arg1(func(a *resource.Quantity) ref.Val {
			v, ok := a.AsInt64()
			if !ok {
				return types.NewErr("cannot convert value to integer")
			}
			return types.Int(v)
		}))),
		cel.Function("isInteger", cel.MemberOverload("quantity_is_integer", []*cel.Type{q}, cel.BoolType, arg1(func(a *resource.Quantity) ref.Val {
			_, ok := a.AsInt64()
			return types.Bool(ok)
		}))),
		arith("add", (*resource.Quantity).Add),
		arith("sub", (*resource.Quantity).Sub),
	}
}

// namedFormat is a string format of the format library.
type namedFormat struct {
	name     string
	validate func(string) []string // the reasons a string is not of the format
}

// strfmtFormat is a format checked by kube-openapi's strfmt registry.
func strfmtFormat(name, format, reason string) *namedFormat {
	return &namedFormat{name, func(s string) []string {
		if !strfmt.Default.Validates(format, s) {
			return []string{reason}
		}
		return nil
	}}
}

// formats are the named formats, by their names in format.named(name) and
// format.<name>().
var formats = map[string]*namedFormat{
	"dns1123Label":           {"DNS1123Label", func(s string) []string { return apivalidation.NameIsDNSLabel(s, false) }},
	"dns1123Subdomain":       {"DNS1123Subdomain", func(s string) []string { return apivalidation.NameIsDNSSubdomain(s, false) }},
	"dns1035Label":           {"DNS1035Label", func(s string) []string { return apivalidation.NameIsDNS1035Label(s, false) }},
	"qualifiedName":          {"QualifiedName", validation.IsQualifiedName},
	"dns1123LabelPrefix":     {"DNS1123LabelPrefix", func(s string) []string { return apivalidation.NameIsDNSLabel(s, true) }},
	"dns1123SubdomainPrefix": {"DNS1123SubdomainPrefix", func(s string) []string { return apivalidation.NameIsDNSSubdomain(s, true) }},
	"dns1035LabelPrefix":     {"DNS1035LabelPrefix", func(s string) []string { return apivalidation.NameIsDNS1035Label(s, true) }},
	"labelValue":             {"LabelValue", validation.IsValidLabelValue},
	"uri": {"URI", func(s string) []string {
		if _, err := url.ParseRequestURI(s); err != nil {
			return []string{err.Error()}
		}
		return nil
	}},
	"uuid":     strfmtFormat("uuid", "uuid", "does not match the UUID format"),
	"byte":     strfmtFormat("byte", "byte", "invalid base64"),
	"date":     strfmtFormat("date", "date", "invalid date"),
	"datetime": strfmtFormat("datetime", "datetime", "invalid datetime"),
}

// Formats: format.named(name) is the optional format of that name,
// format.<name>() the format itself, and <format>.validate(s) optionally
// the reasons s is not of the format (none if it is).
func formatFunctions() []cel.EnvOption {
	opts := []cel.EnvOption{
		cel.Function("format.named", cel.Overload("format-named", []*cel.Type{cel.StringType}, cel.OptionalType(formatType.Type),
			arg1(func(name string) ref.Val {
				if f := formats[name]; f != nil {
					return types.OptionalOf(formatType.of(f))
				}
				return types.OptionalNone
			}))),
		cel.Function("validate", cel.MemberOverload("format-validate", []*cel.Type{formatType.Type, cel.StringType},
			cel.OptionalType(cel.ListType(cel.StringType)), arg2(func(f *namedFormat, s string) ref.Val {
				if reasons := f.validate(s); len(reasons) > 0 {
					return types.OptionalOf(types.NewStringList(types.DefaultTypeAdapter, reasons))
				}
				return types.OptionalNone
			}))),
	}
	for name, f := range formats {
		v := formatType.of(f)
		opts = append(opts, cel.Function("format."+name, cel.Overload("format."+name, nil, formatType.Type,
			cel.FunctionBinding(func(...ref.Val) ref.Val { return v }))))
	}
	return opts
}
