package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
)

// groupsCSR is a PKCS#10 request (PEM, base64) for the tests'
// CertificateSigningRequests.
const groupsCSR = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURSBSRVFVRVNULS0tLS0KTUlIZk1JR0ZBZ0VBTUNNeEV6QVJCZ05WQkFNTUNuZDBaeTFqYkdsbGJuUXhEREFLQmdOVkJBb01BM2QwWnpCWgpNQk1HQnlxR1NNNDlBZ0VHQ0NxR1NNNDlBd0VIQTBJQUJEUlRlQjhReXdhUi9Qd3FNVGp5UUpkQlgvR1lMZXM3Cm9pVDYvQ2ZMZCtiMi9abWRpaDQ4MmpXRzlUSmRtbFd0cVRFNmNJRGRzU1YyaytPcWdKTU9ENzZnQURBS0JnZ3EKaGtqT1BRUURBZ05KQURCR0FpRUErRFZRblpJZXFvazBEZ2pvUXBwQkQxOFVHSk9hQ29yOW9TVG5Hc1pPY1g4QwpJUURJaURvOUkrTXJYaHc5RDF1MlYwQWRkd3diaDh0dzJOWStuRmtubEZTWmZ3PT0KLS0tLS1FTkQgQ0VSVElGSUNBVEUgUkVRVUVTVC0tLS0tCg=="

// TestCertificateSigningRequests: a CSR names its requester, is approved
// through /approval (kubectl certificate approve) without its spec
// changing, lists by spec.signerName, and prints kube-apiserver's columns.
func TestCertificateSigningRequests(t *testing.T) {
	k := newKubectl(t, "csr")
	name := k.ns + "-csr"
	path := k.file("csr.yaml", `apiVersion: certificates.k8s.io/v1
kind: CertificateSigningRequest
metadata: {name: `+name+`}
spec:
  request: `+groupsCSR+`
  signerName: example.com/`+k.ns+`
  expirationSeconds: 3600
  usages: [client auth]
  username: someone-else
`)
	k.must("create", "-f", path)
	t.Cleanup(func() { k.run("delete", "-f", path, "--wait=false") })
	k.must("certificate", "approve", name)
	var csr certificatesv1.CertificateSigningRequest
	if err := json.Unmarshal([]byte(k.must("get", "csr", name, "-o", "json")), &csr); err != nil {
		t.Fatal(err)
	}
	if csr.Spec.Username != "kubernetes-admin" || !strings.Contains(strings.Join(csr.Spec.Groups, ","), "system:masters") {
		t.Errorf("requester: %q %v", csr.Spec.Username, csr.Spec.Groups)
	}
	if len(csr.Status.Conditions) != 1 || csr.Status.Conditions[0].Type != certificatesv1.CertificateApproved {
		t.Errorf("conditions: %+v", csr.Status.Conditions)
	}
	out := k.must("get", "csr", "--field-selector", "spec.signerName=example.com/"+k.ns)
	for _, want := range []string{"NAME", "AGE", "SIGNERNAME", "REQUESTOR", "REQUESTEDDURATION", "CONDITION",
		name, "example.com/" + k.ns, "kubernetes-admin", "60m", "Approved"} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl get csr: no %q in\n%s", want, out)
		}
	}
}

// TestHorizontalPodAutoscalers: an HPA is served as autoscaling/v2 with
// kube-apiserver's defaults, short name and columns.
func TestHorizontalPodAutoscalers(t *testing.T) {
	k := newKubectl(t, "hpa")
	k.must("create", "-f", k.file("hpa.yaml", `apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  maxReplicas: 4
`))
	out := k.must("get", "hpa")
	for _, want := range []string{"REFERENCE", "TARGETS", "MINPODS", "MAXPODS", "Deployment/web", "cpu: <unknown>/80%"} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl get hpa: no %q in\n%s", want, out)
		}
	}
}
