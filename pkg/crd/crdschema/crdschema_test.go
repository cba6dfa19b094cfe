package crdschema

import (
	"encoding/json"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// limits is a schema with validation rules, as in e2e's CEL test (whose
// messages were recorded from kube-apiserver).
const limits = `{"type":"object","properties":{"spec":{"type":"object",
"x-kubernetes-validations":[{"rule":"self.min <= self.max","message":"min must not exceed max"},
{"rule":"self.max <= 100","messageExpression":"'max is too large: at most 100'","fieldPath":".max","reason":"FieldValueForbidden"}],
"properties":{"min":{"type":"integer"},"max":{"type":"integer","default":10},
"owner":{"type":"string","x-kubernetes-validations":[{"rule":"self == oldSelf","message":"owner is immutable"}]},
"tags":{"type":"array","items":{"type":"string","x-kubernetes-validations":[{"rule":"self.size() < 4"}]}}}}}}`

func newSchema(t *testing.T, schema string) *Schema {
	var props apiextensionsv1.JSONSchemaProps
	if err := json.Unmarshal([]byte(schema), &props); err != nil {
		t.Fatal(err)
	}
	s, err := New(&props)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func errorLines(errs field.ErrorList) string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Error())
	}
	return strings.Join(out, "\n")
}

func TestRules(t *testing.T) {
	s := newSchema(t, limits)
	obj := func(spec string) map[string]any {
		var m map[string]any
		json.Unmarshal([]byte(`{"spec":`+spec+`}`), &m)
		return normalize(m).(map[string]any)
	}
	for _, tc := range []struct {
		name     string
		obj, old string
		want     string
	}{
		{"valid", `{"min":1,"max":2}`, "", ""},
		{"two rules of one node", `{"min":300,"max":200}`, "", "spec: Invalid value: min must not exceed max\nspec.max: Forbidden: max is too large: at most 100"},
		{"a list's items", `{"min":1,"max":2,"tags":["ok","toolong"]}`, "", `spec.tags[1]: Invalid value: "toolong": failed rule: self.size() < 4`},
		{"transition rule skipped on create", `{"min":1,"max":2,"owner":"a"}`, "", ""},
		{"transition rule kept", `{"min":1,"max":2,"owner":"a"}`, `{"owner":"a"}`, ""},
		{"transition rule broken", `{"min":1,"max":2,"owner":"b"}`, `{"owner":"a"}`, `spec.owner: Invalid value: "b": owner is immutable`},
		{"rules skipped after a type error", `{"min":"x","max":2}`, "", `spec.min: Invalid value: "string": spec.min in body must be of type integer: "string"` + "\n" + notChecked},
	} {
		var old map[string]any
		if tc.old != "" {
			old = obj(tc.old)
		}
		if got := errorLines(s.Validate(obj(tc.obj), old)); got != tc.want {
			t.Errorf("%s: got\n%s\nwant\n%s", tc.name, got, tc.want)
		}
	}
}

// notChecked is the error kube-apiserver adds when it skips the rules.
const notChecked = "<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation"

// shapes has list types, an int-or-string and an embedded resource; the
// expected messages were recorded from kube-apiserver 1.37.
const shapes = `{"type":"object","properties":{"spec":{"type":"object",
"properties":{"size":{"type":"integer","minimum":1},
"tags":{"type":"array","x-kubernetes-list-type":"set","items":{"type":"string"}},
"ports":{"type":"array","x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["name"],
 "items":{"type":"object","required":["name"],"properties":{"name":{"type":"string"},"port":{"type":"integer"}}}},
"port":{"x-kubernetes-int-or-string":true},
"template":{"type":"object","x-kubernetes-embedded-resource":true,"properties":{"spec":{"type":"object","properties":{"a":{"type":"string"}}}}},
"loose":{"type":"object","x-kubernetes-embedded-resource":true,"x-kubernetes-preserve-unknown-fields":true}}}}}`

// withRule adds a validation rule to the spec of shapes.
var withRule = strings.Replace(shapes, `"spec":{"type":"object",`, `"spec":{"type":"object","x-kubernetes-validations":[{"rule":"!has(self.size) || self.size < 10","message":"size must be under 10","fieldPath":".size","reason":"FieldValueForbidden"}],`, 1)

func decodeSpec(t *testing.T, spec string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":`+spec+`}`), &m); err != nil {
		t.Fatal(err)
	}
	return normalize(m).(map[string]any)
}

// TestShapes checks list types, int-or-string and embedded resources, and
// which errors keep validation rules from running.
func TestShapes(t *testing.T) {
	for _, tc := range []struct {
		name, schema, obj, old, want string
	}{
		{"valid", shapes, `{"tags":["a","b"],"ports":[{"name":"x"},{"name":"y"}],"port":"http","template":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"}}}`, "", ""},
		{"an int-or-string's integer", shapes, `{"port":80}`, "", ""},
		{"an int-or-string of another type", shapes, `{"port":true}`, "",
			`spec.port: Invalid value: "boolean": spec.port in body must be of type integer,string: "boolean"`},
		{"duplicate set items", shapes, `{"tags":["a","b","a","a"]}`, "", `spec.tags[2]: Duplicate value: "a"`},
		{"duplicate map keys", shapes, `{"ports":[{"name":"x","port":1},{"name":"x","port":2}]}`, "", `spec.ports[1]: Duplicate value: {"name":"x"}`},
		{"duplicates an update keeps", shapes, `{"tags":["a","a","b"]}`, `{"tags":["a","a"]}`, ""},
		{"duplicates an update adds", shapes, `{"tags":["a","a"]}`, `{"tags":["a"]}`, `spec.tags[1]: Duplicate value: "a"`},
		{"an embedded resource without type", shapes, `{"template":{"spec":{}}}`, "",
			"spec.template.apiVersion: Required value\nspec.template.kind: Required value"},
		{"an embedded resource's bad type", shapes, `{"loose":{"apiVersion":"a/b/c","kind":"Bad_Kind"},"template":{"apiVersion":"","kind":""}}`, "",
			`spec.loose.apiVersion: Invalid value: "a/b/c": unexpected GroupVersion string: a/b/c` + "\n" +
				`spec.loose.kind: Invalid value: "Bad_Kind": may have mixed case, but should otherwise match: a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')` + "\n" +
				`spec.template.apiVersion: Invalid value: "": must not be empty` + "\n" +
				`spec.template.kind: Invalid value: "": must not be empty`},
		{"an embedded resource's metadata", shapes, `{"template":{"apiVersion":"v1","kind":"Pod","metadata":{"labels":{"-x":"y"},"ownerReferences":[{"apiVersion":"v1","kind":"K","name":"n"}]}}}`, "",
			`spec.template.metadata.labels: Invalid value: "-x": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')` + "\n" +
				`spec.template.metadata.ownerReferences[0].uid: Required value: must not be empty`},
		{"rules run", withRule, `{"size":20}`, "", `spec.size: Forbidden: size must be under 10`},
		{"rules run after an invalid value", withRule, `{"size":20,"tags":["a","a"]}`, "", `spec.tags[1]: Duplicate value: "a"` + "\n" + `spec.size: Forbidden: size must be under 10`},
		{"rules skipped after a missing field", withRule, `{"size":20,"template":{}}`, "", "spec.template.apiVersion: Required value\nspec.template.kind: Required value\n" + notChecked},
		{"rules skipped after a wrong type", withRule, `{"size":20,"port":1.5}`, "",
			`spec.port: Invalid value: "number": spec.port in body must be of type integer,string: "number"` + "\n" + notChecked},
		{"no notice without rules", shapes, `{"port":1.5}`, "",
			`spec.port: Invalid value: "number": spec.port in body must be of type integer,string: "number"`},
	} {
		var old map[string]any
		if tc.old != "" {
			old = decodeSpec(t, tc.old)
		}
		if got := errorLines(newSchema(t, tc.schema).Validate(decodeSpec(t, tc.obj), old)); got != tc.want {
			t.Errorf("%s: got\n%s\nwant\n%s", tc.name, got, tc.want)
		}
	}
}

func TestRuleCompileErrors(t *testing.T) {
	s := newSchema(t, strings.Replace(limits, "self.min <= self.max", "self.min <=", 1))
	errs := s.RuleErrors(field.NewPath("spec", "validation", "openAPIV3Schema"))
	if len(errs) != 1 || errs[0].Field != "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule" ||
		!strings.Contains(errs[0].Detail, "compilation failed") {
		t.Errorf("compile errors: %v", errs)
	}
}

func TestDefaultAndPrune(t *testing.T) {
	s := newSchema(t, limits)
	var obj map[string]any
	json.Unmarshal([]byte(`{"apiVersion":"v","kind":"k","metadata":{"name":"n"},"spec":{"min":1,"extra":true},"other":1}`), &obj)
	pruned := s.Prune(obj)
	s.Default(obj)
	spec := obj["spec"].(map[string]any)
	if _, ok := obj["other"]; ok || spec["extra"] != nil || spec["max"] != int64(10) || strings.Join(pruned, ",") != "other,spec.extra" {
		t.Errorf("after prune and default: %v, pruned %v", obj, pruned)
	}
}

// normalize turns JSON numbers into int64 where whole, as objects hold them.
func normalize(v any) any { return toInt64s(v) }

// TestRuleTypeAndCostErrors: rules are type-checked against their node's
// schema and their estimated costs checked, with kube-apiserver 1.37's
// errors (recorded from it, paths and messages).
func TestRuleTypeAndCostErrors(t *testing.T) {
	const budget = " (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"
	const root = "spec.validation.openAPIV3Schema"
	totalErr := root + ": Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of more than 100x" + budget
	for _, tc := range []struct{ name, schema, want string }{
		{"undefined field", `{"type":"object","properties":{"spec":{"type":"object","x-kubernetes-validations":[{"rule":"self.z > 0"}],"properties":{"x":{"type":"integer"}}}}}`,
			root + `.properties[spec].x-kubernetes-validations[0].rule: Invalid value: {"Rule":"self.z \u003e 0","Message":"","MessageExpression":"","Reason":null,"FieldPath":"","OptionalOldSelf":null}: compilation failed: ERROR: <input>:1:5: undefined field 'z'` +
				"\n | self.z > 0\n | ....^"},
		{"preserved unknown fields are not fields", `{"type":"object","properties":{"spec":{"type":"object","x-kubernetes-preserve-unknown-fields":true,"x-kubernetes-validations":[{"rule":"self.foo == 1"}]}}}`,
			root + `.properties[spec].x-kubernetes-validations[0].rule: Invalid value: {"Rule":"self.foo == 1","Message":"","MessageExpression":"","Reason":null,"FieldPath":"","OptionalOldSelf":null}: compilation failed: ERROR: <input>:1:5: undefined field 'foo'` +
				"\n | self.foo == 1\n | ....^"},
		{"not a bool", `{"type":"object","properties":{"n":{"type":"integer","x-kubernetes-validations":[{"rule":"self + 1"}]}}}`,
			root + `.properties[n].x-kubernetes-validations[0].rule: Invalid value: {"Rule":"self + 1","Message":"","MessageExpression":"","Reason":null,"FieldPath":"","OptionalOldSelf":null}: cel expression must evaluate to a bool`},
		{"date-time is a timestamp; messageExpression a string; children first",
			`{"type":"object","x-kubernetes-validations":[{"rule":"self.metadata.name.size() > 2 && self.spec.x == 1","messageExpression":"1"}],"properties":{"spec":{"type":"object","properties":{"x":{"type":"integer"},"my-field":{"type":"string"},"t":{"type":"string","format":"date-time","x-kubernetes-validations":[{"rule":"self > timestamp('2020-01-01T00:00:00Z')"}]}},"x-kubernetes-validations":[{"rule":"self.my__dash__field == 'a'"},{"rule":"has(self.t) && self.t == 'x'"}]}}}`,
			root + `.properties[spec].x-kubernetes-validations[1].rule: Invalid value: {"Rule":"has(self.t) \u0026\u0026 self.t == 'x'","Message":"","MessageExpression":"","Reason":null,"FieldPath":"","OptionalOldSelf":null}: compilation failed: ERROR: <input>:1:23: found no matching overload for '_==_' applied to '(timestamp, string)'` +
				"\n | has(self.t) && self.t == 'x'\n | ......................^\n" +
				root + `.x-kubernetes-validations[0].messageExpression: Invalid value: {"Rule":"self.metadata.name.size() \u003e 2 \u0026\u0026 self.spec.x == 1","Message":"","MessageExpression":"1","Reason":null,"FieldPath":"","OptionalOldSelf":null}: messageExpression must evaluate to a string`},
		{"bounded lists within budget", `{"type":"object","properties":{"spec":{"type":"object","properties":{"items":{"type":"array","items":{"type":"string","maxLength":10},"maxItems":100,"x-kubernetes-validations":[{"rule":"self.all(x, self.exists(y, x == y))"}]}}}}}`, ""},
		{"an unbounded list's rule over itself", `{"type":"object","properties":{"spec":{"type":"object","properties":{"items":{"type":"array","items":{"type":"string"},"x-kubernetes-validations":[{"rule":"self.all(x, self.all(y, x != y || true))"}]}}}}}`,
			root + ".properties[spec].properties[items].x-kubernetes-validations[0].rule: Forbidden: estimated rule cost exceeds budget by factor of more than 100x" + budget + "\n" +
				root + ".properties[spec].properties[items].x-kubernetes-validations[0].rule: Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema\n" + totalErr},
		{"rules under unbounded lists; map keys", `{"type":"object","properties":{"spec":{"type":"object","properties":{"m":{"type":"object","additionalProperties":{"type":"string"},"x-kubernetes-validations":[{"rule":"self.all(k, self[k].contains(k))"}]},"items":{"type":"array","items":{"type":"string"},"x-kubernetes-validations":[{"rule":"self.map(x, x + 'a').all(y, y.size() > 1)"}]}}}}}`,
			root + ".properties[spec].properties[items].x-kubernetes-validations[0].rule: Forbidden: estimated rule cost exceeds budget by factor of more than 100x" + budget + "\n" +
				root + ".properties[spec].properties[items].x-kubernetes-validations[0].rule: Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema\n" +
				root + ".properties[spec].properties[m].x-kubernetes-validations[0].rule: Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema\n" + totalErr},
		{"a rule of every item of an unbounded list", `{"type":"object","properties":{"spec":{"type":"object","properties":{"items":{"type":"array","items":{"type":"object","properties":{"name":{"type":"string"}},"x-kubernetes-validations":[{"rule":"self.name.lowerAscii().matches('^a.*')","messageExpression":"self.name + ' bad'"}]}}}}}}`,
			root + ".properties[spec].properties[items].items.x-kubernetes-validations[0].rule: Forbidden: estimated rule cost exceeds budget by factor of more than 100x" + budget + "\n" +
				root + ".properties[spec].properties[items].items.x-kubernetes-validations[0].rule: Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema\n" + totalErr},
	} {
		got := errorLines(newSchema(t, tc.schema).RuleErrors(field.NewPath("spec", "validation", "openAPIV3Schema")))
		if got != tc.want {
			t.Errorf("%s: got\n%s\nwant\n%s", tc.name, got, tc.want)
		}
	}
}
