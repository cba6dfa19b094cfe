package app

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"log/slog"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/watchcache/watchcache/pkg/pki"
	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// startCertServer starts a server with bootstrap tokens on and the given
// --controllers (nil: "*").
func startCertServer(t *testing.T, controllers []string) (*App, *rest.Config, *kubernetes.Clientset) {
	t.Helper()
	a, err := Start(Config{DataDir: t.TempDir(), EtcdPrefix: "/registry", EtcdUnsafeNoFsync: true, WatchCache: true,
		ConsistentListFromCache: true, ConsistentGetFromCache: true, EnableBootstrapTokenAuth: true, Controllers: controllers,
		Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	rc, cs := adminClient(t, a)
	return a, rc, cs
}

// newCSR makes a key and a PEM certificate request for subject.
func newCSR(t testing.TB, subject pkix.Name) (keyPEM, csrPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: subject}, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

func csrObject(name, signer string, request []byte, usages ...certificatesv1.KeyUsage) *certificatesv1.CertificateSigningRequest {
	return &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: certificatesv1.CertificateSigningRequestSpec{Request: request, SignerName: signer, Usages: usages}}
}

// runKubectl runs kubectl with kubeconfig and returns its combined output.
func runKubectl(t *testing.T, kubeconfig string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("kubectl", append([]string{"--kubeconfig", kubeconfig}, args...)...)
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// certKubeconfig writes a kubeconfig for rc's server with a client
// certificate and key.
func certKubeconfig(t *testing.T, rc *rest.Config, certPEM, keyPEM []byte) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: rc.Host, CertificateAuthorityData: rc.CAData}
	cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{ClientCertificateData: certPEM, ClientKeyData: keyPEM}
	cfg.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	cfg.CurrentContext = "c"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// wantStatusError fails unless err is an API error of code with message.
func wantStatusError(t *testing.T, what string, err error, code int32, message string) {
	t.Helper()
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Code != code || status.Status().Message != message {
		t.Errorf("%s: %v, want %d %q", what, err, code, message)
	}
}

// TestCSRAPI: the CertificateSigningRequest API's refusals, as
// kube-apiserver 1.37 words them (recorded from it): the subject
// restriction, approval and signing permissions on signers (through
// kubectl certificate approve too), validation of /approval and /status
// updates; and the strategy: the spec never changes, /approval writes only
// conditions, conditions get their times.
func TestCSRAPI(t *testing.T) {
	a, rc, cs := startCertServer(t, nil)
	ctx := context.Background()
	csrs := cs.CertificatesV1().CertificateSigningRequests()
	_, masters := newCSR(t, pkix.Name{CommonName: "mallory", Organization: []string{"system:masters"}})
	_, err := csrs.Create(ctx, csrObject("mallory", "kubernetes.io/kube-apiserver-client", masters, "client auth"), metav1.CreateOptions{})
	wantStatusError(t, "system:masters", err, 403, `certificatesigningrequests.certificates.k8s.io "mallory" is forbidden: `+
		`use of kubernetes.io/kube-apiserver-client signer with system:masters group is not allowed`)

	// bob may update every subresource but holds no signer permission.
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "csr-editor"}, Rules: []rbacv1.PolicyRule{{APIGroups: []string{"certificates.k8s.io"},
		Verbs:     []string{"get", "list", "update", "patch", "create"},
		Resources: []string{"certificatesigningrequests", "certificatesigningrequests/approval", "certificatesigningrequests/status"}}}}
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "csr-editor"}, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "csr-editor"},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: "bob"}}}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// example.com/signer: no controller here signs it, so that /status is
	// the test's.
	_, request := newCSR(t, pkix.Name{CommonName: "alice", Organization: []string{"devs"}})
	csr, err := csrs.Create(ctx, csrObject("alice", "example.com/signer", request, "client auth"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if csr.Spec.Username != "kubernetes-admin" || !slices.Contains(csr.Spec.Groups, "system:masters") {
		t.Errorf("requester %q %v", csr.Spec.Username, csr.Spec.Groups)
	}
	out, err := runKubectl(t, a.Kubeconfig, "certificate", "approve", "alice", "--as", "bob")
	if want := `Error from server (Forbidden): certificatesigningrequests.certificates.k8s.io "alice" is forbidden: ` +
		`user not permitted to approve requests with signerName "example.com/signer"`; err == nil || out != want {
		t.Errorf("bob approves: %v %q, want %q", err, out, want)
	}
	// approve on the signer's domain ("example.com/*") is enough, and
	// kubectl certificate deny goes through /approval too.
	approver := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "example-approver"}, Rules: []rbacv1.PolicyRule{{APIGroups: []string{"certificates.k8s.io"},
		Verbs: []string{"approve"}, Resources: []string{"signers"}, ResourceNames: []string{"example.com/*"}}}}
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, approver, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding.Name, binding.RoleRef.Name = "example-approver", "example-approver"
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := csrs.Create(ctx, csrObject("denied", "example.com/signer", request, "client auth"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if out, err := runKubectl(t, a.Kubeconfig, "certificate", "deny", "denied", "--as", "bob"); err != nil {
		t.Errorf("bob denies with approve on example.com/*: %v %s", err, out)
	}
	invalid := func(details string) string {
		return `CertificateSigningRequest.certificates.k8s.io "alice" is invalid: ` + details
	}
	withConditions := func(conds ...certificatesv1.CertificateSigningRequestCondition) *certificatesv1.CertificateSigningRequest {
		c := csr.DeepCopy()
		c.Status.Conditions = conds
		return c
	}
	approved := certificatesv1.CertificateSigningRequestCondition{Type: "Approved", Status: "True", Reason: "A"}
	denied := certificatesv1.CertificateSigningRequestCondition{Type: "Denied", Status: "True", Reason: "D"}
	_, err = csrs.UpdateApproval(ctx, "alice", withConditions(approved, denied), metav1.UpdateOptions{})
	wantStatusError(t, "approved and denied", err, 422, invalid("status.conditions: Invalid value: \"{conditions[{\\\"type\\\": \\\"Approved\\\"}], "+
		"conditions[{\\\"type\\\": \\\"Denied\\\"}]}\": must specify at most one of: `conditions[{\"type\": \"Approved\"}]`, `conditions[{\"type\": \"Denied\"}]`"))
	_, err = csrs.UpdateApproval(ctx, "alice", withConditions(certificatesv1.CertificateSigningRequestCondition{Type: "Approved", Status: "False"}), metav1.UpdateOptions{})
	wantStatusError(t, "approved false", err, 422, invalid(`status.conditions[0].status: Unsupported value: "False": supported values: "True"`))
	_, err = csrs.UpdateStatus(ctx, withConditions(approved), metav1.UpdateOptions{})
	wantStatusError(t, "approved through /status", err, 422, invalid(`status.conditions: Forbidden: updates may not add a condition of type "Approved"`))

	// Approved through /approval, with a certificate and a spec that are
	// not kept.
	change := withConditions(approved)
	change.Spec.Usages = []certificatesv1.KeyUsage{"server auth"}
	change.Status.Certificate = []byte("ignored")
	if csr, err = csrs.UpdateApproval(ctx, "alice", change, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if c := csr.Status.Conditions; len(c) != 1 || c[0].LastUpdateTime.IsZero() || c[0].LastTransitionTime.IsZero() ||
		len(csr.Status.Certificate) > 0 || !slices.Equal(csr.Spec.Usages, []certificatesv1.KeyUsage{"client auth"}) {
		t.Errorf("after /approval: %+v", csr)
	}
	_, err = csrs.UpdateApproval(ctx, "alice", withConditions(), metav1.UpdateOptions{})
	wantStatusError(t, "approval removed", err, 422, invalid(`status.conditions: Forbidden: updates may not remove a condition of type "Approved"`))

	bad := csr.DeepCopy()
	bad.Status.Certificate = request
	_, err = csrs.UpdateStatus(ctx, bad, metav1.UpdateOptions{})
	wantStatusError(t, "a request as certificate", err, 422,
		invalid(`status.certificate: Invalid value: "<certificate data>": only CERTIFICATE PEM blocks are allowed, found "CERTIFICATE REQUEST"`))
	issued := csr.DeepCopy()
	issued.Status.Certificate = selfSigned(t)
	bobConfig := rest.CopyConfig(rc)
	bobConfig.Impersonate.UserName = "bob"
	_, err = kubernetes.NewForConfigOrDie(bobConfig).CertificatesV1().CertificateSigningRequests().UpdateStatus(ctx, issued, metav1.UpdateOptions{})
	wantStatusError(t, "bob signs", err, 403, `certificatesigningrequests.certificates.k8s.io "alice" is forbidden: `+
		`user not permitted to sign requests with signerName "example.com/signer"`)
	if csr, err = csrs.UpdateStatus(ctx, issued, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	again := csr.DeepCopy()
	again.Status.Certificate = selfSigned(t)
	_, err = csrs.UpdateStatus(ctx, again, metav1.UpdateOptions{})
	wantStatusError(t, "certificate changed", err, 422, invalid(`status.certificate: Forbidden: updates may not modify existing certificate content`))
	if out, err := runKubectl(t, a.Kubeconfig, "certificate", "deny", "alice"); err == nil || out != `error: certificate signing request "alice" is already Approved` {
		t.Errorf("deny after approve: %v %q", err, out)
	}

	for name, tc := range map[string]struct {
		change func(*certificatesv1.CertificateSigningRequest)
		want   string
	}{
		"legacy signer": {func(c *certificatesv1.CertificateSigningRequest) { c.Spec.SignerName = "kubernetes.io/legacy-unknown" },
			`spec.signerName: Invalid value: "kubernetes.io/legacy-unknown": the legacy signerName is not allowed via this API version`},
		"one-label domain": {func(c *certificatesv1.CertificateSigningRequest) { c.Spec.SignerName = "example/x" },
			`spec.signerName: Invalid value: "example": should be a domain with at least two segments separated by dots`},
		"short": {func(c *certificatesv1.CertificateSigningRequest) { n := int32(100); c.Spec.ExpirationSeconds = &n },
			`spec.expirationSeconds: Invalid value: 100: may not specify a duration less than 600 seconds (10 minutes)`},
		"usage twice": {func(c *certificatesv1.CertificateSigningRequest) {
			c.Spec.Usages = []certificatesv1.KeyUsage{"client auth", "client auth"}
		},
			`spec.usages[1]: Duplicate value: "client auth"`},
		"no usages": {func(c *certificatesv1.CertificateSigningRequest) { c.Spec.Usages = nil }, `spec.usages: Required value`},
	} {
		c := csrObject("alice2", "example.com/signer", request, "client auth")
		tc.change(c)
		_, err := csrs.Create(ctx, c, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		wantStatusError(t, name, err, 422, `CertificateSigningRequest.certificates.k8s.io "alice2" is invalid: `+tc.want)
	}
}

// selfSigned is a throwaway certificate in PEM.
func selfSigned(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "x"}, NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// waitForCertificate waits up to timeout for request name's certificate
// (or Failed condition) and returns the request.
func waitForCertificate(t *testing.T, cs *kubernetes.Clientset, name string, timeout time.Duration) *certificatesv1.CertificateSigningRequest {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		csr, err := cs.CertificatesV1().CertificateSigningRequests().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		failed := slices.ContainsFunc(csr.Status.Conditions, func(c certificatesv1.CertificateSigningRequestCondition) bool { return c.Type == "Failed" })
		if len(csr.Status.Certificate) > 0 || failed {
			return csr
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: no certificate after %v: %+v", name, timeout, csr.Status)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestCSRSigning: `kubectl certificate approve` of a client request gives,
// within 5 s, a certificate of the asked duration that `kubectl auth
// whoami` accepts; a kubelet request that breaks its signer's rules is
// marked Failed instead; with the signer off nothing is signed.
func TestCSRSigning(t *testing.T) {
	a, rc, cs := startCertServer(t, nil)
	ctx := context.Background()
	csrs := cs.CertificatesV1().CertificateSigningRequests()
	key, request := newCSR(t, pkix.Name{CommonName: "alice", Organization: []string{"devs"}})
	c := csrObject("alice", "kubernetes.io/kube-apiserver-client", request, "client auth")
	hour := int32(3600)
	c.Spec.ExpirationSeconds = &hour
	if _, err := csrs.Create(ctx, c, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if out, err := runKubectl(t, a.Kubeconfig, "certificate", "approve", "alice"); err != nil {
		t.Fatal(out, err)
	}
	csr := waitForCertificate(t, cs, "alice", 5*time.Second)
	block, _ := pem.Decode(csr.Status.Certificate)
	if block == nil {
		t.Fatalf("status %+v", csr.Status)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if d := cert.NotAfter.Sub(cert.NotBefore); d != time.Hour+5*time.Minute {
		t.Errorf("valid for %v, want 1h (and 5m backdated)", d)
	}
	out, err := runKubectl(t, certKubeconfig(t, rc, csr.Status.Certificate, key), "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}/{.status.userInfo.groups}")
	if err != nil || out != `alice/["devs","system:authenticated"]` {
		t.Errorf("kubectl auth whoami with the signed certificate: %v %q", err, out)
	}

	_, request = newCSR(t, pkix.Name{CommonName: "system:node:n1", Organization: []string{"other"}})
	if _, err := csrs.Create(ctx, csrObject("kubelet", "kubernetes.io/kube-apiserver-client-kubelet", request, "digital signature", "client auth"),
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if out, err := runKubectl(t, a.Kubeconfig, "certificate", "approve", "kubelet"); err != nil {
		t.Fatal(out, err)
	}
	csr = waitForCertificate(t, cs, "kubelet", 5*time.Second)
	if c := csr.Status.Conditions; len(c) != 2 || c[1].Type != "Failed" || c[1].Reason != "SignerValidationFailure" ||
		c[1].Message != "subject organization is not system:nodes" || len(csr.Status.Certificate) > 0 {
		t.Errorf("kubelet request of another organization: %+v", csr.Status)
	}

	_, _, cs = startCertServer(t, []string{"*", "-csrsigning"})
	if _, err := cs.CertificatesV1().CertificateSigningRequests().Create(ctx, csrObject("alice", "kubernetes.io/kube-apiserver-client", request, "client auth"),
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	approve(t, cs, "alice")
	time.Sleep(time.Second)
	if csr, err := cs.CertificatesV1().CertificateSigningRequests().Get(ctx, "alice", metav1.GetOptions{}); err != nil || len(csr.Status.Certificate) > 0 {
		t.Errorf("signed with the signer off: %v %+v", err, csr.Status)
	}
}

// approve approves request name as the administrator.
func approve(t *testing.T, cs *kubernetes.Clientset, name string) {
	t.Helper()
	ctx := context.Background()
	csr, err := cs.CertificatesV1().CertificateSigningRequests().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{Type: "Approved", Status: "True", Reason: "Test"})
	if _, err := cs.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, name, csr, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// bootstrapToken is a bootstrap token Secret's data.
func bootstrapToken(id, secret string, data map[string]string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "bootstrap-token-" + id, Namespace: "kube-system"},
		Type: "bootstrap.kubernetes.io/token", StringData: map[string]string{"token-id": id, "token-secret": secret}}
	for k, v := range data {
		s.StringData[k] = v
	}
	return s
}

// TestNodeTLSBootstrap: a kubelet's TLS bootstrap as with kube-apiserver
// and kube-controller-manager: its bootstrap token authenticates
// (system:bootstrap:<id> in system:bootstrappers and its extra groups;
// wrong, expired or unmarked tokens are 401), its client certificate
// request is approved (nodeclient, given to its group as kubeadm does) and
// signed, the certificate authenticates as system:node:<name>; the node's
// renewal is approved as selfnodeclient; a requester without the
// permission stays pending; the token cleaner deletes expired tokens.
func TestNodeTLSBootstrap(t *testing.T) {
	_, rc, cs := startCertServer(t, []string{"*", "tokencleaner"})
	ctx := context.Background()
	secrets := cs.CoreV1().Secrets("kube-system")
	future, past := time.Now().Add(time.Hour).UTC().Format(time.RFC3339), time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
	for _, s := range []*corev1.Secret{
		bootstrapToken("abcdef", "0123456789abcdef", map[string]string{"usage-bootstrap-authentication": "true", "expiration": future,
			"auth-extra-groups": "system:bootstrappers:kubeadm:default-node-token"}),
		bootstrapToken("noauth", "0123456789abcdef", nil),
		bootstrapToken("nobind", "0123456789abcdef", map[string]string{"usage-bootstrap-authentication": "true"}),
	} {
		if _, err := secrets.Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, b := range []struct{ name, role, group string }{
		{"kubeadm:kubelet-bootstrap", "system:node-bootstrapper", "system:bootstrappers:kubeadm:default-node-token"},
		{"kubeadm:node-autoapprove-bootstrap", "system:certificates.k8s.io:certificatesigningrequests:nodeclient", "system:bootstrappers:kubeadm:default-node-token"},
		{"kubeadm:node-autoapprove-certificate-rotation", "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient", "system:nodes"},
		{"nobind-may-create", "system:node-bootstrapper", "system:bootstrappers"},
		// kube-apiserver's Node authorizer lets nodes create requests.
		{"nodes-may-create", "system:node-bootstrapper", "system:nodes"},
	} {
		crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: b.name}, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: b.role},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "Group", Name: b.group}}}
		if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	as := func(token string) *kubernetes.Clientset {
		c := rest.AnonymousClientConfig(rc)
		c.BearerToken = token
		return kubernetes.NewForConfigOrDie(c)
	}
	whoami := func(c *kubernetes.Clientset) (*authenticationv1.UserInfo, error) {
		r, err := c.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if err != nil {
			return nil, err
		}
		return &r.Status.UserInfo, nil
	}
	node := as("abcdef.0123456789abcdef")
	if u, err := whoami(node); err != nil || u.Username != "system:bootstrap:abcdef" ||
		!slices.Equal(u.Groups, []string{"system:bootstrappers", "system:bootstrappers:kubeadm:default-node-token", "system:authenticated"}) {
		t.Errorf("bootstrap token: %v %+v", err, u)
	}
	for _, token := range []string{"abcdef.0123456789abcdeX", "noauth.0123456789abcdef", "zzzzzz.0123456789abcdef"} {
		if _, err := whoami(as(token)); !apierrors.IsUnauthorized(err) {
			t.Errorf("token %s: %v, want 401", token, err)
		}
	}

	kubeletUsages := []certificatesv1.KeyUsage{"digital signature", "key encipherment", "client auth"}
	key, request := newCSR(t, pkix.Name{CommonName: "system:node:node-1", Organization: []string{"system:nodes"}})
	first := csrObject("node-csr-1", "kubernetes.io/kube-apiserver-client-kubelet", request, kubeletUsages...)
	if _, err := node.CertificatesV1().CertificateSigningRequests().Create(ctx, first, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	csr := waitForCertificate(t, cs, "node-csr-1", 5*time.Second)
	if c := csr.Status.Conditions; len(c) != 1 || c[0].Reason != "AutoApproved" || c[0].Message != "Auto approving kubelet client certificate after SubjectAccessReview." {
		t.Errorf("conditions %+v", c)
	}
	nodeConfig := rest.AnonymousClientConfig(rc)
	nodeConfig.CertData, nodeConfig.KeyData = csr.Status.Certificate, key
	kubelet := kubernetes.NewForConfigOrDie(nodeConfig)
	if u, err := whoami(kubelet); err != nil || u.Username != "system:node:node-1" || !slices.Equal(u.Groups, []string{"system:nodes", "system:authenticated"}) {
		t.Errorf("node certificate: %v %+v", err, u)
	}
	_, request = newCSR(t, pkix.Name{CommonName: "system:node:node-1", Organization: []string{"system:nodes"}})
	if _, err := kubelet.CertificatesV1().CertificateSigningRequests().Create(ctx,
		csrObject("node-csr-2", "kubernetes.io/kube-apiserver-client-kubelet", request, kubeletUsages...), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	csr = waitForCertificate(t, cs, "node-csr-2", 5*time.Second)
	if c := csr.Status.Conditions; len(c) != 1 || c[0].Message != "Auto approving self kubelet client certificate after SubjectAccessReview." {
		t.Errorf("renewal conditions %+v", c)
	}

	_, request = newCSR(t, pkix.Name{CommonName: "system:node:node-2", Organization: []string{"system:nodes"}})
	if _, err := as("nobind.0123456789abcdef").CertificatesV1().CertificateSigningRequests().Create(ctx,
		csrObject("node-csr-3", "kubernetes.io/kube-apiserver-client-kubelet", request, kubeletUsages...), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	if csr, err := cs.CertificatesV1().CertificateSigningRequests().Get(ctx, "node-csr-3", metav1.GetOptions{}); err != nil || len(csr.Status.Conditions) > 0 {
		t.Errorf("approved without nodeclient: %v %+v", err, csr.Status)
	}

	if _, err := secrets.Create(ctx, bootstrapToken("expird", "0123456789abcdef", map[string]string{"usage-bootstrap-authentication": "true",
		"expiration": past}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := whoami(as("expird.0123456789abcdef")); !apierrors.IsUnauthorized(err) {
		t.Errorf("expired token: %v", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := secrets.Get(ctx, "bootstrap-token-expird", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("expired token not cleaned: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := secrets.Get(ctx, "bootstrap-token-abcdef", metav1.GetOptions{}); err != nil {
		t.Errorf("a token that has not expired: %v", err)
	}
}

// TestClusterSigningCA: --cluster-signing-cert-file and -key-file go
// together and must be readable; a CA of one's own signs (a warning says
// that its certificates do not authenticate unless --client-ca-file has
// it).
func TestClusterSigningCA(t *testing.T) {
	other, err := pki.Ensure(t.TempDir(), []string{"localhost"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		cert, key, want string
	}{
		{other.CACert, "", "--cluster-signing-cert-file and --cluster-signing-key-file go together"},
		{other.CACert, other.CACert + ".missing", "--cluster-signing-cert-file: open " + other.CACert + ".missing"},
	} {
		a, err := Start(Config{DataDir: t.TempDir(), EtcdUnsafeNoFsync: true, ClusterSigningCertFile: tc.cert, ClusterSigningKeyFile: tc.key,
			Log: slog.New(slog.DiscardHandler)})
		if err == nil {
			a.Close()
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q %q: %v, want %q", tc.cert, tc.key, err, tc.want)
		}
	}
	var logs lockedBuffer
	a, err := Start(Config{DataDir: t.TempDir(), EtcdPrefix: "/registry", EtcdUnsafeNoFsync: true, WatchCache: true,
		ConsistentListFromCache: true, ConsistentGetFromCache: true, ClusterSigningCertFile: other.CACert, ClusterSigningKeyFile: other.CAKey,
		Log: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	if !strings.Contains(logs.String(), "the CA signing CertificateSigningRequests is not a client CA") {
		t.Errorf("no warning in the log:\n%s", logs.String())
	}
	_, cs := adminClient(t, a)
	_, request := newCSR(t, pkix.Name{CommonName: "alice"})
	if _, err := cs.CertificatesV1().CertificateSigningRequests().Create(context.Background(),
		csrObject("alice", "kubernetes.io/kube-apiserver-client", request, "client auth"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	approve(t, cs, "alice")
	csr := waitForCertificate(t, cs, "alice", 5*time.Second)
	block, _ := pem.Decode(csr.Status.Certificate)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	roots, err := pki.CertPool(other.CACert)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("not signed by --cluster-signing-cert-file: %v", err)
	}
}

// TestClusterTrustBundles: a ClusterTrustBundle's name follows its signer
// and creating one for a signer needs attest on it, in kube-apiserver
// 1.37's words (recorded from it).
func TestClusterTrustBundles(t *testing.T) {
	a, rc, cs := startCertServer(t, nil)
	ctx := context.Background()
	ca, err := os.ReadFile(a.PKI.CACert)
	if err != nil {
		t.Fatal(err)
	}
	bundles := cs.CertificatesV1().ClusterTrustBundles()
	bundle := func(name, signer, anchors string) *certificatesv1.ClusterTrustBundle {
		return &certificatesv1.ClusterTrustBundle{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: certificatesv1.ClusterTrustBundleSpec{SignerName: signer, TrustBundle: anchors}}
	}
	for _, tc := range []struct {
		bundle *certificatesv1.ClusterTrustBundle
		want   string
	}{
		{bundle("a:b", "", string(ca)), `metadata.name: Invalid value: "a:b": ClusterTrustBundle without signer name must not have ":" in its name`},
		{bundle("other:x", "example.com/signer", string(ca)),
			`metadata.name: Invalid value: "other:x": ClusterTrustBundle for signerName example.com/signer must be named with prefix example.com:signer:`},
		{bundle("plain", "", "junk"), `spec.trustBundle: Invalid value: "<value omitted>": at least one trust anchor must be provided`},
	} {
		_, err := bundles.Create(ctx, tc.bundle, metav1.CreateOptions{})
		wantStatusError(t, tc.bundle.Name, err, 422, `ClusterTrustBundle.certificates.k8s.io "`+tc.bundle.Name+`" is invalid: `+tc.want)
	}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "bundles"}, Rules: []rbacv1.PolicyRule{{APIGroups: []string{"certificates.k8s.io"},
		Verbs: []string{"create"}, Resources: []string{"clustertrustbundles"}}}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "bundles"}, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "bundles"},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: "bob"}}}
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	bobConfig := rest.CopyConfig(rc)
	bobConfig.Impersonate.UserName = "bob"
	bob := kubernetes.NewForConfigOrDie(bobConfig).CertificatesV1().ClusterTrustBundles()
	_, err = bob.Create(ctx, bundle("example.com:signer:b1", "example.com/signer", string(ca)), metav1.CreateOptions{})
	wantStatusError(t, "bob attests", err, 403, `clustertrustbundles.certificates.k8s.io "example.com:signer:b1" is forbidden: `+
		`user not permitted to attest for signerName "example.com/signer"`)
	if _, err := bob.Create(ctx, bundle("no-signer", "", string(ca)), metav1.CreateOptions{}); err != nil {
		t.Errorf("a bundle without signer: %v", err)
	}
	if _, err := bundles.Create(ctx, bundle("example.com:signer:b1", "example.com/signer", string(ca)), metav1.CreateOptions{}); err != nil {
		t.Errorf("the administrator attests: %v", err)
	}
}

// BenchmarkCSRApproveToCertificate: from a client request's approval to
// its certificate being seen by a watch, through the signer.
func BenchmarkCSRApproveToCertificate(b *testing.B) {
	a, err := Start(Config{DataDir: b.TempDir(), EtcdPrefix: "/registry", EtcdUnsafeNoFsync: true, WatchCache: true,
		ConsistentListFromCache: true, ConsistentGetFromCache: true, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	rc, err := clientcmd.BuildConfigFromFlags("", a.Kubeconfig)
	if err != nil {
		b.Fatal(err)
	}
	rc.QPS = -1
	csrs := kubernetes.NewForConfigOrDie(rc).CertificatesV1().CertificateSigningRequests()
	ctx := context.Background()
	_, request := newCSR(b, pkix.Name{CommonName: "alice"})
	for i := 0; b.Loop(); i++ {
		name := "bench-" + strconv.Itoa(i)
		csr, err := csrs.Create(ctx, csrObject(name, "kubernetes.io/kube-apiserver-client", request, "client auth"), metav1.CreateOptions{})
		if err != nil {
			b.Fatal(err)
		}
		w, err := csrs.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name, ResourceVersion: csr.ResourceVersion})
		if err != nil {
			b.Fatal(err)
		}
		csr.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: "Approved", Status: "True", Reason: "Bench"}}
		if _, err := csrs.UpdateApproval(ctx, name, csr, metav1.UpdateOptions{}); err != nil {
			b.Fatal(err)
		}
		timeout := time.After(10 * time.Second)
	wait:
		for {
			select {
			case ev, open := <-w.ResultChan():
				if !open {
					b.Fatalf("%s: the watch ended", name)
				}
				if c, ok := ev.Object.(*certificatesv1.CertificateSigningRequest); ok && len(c.Status.Certificate) > 0 {
					break wait
				}
			case <-timeout:
				b.Fatalf("%s: no certificate after 10 s", name)
			}
		}
		w.Stop()
	}
}
