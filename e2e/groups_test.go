package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
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

// TestAPIServices: every served group version has its local, Available
// APIService, with kube-apiserver's priorities for the built-in ones
// ("v1." for the core group) and a custom resource's for example.com's
// (testdata/resources.yaml), as kube-apiserver's autoregister and
// crdregistration controllers make them.
func TestAPIServices(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, group, version, managed  string
		groupPriority, versionPriority int32
	}{
		{"v1.", "", "v1", "onstart", 18000, 1},
		{"v1.apps", "apps", "v1", "onstart", 17800, 15},
		{"v2.autoscaling", "autoscaling", "v2", "onstart", 17500, 30},
		{"v1.flowcontrol.apiserver.k8s.io", "flowcontrol.apiserver.k8s.io", "v1", "onstart", 16100, 21},
		{"v1.example.com", "example.com", "v1", "true", 1000, 100},
	} {
		var svc apiregistrationv1.APIService
		htJSON(t, "GET", "/apis/apiregistration.k8s.io/v1/apiservices/"+tc.name, nil, http.StatusOK, &svc)
		s := svc.Spec
		if s.Group != tc.group || s.Version != tc.version || s.GroupPriorityMinimum != tc.groupPriority ||
			s.VersionPriority != tc.versionPriority || s.Service != nil || svc.Labels["kube-aggregator.kubernetes.io/automanaged"] != tc.managed {
			t.Errorf("%s: %+v %v", tc.name, s, svc.Labels)
		}
		if c := svc.Status.Conditions; len(c) != 1 || c[0].Type != apiregistrationv1.Available || c[0].Status != apiregistrationv1.ConditionTrue || c[0].Reason != "Local" {
			t.Errorf("%s: conditions %+v", tc.name, c)
		}
	}
	resp, _ := htDo(t, "GET", "/apis/apiregistration.k8s.io/v1/apiservices/v1.apiregistration.k8s.io", "", nil)
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("v1.apiregistration.k8s.io: %d, want 404 (kube-apiserver has none)", resp.StatusCode)
	}
}

// TestAPIServicesOfCustomResources: a CustomResourceDefinition's group
// version gets its APIService once served, and loses it with the
// definition.
func TestAPIServicesOfCustomResources(t *testing.T) {
	k := newKubectl(t, "apisvc")
	crd := strings.NewReplacer("gadgets.example.org", "gadgets.apisvc.example.org", "group: example.org", "group: apisvc.example.org",
		"shortNames: [gd]", "shortNames: [gdas]").Replace(gadgetsCRD)
	k.must("apply", "-f", k.file("crd.yaml", crd))
	t.Cleanup(func() { k.run("delete", "crd", "gadgets.apisvc.example.org", "--wait=false") })
	waitFor(t, "the APIService of apisvc.example.org", func() bool {
		_, _, err := k.run("get", "apiservice", "v1.apisvc.example.org")
		return err == nil
	})
	k.must("delete", "crd", "gadgets.apisvc.example.org")
	waitFor(t, "the APIService of apisvc.example.org to go", func() bool {
		_, errOut, _ := k.run("get", "apiservice", "v1.apisvc.example.org")
		return strings.Contains(errOut, "NotFound")
	})
}
