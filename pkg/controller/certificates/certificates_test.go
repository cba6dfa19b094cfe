package certificates

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"testing"
	"time"

	"github.com/watchcache/watchcache/pkg/pki"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestExpired: kube-controller-manager's cleaner's rules, at times around
// each deadline.
func TestExpired(t *testing.T) {
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cond := func(typ certificatesv1.RequestConditionType, at time.Time) certificatesv1.CertificateSigningRequestCondition {
		return certificatesv1.CertificateSigningRequestCondition{Type: typ, Status: corev1.ConditionTrue, LastUpdateTime: metav1.NewTime(at)}
	}
	cert := testCertPEM(t, created.Add(48*time.Hour))
	expiredCert := testCertPEM(t, created.Add(30*time.Minute))
	for _, tc := range []struct {
		name       string
		conditions []certificatesv1.CertificateSigningRequestCondition
		cert       []byte
		after      time.Duration
		want       bool
	}{
		{"pending 23h", nil, nil, 23 * time.Hour, false},
		{"pending 25h", nil, nil, 25 * time.Hour, true},
		{"approved unissued 25h", []certificatesv1.CertificateSigningRequestCondition{cond("Approved", created)}, nil, 25 * time.Hour, false},
		{"issued 59m", []certificatesv1.CertificateSigningRequestCondition{cond("Approved", created)}, cert, 59 * time.Minute, false},
		{"issued 61m", []certificatesv1.CertificateSigningRequestCondition{cond("Approved", created)}, cert, 61 * time.Minute, true},
		{"issued, certificate expired", []certificatesv1.CertificateSigningRequestCondition{cond("Approved", created.Add(time.Hour))}, expiredCert, 90 * time.Minute, true},
		{"denied 59m", []certificatesv1.CertificateSigningRequestCondition{cond("Denied", created)}, nil, 59 * time.Minute, false},
		{"denied 61m", []certificatesv1.CertificateSigningRequestCondition{cond("Denied", created)}, nil, 61 * time.Minute, true},
		{"failed 61m", []certificatesv1.CertificateSigningRequestCondition{cond("Approved", created), cond("Failed", created)}, nil, 61 * time.Minute, true},
	} {
		csr := &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(created)}}
		csr.Status.Conditions, csr.Status.Certificate = tc.conditions, tc.cert
		if got := Expired(csr, created.Add(tc.after)); got != tc.want {
			t.Errorf("%s: Expired %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestSignerChecks: each signer's checks, with kube-controller-manager's
// messages.
func TestSignerChecks(t *testing.T) {
	node := pkix.Name{CommonName: "system:node:n1", Organization: []string{"system:nodes"}}
	for _, tc := range []struct {
		signer  string
		subject pkix.Name
		dns     []string
		usages  []string
		want    string
	}{
		{certificatesv1.KubeAPIServerClientSignerName, pkix.Name{CommonName: "alice"}, nil, []string{"client auth"}, ""},
		{certificatesv1.KubeAPIServerClientSignerName, pkix.Name{CommonName: "alice"}, nil, []string{"client auth", "server auth"}, "invalid usage for client certificate: server auth"},
		{certificatesv1.KubeAPIServerClientSignerName, pkix.Name{CommonName: "alice"}, nil, []string{"digital signature"}, "missing required usage for client certificate: client auth"},
		{certificatesv1.KubeAPIServerClientKubeletSignerName, node, nil, []string{"digital signature", "client auth"}, ""},
		{certificatesv1.KubeAPIServerClientKubeletSignerName, pkix.Name{CommonName: "system:node:n1", Organization: []string{"other"}}, nil,
			[]string{"digital signature", "client auth"}, "subject organization is not system:nodes"},
		{certificatesv1.KubeAPIServerClientKubeletSignerName, pkix.Name{CommonName: "n1", Organization: []string{"system:nodes"}}, nil,
			[]string{"digital signature", "client auth"}, "subject common name does not begin with system:node:"},
		{certificatesv1.KubeAPIServerClientKubeletSignerName, node, []string{"n1"}, []string{"digital signature", "client auth"}, "DNS subjectAltNames are not allowed"},
		{certificatesv1.KubeAPIServerClientKubeletSignerName, node, nil, []string{"client auth"},
			"usages did not match [client auth digital signature key encipherment]"},
		{certificatesv1.KubeletServingSignerName, node, []string{"n1"}, []string{"digital signature", "server auth"}, ""},
		{certificatesv1.KubeletServingSignerName, node, nil, []string{"digital signature", "server auth"}, "DNS or IP subjectAltName is required"},
		{certificatesv1.KubeletServingSignerName, node, []string{"n1"}, []string{"server auth"}, "usages did not match [digital signature key encipherment server auth]"},
	} {
		_, req := testRequest(t, tc.subject, tc.dns)
		err := signerChecks[tc.signer](req, tc.usages)
		if got := errString(err); got != tc.want {
			t.Errorf("%s %v %v: %q, want %q", tc.signer, tc.subject, tc.usages, got, tc.want)
		}
	}
}

// TestSign: a signed certificate carries the request's subject and names,
// the usages asked for, is no CA, is backdated 5 minutes, lasts the
// duration asked for (bounded by the signer's, at least 10 minutes) and
// never outlives the CA.
func TestSign(t *testing.T) {
	files, err := pki.Ensure(t.TempDir(), []string{"localhost"})
	if err != nil {
		t.Fatal(err)
	}
	s := &Signer{Duration: 24 * time.Hour}
	if s.cert, s.key, err = pki.LoadCA(files.CACert, files.CAKey); err != nil {
		t.Fatal(err)
	}
	now := time.Now().Truncate(time.Second)
	seconds := func(n int32) *int32 { return &n }
	_, req := testRequest(t, pkix.Name{CommonName: "system:node:n1", Organization: []string{"system:nodes"}}, []string{"n1.example"})
	for _, tc := range []struct {
		expiration *int32
		now        time.Time
		notAfter   time.Time
	}{
		{nil, now, now.Add(24*time.Hour - backdate)},
		{seconds(3600), now, now.Add(time.Hour)},
		{seconds(600), now, now.Add(10 * time.Minute)},
		{seconds(48 * 3600), now, now.Add(24*time.Hour - backdate)},
		{nil, s.cert.NotAfter.Add(-time.Hour), s.cert.NotAfter},
	} {
		data, err := s.sign(req, []string{"digital signature", "server auth"}, tc.expiration, tc.now)
		if err != nil {
			t.Fatal(err)
		}
		block, _ := pem.Decode(data)
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		if !cert.NotAfter.Equal(tc.notAfter) || !cert.NotBefore.Equal(tc.now.Add(-backdate)) {
			t.Errorf("expiration %v: valid %v to %v, want %v to %v", tc.expiration, cert.NotBefore, cert.NotAfter, tc.now.Add(-backdate), tc.notAfter)
		}
		if cert.IsCA || cert.Subject.CommonName != "system:node:n1" || len(cert.DNSNames) != 1 || cert.KeyUsage != x509.KeyUsageDigitalSignature ||
			len(cert.ExtKeyUsage) != 1 || cert.ExtKeyUsage[0] != x509.ExtKeyUsageServerAuth {
			t.Errorf("certificate %+v", cert)
		}
	}
	if _, err := s.sign(req, []string{"client auth"}, nil, s.cert.NotAfter.Add(time.Hour)); err == nil {
		t.Error("signed after the CA's end")
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// testRequest makes a key and a certificate request for subject and DNS
// names.
func testRequest(t *testing.T, subject pkix.Name, dns []string) (*ecdsa.PrivateKey, *x509.CertificateRequest) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: subject, DNSNames: dns}, key)
	if err != nil {
		t.Fatal(err)
	}
	req, err := x509.ParseCertificateRequest(der)
	if err != nil {
		t.Fatal(err)
	}
	return key, req
}

// testCertPEM is a self-signed certificate ending at notAfter.
func testCertPEM(t *testing.T, notAfter time.Time) []byte {
	t.Helper()
	key, _ := testRequest(t, pkix.Name{CommonName: "x"}, nil)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: notAfter.Add(-time.Hour), NotAfter: notAfter, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}
