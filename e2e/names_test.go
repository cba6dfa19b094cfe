package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// kubeNameRules are creates with one name each kind's rule refuses or
// takes, and kube-apiserver 1.37's message ("" for a name it takes): most
// kinds' names are DNS-1123 subdomains, namespaces', services' and
// statefulsets' DNS-1123 labels, and RBAC kinds', PodDisruptionBudgets',
// core/v1 Events' and CertificateSigningRequests' path segments, and
// ClusterTrustBundles' prefixed by their signer's name.
var kubeNameRules = []struct {
	path, kind, apiVersion, name, extra, message string
}{
	{"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", "ClusterRoleBinding", "rbac.authorization.k8s.io/v1", "wardler:aggregator-x",
		`"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"view"}`, ""},
	{"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", "ClusterRoleBinding", "rbac.authorization.k8s.io/v1", "a%b",
		`"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"view"}`,
		`ClusterRoleBinding.rbac.authorization.k8s.io "a%b" is invalid: metadata.name: Invalid value: "a%b": may not contain '%'`},
	{"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles", "Role", "rbac.authorization.k8s.io/v1", "..", "",
		`Role.rbac.authorization.k8s.io ".." is invalid: metadata.name: Invalid value: "..": may not be '..'`},
	{"/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets", "PodDisruptionBudget", "policy/v1", "a:b", `"spec":{"minAvailable":1}`, ""},
	{"/api/v1/namespaces", "Namespace", "v1", "a.b", "",
		`Namespace "a.b" is invalid: metadata.name: Invalid value: "a.b": must not contain dots`},
	{"/api/v1/namespaces/{ns}/services", "Service", "v1", "a.b", `"spec":{"ports":[{"port":80}]}`,
		`Service "a.b" is invalid: metadata.name: Invalid value: "a.b": must not contain dots`},
	{"/api/v1/namespaces/{ns}/configmaps", "ConfigMap", "v1", "a:b", "",
		`ConfigMap "a:b" is invalid: metadata.name: Invalid value: "a:b": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`},
	{"/api/v1/namespaces/{ns}/configmaps", "ConfigMap", "v1", "a.b", "", ""},
	{"/apis/certificates.k8s.io/v1/clustertrustbundles", "ClusterTrustBundle", "certificates.k8s.io/v1", "example.com:s:abc", `"spec":{"signerName":"example.com/s","trustBundle":` + ctbPEM + `}`,
		``},
	{"/apis/certificates.k8s.io/v1/clustertrustbundles", "ClusterTrustBundle", "certificates.k8s.io/v1", "abc", `"spec":{"trustBundle":` + ctbPEM + `}`,
		``},
	{"/apis/certificates.k8s.io/v1/clustertrustbundles", "ClusterTrustBundle", "certificates.k8s.io/v1", "a:b", `"spec":{"trustBundle":` + ctbPEM + `}`,
		`ClusterTrustBundle.certificates.k8s.io "a:b" is invalid: metadata.name: Invalid value: "a:b": ClusterTrustBundle without signer name must not have ":" in its name`},
	{"/apis/certificates.k8s.io/v1/clustertrustbundles", "ClusterTrustBundle", "certificates.k8s.io/v1", "other:abc", `"spec":{"signerName":"example.com/s","trustBundle":` + ctbPEM + `}`,
		`ClusterTrustBundle.certificates.k8s.io "other:abc" is invalid: metadata.name: Invalid value: "other:abc": ClusterTrustBundle for signerName example.com/s must be named with prefix example.com:s:`},
	{"/apis/certificates.k8s.io/v1/clustertrustbundles", "ClusterTrustBundle", "certificates.k8s.io/v1", "example.com:s:A_B", `"spec":{"signerName":"example.com/s","trustBundle":` + ctbPEM + `}`,
		`ClusterTrustBundle.certificates.k8s.io "example.com:s:A_B" is invalid: metadata.name: Invalid value: "example.com:s:A_B": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`},
}

// ctbPEM is a CA certificate as a JSON string, a trust bundle that
// kube-apiserver takes.
var ctbPEM = jsonString(`-----BEGIN CERTIFICATE-----
MIIBfDCCASOgAwIBAgIUflE2wabOu4aQWQui8Qc8KcOnspswCgYIKoZIzj0EAwIw
EzERMA8GA1UEAwwIY3RiLXRlc3QwIBcNMjYxMTI4MDIzNTE2WhgPMjEyNjExMDQw
MjM1MTZaMBMxETAPBgNVBAMMCGN0Yi10ZXN0MFkwEwYHKoZIzj0CAQYIKoZIzj0D
AQcDQgAEDSYjcZeetiBMIRsICBW+Pdnl8Ss7cGbp9Xb1xanmwnX0JBS1d8xQAYv0
/YFSMBB/QDyUUmyAgsyIaCdqVutGTaNTMFEwHQYDVR0OBBYEFHa/RU6skQ4uIKcW
GHHwAF38c/7/MB8GA1UdIwQYMBaAFHa/RU6skQ4uIKcWGHHwAF38c/7/MA8GA1Ud
EwEB/wQFMAMBAf8wCgYIKoZIzj0EAwIDRwAwRAIgZvChNSFBFQVNsRUqbWErnvJT
Yj96GeIc7td0hOSxXfMCIHAM7gAIJrOciAEnSwvxazDJN6Q1moF80FDUGCA2lppr
-----END CERTIFICATE-----
`)

// TestNameRules: each kind's names are checked by its kind's rule, as
// kube-apiserver's validation of that kind does.
func TestNameRules(t *testing.T) {
	ns := htNamespace(t, "names")
	for _, tc := range kubeNameRules {
		body := `{"apiVersion":"` + tc.apiVersion + `","kind":"` + tc.kind + `","metadata":{"name":` + jsonString(tc.name) + `}`
		if tc.extra != "" {
			body += "," + tc.extra
		}
		body += "}"
		resp, data := htDo(t, "POST", strings.ReplaceAll(tc.path, "{ns}", ns)+"?dryRun=All", "application/json", []byte(body))
		var st struct{ Message string }
		json.Unmarshal(data, &st)
		switch {
		case tc.message == "" && resp.StatusCode != http.StatusCreated:
			t.Errorf("%s %q: %d %s, want it created", tc.kind, tc.name, resp.StatusCode, data)
		case tc.message != "" && (resp.StatusCode != http.StatusUnprocessableEntity || st.Message != tc.message):
			t.Errorf("%s %q: %d %s\nwant (kube-apiserver's) 422 %s", tc.kind, tc.name, resp.StatusCode, st.Message, tc.message)
		}
	}
}

// TestRBACColonName: a ClusterRoleBinding named as the sample API
// server's is stored and served by name.
func TestRBACColonName(t *testing.T) {
	const path = "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/wardler:aggregator-names-test"
	body := `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":"wardler:aggregator-names-test"},` +
		`"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"view"}}`
	if resp, data := htDo(t, "POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", "application/json", []byte(body)); resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d %s", resp.StatusCode, data)
	}
	t.Cleanup(func() { htDo(t, "DELETE", path, "", nil) })
	htJSON(t, "GET", path, nil, http.StatusOK, nil)
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
