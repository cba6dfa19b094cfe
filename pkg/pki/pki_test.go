package pki

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

func mode(t *testing.T, path string) os.FileMode {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Mode().Perm()
}

func readAll(t *testing.T, f Files) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, p := range []string{f.CACert, f.CAKey, f.ServingCert, f.ServingKey, f.AdminCert, f.AdminKey,
		f.EtcdServerCert, f.EtcdServerKey, f.EtcdClientCert, f.EtcdClientKey} {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(p)] = data
	}
	return out
}

func loadCert(t *testing.T, file string) *x509.Certificate {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := parseCertPEM(data)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

func TestEnsureGeneratesAndReuses(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	hosts := ServingHosts("127.0.0.1", []string{"api.example.com"})
	f, err := Ensure(dir, hosts)
	if err != nil {
		t.Fatal(err)
	}
	if m := mode(t, dir); m != 0o700 {
		t.Errorf("dir mode %o", m)
	}
	for _, key := range []string{f.CAKey, f.ServingKey, f.AdminKey, f.EtcdServerKey, f.EtcdClientKey} {
		if m := mode(t, key); m != 0o600 {
			t.Errorf("%s mode %o", key, m)
		}
	}
	ca := loadCert(t, f.CACert)
	if !ca.IsCA || ca.NotAfter.Sub(ca.NotBefore) < caValidity {
		t.Errorf("CA: IsCA %v, %s to %s", ca.IsCA, ca.NotBefore, ca.NotAfter)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	serving := loadCert(t, f.ServingCert)
	for _, h := range []string{"localhost", "127.0.0.1", "::1", "api.example.com"} {
		if _, err := serving.Verify(x509.VerifyOptions{DNSName: h, Roots: roots}); err != nil {
			t.Errorf("serving certificate for %s: %v", h, err)
		}
	}
	if _, err := serving.Verify(x509.VerifyOptions{DNSName: "other.example.com", Roots: roots}); err == nil {
		t.Error("serving certificate covers other.example.com")
	}
	admin := loadCert(t, f.AdminCert)
	if admin.Subject.CommonName != AdminUser || !slices.Equal(admin.Subject.Organization, []string{AdminGroup}) {
		t.Errorf("admin subject %v", admin.Subject)
	}
	if _, err := admin.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("admin certificate as a client: %v", err)
	}
	if _, err := admin.Verify(x509.VerifyOptions{Roots: roots}); err == nil {
		t.Error("admin certificate verifies as a server's")
	}
	before := readAll(t, f)

	if _, err := Ensure(dir, hosts); err != nil {
		t.Fatal(err)
	}
	if after := readAll(t, f); !mapsEqual(before, after) {
		t.Error("a second Ensure with the same hosts changed files")
	}

	// A new SAN remakes the serving certificate only.
	if _, err := Ensure(dir, append(hosts, "10.1.2.3")); err != nil {
		t.Fatal(err)
	}
	after := readAll(t, f)
	for name := range before {
		changed := !bytes.Equal(before[name], after[name])
		if want := name == "apiserver.crt" || name == "apiserver.key"; changed != want {
			t.Errorf("%s changed: %v, want %v", name, changed, want)
		}
	}
	if err := loadCert(t, f.ServingCert).VerifyHostname("10.1.2.3"); err != nil {
		t.Error(err)
	}

	// A lost CA remakes everything.
	if err := os.Remove(f.CACert); err != nil {
		t.Fatal(err)
	}
	if _, err := Ensure(dir, hosts); err != nil {
		t.Fatal(err)
	}
	for name, data := range readAll(t, f) {
		if bytes.Equal(data, after[name]) {
			t.Errorf("%s kept after the CA was lost", name)
		}
	}
}

func mapsEqual(a, b map[string][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !bytes.Equal(v, b[k]) {
			return false
		}
	}
	return true
}

func TestEnsureRefusesADamagedCA(t *testing.T) {
	dir := t.TempDir()
	f, err := Ensure(dir, []string{"localhost"})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f.CAKey, []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Ensure(dir, []string{"localhost"}); err == nil {
		t.Fatal("Ensure accepted a CA key that is not PEM")
	}
}

func TestServingHosts(t *testing.T) {
	name, _ := os.Hostname()
	for _, tc := range []struct {
		bind  string
		extra []string
		has   []string
		lacks []string
	}{
		{bind: "0.0.0.0", has: []string{"localhost", "127.0.0.1", "::1", name}, lacks: []string{"0.0.0.0"}},
		{bind: "::", lacks: []string{"::"}},
		{bind: "10.1.2.3", extra: []string{"a.example.com", "localhost"}, has: []string{"10.1.2.3", "a.example.com"}},
	} {
		hosts := ServingHosts(tc.bind, tc.extra)
		for _, h := range tc.has {
			if !slices.Contains(hosts, h) {
				t.Errorf("ServingHosts(%q, %q) = %q lacks %q", tc.bind, tc.extra, hosts, h)
			}
		}
		for _, h := range tc.lacks {
			if slices.Contains(hosts, h) {
				t.Errorf("ServingHosts(%q, %q) = %q has %q", tc.bind, tc.extra, hosts, h)
			}
		}
		for i, h := range hosts {
			if slices.Contains(hosts[i+1:], h) {
				t.Errorf("ServingHosts(%q, %q) = %q: %q twice", tc.bind, tc.extra, hosts, h)
			}
		}
	}
}

// TestAdminKubeconfig connects with the written kubeconfig, through
// client-go, to a TLS server that serves the generated certificate and
// requires a client certificate from the generated CA.
func TestAdminKubeconfig(t *testing.T) {
	dir := t.TempDir()
	f, err := Ensure(filepath.Join(dir, "pki"), ServingHosts("127.0.0.1", nil))
	if err != nil {
		t.Fatal(err)
	}
	serving, err := tls.LoadX509KeyPair(f.ServingCert, f.ServingKey)
	if err != nil {
		t.Fatal(err)
	}
	clientCAs, err := CertPool(f.CACert)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.TLS.PeerCertificates[0].Subject.CommonName)
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{serving}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: clientCAs}
	srv.StartTLS()
	defer srv.Close()

	path := filepath.Join(dir, "kubeconfig")
	if err := f.WriteAdminKubeconfig(path, srv.URL, true); err != nil {
		t.Fatal(err)
	}
	if m := mode(t, path); m != 0o600 {
		t.Errorf("kubeconfig mode %o", m)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != AdminUser {
		t.Errorf("server saw client %q", body)
	}
	raw, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if ns := raw.Contexts[raw.CurrentContext].Namespace; ns != "default" {
		t.Errorf("namespace %q", ns)
	}

	// Without trustCA the kubeconfig has no CA, and the connection fails
	// (the system roots do not know the generated CA).
	if err := f.WriteAdminKubeconfig(path, srv.URL, false); err != nil {
		t.Fatal(err)
	}
	if cfg, err = clientcmd.BuildConfigFromFlags("", path); err != nil {
		t.Fatal(err)
	}
	if len(cfg.CAData) != 0 {
		t.Error("CA data written without trustCA")
	}
	if client, err = rest.HTTPClientFor(cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Get(srv.URL); err == nil {
		t.Error("connected without the CA")
	}
}
