// Key pairs and certificates: P-256 keys, certificates signed by a CA,
// written as PEM atomically and read back, and CA bundles read into pools.

package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"time"
)

// keyPair is a certificate and its private key, parsed.
type keyPair struct {
	cert *x509.Certificate
	key  crypto.Signer
}

// certSpec says what a certificate is for; the zero IsCA is a leaf.
type certSpec struct {
	commonName    string
	organizations []string
	hosts         []string // DNS names and IP addresses (leaf server certificates)
	usages        []x509.ExtKeyUsage
	isCA          bool
	validity      time.Duration
}

// clockSkew backdates every certificate so that a host whose clock is a
// little behind still accepts it at once.
const clockSkew = 5 * time.Minute

// newKeyPair creates a P-256 key and a certificate for it, signed by ca
// (self-signed when ca is nil).
func newKeyPair(spec certSpec, ca *keyPair) (*keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: spec.commonName, Organization: spec.organizations},
		NotBefore:    now.Add(-clockSkew),
		NotAfter:     now.Add(spec.validity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  spec.usages,
	}
	if spec.isCA {
		tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
		tmpl.KeyUsage |= x509.KeyUsageCertSign | x509.KeyUsageCRLSign
	}
	for _, h := range spec.hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	parent, signer := tmpl, crypto.Signer(key)
	if ca != nil {
		parent, signer = ca.cert, ca.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, key.Public(), signer)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &keyPair{cert: cert, key: key}, nil
}

// write stores the pair as PEM: the key with mode 0600, the certificate
// with 0644.
func (kp *keyPair) write(certFile, keyFile string) error {
	keyPEM, err := kp.keyPEM()
	if err != nil {
		return err
	}
	if err := writeFile(keyFile, keyPEM, 0o600); err != nil {
		return err
	}
	return writeFile(certFile, kp.certPEM(), 0o644)
}

// certPEM is the certificate in PEM.
func (kp *keyPair) certPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: kp.cert.Raw})
}

// keyPEM is the private key in PEM (PKCS #8).
func (kp *keyPair) keyPEM() ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(kp.key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// readKeyPair loads a pair written by write. A missing file is reported
// with os.ErrNotExist in the chain.
func readKeyPair(certFile, keyFile string) (*keyPair, error) {
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return nil, err
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, err
	}
	cert, err := parseCertPEM(certPEM)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", certFile, err)
	}
	block, _ := pem.Decode(keyPEM)
	if block == nil {
		return nil, fmt.Errorf("%s: no PEM block", keyFile)
	}
	key, err := parsePrivateKey(block)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", keyFile, err)
	}
	return &keyPair{cert: cert, key: key}, nil
}

// parseCertPEM parses the first certificate of a PEM bundle.
func parseCertPEM(data []byte) (*x509.Certificate, error) {
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			return nil, errors.New("no CERTIFICATE PEM block")
		}
		if block.Type == "CERTIFICATE" {
			return x509.ParseCertificate(block.Bytes)
		}
	}
}

// parsePrivateKey reads a PKCS #8, PKCS #1 or SEC 1 key.
func parsePrivateKey(block *pem.Block) (crypto.Signer, error) {
	var key any
	var err error
	switch block.Type {
	case "PRIVATE KEY":
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	default:
		return nil, fmt.Errorf("unexpected PEM block %q", block.Type)
	}
	if err != nil {
		return nil, err
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("key of type %T cannot sign", key)
	}
	return signer, nil
}

// writeFile writes data atomically (a temporary file renamed over path)
// with the given mode, whatever the mode of a file it replaces.
func writeFile(path string, data []byte, mode os.FileMode) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, mode); err != nil {
		return err
	}
	if err := os.Chmod(tmp, mode); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// CertPool reads a PEM bundle of CA certificates (--client-ca-file, the
// generated ca.crt).
func CertPool(file string) (*x509.CertPool, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return nil, fmt.Errorf("%s: no PEM certificate in it", file)
	}
	return pool, nil
}

// LoadCA reads a CA's certificate and private key (PEM; the key PKCS #8,
// PKCS #1 or SEC 1), for signing others' certificates: the generated CA,
// or kube-controller-manager's --cluster-signing-cert-file and
// --cluster-signing-key-file.
func LoadCA(certFile, keyFile string) (*x509.Certificate, crypto.Signer, error) {
	kp, err := readKeyPair(certFile, keyFile)
	if err != nil {
		return nil, nil, err
	}
	return kp.cert, kp.key, nil
}
