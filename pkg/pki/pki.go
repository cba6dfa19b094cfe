// Package pki generates and keeps the server's certificates in
// <data-dir>/pki: a CA, the API's serving certificate, the administrator's
// client certificate, and the embedded etcd's server and client
// certificates; and writes the administrator's kubeconfig.
//
// Restarts reuse what is there; a certificate is made anew only when it is
// missing, unreadable, no longer signed by the CA, within renewBefore of
// expiring, or (the serving certificate) no longer covers the hosts asked
// for. The CA is made anew only when missing or expired, which remakes
// every certificate signed by it.
package pki

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// Subjects of the generated client certificates. AdminUser in AdminGroup
// is kubeadm's administrator (kubernetes-admin in system:masters).
const (
	AdminUser      = "kubernetes-admin"
	AdminGroup     = "system:masters"
	EtcdClientUser = "watchcache-etcd-client"
)

// Lifetimes: the CA lives ten years, every other certificate one year, and
// is renewed at start once within renewBefore of its end (as kubeadm's).
const (
	caValidity   = 10 * 365 * 24 * time.Hour
	leafValidity = 365 * 24 * time.Hour
	renewBefore  = 30 * 24 * time.Hour
)

// Files are the paths of the PKI's PEM files.
type Files struct {
	// Dir is the directory holding them (mode 0700).
	Dir string
	// CACert and CAKey are the CA that signs everything below.
	CACert, CAKey string
	// ServingCert and ServingKey are the API's HTTPS certificate.
	ServingCert, ServingKey string
	// AdminCert and AdminKey are the administrator's client certificate
	// (AdminUser in group AdminGroup).
	AdminCert, AdminKey string
	// EtcdServerCert and EtcdServerKey are the embedded etcd's certificate
	// (localhost, 127.0.0.1).
	EtcdServerCert, EtcdServerKey string
	// EtcdClientCert and EtcdClientKey are the server's certificate as a
	// client of the embedded etcd.
	EtcdClientCert, EtcdClientKey string
}

// FilesIn returns the paths of the PKI kept in dir.
func FilesIn(dir string) Files {
	p := func(name string) string { return filepath.Join(dir, name) }
	return Files{
		Dir:    dir,
		CACert: p("ca.crt"), CAKey: p("ca.key"),
		ServingCert: p("apiserver.crt"), ServingKey: p("apiserver.key"),
		AdminCert: p("admin.crt"), AdminKey: p("admin.key"),
		EtcdServerCert: p("etcd-server.crt"), EtcdServerKey: p("etcd-server.key"),
		EtcdClientCert: p("etcd-client.crt"), EtcdClientKey: p("etcd-client.key"),
	}
}

// ServingHosts are the names the serving certificate must cover: localhost,
// 127.0.0.1, ::1, bindAddress unless it is empty or unspecified (0.0.0.0,
// ::), the host name, and extra (--tls-san), without duplicates.
func ServingHosts(bindAddress string, extra []string) []string {
	hosts := []string{"localhost", "127.0.0.1", "::1"}
	if ip := net.ParseIP(bindAddress); bindAddress != "" && (ip == nil || !ip.IsUnspecified()) {
		hosts = append(hosts, bindAddress)
	}
	if name, err := os.Hostname(); err == nil && name != "" {
		hosts = append(hosts, name)
	}
	hosts = append(hosts, extra...)
	var out []string
	for _, h := range hosts {
		if h != "" && !slices.Contains(out, h) {
			out = append(out, h)
		}
	}
	return out
}

// Ensure makes dir (mode 0700) hold a valid PKI whose serving certificate
// covers servingHosts, generating what is missing or stale, and returns
// its paths.
func Ensure(dir string, servingHosts []string) (Files, error) {
	f := FilesIn(dir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return f, fmt.Errorf("pki: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return f, fmt.Errorf("pki: %w", err)
	}
	ca, err := ensureCA(f)
	if err != nil {
		return f, fmt.Errorf("pki: %w", err)
	}
	server := []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	client := []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	leaves := []struct {
		certFile, keyFile string
		spec              certSpec
	}{
		{f.ServingCert, f.ServingKey, certSpec{commonName: "kube-apiserver", hosts: servingHosts, usages: server}},
		{f.AdminCert, f.AdminKey, certSpec{commonName: AdminUser, organizations: []string{AdminGroup}, usages: client}},
		// etcd also dials itself (its gRPC gateway) with its server
		// certificate, so that one serves both ways, as kubeadm's does.
		{f.EtcdServerCert, f.EtcdServerKey, certSpec{commonName: "watchcache-etcd", hosts: []string{"localhost", "127.0.0.1"},
			usages: append(server, x509.ExtKeyUsageClientAuth)}},
		{f.EtcdClientCert, f.EtcdClientKey, certSpec{commonName: EtcdClientUser, usages: client}},
	}
	for _, l := range leaves {
		l.spec.validity = leafValidity
		if err := ensureLeaf(l.certFile, l.keyFile, l.spec, ca); err != nil {
			return f, fmt.Errorf("pki: %w", err)
		}
	}
	return f, nil
}

// ensureCA loads the CA, or makes a new one if it is missing or expired.
func ensureCA(f Files) (*keyPair, error) {
	ca, err := readKeyPair(f.CACert, f.CAKey)
	switch {
	case err == nil && time.Now().Before(ca.cert.NotAfter) && ca.cert.IsCA:
		return ca, nil
	case err != nil && !errors.Is(err, os.ErrNotExist):
		return nil, err // a damaged CA is for a person to look at, not to replace
	}
	if ca, err = newKeyPair(certSpec{commonName: "watchcache-ca", isCA: true, validity: caValidity}, nil); err != nil {
		return nil, err
	}
	return ca, ca.write(f.CACert, f.CAKey)
}

// ensureLeaf keeps the pair in certFile/keyFile if it still fits spec and
// ca, and makes a new one otherwise.
func ensureLeaf(certFile, keyFile string, spec certSpec, ca *keyPair) error {
	if kp, err := readKeyPair(certFile, keyFile); err == nil && fits(kp.cert, spec, ca) {
		return nil
	}
	kp, err := newKeyPair(spec, ca)
	if err != nil {
		return err
	}
	return kp.write(certFile, keyFile)
}

// fits says whether cert is signed by ca for spec's usages, is far from
// its end, names spec's subject and covers spec's hosts.
func fits(cert *x509.Certificate, spec certSpec, ca *keyPair) bool {
	roots := x509.NewCertPool()
	roots.AddCert(ca.cert)
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: spec.usages}); err != nil {
		return false
	}
	if time.Until(cert.NotAfter) < renewBefore || cert.Subject.CommonName != spec.commonName ||
		!slices.Equal(cert.Subject.Organization, spec.organizations) {
		return false
	}
	for _, h := range spec.hosts {
		if cert.VerifyHostname(h) != nil {
			return false
		}
	}
	return true
}
