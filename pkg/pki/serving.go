// A serving certificate of its own CA, for servers the API server calls
// (admission webhooks in tests).

package pki

import (
	"crypto/x509"
	"fmt"
	"path/filepath"
	"time"
)

// servingValidity is how long NewServingCert's certificates live: a test's
// run.
const servingValidity = 24 * time.Hour

// NewServingCert writes into dir tls.crt and tls.key (the names of a
// Kubernetes TLS Secret's keys, which webhook servers such as
// controller-runtime's read): a serving certificate for hosts, signed by a
// new CA whose certificate (PEM) it returns, for a caBundle. The CA's key is
// not kept.
func NewServingCert(dir string, hosts []string) (caPEM []byte, err error) {
	ca, err := newKeyPair(certSpec{commonName: "watchcache-serving-ca", isCA: true, validity: servingValidity}, nil)
	if err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	leaf, err := newKeyPair(certSpec{commonName: "watchcache-serving", hosts: hosts,
		usages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, validity: servingValidity}, ca)
	if err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	if err := leaf.write(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")); err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	return ca.certPEM(), nil
}
