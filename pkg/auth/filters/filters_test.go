package filters

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/watchcache/watchcache/pkg/auth/authorizer"
	"github.com/watchcache/watchcache/pkg/auth/user"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// allowOnly allows the listed (user, verb, resource, name) and nothing else.
func allowOnly(allowed ...[4]string) authorizer.Authorizer {
	return authorizer.Func(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
		if slices.Contains(allowed, [4]string{a.User.Name, a.Verb, a.Resource, a.Name}) {
			return authorizer.Allow, "", nil
		}
		return authorizer.NoOpinion, "", nil
	})
}

func serve(t *testing.T, h http.Handler, as *user.Info, method, path string, header http.Header) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(method, path, nil)
	for k, vs := range header {
		for _, v := range vs {
			r.Header.Add(k, v)
		}
	}
	r = r.WithContext(user.WithUser(r.Context(), as))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func decodeStatus(t *testing.T, w *httptest.ResponseRecorder) metav1.Status {
	t.Helper()
	var st metav1.Status
	if err := json.Unmarshal(w.Body.Bytes(), &st); err != nil || st.Kind != "Status" {
		t.Fatalf("not a Status: %v %s", err, w.Body)
	}
	return st
}

func TestAuthorizationForbidden(t *testing.T) {
	reached := false
	h := WithAuthorization(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reached = true }),
		allowOnly([4]string{"alice", "list", "pods", ""}), nil, slog.New(slog.DiscardHandler))
	alice := &user.Info{Name: "alice"}
	if w := serve(t, h, alice, "GET", "/api/v1/namespaces/ns/pods", nil); w.Code != 200 || !reached {
		t.Fatalf("allowed list: %d reached=%v", w.Code, reached)
	}
	reached = false
	cases := map[string]string{
		"/api/v1/namespaces/ns/secrets/s":                 `secrets "s" is forbidden: User "alice" cannot get resource "secrets" in API group "" in the namespace "ns"`,
		"/apis/rbac.authorization.k8s.io/v1/clusterroles": `clusterroles.rbac.authorization.k8s.io is forbidden: User "alice" cannot list resource "clusterroles" in API group "rbac.authorization.k8s.io" at the cluster scope`,
		"/metrics": `forbidden: User "alice" cannot get path "/metrics"`,
	}
	for path, msg := range cases {
		w := serve(t, h, alice, "GET", path, nil)
		st := decodeStatus(t, w)
		if w.Code != 403 || st.Reason != metav1.StatusReasonForbidden || st.Message != msg || reached {
			t.Errorf("%s: %d %q reached=%v, want 403 %q", path, w.Code, st.Message, reached, msg)
		}
	}
}

func TestImpersonation(t *testing.T) {
	var seen *user.Info
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = user.From(r.Context())
		if imp := user.ImpersonatorFrom(r.Context()); r.Header.Get(impersonateUser) != "" || imp != nil && imp.Name != "admin" || (imp == nil) != (seen.Name == "admin") {
			t.Errorf("headers left or impersonator lost: %v", r.Header)
		}
	})
	z := allowOnly([4]string{"admin", "impersonate", "users", "bob"}, [4]string{"admin", "impersonate", "groups", "devs"},
		[4]string{"admin", "impersonate", "serviceaccounts", "robot"})
	h := WithImpersonation(next, z)
	admin := &user.Info{Name: "admin", Groups: []string{"system:authenticated"}}

	w := serve(t, h, admin, "GET", "/api/v1/pods", http.Header{impersonateUser: {"bob"}, impersonateGroup: {"devs"}})
	if w.Code != 200 || seen == nil || seen.Name != "bob" || !slices.Equal(seen.Groups, []string{"devs", user.AllAuthenticated}) {
		t.Fatalf("as bob: %d %+v", w.Code, seen)
	}
	seen = nil
	w = serve(t, h, admin, "GET", "/api/v1/pods", http.Header{impersonateUser: {"system:serviceaccount:ns:robot"}})
	if w.Code != 200 || !slices.Equal(seen.Groups, []string{user.AllServiceAccountsGroup, "system:serviceaccounts:ns", user.AllAuthenticated}) {
		t.Fatalf("as a ServiceAccount: %d %+v", w.Code, seen)
	}
	seen = nil
	w = serve(t, h, admin, "GET", "/api/v1/pods", http.Header{impersonateUser: {"bob"}, impersonateGroup: {"system:masters"}})
	if st := decodeStatus(t, w); w.Code != 403 || seen != nil ||
		st.Message != `groups "system:masters" is forbidden: User "admin" cannot impersonate resource "groups" in API group "" at the cluster scope` {
		t.Fatalf("forbidden group: %d %q", w.Code, st.Message)
	}
	w = serve(t, h, admin, "GET", "/api/v1/pods", http.Header{impersonateGroup: {"devs"}})
	if w.Code != 400 || seen != nil {
		t.Fatalf("group without user: %d", w.Code)
	}
	w = serve(t, h, &user.Info{Name: "eve"}, "GET", "/api/v1/pods", http.Header{impersonateUser: {"bob"}})
	if w.Code != 403 || seen != nil {
		t.Fatalf("eve as bob: %d", w.Code)
	}
	w = serve(t, h, admin, "GET", "/api/v1/pods", nil)
	if w.Code != 200 || seen.Name != "admin" {
		t.Fatalf("no impersonation: %d %+v", w.Code, seen)
	}
}
