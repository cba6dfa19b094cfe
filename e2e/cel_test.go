package e2e

import (
	"strings"
	"testing"
)

// probesCRD has CEL rules using the Kubernetes libraries (URLs,
// quantities, regular expressions, lists) and rules failing in each of
// kube-apiserver's ways.
const probesCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: probes.cel.example.com}
spec:
  group: cel.example.com
  names: {kind: Probe, plural: probes}
  scope: Namespaced
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
            - {rule: "!has(self.url) || isURL(self.url)", message: "url must be a URL"}
            - {rule: "!has(self.mem) || quantity(self.mem).isLessThan(quantity('1Gi'))", message: "mem too large"}
            - {rule: "!has(self.e) || self.e == 'x' || 1/0 == 1"}
            - {rule: "!has(self.tags) || self.tags.isSorted()", reason: FieldValueDuplicate, message: "dup"}
            properties:
              min: {type: integer}
              max: {type: integer}
              url: {type: string}
              mem: {type: string}
              e: {type: string}
              tags: {type: array, maxItems: 10, items: {type: string, maxLength: 10}, x-kubernetes-validations: [{rule: "self.size() < 3"}]}
              s: {type: string, x-kubernetes-validations: [{rule: "self.size() < 3"}, {rule: "self.find('[0-9]+') == ''"}]}
`

// TestCustomResourceCELLibraries, through kubectl: a CRD whose rules use
// kube-apiserver's CEL libraries is accepted, its rules hold, and their
// failures read as kube-apiserver 1.37 words them (no value shown for an
// object or array, the schema's type for an evaluation error).
func TestCustomResourceCELLibraries(t *testing.T) {
	k := newKubectl(t, "cellib")
	k.must("apply", "-f", k.file("crd.yaml", probesCRD))
	t.Cleanup(func() { k.run("delete", "crd", "probes.cel.example.com", "--wait=false") })
	waitFor(t, "the CRD to be established", func() bool {
		out, _, _ := k.run("get", "crd", "probes.cel.example.com", "-o", `jsonpath={.status.conditions[?(@.type=="Established")].status}`)
		return out == "True"
	})
	k.must("apply", "-f", k.file("ok.yaml", `{"apiVersion":"cel.example.com/v1","kind":"Probe","metadata":{"name":"ok"},
"spec":{"min":1,"max":2,"url":"https://example.com/x","mem":"512Mi","e":"x","tags":["a","b"],"s":"ab"}}`))
	msg := k.fail("apply", "-f", k.file("bad.yaml", `{"apiVersion":"cel.example.com/v1","kind":"Probe","metadata":{"name":"bad"},
"spec":{"min":3,"max":1,"url":"::nope","mem":"2Gi","e":"y","tags":["b","a","c"],"s":"ab12"}}`))
	if want := `The Probe "bad" is invalid: 
* spec: Invalid value: min must not exceed max
* spec: Invalid value: url must be a URL
* spec: Invalid value: mem too large
* spec: Invalid value: "object": division by zero evaluating rule: !has(self.e) || self.e == 'x' || 1/0 == 1
* spec: Duplicate value
* spec.s: Invalid value: "ab12": failed rule: self.size() < 3
* spec.s: Invalid value: "ab12": failed rule: self.find('[0-9]+') == ''
* spec.tags: Invalid value: failed rule: self.size() < 3`; !strings.Contains(msg, want) {
		t.Errorf("an object breaking every rule:\n%s\nwant\n%s", msg, want)
	}
	msg = k.fail("apply", "-f", k.file("nokey.yaml", `{"apiVersion":"cel.example.com/v1","kind":"Probe","metadata":{"name":"b"},"spec":{"max":1}}`))
	if want := `The Probe "b" is invalid: spec: Invalid value: "object": no such key: min evaluating rule: min must not exceed max`; !strings.Contains(msg, want) {
		t.Errorf("a rule failing to evaluate: %s\nwant %s", msg, want)
	}
}
