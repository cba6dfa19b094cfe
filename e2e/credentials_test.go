package e2e

import (
	"crypto/tls"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/watchcache/watchcache/pkg/app"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Every server of these tests signs its certificates with testServer's CA
// (see seedCA), so the administrator's credentials of testServer's
// kubeconfig work on all of them.

// adminTLS is the TLS configuration of the administrator: testServer's
// CA and client certificate, read from its kubeconfig in runMain.
var adminTLS *tls.Config

// testServerREST is client-go's configuration for testServer as
// administrator, with no client-side rate limit; set in runMain.
var testServerREST *rest.Config

// htClient is the plain HTTP client of these tests (HTTP/1.1 over TLS, as
// administrator); set in runMain.
var htClient *http.Client

// setAdminClients reads the administrator's credentials from testServer's
// kubeconfig into testServerREST, adminTLS and htClient.
func setAdminClients() error {
	cfg, err := clientcmd.BuildConfigFromFlags("", testServer.Kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS = -1
	testServerREST = cfg
	if adminTLS, err = rest.TLSConfigFor(cfg); err != nil {
		return err
	}
	htClient = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: adminTLS}}
	return nil
}

// restConfig is client-go's configuration for a from its kubeconfig, with
// no client-side rate limit (the tests create thousands of objects).
func restConfig(t testing.TB, a *app.App) *rest.Config {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", a.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS = -1
	return cfg
}

// seedCA copies testServer's CA into dataDir's pki/ unless one is there,
// so that a server started on dataDir signs its certificates with it.
func seedCA(dataDir string) error {
	dir := filepath.Join(dataDir, "pki")
	if _, err := os.Stat(filepath.Join(dir, "ca.crt")); err == nil {
		return nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for _, f := range []struct{ from, to string }{
		{testServer.PKI.CACert, "ca.crt"}, {testServer.PKI.CAKey, "ca.key"},
	} {
		data, err := os.ReadFile(f.from)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, f.to), data, 0o600); err != nil {
			return err
		}
	}
	return nil
}
