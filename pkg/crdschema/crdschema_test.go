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
		{"two rules of one node", `{"min":300,"max":200}`, "", "spec: Invalid value: \"object\": min must not exceed max\nspec.max: Forbidden: max is too large: at most 100"},
		{"a list's items", `{"min":1,"max":2,"tags":["ok","toolong"]}`, "", `spec.tags[1]: Invalid value: "toolong": failed rule: self.size() < 4`},
		{"transition rule skipped on create", `{"min":1,"max":2,"owner":"a"}`, "", ""},
		{"transition rule kept", `{"min":1,"max":2,"owner":"a"}`, `{"owner":"a"}`, ""},
		{"transition rule broken", `{"min":1,"max":2,"owner":"b"}`, `{"owner":"a"}`, `spec.owner: Invalid value: "b": owner is immutable`},
		{"schema errors first", `{"min":"x","max":2}`, "", `spec.min: Invalid value: "string": spec.min in body must be of type integer: "string"`},
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
