package e2e

import (
	"fmt"
	"strings"
	"testing"
)

// gadgetsCRD defines gadgets.example.org, a namespaced custom resource
// with a status subresource.
const gadgetsCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.example.org}
spec:
  group: example.org
  scope: Namespaced
  names: {plural: gadgets, kind: Gadget, shortNames: [gd]}
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
            properties:
              color: {type: string}
    subresources: {status: {}}
    additionalPrinterColumns:
    - {name: Color, type: string, jsonPath: .spec.color}
    - {name: Age, type: date, jsonPath: .metadata.creationTimestamp}
`

// TestCustomResourceDefinitions, through kubectl: a CRD applied is served
// at once (Established, its names accepted), its objects work as any
// resource's, a second CRD taking its kind (and list kind) is refused in
// its status, and
// deleting the CRD deletes its objects and stops serving it.
func TestCustomResourceDefinitions(t *testing.T) {
	k := newKubectl(t, "crd")
	k.must("apply", "-f", k.file("crd.yaml", gadgetsCRD))
	t.Cleanup(func() { k.run("delete", "crd", "gadgets.example.org", "--wait=false") })
	// (kubectl wait fails at once on an object with no conditions yet, with
	// kube-apiserver too: the conditions come from a controller.)
	waitFor(t, "the CRD to be established", func() bool {
		out, _, _ := k.run("get", "crd", "gadgets.example.org", "-o", `jsonpath={.status.conditions[?(@.type=="Established")].status}`)
		return out == "True"
	})
	if out := k.must("get", "crd", "gadgets.example.org", "-o", "jsonpath={.status.acceptedNames.kind} {.status.storedVersions} {.spec.names.listKind} {.spec.conversion.strategy}"); out != `Gadget ["v1"] GadgetList None` {
		t.Errorf("the CRD's status and defaults: %q", out)
	}

	k.must("apply", "-f", k.file("gadget.yaml", `{"apiVersion":"example.org/v1","kind":"Gadget","metadata":{"name":"g1"},"spec":{"color":"red"}}`))
	if out := k.must("get", "gd", "g1", "-o", "jsonpath={.spec.color} {.metadata.generation}"); out != "red 1" {
		t.Errorf("get gd g1: %q", out)
	}
	if lines := strings.Fields(k.must("get", "gadgets")); len(lines) != 6 || strings.Join(lines[:5], " ") != "NAME COLOR AGE g1 red" {
		t.Errorf("get gadgets printed %q", lines)
	}

	conflicting := strings.NewReplacer("gadgets.example.org", "gizmos.example.org", "plural: gadgets", "plural: gizmos", "shortNames: [gd]", "shortNames: [gz]").Replace(gadgetsCRD)
	k.must("apply", "-f", k.file("conflict.yaml", conflicting))
	t.Cleanup(func() { k.run("delete", "crd", "gizmos.example.org", "--wait=false") })
	waitFor(t, "the conflicting CRD's NamesAccepted condition", func() bool {
		out, _, _ := k.run("get", "crd", "gizmos.example.org", "-o", `jsonpath={.status.conditions[?(@.type=="NamesAccepted")].status}: {.status.conditions[?(@.type=="NamesAccepted")].message}`)
		return out == `False: "GadgetList" is already in use`
	})
	// (It would take the names once gadgets went, as in kube-apiserver.)
	k.must("delete", "crd", "gizmos.example.org")

	invalid := strings.Replace(gadgetsCRD, "name: gadgets.example.org", "name: wrong.example.org", 1)
	if msg := k.fail("apply", "-f", k.file("invalid.yaml", invalid)); !strings.Contains(msg, `metadata.name: Invalid value: "wrong.example.org": must be spec.names.plural+"."+spec.group`) {
		t.Errorf("an invalid CRD: %s", msg)
	}

	// A changed definition takes effect at once: a new printer column.
	k.must("apply", "-f", k.file("crd.yaml", strings.Replace(gadgetsCRD, "    - {name: Age,", "    - {name: Short, type: string, jsonPath: .metadata.name}\n    - {name: Age,", 1)))
	waitFor(t, "the new printer column", func() bool {
		out, _, _ := k.run("get", "gadgets")
		return strings.HasPrefix(out, "NAME") && strings.Contains(strings.SplitN(out, "\n", 2)[0], "SHORT")
	})

	k.must("delete", "crd", "gadgets.example.org", "--timeout=20s")
	// kubectl's cached discovery still knows gadgets: the server answers
	// 404 for them.
	if msg := k.fail("get", "gadgets"); !strings.Contains(msg, "the server could not find the requested resource") {
		t.Errorf("get gadgets after the CRD went: %s", msg)
	}
	// Its objects went first: defined again, it has none.
	k.must("apply", "-f", k.file("crd.yaml", gadgetsCRD))
	waitFor(t, "the CRD to be established again", func() bool {
		out, _, _ := k.run("get", "crd", "gadgets.example.org", "-o", `jsonpath={.status.conditions[?(@.type=="Established")].status}`)
		return out == "True"
	})
	if out, errOut, err := k.run("get", "gadgets", "-o", "name"); err != nil || strings.TrimSpace(out) != "" {
		t.Errorf("gadgets of the CRD defined again: %q %s %v", out, errOut, err)
	}
}

// thingsCRD defines things.example.net with a schema exercising
// pruning, defaults and validation.
const thingsCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: things.example.net}
spec:
  group: example.net
  scope: Namespaced
  names: {plural: things, kind: Thing}
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
            required: [size]
            properties:
              color: {type: string, default: blue, enum: [blue, red], description: The color of the thing.}
              size: {type: integer, minimum: 1}
              name: {type: string, maxLength: 5}
              free:
                type: object
                x-kubernetes-preserve-unknown-fields: true
`

// TestCustomResourceSchema, through kubectl: a custom resource's objects
// are defaulted, pruned (unknown fields dropped, or refused with
// fieldValidation Strict, which kubectl asks for) and validated by its
// schema, with kube-apiserver's 422 naming every failing field.
func TestCustomResourceSchema(t *testing.T) {
	k := newKubectl(t, "crschema")
	k.must("apply", "-f", k.file("crd.yaml", thingsCRD))
	t.Cleanup(func() { k.run("delete", "crd", "things.example.net", "--wait=false") })
	waitFor(t, "the CRD to be established", func() bool {
		out, _, _ := k.run("get", "crd", "things.example.net", "-o", `jsonpath={.status.conditions[?(@.type=="Established")].status}`)
		return out == "True"
	})

	// kubectl explain reads the schema from OpenAPI.
	if out := k.must("explain", "things.spec.color"); !strings.Contains(out, "The color of the thing.") || !strings.Contains(out, "FIELD: color <string>") {
		t.Errorf("explain things.spec.color printed:\n%s", out)
	}

	thing := `{"apiVersion":"example.net/v1","kind":"Thing","metadata":{"name":"%s"},"spec":{"size":2,"unknown":1,"free":{"anything":{"goes":true}}}}`
	msg := k.fail("create", "-f", k.file("strict.yaml", fmt.Sprintf(thing, "strict")))
	if !strings.Contains(msg, `unknown field "spec.unknown"`) {
		t.Errorf("create with an unknown field (Strict): %s", msg)
	}
	k.must("create", "--validate=false", "-f", k.file("pruned.yaml", fmt.Sprintf(thing, "pruned")))
	if out := k.must("get", "things", "pruned", "-o", "jsonpath={.spec}"); out != `{"color":"blue","free":{"anything":{"goes":true}},"size":2}` {
		t.Errorf("stored object (defaulted, pruned, preserved): %s", out)
	}

	bad := `{"apiVersion":"example.net/v1","kind":"Thing","metadata":{"name":"bad"},"spec":{"color":"green","size":0,"name":"toolong"}}`
	msg = k.fail("create", "-f", k.file("bad.yaml", bad))
	for _, want := range []string{
		`spec.color: Unsupported value: "green": supported values: "blue", "red"`,
		`spec.size: Invalid value: 0: spec.size in body should be greater than or equal to 1`,
		`spec.name: Too long: may not be more than 5 bytes`,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("invalid object: %s\nwant %s", msg, want)
		}
	}
	if msg := k.fail("create", "-f", k.file("missing.yaml", `{"apiVersion":"example.net/v1","kind":"Thing","metadata":{"name":"missing"},"spec":{}}`)); !strings.Contains(msg, "spec.size: Required value") {
		t.Errorf("object without a required field: %s", msg)
	}
}

// toolsCRD serves tools.example.org in two versions, v1beta1 deprecated,
// stored as v1.
const toolsCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: tools.example.org}
spec:
  group: example.org
  scope: Namespaced
  names: {plural: tools, kind: Tool}
  versions:
  - name: v1beta1
    served: true
    storage: false
    deprecated: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`

// TestCustomResourceVersions, through kubectl: an object written in one
// version is read in both (conversion None: only apiVersion differs), the
// preferred version is v1, and the deprecated version warns.
func TestCustomResourceVersions(t *testing.T) {
	k := newKubectl(t, "crdversions")
	k.must("apply", "-f", k.file("crd.yaml", toolsCRD))
	t.Cleanup(func() { k.run("delete", "crd", "tools.example.org", "--wait=false") })
	waitFor(t, "the CRD to be established", func() bool {
		out, _, _ := k.run("get", "crd", "tools.example.org", "-o", `jsonpath={.status.conditions[?(@.type=="Established")].status}`)
		return out == "True"
	})
	_, errOut, err := k.run("create", "-f", k.file("tool.yaml", `{"apiVersion":"example.org/v1beta1","kind":"Tool","metadata":{"name":"t1"},"spec":{"a":1}}`))
	if err != nil || !strings.Contains(errOut, "Warning: example.org/v1beta1 Tool is deprecated; use example.org/v1 Tool") {
		t.Fatalf("create in the deprecated version: %v\n%s", err, errOut)
	}
	for resource, want := range map[string]string{"tools": "example.org/v1", "tools.v1.example.org": "example.org/v1", "tools.v1beta1.example.org": "example.org/v1beta1"} {
		if out := k.must("get", resource, "t1", "-o", "jsonpath={.apiVersion} {.spec.a}"); out != want+" 1" {
			t.Errorf("get %s t1: %q, want %q", resource, out, want+" 1")
		}
	}
	if out := k.must("get", "crd", "tools.example.org", "-o", "jsonpath={.status.storedVersions}"); out != `["v1"]` {
		t.Errorf("storedVersions %s", out)
	}
}

// limitsCRD has CEL validation rules; the messages the test expects were
// recorded from kube-apiserver 1.37.
const limitsCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: limits.example.net}
spec:
  group: example.net
  scope: Namespaced
  names: {plural: limits, kind: Limit}
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
            - {rule: "self.max <= 100", messageExpression: "'max is too large: at most 100'", fieldPath: .max, reason: FieldValueForbidden}
            properties:
              min: {type: integer}
              max: {type: integer}
              owner:
                type: string
                x-kubernetes-validations:
                - {rule: "self == oldSelf", message: "owner is immutable"}
`

// TestCustomResourceValidationRules, through kubectl: x-kubernetes-validations
// rules (messages, messageExpression, fieldPath, reason, transition rules
// with oldSelf) hold on create and update; a rule that does not compile
// makes the CRD invalid.
func TestCustomResourceValidationRules(t *testing.T) {
	k := newKubectl(t, "cel")
	k.must("apply", "-f", k.file("crd.yaml", limitsCRD))
	t.Cleanup(func() { k.run("delete", "crd", "limits.example.net", "--wait=false") })
	waitFor(t, "the CRD to be established", func() bool {
		out, _, _ := k.run("get", "crd", "limits.example.net", "-o", `jsonpath={.status.conditions[?(@.type=="Established")].status}`)
		return out == "True"
	})
	limit := `{"apiVersion":"example.net/v1","kind":"Limit","metadata":{"name":"%s"},"spec":{"min":%d,"max":%d,"owner":"a"}}`
	if msg := k.fail("create", "-f", k.file("l1.yaml", fmt.Sprintf(limit, "l1", 5, 200))); !strings.Contains(msg, `The Limit "l1" is invalid: spec.max: Forbidden: max is too large: at most 100`) {
		t.Errorf("create breaking a rule: %s", msg)
	}
	if msg := k.fail("create", "-f", k.file("l3.yaml", fmt.Sprintf(limit, "l3", 5, 1))); !strings.Contains(msg, `spec: Invalid value: min must not exceed max`) {
		t.Errorf("create breaking a rule: %s", msg)
	}
	k.must("create", "-f", k.file("l2.yaml", fmt.Sprintf(limit, "l2", 1, 2)))
	if msg := k.fail("patch", "limit", "l2", "--type=merge", "-p", `{"spec":{"owner":"b"}}`); !strings.Contains(msg, `The Limit "l2" is invalid: spec.owner: Invalid value: "b": owner is immutable`) {
		t.Errorf("update breaking a transition rule: %s", msg)
	}
	k.must("patch", "limit", "l2", "--type=merge", "-p", `{"spec":{"max":3}}`)

	broken := strings.NewReplacer("self.min <= self.max", "self.min <=", "limits.example.net", "brokens.example.net",
		"plural: limits, kind: Limit", "plural: brokens, kind: Broken").Replace(limitsCRD)
	if msg := k.fail("apply", "-f", k.file("broken.yaml", broken)); !strings.Contains(msg,
		"spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Invalid value:") || !strings.Contains(msg, "compilation failed") {
		t.Errorf("a CRD with a rule that does not compile: %s", msg)
	}
}

// poolsCRD has status and scale subresources at paths of its own.
const poolsCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: pools.example.net}
spec:
  group: example.net
  scope: Namespaced
  names: {plural: pools, kind: Pool}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {size: {type: integer}}}
          status: {type: object, properties: {ready: {type: integer}, selector: {type: string}}}
    subresources:
      status: {}
      scale: {specReplicasPath: .spec.size, statusReplicasPath: .status.ready, labelSelectorPath: .status.selector}
`

// TestCustomResourceScale, through kubectl: a custom resource's scale
// subresource reads and writes the paths its definition gives.
func TestCustomResourceScale(t *testing.T) {
	k := newKubectl(t, "crscale")
	k.must("apply", "-f", k.file("crd.yaml", poolsCRD))
	t.Cleanup(func() { k.run("delete", "crd", "pools.example.net", "--wait=false") })
	waitFor(t, "the CRD to be established", func() bool {
		out, _, _ := k.run("get", "crd", "pools.example.net", "-o", `jsonpath={.status.conditions[?(@.type=="Established")].status}`)
		return out == "True"
	})
	k.must("create", "-f", k.file("pool.yaml", `{"apiVersion":"example.net/v1","kind":"Pool","metadata":{"name":"p"},"spec":{"size":2}}`))
	k.must("patch", "pool", "p", "--subresource=status", "--type=merge", "-p", `{"status":{"ready":2,"selector":"app=pool"}}`)
	k.must("scale", "pool", "p", "--replicas=5")
	if out := k.must("get", "pool", "p", "-o", "jsonpath={.spec.size} {.status.ready}"); out != "5 2" {
		t.Errorf("after kubectl scale: %q", out)
	}
	if out := k.must("get", "--raw", "/apis/example.net/v1/namespaces/"+k.ns+"/pools/p/scale"); !strings.Contains(out, `"replicas":5`) || !strings.Contains(out, `"selector":"app=pool"`) {
		t.Errorf("GET scale: %s", out)
	}
}

// TestCustomResourceRuleChecks: a CRD's rules are type-checked against its
// schema and their estimated costs limited when it is written, with
// kube-apiserver 1.37's 422s (recorded from it).
func TestCustomResourceRuleChecks(t *testing.T) {
	k := newKubectl(t, "celcheck")
	crd := func(plural, kind, properties string) string {
		return fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: %[1]s.check.example.net}
spec:
  group: check.example.net
  scope: Namespaced
  names: {plural: %[1]s, kind: %[2]s}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
%[3]s`, plural, kind, properties)
	}
	undefined := crd("undefineds", "Undefined", `            type: object
            x-kubernetes-validations:
            - rule: "self.z > 0"
            properties:
              x: {type: integer}
`)
	if msg := k.fail("create", "-f", k.file("undefined.yaml", undefined)); !strings.Contains(msg, `The CustomResourceDefinition "undefineds.check.example.net" is invalid: `+
		`spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Invalid value: {"Rule":"self.z \u003e 0","Message":"","MessageExpression":"","Reason":null,"FieldPath":"","OptionalOldSelf":null}: `+
		"compilation failed: ERROR: <input>:1:5: undefined field 'z'\n | self.z > 0\n | ....^") {
		t.Errorf("a rule on an undefined field: %s", msg)
	}
	costly := crd("costlies", "Costly", `            type: object
            properties:
              items:
                type: array
                items: {type: string}
                x-kubernetes-validations:
                - rule: "self.all(x, self.all(y, x != y || true))"
`)
	const hint = " (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"
	if msg := k.fail("create", "-f", k.file("costly.yaml", costly)); !strings.Contains(msg, `The CustomResourceDefinition "costlies.check.example.net" is invalid: 
* spec.validation.openAPIV3Schema.properties[spec].properties[items].x-kubernetes-validations[0].rule: Forbidden: estimated rule cost exceeds budget by factor of more than 100x`+hint+`
* spec.validation.openAPIV3Schema.properties[spec].properties[items].x-kubernetes-validations[0].rule: Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema
* spec.validation.openAPIV3Schema: Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of more than 100x`+hint) {
		t.Errorf("a rule of quadratic cost over an unbounded list: %s", msg)
	}
	// Bounded, the same rule is taken.
	bounded := strings.NewReplacer("costlies", "boundeds", "Costly", "Bounded", "items: {type: string}", "items: {type: string, maxLength: 10}\n                maxItems: 100").Replace(costly)
	k.must("create", "-f", k.file("bounded.yaml", bounded))
	t.Cleanup(func() { k.run("delete", "crd", "boundeds.check.example.net", "--wait=false") })
}
