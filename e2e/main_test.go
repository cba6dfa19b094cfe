// Package e2e drives the real server (embedded etcd, HTTPS on loopback)
// with client-go and kubectl, as users do.
package e2e

import (
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/watchcache/watchcache/pkg/app"
)

// testServer is the package's one server; each test works in namespaces
// of its own.
var testServer *app.App

func TestMain(m *testing.M) { os.Exit(runMain(m)) }

func runMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "watchcache-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	testServer, err = app.Start(app.Config{
		DataDir:           dir,
		EtcdPrefix:        "/registry",
		EtcdUnsafeNoFsync: true,
		WatchCache:        true,
		// As the command's defaults: consistent reads from the cache.
		ConsistentListFromCache: true,
		ConsistentGetFromCache:  true,
		// The inconsistency detector runs in all tests.
		ConsistencyCheckInterval: time.Second,
		// Frequent progress notifications make bookmarks observable.
		EtcdProgressNotifyInterval: 200 * time.Millisecond,
		BindAddress:                "127.0.0.1",
		SecurePort:                 0,
		ResourcesFile:              "testdata/resources.yaml",
		// As the command's defaults; tokens.csv holds the users of
		// auth_test.go.
		AnonymousAuth: true,
		TokenAuthFile: "testdata/tokens.csv",
		AuditLogPath:  filepath.Join(dir, "audit.log"),
		Log:           slog.New(slog.DiscardHandler),
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer testServer.Close()
	if err := setAdminClients(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// rootCAConfigMap is the ConfigMap the server's namespace controller puts in
// every namespace, as kube-controller-manager does.
const rootCAConfigMap = "kube-root-ca.crt"

// withoutRootCA returns names without rootCAConfigMap: tests that compare
// their own config maps ignore the one the server adds to each namespace.
func withoutRootCA(names []string) []string {
	return slices.DeleteFunc(names, func(n string) bool { return n == rootCAConfigMap })
}

// waitForRootCA waits until the namespace controller has put
// rootCAConfigMap into namespace ns, so that tests counting config maps see
// a settled namespace.
func waitForRootCA(t testing.TB, ns string) {
	t.Helper()
	waitFor(t, rootCAConfigMap+" in "+ns, func() bool {
		resp, err := htClient.Get(testServer.URL + "/api/v1/namespaces/" + ns + "/configmaps/" + rootCAConfigMap)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}
