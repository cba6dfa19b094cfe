package e2e

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/json"
	"k8s.io/client-go/dynamic"
)

// fixturesCRD has the schema features whose errors kube-apiserver reports
// beyond plain OpenAPI validation: list types, int-or-string, embedded
// resources, and a validation rule.
const fixturesCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: fixtures.faults.example.net}
spec:
  group: faults.example.net
  scope: Namespaced
  names: {plural: fixtures, kind: Fixture}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            x-kubernetes-validations:
            - {rule: "self.min <= self.max", message: "min must not exceed max"}
            properties:
              min: {type: integer}
              max: {type: integer}
              size: {type: integer}
              tags: {type: array, x-kubernetes-list-type: set, items: {type: string}}
              ports:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [name]
                items: {type: object, required: [name], properties: {name: {type: string}, port: {type: integer}}}
              port: {x-kubernetes-int-or-string: true}
              template:
                type: object
                x-kubernetes-embedded-resource: true
                properties: {spec: {type: object, properties: {a: {type: string}}}}
              loose: {type: object, x-kubernetes-embedded-resource: true, x-kubernetes-preserve-unknown-fields: true}
`

// faultyFixture has every fault of the test; the unknown fields of
// metadata are pruned, the others refused.
const faultyFixture = `{"apiVersion":"faults.example.net/v1","kind":"Fixture","metadata":{"name":"f1","unknownMeta":1},
"spec":{"min":5,"max":1,"size":"x","tags":["a","a"],"ports":[{"name":"x","port":1},{"name":"x","port":2}],"port":true,
"template":{"metadata":{"name":"t","bogus":1},"spec":{"a":"b"}},
"loose":{"apiVersion":"v1","kind":"K","metadata":{"name":"x","other":2}}}}`

// TestCustomResourceSchemaFaults sends kube-apiserver and the server the
// same invalid object; what kube-apiserver 1.37 answered is recorded here:
// the unknown metadata fields as warnings (Warn) or a 400 (Strict), and a
// 422 with a cause for each fault, the validation rules skipped with a
// notice. Also an object whose only fault is a duplicate set item is
// refused, the unknown metadata is not stored, and kubectl explain shows an
// embedded resource's apiVersion, kind and metadata.
func TestCustomResourceSchemaFaults(t *testing.T) {
	k := newKubectl(t, "crfaults")
	k.must("apply", "-f", k.file("crd.yaml", fixturesCRD))
	t.Cleanup(func() { k.run("delete", "crd", "fixtures.faults.example.net", "--wait=false") })
	waitFor(t, "the CRD to be established", func() bool {
		out, _, _ := k.run("get", "crd", "fixtures.faults.example.net", "-o", `jsonpath={.status.conditions[?(@.type=="Established")].status}`)
		return out == "True"
	})

	cfg := cgConfig(nil)
	warnings := &warningRecorder{}
	cfg.WarningHandler = warnings
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	fixtures := dyn.Resource(schema.GroupVersionResource{Group: "faults.example.net", Version: "v1", Resource: "fixtures"}).Namespace(k.ns)
	create := func(obj, fieldValidation string) (*unstructured.Unstructured, error) {
		var u unstructured.Unstructured
		if err := json.Unmarshal([]byte(obj), &u.Object); err != nil {
			t.Fatal(err)
		}
		return fixtures.Create(cgContext(t), &u, metav1.CreateOptions{FieldValidation: fieldValidation})
	}

	_, err = create(faultyFixture, "Strict")
	if want := `Fixture in version "v1" cannot be handled as a Fixture: strict decoding error: unknown field "metadata.unknownMeta", unknown field "spec.loose.metadata.other", unknown field "spec.template.metadata.bogus"`; !apierrors.IsBadRequest(err) || err.Error() != want {
		t.Errorf("Strict: %v\nwant %s", err, want)
	}

	_, err = create(faultyFixture, "Warn")
	if got, want := warnings.take(), []string{`unknown field "metadata.unknownMeta"`, `unknown field "spec.loose.metadata.other"`, `unknown field "spec.template.metadata.bogus"`}; !slices.Equal(got, want) {
		t.Errorf("warnings %q, want %q", got, want)
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) || !apierrors.IsInvalid(err) || status.Status().Details == nil {
		t.Fatalf("Warn: %v, want 422", err)
	}
	var causes []string
	for _, c := range status.Status().Details.Causes {
		causes = append(causes, fmt.Sprintf("%s %s: %s", c.Type, c.Field, c.Message))
	}
	// kube-apiserver gives the schema's own errors in no fixed order.
	slices.Sort(causes[:2])
	want := []string{
		`FieldValueTypeInvalid spec.port: Invalid value: "boolean": spec.port in body must be of type integer,string: "boolean"`,
		`FieldValueTypeInvalid spec.size: Invalid value: "string": spec.size in body must be of type integer: "string"`,
		`FieldValueRequired spec.template.apiVersion: Required value`,
		`FieldValueRequired spec.template.kind: Required value`,
		`FieldValueDuplicate spec.tags[1]: Duplicate value: "a"`,
		`FieldValueDuplicate spec.ports[1]: Duplicate value: {"name":"x"}`,
		`FieldValueInvalid <nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation`,
	}
	// The list types' errors come in the order of spec's fields, which
	// kube-apiserver does not fix either.
	if len(causes) == len(want) && causes[4] != want[4] {
		causes[4], causes[5] = causes[5], causes[4]
	}
	if !slices.Equal(causes, want) {
		t.Errorf("causes:\n%s\nwant\n%s", strings.Join(causes, "\n"), strings.Join(want, "\n"))
	}

	if _, err := create(`{"apiVersion":"faults.example.net/v1","kind":"Fixture","metadata":{"name":"dup"},"spec":{"min":1,"max":2,"tags":["a","b","a"]}}`, ""); !apierrors.IsInvalid(err) ||
		!strings.HasSuffix(err.Error(), `is invalid: spec.tags[2]: Duplicate value: "a"`) {
		t.Errorf("duplicate set items: %v", err)
	}

	created, err := create(`{"apiVersion":"faults.example.net/v1","kind":"Fixture","metadata":{"name":"f2","unknownMeta":1},
"spec":{"min":1,"max":2,"port":"http","template":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"t","labels":{},"bogus":1}}}}`, "Ignore")
	if err != nil {
		t.Fatal(err)
	}
	meta, _ := json.Marshal(created.Object["metadata"])
	template, _ := json.Marshal(created.Object["spec"].(map[string]any)["template"])
	if strings.Contains(string(meta), "unknownMeta") || string(template) != `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"t"}}` {
		t.Errorf("stored metadata %s, template %s", meta, template)
	}

	explained := k.must("explain", "fixtures.spec.template")
	for _, want := range []string{"apiVersion\t<string> -required-", "kind\t<string> -required-", "metadata\t<ObjectMeta>", "spec\t<Object>"} {
		if !strings.Contains(explained, want) {
			t.Errorf("explain fixtures.spec.template printed\n%s\nwant %q", explained, want)
		}
	}
}

// warningRecorder keeps the warnings of a client's answers.
type warningRecorder struct {
	mu       sync.Mutex
	messages []string
}

// HandleWarningHeader records a warning.
func (w *warningRecorder) HandleWarningHeader(code int, agent, message string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.messages = append(w.messages, message)
}

// take returns the warnings recorded and forgets them.
func (w *warningRecorder) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.messages
	w.messages = nil
	return out
}
