package cluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// pki is the cluster's credentials, as files under dir: one CA that signs
// the servers' serving certificate and the components' client certificates
// (given to the server as --client-ca-file, to kube-controller-manager as
// --root-ca-file and --cluster-signing-*), and the ServiceAccount key.
type pki struct {
	dir    string
	ca     *x509.Certificate
	caKey  *ecdsa.PrivateKey
	serial int64
}

func (p *pki) path(name string) string { return filepath.Join(p.dir, name) }

// newPKI writes ca.crt, ca.key, sa.key, serving.crt and serving.key
// (for 127.0.0.1) under dir.
func newPKI(t testing.TB, dir string) *pki {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	check(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "cluster-test-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	check(t, err)
	ca, err := x509.ParseCertificate(der)
	check(t, err)
	p := &pki{dir: dir, ca: ca, caKey: key, serial: 1}
	writePEM(t, p.path("ca.crt"), "CERTIFICATE", der)
	p.writeKey(t, "ca.key", key)

	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	check(t, err)
	writePEM(t, p.path("sa.key"), "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(saKey))

	p.issue(t, "serving", &x509.Certificate{
		Subject:     pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	return p
}

// client writes name.crt and name.key, a client certificate of user with
// groups.
func (p *pki) client(t testing.TB, name, user string, groups ...string) {
	p.issue(t, name, &x509.Certificate{
		Subject:     pkix.Name{CommonName: user, Organization: groups},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
}

func (p *pki) issue(t testing.TB, name string, tmpl *x509.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	check(t, err)
	p.serial++
	tmpl.SerialNumber = big.NewInt(p.serial)
	tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.caKey)
	check(t, err)
	writePEM(t, p.path(name+".crt"), "CERTIFICATE", der)
	p.writeKey(t, name+".key", key)
}

func (p *pki) writeKey(t testing.TB, name string, key *ecdsa.PrivateKey) {
	der, err := x509.MarshalECPrivateKey(key)
	check(t, err)
	writePEM(t, p.path(name), "EC PRIVATE KEY", der)
}

// kubeconfig writes name.kubeconfig for server with the client
// certificate name.crt.
func (p *pki) kubeconfig(t testing.TB, name, server string) string {
	path := p.path(name + ".kubeconfig")
	writeFile(t, path, fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q, certificate-authority: %q}}]
users: [{name: u, user: {client-certificate: %q, client-key: %q}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`, server, p.path("ca.crt"), p.path(name+".crt"), p.path(name+".key")))
	return path
}

func writePEM(t testing.TB, path, typ string, der []byte) {
	writeFile(t, path, string(pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})))
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	check(t, os.WriteFile(path, []byte(content), 0o600))
}

func check(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
