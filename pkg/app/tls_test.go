package app

import (
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/watchcache/watchcache/pkg/pki"
	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

func startTLSApp(t *testing.T, dir string) *App {
	t.Helper()
	a, err := Start(Config{DataDir: dir, EtcdPrefix: "/registry", EtcdUnsafeNoFsync: true, EtcdClientPort: 0,
		Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// adminGet GETs path with the kubeconfig's credentials, over HTTP/2.
func adminGet(t *testing.T, a *App, path string) *http.Response {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", a.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Get(a.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

// TestServesHTTPSWithGeneratedPKI checks the HTTPS endpoint, HTTP/2 and
// the kubeconfig, and that a restart reuses the certificates.
func TestServesHTTPSWithGeneratedPKI(t *testing.T) {
	dir := t.TempDir()
	a := startTLSApp(t, dir)
	if !strings.HasPrefix(a.URL, "https://127.0.0.1:") {
		t.Errorf("URL %s", a.URL)
	}
	if resp := adminGet(t, a, "/api/v1/namespaces/default"); resp.StatusCode != http.StatusOK || resp.ProtoMajor != 2 {
		t.Errorf("GET default namespace: %s over %s", resp.Status, resp.Proto)
	}
	if resp, err := http.Get(strings.Replace(a.URL, "https", "http", 1) + "/version"); err == nil && resp.StatusCode == http.StatusOK {
		t.Error("plain HTTP served")
	}
	if st, err := os.Stat(a.Kubeconfig); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("kubeconfig: %v, %v", st, err)
	}
	if st, err := os.Stat(dir); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("data dir: %v, %v", st, err)
	}
	ca, err := os.ReadFile(a.PKI.CACert)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}

	a = startTLSApp(t, dir)
	defer a.Close()
	if again, _ := os.ReadFile(a.PKI.CACert); !bytes.Equal(ca, again) {
		t.Error("the CA changed on restart")
	}
	if resp := adminGet(t, a, "/version"); resp.StatusCode != http.StatusOK {
		t.Errorf("after restart: %s", resp.Status)
	}
}

// etcdReachable says whether a Get through an etcd client with tlsConfig
// succeeds within two seconds.
func etcdReachable(t *testing.T, endpoint string, tlsConfig *tls.Config) bool {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, TLS: tlsConfig, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return false
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err = c.Get(ctx, "/registry/namespaces/default")
	return err == nil
}

// TestEmbeddedEtcdRequiresClientCertificate: the embedded etcd of a
// started server refuses a client with no certificate, and one with a
// certificate from another CA, and accepts the server's own.
func TestEmbeddedEtcdRequiresClientCertificate(t *testing.T) {
	a := startTLSApp(t, t.TempDir())
	defer a.Close()
	endpoint := a.etcd.Endpoint
	if !strings.HasPrefix(endpoint, "https://") {
		t.Fatalf("embedded etcd at %s", endpoint)
	}
	other, err := pki.Ensure(filepath.Join(t.TempDir(), "pki"), []string{"localhost"})
	if err != nil {
		t.Fatal(err)
	}
	clientTLS := func(cert, key string) *tls.Config {
		info := transport.TLSInfo{CertFile: cert, KeyFile: key, TrustedCAFile: a.PKI.CACert}
		c, err := info.ClientConfig()
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	if etcdReachable(t, strings.Replace(endpoint, "https", "http", 1), nil) {
		t.Error("etcd answered plain HTTP")
	}
	if etcdReachable(t, endpoint, clientTLS("", "")) {
		t.Error("etcd accepted a client with no certificate")
	}
	if etcdReachable(t, endpoint, clientTLS(other.EtcdClientCert, other.EtcdClientKey)) {
		t.Error("etcd accepted a certificate from another CA")
	}
	if !etcdReachable(t, endpoint, clientTLS(a.PKI.EtcdClientCert, a.PKI.EtcdClientKey)) {
		t.Error("etcd refused the server's client certificate")
	}
}

// TestCustomServingCertAndClientCA: --tls-cert-file is served instead of
// the generated certificate, the kubeconfig then trusts no CA, and
// ClientCAs is --client-ca-file's.
func TestCustomServingCertAndClientCA(t *testing.T) {
	other, err := pki.Ensure(filepath.Join(t.TempDir(), "pki"), []string{"127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	a, err := Start(Config{DataDir: t.TempDir(), EtcdPrefix: "/registry", EtcdUnsafeNoFsync: true, EtcdClientPort: 0,
		TLSCertFile: other.ServingCert, TLSPrivateKeyFile: other.ServingKey, ClientCAFile: other.CACert,
		Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	cfg, err := clientcmd.BuildConfigFromFlags("", a.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.CAData) != 0 || cfg.CAFile != "" {
		t.Error("the kubeconfig trusts a CA for a serving certificate it does not know")
	}
	cfg.CAFile = other.CACert
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Get(a.URL + "/version")
	if err != nil {
		t.Fatalf("the custom serving certificate is not served: %v", err)
	}
	resp.Body.Close()
	if !adminCertTrusted(other, a.ClientCAs) || adminCertTrusted(a.PKI, a.ClientCAs) {
		t.Error("ClientCAs is not --client-ca-file's")
	}
	if _, err := Start(Config{DataDir: t.TempDir(), TLSCertFile: other.ServingCert, Log: slog.New(slog.DiscardHandler)}); err == nil {
		t.Error("started with a certificate and no key")
	}
}
