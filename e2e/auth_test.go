package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/watchcache/watchcache/pkg/audit"
	"github.com/watchcache/watchcache/pkg/pki"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// The users of testdata/tokens.csv (the server's --token-auth-file).
const (
	aliceToken = "alice-token" // user alice, groups devs and qa
	bobToken   = "bob-token"   // user bob
)

// tokenConfig is client-go's configuration for testServer with a bearer
// token and no client certificate.
func tokenConfig(token string) *rest.Config {
	cfg := rest.AnonymousClientConfig(testServerREST)
	cfg.BearerToken = token
	return cfg
}

// anonymousClient speaks TLS to testServer (trusting its CA) with no
// credentials.
func anonymousClient(t *testing.T) *http.Client {
	t.Helper()
	tlsConfig, err := rest.TLSConfigFor(rest.AnonymousClientConfig(testServerREST))
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsConfig}}
}

func clientset(t *testing.T, cfg *rest.Config) *kubernetes.Clientset {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// getStatus GETs path with c and returns the code and, for failures, the
// Status.
func getStatus(t *testing.T, c *http.Client, path string, header ...string) (int, metav1.Status) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, testServer.URL+path, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var st metav1.Status
	if resp.StatusCode >= 400 {
		if err := json.Unmarshal(body, &st); err != nil || st.Kind != "Status" {
			t.Fatalf("GET %s: %d, not a Status: %s", path, resp.StatusCode, body)
		}
	}
	return resp.StatusCode, st
}

// TestAnonymous: without credentials only /version and the health checks
// answer; every resource, discovery, /metrics and /debug/pprof are 403.
func TestAnonymous(t *testing.T) {
	c := anonymousClient(t)
	for _, path := range []string{"/version", "/healthz", "/livez", "/readyz"} {
		if code, _ := getStatus(t, c, path); code != http.StatusOK {
			t.Errorf("anonymous GET %s: %d, want 200", path, code)
		}
	}
	for path, msg := range map[string]string{
		"/api/v1/namespaces/default/secrets": `secrets is forbidden: User "system:anonymous" cannot list resource "secrets" in API group "" in the namespace "default"`,
		"/api/v1/namespaces/default/pods/p":  `pods "p" is forbidden: User "system:anonymous" cannot get resource "pods" in API group "" in the namespace "default"`,
		"/api/v1/namespaces?watch=1":         `namespaces is forbidden: User "system:anonymous" cannot watch resource "namespaces" in API group "" at the cluster scope`,
		"/metrics":                           `forbidden: User "system:anonymous" cannot get path "/metrics"`,
		"/debug/pprof/":                      `forbidden: User "system:anonymous" cannot get path "/debug/pprof/"`,
		"/apis":                              `forbidden: User "system:anonymous" cannot get path "/apis"`,
	} {
		code, st := getStatus(t, c, path)
		if code != http.StatusForbidden || st.Reason != metav1.StatusReasonForbidden || st.Message != msg {
			t.Errorf("anonymous GET %s: %d %q, want 403 %q", path, code, st.Message, msg)
		}
	}
	req, _ := http.NewRequest(http.MethodDelete, testServer.URL+"/api/v1/namespaces/default", nil)
	if resp, err := c.Do(req); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("anonymous namespace delete: %v %v", err, resp)
	}
}

// TestBadCredentials: a bogus bearer token or a certificate from another
// CA is a 401 Status, not anonymous access.
func TestBadCredentials(t *testing.T) {
	c := anonymousClient(t)
	code, st := getStatus(t, c, "/version", "Authorization", "Bearer not-a-token")
	if code != http.StatusUnauthorized || st.Reason != metav1.StatusReasonUnauthorized {
		t.Errorf("bogus token: %d %+v, want 401 Unauthorized", code, st)
	}

	dir := t.TempDir()
	files, err := pki.Ensure(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.LoadX509KeyPair(files.AdminCert, files.AdminKey)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	ca, _ := os.ReadFile(testServer.PKI.CACert)
	roots.AppendCertsFromPEM(ca)
	other := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs: roots, Certificates: []tls.Certificate{cert}}}}
	code, st = getStatus(t, other, "/api/v1/namespaces")
	if code != http.StatusUnauthorized || st.Reason != metav1.StatusReasonUnauthorized {
		t.Errorf("certificate of another CA: %d %+v, want 401", code, st)
	}
}

// TestTokenUserBoundToView: a token user bound to view in one namespace
// reads pods there, and gets 403 in another namespace and on secrets; a
// binding applies as soon as its create returns, and stops when its delete
// returns.
func TestTokenUserBoundToView(t *testing.T) {
	ctx := cgContext(t)
	admin := clientset(t, testServerREST)
	alice := clientset(t, tokenConfig(aliceToken))
	mine := cgNamespace(t, cgDynamic(t), "auth-view")
	other := cgNamespace(t, cgDynamic(t), "auth-other")

	if _, err := alice.CoreV1().Pods(mine).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("before the binding: %v, want 403", err)
	}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "alice-view"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}}}
	if _, err := admin.RbacV1().RoleBindings(mine).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.CoreV1().Pods(mine).List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("list pods right after the binding: %v", err)
	}
	if _, err := alice.CoreV1().ConfigMaps(mine).Get(ctx, "missing", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("get a missing config map: %v, want 404", err)
	}
	_, err := alice.CoreV1().Pods(other).List(ctx, metav1.ListOptions{})
	if !apierrors.IsForbidden(err) || err.Error() != `pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "`+other+`"` {
		t.Errorf("pods in another namespace: %v", err)
	}
	if _, err := alice.CoreV1().Secrets(mine).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("secrets: %v, want 403", err)
	}
	if _, err := alice.CoreV1().ConfigMaps(mine).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("create with view: %v, want 403", err)
	}
	if err := admin.RbacV1().RoleBindings(mine).Delete(ctx, "alice-view", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.CoreV1().Pods(mine).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("right after the binding's delete: %v, want 403", err)
	}
}

// TestEscalation: a user who may create roles and bindings in a namespace
// cannot grant what they do not hold.
func TestEscalation(t *testing.T) {
	ctx := cgContext(t)
	admin := clientset(t, testServerREST)
	bob := clientset(t, tokenConfig(bobToken))
	ns := cgNamespace(t, cgDynamic(t), "auth-escalate")
	manager := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "rbac-manager"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{rbacv1.GroupName}, Resources: []string{"roles", "rolebindings"}, Verbs: []string{"create", "get", "list"}},
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}}}}
	if _, err := admin.RbacV1().Roles(ns).Create(ctx, manager, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "bob"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "rbac-manager"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "bob"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	held := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "read-cm"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}}}}
	if _, err := bob.RbacV1().Roles(ns).Create(ctx, held, metav1.CreateOptions{}); err != nil {
		t.Errorf("a role within bob's permissions: %v", err)
	}
	escalating := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "read-secrets"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}}}}
	_, err := bob.RbacV1().Roles(ns).Create(ctx, escalating, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "is attempting to grant RBAC permissions not currently held") {
		t.Errorf("an escalating role: %v, want 403", err)
	}
	_, err = bob.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "bob-admin"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "admin"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "bob"}}}, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("binding bob to admin: %v, want 403", err)
	}
	if _, err := admin.RbacV1().Roles(ns).Get(ctx, "read-secrets", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the refused role exists: %v", err)
	}
}

// TestServiceAccountToken: a token from kubectl create token authenticates
// as the ServiceAccount (kubectl auth whoami) and stops working once the
// ServiceAccount is deleted.
func TestServiceAccountToken(t *testing.T) {
	k := newKubectl(t, "satoken")
	k.must("create", "serviceaccount", "robot")
	token := strings.TrimSpace(k.must("create", "token", "robot", "--duration", "10m"))
	robot := clientset(t, tokenConfig(token))
	ctx := context.Background()
	review, err := robot.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := "system:serviceaccount:" + k.ns + ":robot"
	if u := review.Status.UserInfo; u.Username != want || !contains(u.Groups, "system:serviceaccounts:"+k.ns) || !contains(u.Groups, "system:authenticated") {
		t.Errorf("whoami with the token: %+v", u)
	}
	k.must("delete", "serviceaccount", "robot")
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := robot.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if apierrors.IsUnauthorized(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the token of a deleted ServiceAccount: %v, want 401", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestKubectlAuth: kubectl auth whoami, auth can-i (--list) and --as give
// what kube-apiserver gives (recorded from the reference kube-apiserver).
func TestKubectlAuth(t *testing.T) {
	k := newKubectl(t, "auth")
	if out := k.must("auth", "whoami"); !strings.Contains(out, "system:masters") {
		t.Errorf("auth whoami as administrator:\n%s", out)
	}
	k.must("create", "rolebinding", "alice-view", "--clusterrole=view", "--user=alice")
	out := k.must("--as", "alice", "auth", "whoami")
	if !strings.Contains(out, "Username    alice") || !strings.Contains(out, "Groups      [system:authenticated]") {
		t.Errorf("auth whoami --as alice:\n%s", out)
	}
	if out := k.must("--as", "alice", "auth", "can-i", "list", "pods"); strings.TrimSpace(out) != "yes" {
		t.Errorf("can-i list pods: %q", out)
	}
	if out, _, _ := k.run("--as", "alice", "auth", "can-i", "list", "secrets"); strings.TrimSpace(out) != "no" {
		t.Errorf("can-i list secrets: %q", out)
	}
	out = k.must("--as", "alice", "auth", "can-i", "--list")
	for _, want := range []string{"pods ", "[get list watch]", "selfsubjectaccessreviews.authorization.k8s.io", "[/healthz]"} {
		if !strings.Contains(out, want) {
			t.Errorf("can-i --list lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "secrets ") {
		t.Errorf("can-i --list shows secrets:\n%s", out)
	}
	errOut := k.fail("--as", "alice", "get", "pods", "-n", "default")
	if !strings.Contains(errOut, `Error from server (Forbidden): pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "default"`) {
		t.Errorf("--as alice in another namespace: %s", errOut)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestAuditLog: a kubectl request and a refused one are in the audit log
// with user, verb, resource and code, under the Audit-ID the server sent.
func TestAuditLog(t *testing.T) {
	k := newKubectl(t, "audit")
	k.must("create", "configmap", "audited")
	k.fail("--as", "bob", "get", "secrets")
	data, err := os.ReadFile(filepath.Join(filepath.Dir(testServer.PKI.Dir), "audit.log"))
	if err != nil {
		t.Fatal(err)
	}
	var created, refused bool
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var ev audit.Event
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		if ev.ObjectRef == nil || ev.ObjectRef.Namespace != k.ns {
			continue
		}
		switch {
		case ev.Verb == "create" && ev.ObjectRef.Resource == "configmaps" && ev.User.Username == pki.AdminUser && ev.ResponseStatus.Code == 201:
			created = true
		case ev.Verb == "list" && ev.ObjectRef.Resource == "secrets" && ev.User.Username == pki.AdminUser && ev.ImpersonatedUser != nil &&
			ev.ImpersonatedUser.Username == "bob" && ev.ResponseStatus.Code == 403 &&
			ev.Annotations["authorization.k8s.io/decision"] == "forbid":
			refused = true
		}
	}
	if !created || !refused {
		t.Errorf("audit log lacks the create (%v) or the refused list (%v):\n%s", created, refused, data)
	}
}
