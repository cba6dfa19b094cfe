package authn

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/watchcache/watchcache/pkg/auth/user"
	"github.com/watchcache/watchcache/pkg/pki"
	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// serviceAccountsMap is a Lookup over a map of namespace/name → uid.
func serviceAccountsMap(accounts map[string]string) func(context.Context, string, string, bool) (string, bool, error) {
	return func(_ context.Context, ns, name string, _ bool) (string, bool, error) {
		uid, ok := accounts[ns+"/"+name]
		return uid, ok, nil
	}
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLoadTokenFile(t *testing.T) {
	tf, err := LoadTokenFile(writeFile(t, "tokens.csv", "t1,alice,uid-a,\"devs,qa\"\n\nt2,bob,uid-b\nt3,carol,uid-c,ops,extra\n"))
	if err != nil {
		t.Fatal(err)
	}
	if u, ok := tf.Lookup("t1"); !ok || u.Name != "alice" || u.UID != "uid-a" || !slices.Equal(u.Groups, []string{"devs", "qa"}) {
		t.Errorf("t1 = %+v %v", u, ok)
	}
	if u, ok := tf.Lookup("t3"); !ok || !slices.Equal(u.Groups, []string{"ops"}) {
		t.Errorf("t3 = %+v %v", u, ok)
	}
	if _, ok := tf.Lookup("nope"); ok {
		t.Error("unknown token found")
	}
	for content, want := range map[string]string{
		"t1,alice,uid\nt2,bob\n":             "tokens.csv:2: 2 columns",
		"t1,alice,uid\nt1,bob,uid2\n":        "tokens.csv:2: a token given on an earlier line",
		"t1,alice,uid\n,bob,uid2\n":          "tokens.csv:2: empty token",
		"t1,alice,uid\nt2,\"bob,uid2\nx,y,z": "tokens.csv",
	} {
		_, err := LoadTokenFile(writeFile(t, "tokens.csv", content))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("LoadTokenFile(%q) = %v, want %q", content, err, want)
		}
	}
}

// newSA returns ServiceAccounts with a key generated in a temporary data
// directory, knowing accounts, at the clock *now.
func newSA(t *testing.T, dir string, accounts map[string]string, now *time.Time, mutate ...func(*ServiceAccountConfig)) *ServiceAccounts {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, "pki"), 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := ServiceAccountConfig{DataDir: dir, Lookup: serviceAccountsMap(accounts), Now: func() time.Time { return *now }}
	for _, m := range mutate {
		m(&cfg)
	}
	sa, err := NewServiceAccounts(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return sa
}

func TestServiceAccountTokens(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	accounts := map[string]string{"ns/robot": "uid-1"}
	dir := t.TempDir()
	sa := newSA(t, dir, accounts, &now)
	aud := []string{DefaultIssuer}
	token, exp, err := sa.Issue("ns", "robot", "uid-1", aud, time.Hour)
	if err != nil || !exp.Equal(now.Add(time.Hour)) {
		t.Fatal(err, exp)
	}
	u, good, err := sa.Authenticate(ctx, token, aud)
	if err != nil {
		t.Fatal(err)
	}
	if u.Name != "system:serviceaccount:ns:robot" || u.UID != "uid-1" || !slices.Equal(u.Groups, []string{"system:serviceaccounts", "system:serviceaccounts:ns"}) ||
		!strings.HasPrefix(u.Extra[credentialIDKey][0], "JTI=") || !slices.Equal(good, aud) {
		t.Errorf("user = %+v, audiences %v", u, good)
	}

	// The same data directory gives the same key: tokens survive restarts.
	if _, _, err := newSA(t, dir, accounts, &now).Authenticate(ctx, token, aud); err != nil {
		t.Errorf("after a restart: %v", err)
	}
	other := newSA(t, t.TempDir(), accounts, &now)
	if _, _, err := other.Authenticate(ctx, token, aud); err == nil {
		t.Error("a token signed with another key verified")
	}
	// Extra verification keys: the other server's key file verifies.
	both := newSA(t, t.TempDir(), accounts, &now, func(c *ServiceAccountConfig) {
		c.KeyFiles = []string{filepath.Join(dir, "pki", "sa.key")}
	})
	if _, _, err := both.Authenticate(ctx, token, aud); err != nil {
		t.Errorf("with the signer's key as --service-account-key-file: %v", err)
	}

	parts := strings.Split(token, ".")
	tampered := parts[0] + "." + parts[1] + "x." + parts[2]
	if _, _, err := sa.Authenticate(ctx, tampered, aud); err == nil {
		t.Error("a tampered token verified")
	}
	if _, _, err := sa.Authenticate(ctx, token, []string{"other-audience"}); err == nil {
		t.Error("a token for another audience verified")
	}
	foreign := newSA(t, dir, accounts, &now, func(c *ServiceAccountConfig) { c.Issuers = []string{"https://elsewhere"} })
	if _, _, err := foreign.Authenticate(ctx, token, aud); err == nil || !strings.Contains(err.Error(), "issuer") {
		t.Errorf("another issuer: %v", err)
	}
	later := now.Add(2 * time.Hour)
	if _, _, err := newSA(t, dir, accounts, &later).Authenticate(ctx, token, aud); err == nil {
		t.Error("an expired token verified")
	}

	accounts["ns/robot"] = "uid-2" // recreated
	if _, _, err := sa.Authenticate(ctx, token, aud); err == nil {
		t.Error("the token of a recreated ServiceAccount verified")
	}
	delete(accounts, "ns/robot")
	if _, _, err := sa.Authenticate(ctx, token, aud); err == nil {
		t.Error("the token of a deleted ServiceAccount verified")
	}
}

func TestServiceAccountKeyErrors(t *testing.T) {
	bad := writeFile(t, "bad.key", "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n")
	for name, cfg := range map[string]ServiceAccountConfig{
		"signing": {SigningKeyFile: bad},
		"verify":  {DataDir: t.TempDir(), KeyFiles: []string{bad}},
	} {
		if name == "verify" {
			os.MkdirAll(filepath.Join(cfg.DataDir, "pki"), 0o700)
		}
		if _, err := NewServiceAccounts(cfg); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("%s key %s: %v, want an error naming the file", name, bad, err)
		}
	}
}

func TestTokenRequest(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	sa := newSA(t, t.TempDir(), map[string]string{"ns/robot": "uid-1"}, &now)
	out, err := sa.TokenRequest(ctx, "ns", "robot", []byte(`{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	tr := out.(*authenticationv1.TokenRequest)
	if *tr.Spec.ExpirationSeconds != 3600 || !slices.Equal(tr.Spec.Audiences, []string{DefaultIssuer}) ||
		!tr.Status.ExpirationTimestamp.Time.Equal(now.Add(time.Hour)) || tr.Name != "robot" || tr.Namespace != "ns" {
		t.Errorf("TokenRequest = %+v", tr)
	}
	if _, _, err := sa.Authenticate(ctx, tr.Status.Token, tr.Spec.Audiences); err != nil {
		t.Errorf("the issued token: %v", err)
	}

	for body, check := range map[string]func(error) bool{
		`{"spec":{"expirationSeconds":60}}`:                     apierrors.IsInvalid,
		`{"spec":{"boundObjectRef":{"kind":"Pod","name":"p"}}}`: apierrors.IsInvalid,
		`{"spec":`:                              apierrors.IsBadRequest,
		`{"spec":{"expirationSeconds":"soon"}}`: apierrors.IsBadRequest,
		`{"spec":{"audiences":["x"],"expirationSeconds":99999999999999}}`: apierrors.IsInvalid,
	} {
		if _, err := sa.TokenRequest(ctx, "ns", "robot", []byte(body)); !check(err) {
			t.Errorf("TokenRequest(%s) = %v", body, err)
		}
	}
	_, err = sa.TokenRequest(ctx, "ns", "robot", []byte(`{"spec":{"expirationSeconds":60}}`))
	if !strings.Contains(err.Error(), "spec.expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes") {
		t.Errorf("message: %v", err)
	}
	if _, err := sa.TokenRequest(ctx, "ns", "ghost", []byte(`{}`)); !apierrors.IsNotFound(err) {
		t.Errorf("missing ServiceAccount: %v", err)
	}
}

// certs makes a CA's PKI in a temporary directory and returns its admin
// certificate chain and a pool of its CA.
func certs(t *testing.T) ([]*x509.Certificate, *x509.CertPool) {
	t.Helper()
	files, err := pki.Ensure(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.LoadX509KeyPair(files.AdminCert, files.AdminKey)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(pair.Certificate[0])
	pool, err := pki.CertPool(files.CACert)
	if err != nil {
		t.Fatal(err)
	}
	return []*x509.Certificate{leaf}, pool
}

func TestX509(t *testing.T) {
	chain, pool := certs(t)
	u, err := NewX509(pool).Authenticate(chain)
	if err != nil || u.Name != pki.AdminUser || !slices.Equal(u.Groups, []string{pki.AdminGroup}) {
		t.Errorf("admin certificate: %+v %v", u, err)
	}
	_, otherPool := certs(t)
	if _, err := NewX509(otherPool).Authenticate(chain); err == nil {
		t.Error("a certificate of another CA verified")
	}
	// A remembered chain is not trusted past its leaf's expiry.
	x := NewX509(pool)
	if _, err := x.Authenticate(chain); err != nil {
		t.Fatal(err)
	}
	x.now = func() time.Time { return chain[0].NotAfter.Add(time.Second) }
	if _, err := x.Authenticate(chain); err == nil {
		t.Error("an expired certificate verified from the cache")
	}
}

// request builds a request with a client certificate chain and headers.
func request(chain []*x509.Certificate, header ...string) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "/api/v1/pods", nil)
	r.TLS = &tls.ConnectionState{PeerCertificates: chain}
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Set(header[i], header[i+1])
	}
	return r
}

func TestAuthenticateRequest(t *testing.T) {
	chain, pool := certs(t)
	_, otherPool := certs(t)
	otherChain, _ := certs(t)
	tokens, err := LoadTokenFile(writeFile(t, "tokens.csv", "t1,alice,uid-a,devs\n"))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	sa := newSA(t, t.TempDir(), map[string]string{"ns/robot": "uid-1"}, &now)
	saToken, _, _ := sa.Issue("ns", "robot", "uid-1", []string{DefaultIssuer}, time.Hour)
	a := New(Config{X509: NewX509(pool), Tokens: tokens, ServiceAccounts: sa, Anonymous: true})
	for name, tc := range map[string]struct {
		r      *http.Request
		user   string
		groups []string
		fails  bool
	}{
		"certificate":                    {r: request(chain), user: pki.AdminUser, groups: []string{pki.AdminGroup, user.AllAuthenticated}},
		"static token":                   {r: request(nil, "Authorization", "Bearer t1"), user: "alice", groups: []string{"devs", user.AllAuthenticated}},
		"bearer scheme in any case":      {r: request(nil, "Authorization", "bearer t1"), user: "alice", groups: []string{"devs", user.AllAuthenticated}},
		"ServiceAccount token":           {r: request(nil, "Authorization", "Bearer "+saToken), user: "system:serviceaccount:ns:robot", groups: []string{"system:serviceaccounts", "system:serviceaccounts:ns", user.AllAuthenticated}},
		"no credentials":                 {r: request(nil), user: user.Anonymous, groups: []string{user.AllUnauthenticated}},
		"basic auth is no credential":    {r: request(nil, "Authorization", "Basic YTpi"), user: user.Anonymous, groups: []string{user.AllUnauthenticated}},
		"bad token":                      {r: request(nil, "Authorization", "Bearer nope"), fails: true},
		"empty token":                    {r: request(nil, "Authorization", "Bearer "), fails: true},
		"bad JWT":                        {r: request(nil, "Authorization", "Bearer a.b.c"), fails: true},
		"certificate of another CA":      {r: request(otherChain), fails: true},
		"bad certificate but good token": {r: request(otherChain, "Authorization", "Bearer t1"), user: "alice", groups: []string{"devs", user.AllAuthenticated}},
	} {
		u, err := a.AuthenticateRequest(tc.r)
		if tc.fails {
			if err == nil {
				t.Errorf("%s: authenticated as %+v", name, u)
			}
			continue
		}
		if err != nil || u.Name != tc.user || !slices.Equal(u.Groups, tc.groups) {
			t.Errorf("%s: %+v %v, want %s %v", name, u, err, tc.user, tc.groups)
		}
		if tc.r.Header.Get("Authorization") != "" && u.Name != user.Anonymous {
			t.Errorf("%s: Authorization header passed on", name)
		}
	}
	noAnonymous := New(Config{X509: NewX509(otherPool)})
	if _, err := noAnonymous.AuthenticateRequest(request(nil)); !errors.Is(err, errNoCredentials) {
		t.Errorf("without anonymous: %v", err)
	}

	// The filter: 401 Status, or the user in the context.
	var seen *user.Info
	h := WithAuthentication(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { seen = user.From(r.Context()) }), a, slogDiscard)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, request(nil, "Authorization", "Bearer nope"))
	if rec.Code != http.StatusUnauthorized || !strings.Contains(rec.Body.String(), `"reason":"Unauthorized"`) || seen != nil {
		t.Errorf("bad token: %d %s", rec.Code, rec.Body)
	}
	h.ServeHTTP(httptest.NewRecorder(), request(nil, "Authorization", "Bearer t1"))
	if seen == nil || seen.Name != "alice" {
		t.Errorf("user in context: %+v", seen)
	}

	// TokenReview's view: audiences.
	if u, auds, ok, _ := a.AuthenticateToken(context.Background(), saToken, nil); !ok || u.Name != "system:serviceaccount:ns:robot" || !slices.Equal(auds, []string{DefaultIssuer}) {
		t.Errorf("AuthenticateToken: %+v %v %v", u, auds, ok)
	}
	if _, _, ok, _ := a.AuthenticateToken(context.Background(), saToken, []string{"vault"}); ok {
		t.Error("a token reviewed for an audience it is not for")
	}
}

func BenchmarkAuthenticate(b *testing.B) {
	files, err := pki.Ensure(b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	pair, _ := tls.LoadX509KeyPair(files.AdminCert, files.AdminKey)
	leaf, _ := x509.ParseCertificate(pair.Certificate[0])
	pool, _ := pki.CertPool(files.CACert)
	path := filepath.Join(b.TempDir(), "tokens.csv")
	os.WriteFile(path, []byte("t1,alice,uid-a,devs\n"), 0o600)
	tokens, err := LoadTokenFile(path)
	if err != nil {
		b.Fatal(err)
	}
	a := New(Config{X509: NewX509(pool), Tokens: tokens})
	for name, r := range map[string]*http.Request{
		"certificate":  request([]*x509.Certificate{leaf}),
		"static-token": request(nil, "Authorization", "Bearer t1"),
	} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if name == "static-token" { // authentication removes it
					r.Header.Set("Authorization", "Bearer t1")
				}
				if _, err := a.AuthenticateRequest(r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

var slogDiscard = slog.New(slog.DiscardHandler)
