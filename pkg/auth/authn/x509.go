// Client certificate authentication (kube-apiserver's x509 authenticator):
// verifying a chain against the client CAs, with verified chains cached for a
// while, and the user read from the certificate's subject.

package authn

import (
	"crypto/sha256"
	"crypto/x509"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/watchcache/watchcache/pkg/auth/user"
)

// X509 authenticates client certificates: the certificate's common name
// is the user, its organizations the groups.
//
// The TLS handshake asks for a certificate without verifying it (so that
// requests with only a token connect); X509 verifies the chain here.
//
// Verifying a chain costs tens of microseconds, more than the rest of a
// cached read; verified chains are remembered (by the SHA-256 of the chain)
// for verifiedFor or until the leaf expires, whichever is sooner.
type X509 struct {
	roots *x509.CertPool
	now   func() time.Time

	mu       sync.Mutex
	verified map[[sha256.Size]byte]verified
}

// verified is a chain that verified and its user, good until until.
type verified struct {
	user  *user.Info
	until time.Time
}

// verifiedFor bounds how long a verified chain is trusted without being
// verified again; maxVerified bounds how many are remembered.
const (
	verifiedFor = 5 * time.Minute
	maxVerified = 4096
)

// NewX509 accepts certificates that chain to roots for client
// authentication.
func NewX509(roots *x509.CertPool) *X509 {
	return &X509{roots: roots, now: time.Now, verified: map[[sha256.Size]byte]verified{}}
}

// Authenticate verifies chain (the leaf first, then intermediates) and
// returns its user.
func (x *X509) Authenticate(chain []*x509.Certificate) (*user.Info, error) {
	if x == nil {
		return nil, errors.New("client certificates are not accepted")
	}
	h := sha256.New()
	for _, c := range chain {
		h.Write(c.Raw)
	}
	var key [sha256.Size]byte
	h.Sum(key[:0])
	now := x.now()
	x.mu.Lock()
	v, ok := x.verified[key]
	x.mu.Unlock()
	if ok && now.Before(v.until) {
		return v.user, nil
	}
	u, err := x.verify(chain)
	if err != nil {
		return nil, err
	}
	v = verified{user: u, until: now.Add(verifiedFor)}
	if chain[0].NotAfter.Before(v.until) {
		v.until = chain[0].NotAfter
	}
	x.mu.Lock()
	if len(x.verified) >= maxVerified {
		clear(x.verified)
	}
	x.verified[key] = v
	x.mu.Unlock()
	return u, nil
}

// verify checks chain against the roots and reads its user.
func (x *X509) verify(chain []*x509.Certificate) (*user.Info, error) {
	opts := x509.VerifyOptions{Roots: x.roots, Intermediates: x509.NewCertPool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	for _, c := range chain[1:] {
		opts.Intermediates.AddCert(c)
	}
	leaf := chain[0]
	opts.CurrentTime = x.now()
	if _, err := leaf.Verify(opts); err != nil {
		return nil, fmt.Errorf("verifying certificate %s: %w", leaf.Subject, err)
	}
	if leaf.Subject.CommonName == "" {
		return nil, errors.New("client certificate has no common name")
	}
	return &user.Info{Name: leaf.Subject.CommonName, Groups: leaf.Subject.Organization}, nil
}
