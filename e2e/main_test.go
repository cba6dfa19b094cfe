// Package e2e drives the real server (embedded etcd, HTTPS on loopback)
// with client-go and kubectl, as users do.
package e2e

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
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
