package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// conditionPolicies are a policy denying long config map names, narrowed
// by matchConditions to names starting with w (one condition failing to
// evaluate for werr), and a policy bound with Warn (and Audit) only.
const conditionPolicies = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: cm-deny-NS}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}]
  matchConditions:
  - {name: starts-w, expression: "object.metadata.name.startsWith('w')"}
  - {name: errs, expression: "object.metadata.name != 'werr' || object.data.nope == 'x'"}
  validations: [{expression: "object.metadata.name.size() < 4", message: "name too long"}]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: cm-deny-NS}
spec:
  policyName: cm-deny-NS
  validationActions: [Deny]
  matchResources: {namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: NS}}}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: cm-warn-NS}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}]
  validations:
  - {expression: "!object.metadata.name.endsWith('2')", message: "ends with 2"}
  - {expression: "!object.metadata.name.endsWith('22')", messageExpression: "'ends with 22: ' + object.metadata.name"}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: cm-warn-NS}
spec:
  policyName: cm-warn-NS
  validationActions: [Warn, Audit]
  matchResources: {namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: NS}}}
`

// warnings collects the warnings of client-go's responses.
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, msg)
}

// take returns the warnings so far and forgets them.
func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.msgs
	w.msgs = nil
	return out
}

// TestValidatingAdmissionPolicyConditionsAndWarn, through client-go: a
// policy applies only where its matchConditions all hold (an error in one
// denies under failurePolicy Fail), and a Warn binding's failures are
// warnings on an admitted write; status codes, reasons and texts as
// kube-apiserver 1.37 gives them.
func TestValidatingAdmissionPolicyConditionsAndWarn(t *testing.T) {
	k := newKubectl(t, "vapcond")
	k.must("apply", "-f", k.file("policies.yaml", strings.ReplaceAll(conditionPolicies, "NS", k.ns)))
	t.Cleanup(func() {
		k.run("delete", "validatingadmissionpolicybinding", "cm-deny-"+k.ns, "cm-warn-"+k.ns)
		k.run("delete", "validatingadmissionpolicy", "cm-deny-"+k.ns, "cm-warn-"+k.ns)
	})
	w := &warnings{}
	cfg := cgConfig(nil)
	cfg.WarningHandler = w
	cms := clientset(t, cfg).CoreV1().ConfigMaps(k.ns)
	create := func(name string) error {
		_, err := cms.Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		return err
	}
	prefix := "ValidatingAdmissionPolicy 'cm-deny-" + k.ns + "' with binding 'cm-deny-" + k.ns + "' denied request: "
	waitFor(t, "the policy to deny", func() bool { return create("wlong") != nil })
	w.take()

	err := create("wlong")
	if status, ok := err.(*apierrors.StatusError); !ok || status.ErrStatus.Code != 422 || status.ErrStatus.Reason != metav1.StatusReasonInvalid ||
		status.ErrStatus.Message != `configmaps "wlong" is forbidden: `+prefix+"name too long" {
		t.Errorf("a name the policy refuses: %#v", err)
	}
	err = create("werr")
	if want := `configmaps "werr" is forbidden: ` + prefix +
		`expression 'object.metadata.name != 'werr' || object.data.nope == 'x'' resulted in error: no such key: data`; err == nil || err.Error() != want {
		t.Errorf("a match condition failing to evaluate: %v\nwant %s", err, want)
	}
	w.take()
	warn := "Validation failed for ValidatingAdmissionPolicy 'cm-warn-" + k.ns + "' with binding 'cm-warn-" + k.ns + "': "
	if err := create("nox2"); err != nil {
		t.Errorf("a name the deny policy's conditions exclude: %v", err)
	}
	if got := w.take(); !slices.Equal(got, []string{warn + "ends with 2"}) {
		t.Errorf("the Warn binding's warnings: %q", got)
	}
	if err := create("w22"); err != nil {
		t.Errorf("a short name: %v", err)
	}
	if got := w.take(); !slices.Equal(got, []string{warn + "ends with 2", warn + "ends with 22: w22"}) {
		t.Errorf("the Warn binding's warnings for two failures: %q", got)
	}
}

// conditionMutation labels new config maps whose names start with m.
const conditionMutation = `apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: cm-label-NS}
spec:
  reinvocationPolicy: Never
  matchConstraints:
    resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}]
  matchConditions: [{name: starts-m, expression: "object.metadata.name.startsWith('m')"}]
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration: {expression: 'Object{metadata: Object.metadata{labels: {"mutated": "yes"}}}'}
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata: {name: cm-label-NS}
spec:
  policyName: cm-label-NS
  matchResources: {namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: NS}}}
`

// TestMutatingAdmissionPolicyConditions: a mutating policy changes only
// the objects its matchConditions hold for.
func TestMutatingAdmissionPolicyConditions(t *testing.T) {
	k := newKubectl(t, "mapcond")
	k.must("apply", "-f", k.file("policy.yaml", strings.ReplaceAll(conditionMutation, "NS", k.ns)))
	t.Cleanup(func() {
		k.run("delete", "mutatingadmissionpolicybinding", "cm-label-"+k.ns)
		k.run("delete", "mutatingadmissionpolicy", "cm-label-"+k.ns)
	})
	cms := clientset(t, cgConfig(nil)).CoreV1().ConfigMaps(k.ns)
	create := func(name string) map[string]string {
		cm, err := cms.Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return cm.Labels
	}
	i := 0
	waitFor(t, "the policy to mutate", func() bool { i++; return create(fmt.Sprintf("m%d", i))["mutated"] == "yes" })
	if labels := create("nx"); labels != nil {
		t.Errorf("a config map the conditions exclude was labelled: %v", labels)
	}
}
