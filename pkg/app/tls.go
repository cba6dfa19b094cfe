// TLS: the generated certificates under <data-dir>/pki, the serving
// configuration, the client CAs, the administrator's kubeconfig, and the
// embedded etcd's TLS.

package app

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"

	"github.com/watchcache/watchcache/pkg/pki"
	"go.etcd.io/etcd/client/pkg/v3/transport"
)

// ensurePKI makes <data-dir>/pki hold the generated certificates, with a
// serving certificate for the bind address and cfg.TLSSANs.
func ensurePKI(cfg Config) (pki.Files, error) {
	return pki.Ensure(filepath.Join(cfg.DataDir, "pki"), pki.ServingHosts(cfg.BindAddress, cfg.TLSSANs))
}

// servingTLS is the HTTPS configuration: the generated serving certificate
// or --tls-cert-file's, TLS 1.2 at least, and client certificates
// requested but not verified here (the x509 authenticator verifies them
// against ClientCAs and answers 401 for one it does not trust, as
// kube-apiserver does). No acceptable CA list is sent with the request:
// Go clients, kubectl among them, send no certificate at all unless its
// issuer is on that list, and a certificate from another CA must reach
// the authenticator to be refused. http.Server.ServeTLS adds HTTP/2.
func servingTLS(cfg Config, files pki.Files) (*tls.Config, error) {
	certFile, keyFile := files.ServingCert, files.ServingKey
	if cfg.TLSCertFile != "" {
		certFile, keyFile = cfg.TLSCertFile, cfg.TLSPrivateKeyFile
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("serving certificate: %w", err)
	}
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		MinVersion:   tls.VersionTLS12,
		ClientAuth:   tls.RequestClientCert,
	}, nil
}

// clientCAs reads the CA that client certificates must chain to:
// --client-ca-file, or the generated one.
func clientCAs(cfg Config, files pki.Files) (*x509.CertPool, error) {
	file := files.CACert
	if cfg.ClientCAFile != "" {
		file = cfg.ClientCAFile
	}
	pool, err := pki.CertPool(file)
	if err != nil {
		return nil, fmt.Errorf("client CA: %w", err)
	}
	return pool, nil
}

// kubeconfigServer is the https:// URL for a kubeconfig of a server
// listening at addr: an unspecified address (0.0.0.0, ::) becomes
// 127.0.0.1, which the serving certificate always covers.
func kubeconfigServer(addr net.Addr) string {
	tcp := addr.(*net.TCPAddr)
	host := tcp.IP.String()
	if tcp.IP.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "https://" + net.JoinHostPort(host, strconv.Itoa(tcp.Port))
}

// writeKubeconfig writes <data-dir>/kubeconfig for the administrator. It
// trusts the generated CA only when the serving certificate is the
// generated one, and warns about what the user must add otherwise.
func writeKubeconfig(cfg Config, files pki.Files, server string, cas *x509.CertPool, log *slog.Logger) (string, error) {
	path, err := filepath.Abs(filepath.Join(cfg.DataDir, "kubeconfig"))
	if err != nil {
		return "", err
	}
	generatedServing := cfg.TLSCertFile == ""
	if err := files.WriteAdminKubeconfig(path, server, generatedServing); err != nil {
		return "", err
	}
	if !generatedServing {
		log.Warn("the kubeconfig has no certificate-authority-data since --tls-cert-file is not signed by the generated CA: "+
			"add its issuer with kubectl config set-cluster watchcache --embed-certs --certificate-authority=<ca.crt>",
			"kubeconfig", path)
	}
	if cfg.ClientCAFile != "" && !adminCertTrusted(files, cas) {
		log.Warn("the kubeconfig's administrator certificate is signed by the generated CA, which --client-ca-file does not include: "+
			"the server will not accept it", "kubeconfig", path, "generated-ca", files.CACert)
	}
	return path, nil
}

// adminCertTrusted says whether the generated administrator certificate
// chains to cas.
func adminCertTrusted(files pki.Files, cas *x509.CertPool) bool {
	cert, err := tls.LoadX509KeyPair(files.AdminCert, files.AdminKey)
	if err != nil {
		return false
	}
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		return false
	}
	_, err = leaf.Verify(x509.VerifyOptions{Roots: cas, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	return err == nil
}

// etcdTLS is the embedded etcd's TLS: its server certificate from the
// PKI, clients required to present a certificate signed by the
// generated CA, and this server's etcd client certificate.
func etcdTLS(files pki.Files) (server transport.TLSInfo, clientCert, clientKey string) {
	return transport.TLSInfo{CertFile: files.EtcdServerCert, KeyFile: files.EtcdServerKey, TrustedCAFile: files.CACert, ClientCertAuth: true},
		files.EtcdClientCert, files.EtcdClientKey
}

// dataDirReady creates the data directory with mode 0700.
func dataDirReady(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return os.Chmod(dir, 0o700)
}
