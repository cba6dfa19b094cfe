package e2e

import (
	"strings"
	"testing"
)

// replicasPolicy limits deployments' replicas and forbids a label; the
// messages the test expects were recorded from kube-apiserver 1.37.
const replicasPolicy = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: replicas-limit-NS}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [apps], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [deployments]}
  variables:
  - {name: replicas, expression: "object.spec.replicas"}
  validations:
  - {expression: "variables.replicas <= 5", messageExpression: "'replicas ' + string(variables.replicas) + ' is more than 5'"}
  - {expression: "!has(object.metadata.labels) || !('forbidden' in object.metadata.labels)", message: "the forbidden label is forbidden", reason: Forbidden}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: replicas-limit-binding-NS}
spec:
  policyName: replicas-limit-NS
  validationActions: [Deny]
  matchResources:
    namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: NS}}
`

// TestValidatingAdmissionPolicy, through kubectl: a policy bound to the
// test's namespace refuses what its CEL validations reject (variables,
// messageExpression, reason), on create and update, and nothing else.
func TestValidatingAdmissionPolicy(t *testing.T) {
	k := newKubectl(t, "policy")
	k.must("apply", "-f", k.file("policy.yaml", strings.ReplaceAll(replicasPolicy, "NS", k.ns)))
	t.Cleanup(func() {
		k.run("delete", "validatingadmissionpolicybinding", "replicas-limit-binding-"+k.ns)
		k.run("delete", "validatingadmissionpolicy", "replicas-limit-"+k.ns)
	})
	if out := k.must("get", "validatingadmissionpolicy", "replicas-limit-"+k.ns, "-o", "jsonpath={.spec.failurePolicy} {.spec.matchConstraints.matchPolicy}"); out != "Fail Equivalent" {
		t.Errorf("the policy's defaults: %q", out)
	}
	prefix := "ValidatingAdmissionPolicy 'replicas-limit-" + k.ns + "' with binding 'replicas-limit-binding-" + k.ns + "' denied request: "
	if msg := k.fail("create", "deployment", "big", "--image=nginx", "--replicas=6"); !strings.Contains(msg, `deployments.apps "big" is forbidden: `+prefix+"replicas 6 is more than 5") {
		t.Errorf("a create the policy refuses: %s", msg)
	}
	k.must("create", "deployment", "small", "--image=nginx", "--replicas=2")
	if msg := k.fail("patch", "deployment", "small", "--type=merge", "-p", `{"spec":{"replicas":8}}`); !strings.Contains(msg, prefix+"replicas 8 is more than 5") {
		t.Errorf("an update the policy refuses: %s", msg)
	}
	if msg := k.fail("label", "deployment", "small", "forbidden=1"); !strings.Contains(msg, prefix+"the forbidden label is forbidden") {
		t.Errorf("a label the policy refuses: %s", msg)
	}
	k.must("create", "configmap", "unrelated", "--from-literal=replicas=100")
	// The policy's rules name deployments, not deployments/scale: kubectl
	// scale is not checked, as with kube-apiserver.
	k.must("scale", "deployment", "small", "--replicas=9")
}

// labelPolicy mutates new config maps of one namespace with an apply
// configuration and a JSON patch; what it gives was recorded from
// kube-apiserver 1.37.
const labelPolicy = `apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: label-cms-NS}
spec:
  reinvocationPolicy: Never
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: 'Object{metadata: Object.metadata{labels: {"mutated": "by-policy"}}}'
  - patchType: JSONPatch
    jsonPatch:
      expression: '[JSONPatch{op: "add", path: "/data/added", value: object.metadata.name + "-added"}]'
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata: {name: label-cms-binding-NS}
spec:
  policyName: label-cms-NS
  matchResources:
    namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: NS}}
`

// TestMutatingAdmissionPolicy, through kubectl: a bound policy's apply
// configuration and JSON patch change new config maps of the test's
// namespace only.
func TestMutatingAdmissionPolicy(t *testing.T) {
	k := newKubectl(t, "mutpolicy")
	k.must("apply", "-f", k.file("policy.yaml", strings.ReplaceAll(labelPolicy, "NS", k.ns)))
	t.Cleanup(func() {
		k.run("delete", "mutatingadmissionpolicybinding", "label-cms-binding-"+k.ns)
		k.run("delete", "mutatingadmissionpolicy", "label-cms-"+k.ns)
	})
	if out := k.must("create", "configmap", "mapt", "--from-literal=a=b", "-o", "jsonpath={.metadata.labels} {.data}"); out != `{"mutated":"by-policy"} {"a":"b","added":"mapt-added"}` {
		t.Errorf("a config map created under the policy: %s", out)
	}
	noReinvocation := strings.Replace(strings.ReplaceAll(labelPolicy, "NS", k.ns), "  reinvocationPolicy: Never\n", "", 1)
	if msg := k.fail("apply", "-f", k.file("invalid.yaml", noReinvocation), "--dry-run=server"); !strings.Contains(msg, "spec.reinvocationPolicy: Required value") {
		t.Errorf("a policy without reinvocationPolicy: %s", msg)
	}
}
