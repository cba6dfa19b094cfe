// kube-controller-manager's certificatesigningrequest-signing-controller:
// approved requests of the signers it serves get a certificate from the
// cluster's CA, after that signer's checks of what is asked.

package certificates

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"slices"
	"strings"
	"time"

	"github.com/watchcache/watchcache/pkg/controller"
	"github.com/watchcache/watchcache/pkg/jsontree"
	"github.com/watchcache/watchcache/pkg/pki"
	"github.com/watchcache/watchcache/pkg/resource"
	"github.com/watchcache/watchcache/pkg/validation"
	certificatesv1 "k8s.io/api/certificates/v1"
)

// DefaultSigningDuration is --cluster-signing-duration's default.
const DefaultSigningDuration = 365 * 24 * time.Hour

// What a signed certificate's validity is made of, as kube-controller-
// manager's: it starts backdate ago; one of at least short also ends
// backdate early; a request may ask for less than the signer's duration
// but not less than minDuration.
const (
	backdate    = 5 * time.Minute
	short       = 8 * time.Hour
	minDuration = 10 * time.Minute
)

// Signer signs approved requests for kube-controller-manager's signers
// kubernetes.io/kube-apiserver-client, kube-apiserver-client-kubelet and
// kubelet-serving with one CA. A request its signer's checks refuse gets
// the Failed condition (reason SignerValidationFailure) instead.
type Signer struct {
	Registry *resource.Registry
	// CACert and CAKey are the CA's files (--cluster-signing-cert-file,
	// --cluster-signing-key-file), read when the controller starts.
	CACert, CAKey string
	// Duration is the longest validity given (--cluster-signing-duration;
	// 0: DefaultSigningDuration); spec.expirationSeconds may shorten it.
	Duration time.Duration
	Log      *slog.Logger

	cert *x509.Certificate
	key  crypto.Signer
}

// Run signs requests until ctx ends. A CA that cannot be read (the
// server checks it at start) is logged and nothing is signed.
func (s *Signer) Run(ctx context.Context) {
	cert, key, err := pki.LoadCA(s.CACert, s.CAKey)
	if err != nil {
		s.Log.Error("certificatesigningrequest-signing-controller: cannot read the signing CA; nothing is signed", "err", err)
		return
	}
	s.cert, s.key = cert, key
	q := controller.NewQueue[string](ctx, "csrsigning")
	watchCSRs(ctx, s.Registry, q, "certificatesigningrequests for signing", s.Log)
	controller.Work(ctx, q, s.sync, s.Log)
}

// signerChecks are the signers served and what each requires of a
// request: kube-controller-manager's checks, with its messages.
var signerChecks = map[string]func(req *x509.CertificateRequest, usages []string) error{
	certificatesv1.KubeAPIServerClientSignerName:        apiServerClient,
	certificatesv1.KubeAPIServerClientKubeletSignerName: kubeletClient,
	certificatesv1.KubeletServingSignerName:             kubeletServing,
}

// sync signs request name if it is approved, not failed, not yet signed
// and for a signer served here.
func (s *Signer) sync(ctx context.Context, name string) (controller.Result, error) {
	o, csr, err := getCSR(ctx, s.Registry, name)
	if o == nil || err != nil {
		return controller.Result{}, err
	}
	check := signerChecks[csr.Spec.SignerName]
	if check == nil || !ready(csr) {
		return controller.Result{}, nil
	}
	req, err := validation.ParseCSRPEM(csr.Spec.Request)
	if err != nil {
		return controller.Result{}, fmt.Errorf("unable to parse csr %q: %v", name, err)
	}
	usages := usageStrings(csr)
	var certPEM []byte
	refusal := check(req, usages)
	if refusal == nil {
		if certPEM, err = s.sign(req, usages, csr.Spec.ExpirationSeconds, time.Now()); err != nil {
			return controller.Result{}, fmt.Errorf("error auto signing csr: %v", err)
		}
	}
	return controller.Result{}, updateCSR(ctx, s.Registry, o, func(cur *certificatesv1.CertificateSigningRequest, obj map[string]any) bool {
		if !ready(cur) || cur.Spec.SignerName != csr.Spec.SignerName {
			return false
		}
		if refusal != nil {
			addCondition(obj, certificatesv1.CertificateFailed, "SignerValidationFailure", refusal.Error(), time.Now())
			return true
		}
		jsontree.Child(obj, "status")["certificate"] = base64.StdEncoding.EncodeToString(certPEM)
		return true
	})
}

// ready: approved, not failed, without a certificate.
func ready(csr *certificatesv1.CertificateSigningRequest) bool {
	return hasCondition(csr, certificatesv1.CertificateApproved) && !hasCondition(csr, certificatesv1.CertificateDenied) &&
		!hasCondition(csr, certificatesv1.CertificateFailed) && len(csr.Status.Certificate) == 0
}

// sign makes the certificate of req: its subject and alternative names,
// the usages asked for, no other extension, not a CA; valid from
// backdate before now for the signer's duration (or the shorter one asked
// for), never past the CA's end.
func (s *Signer) sign(req *x509.CertificateRequest, usages []string, expirationSeconds *int32, now time.Time) ([]byte, error) {
	keyUsage, extKeyUsages, err := x509Usages(usages)
	if err != nil {
		return nil, err
	}
	ttl := s.duration(expirationSeconds)
	notAfter := now.Add(ttl)
	if ttl >= short {
		notAfter = notAfter.Add(-backdate)
	}
	notAfter = minTime(notAfter, s.cert.NotAfter)
	switch {
	case !now.Add(-backdate).Before(s.cert.NotAfter):
		return nil, fmt.Errorf("the signer has expired: NotAfter=%v", s.cert.NotAfter)
	case !now.Before(s.cert.NotAfter):
		return nil, fmt.Errorf("refusing to sign a certificate that expired in the past: NotAfter=%v", s.cert.NotAfter)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: req.Subject,
		DNSNames: req.DNSNames, IPAddresses: req.IPAddresses, EmailAddresses: req.EmailAddresses, URIs: req.URIs,
		NotBefore: now.Add(-backdate), NotAfter: notAfter,
		KeyUsage: keyUsage, ExtKeyUsage: extKeyUsages, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, s.cert, req.PublicKey, s.key)
	if err != nil {
		return nil, fmt.Errorf("failed to sign certificate: %v", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}

// duration is the validity of a certificate asked for expirationSeconds
// (nil: the signer's).
func (s *Signer) duration(expirationSeconds *int32) time.Duration {
	d := s.Duration
	if d == 0 {
		d = DefaultSigningDuration
	}
	if expirationSeconds == nil {
		return d
	}
	return max(min(time.Duration(*expirationSeconds)*time.Second, d), minDuration)
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// keyUsages and extKeyUsages are the x509 meaning of a request's usages.
var (
	keyUsages = map[string]x509.KeyUsage{
		"signing": x509.KeyUsageDigitalSignature, "digital signature": x509.KeyUsageDigitalSignature,
		"content commitment": x509.KeyUsageContentCommitment, "key encipherment": x509.KeyUsageKeyEncipherment,
		"key agreement": x509.KeyUsageKeyAgreement, "data encipherment": x509.KeyUsageDataEncipherment,
		"cert sign": x509.KeyUsageCertSign, "crl sign": x509.KeyUsageCRLSign,
		"encipher only": x509.KeyUsageEncipherOnly, "decipher only": x509.KeyUsageDecipherOnly,
	}
	extKeyUsages = map[string]x509.ExtKeyUsage{
		"any": x509.ExtKeyUsageAny, "server auth": x509.ExtKeyUsageServerAuth, "client auth": x509.ExtKeyUsageClientAuth,
		"code signing": x509.ExtKeyUsageCodeSigning, "email protection": x509.ExtKeyUsageEmailProtection,
		"s/mime": x509.ExtKeyUsageEmailProtection, "ipsec end system": x509.ExtKeyUsageIPSECEndSystem,
		"ipsec tunnel": x509.ExtKeyUsageIPSECTunnel, "ipsec user": x509.ExtKeyUsageIPSECUser,
		"timestamping": x509.ExtKeyUsageTimeStamping, "ocsp signing": x509.ExtKeyUsageOCSPSigning,
		"microsoft sgc": x509.ExtKeyUsageMicrosoftServerGatedCrypto, "netscape sgc": x509.ExtKeyUsageNetscapeServerGatedCrypto,
	}
)

// x509Usages maps usages to a key usage and sorted extended key usages.
func x509Usages(usages []string) (x509.KeyUsage, []x509.ExtKeyUsage, error) {
	var ku x509.KeyUsage
	var eku []x509.ExtKeyUsage
	var unknown []string
	for _, u := range usages {
		if k, ok := keyUsages[u]; ok {
			ku |= k
		} else if e, ok := extKeyUsages[u]; ok {
			if !slices.Contains(eku, e) {
				eku = append(eku, e)
			}
		} else {
			unknown = append(unknown, u)
		}
	}
	if len(unknown) > 0 {
		return 0, nil, fmt.Errorf("unrecognized usage values: %q", unknown)
	}
	slices.Sort(eku)
	return ku, eku, nil
}

// The refusals of the kubelet signers' checks, kube-controller-manager's
// words.
var (
	errNotSystemNodes   = errors.New("subject organization is not system:nodes")
	errNotSystemNode    = errors.New("subject common name does not begin with system:node:")
	errDNSOrIPRequired  = errors.New("DNS or IP subjectAltName is required")
	errDNSNotAllowed    = errors.New("DNS subjectAltNames are not allowed")
	errEmailNotAllowed  = errors.New("Email subjectAltNames are not allowed")
	errIPNotAllowed     = errors.New("IP subjectAltNames are not allowed")
	errURINotAllowed    = errors.New("URI subjectAltNames are not allowed")
	kubeletClientUsages = [][]string{{"client auth", "digital signature", "key encipherment"}, {"client auth", "digital signature"}}
	kubeletServeUsages  = [][]string{{"digital signature", "key encipherment", "server auth"}, {"digital signature", "server auth"}}
)

// apiServerClient: a client certificate of the API may have only the
// usages client auth (required), digital signature and key encipherment.
func apiServerClient(_ *x509.CertificateRequest, usages []string) error {
	for _, u := range usages {
		if u != "client auth" && u != "digital signature" && u != "key encipherment" {
			return fmt.Errorf("invalid usage for client certificate: %s", u)
		}
	}
	if !slices.Contains(usages, "client auth") {
		return errors.New("missing required usage for client certificate: client auth")
	}
	return nil
}

// kubeletClient: a kubelet's client certificate is system:node:<name> in
// system:nodes, without alternative names, for client auth and digital
// signature (and key encipherment).
func kubeletClient(req *x509.CertificateRequest, usages []string) error {
	if err := isNode(req); err != nil {
		return err
	}
	switch {
	case len(req.DNSNames) > 0:
		return errDNSNotAllowed
	case len(req.EmailAddresses) > 0:
		return errEmailNotAllowed
	case len(req.IPAddresses) > 0:
		return errIPNotAllowed
	case len(req.URIs) > 0:
		return errURINotAllowed
	case !strings.HasPrefix(req.Subject.CommonName, "system:node:"):
		return errNotSystemNode
	}
	return usagesAmong(usages, kubeletClientUsages)
}

// kubeletServing: a kubelet's serving certificate is system:node:<name>
// in system:nodes, with DNS names or IPs and no other alternative name,
// for server auth and digital signature (and key encipherment).
func kubeletServing(req *x509.CertificateRequest, usages []string) error {
	if err := isNode(req); err != nil {
		return err
	}
	switch {
	case len(req.DNSNames) == 0 && len(req.IPAddresses) == 0:
		return errDNSOrIPRequired
	case len(req.EmailAddresses) > 0:
		return errEmailNotAllowed
	case len(req.URIs) > 0:
		return errURINotAllowed
	}
	if err := usagesAmong(usages, kubeletServeUsages); err != nil {
		return err
	}
	if !strings.HasPrefix(req.Subject.CommonName, "system:node:") {
		return errNotSystemNode
	}
	return nil
}

// isNode: the subject's organization is exactly system:nodes.
func isNode(req *x509.CertificateRequest) error {
	if !slices.Equal(req.Subject.Organization, []string{"system:nodes"}) {
		return errNotSystemNodes
	}
	return nil
}

// usagesAmong: usages, as a set, are one of sets (each sorted; the first
// is named in the refusal).
func usagesAmong(usages []string, sets [][]string) error {
	set := slices.Clone(usages)
	slices.Sort(set)
	set = slices.Compact(set)
	for _, s := range sets {
		if slices.Equal(set, s) {
			return nil
		}
	}
	return fmt.Errorf("usages did not match %v", sets[0])
}
