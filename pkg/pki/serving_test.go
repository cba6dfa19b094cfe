package pki

import (
	"crypto/tls"
	"crypto/x509"
	"path/filepath"
	"testing"
)

// TestNewServingCert: tls.crt and tls.key are a pair, the certificate
// covers the hosts asked for and no other, and chains to the CA returned;
// two calls make two CAs.
func TestNewServingCert(t *testing.T) {
	dir := t.TempDir()
	caPEM, err := NewServingCert(dir, []string{"localhost", "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tls.LoadX509KeyPair(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")); err != nil {
		t.Fatal(err)
	}
	if m := mode(t, filepath.Join(dir, "tls.key")); m != 0o600 {
		t.Errorf("tls.key mode %v", m)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		t.Fatalf("the CA is not PEM: %q", caPEM)
	}
	leaf := loadCert(t, filepath.Join(dir, "tls.crt"))
	for host, ok := range map[string]bool{"localhost": true, "127.0.0.1": true, "example.com": false, "10.0.0.1": false} {
		_, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: host, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
		if (err == nil) != ok {
			t.Errorf("verify for %s: %v, want ok %v", host, err, ok)
		}
	}
	other, err := NewServingCert(t.TempDir(), []string{"localhost"})
	if err != nil || string(other) == string(caPEM) {
		t.Errorf("a second call reused the CA: %v", err)
	}
}
