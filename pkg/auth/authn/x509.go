package authn

import (
	"crypto/x509"
	"errors"
	"fmt"

	"github.com/watchcache/watchcache/pkg/auth/user"
)

// X509 authenticates client certificates: the certificate's common name
// is the user, its organizations the groups.
//
// The TLS handshake asks for a certificate without verifying it (so that
// requests with only a token connect); X509 verifies the chain here.
type X509 struct {
	roots *x509.CertPool
}

// NewX509 accepts certificates that chain to roots for client
// authentication.
func NewX509(roots *x509.CertPool) *X509 { return &X509{roots: roots} }

// Authenticate verifies chain (the leaf first, then intermediates) and
// returns its user.
func (x *X509) Authenticate(chain []*x509.Certificate) (*user.Info, error) {
	if x == nil {
		return nil, errors.New("client certificates are not accepted")
	}
	opts := x509.VerifyOptions{Roots: x.roots, Intermediates: x509.NewCertPool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	for _, c := range chain[1:] {
		opts.Intermediates.AddCert(c)
	}
	leaf := chain[0]
	if _, err := leaf.Verify(opts); err != nil {
		return nil, fmt.Errorf("verifying certificate %s: %w", leaf.Subject, err)
	}
	if leaf.Subject.CommonName == "" {
		return nil, errors.New("client certificate has no common name")
	}
	return &user.Info{Name: leaf.Subject.CommonName, Groups: leaf.Subject.Organization}, nil
}
