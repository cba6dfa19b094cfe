package e2e

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/watchcache/watchcache/e2e/internal/reconcilertest"
	"github.com/watchcache/watchcache/pkg/testenv"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// writeBackupCRD writes the suite's CRD into a directory of its own.
func writeBackupCRD(t *testing.T) string {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "backups.yaml"), []byte(reconcilertest.CRD), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestReconcilerOnTestenv runs the controller-runtime suite on an
// in-process control plane of package testenv, the CRD installed from a
// directory.
func TestReconcilerOnTestenv(t *testing.T) {
	env := &testenv.Environment{CRDDirectoryPaths: []string{writeBackupCRD(t)}, ErrorIfCRDPathMissing: true}
	cfg, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer env.Stop()
	reconcilertest.Run(t, cfg, "default")
}

// TestReconcilerThroughEnvtest runs the same suite as an existing envtest
// suite does against a running server: controller-runtime's envtest with
// USE_EXISTING_CLUSTER=true and KUBECONFIG set to the server's kubeconfig
// installs the CRD (and waits for it in discovery).
func TestReconcilerThroughEnvtest(t *testing.T) {
	t.Setenv("USE_EXISTING_CLUSTER", "true")
	t.Setenv("KUBECONFIG", testServer.Kubeconfig)
	env := &envtest.Environment{CRDDirectoryPaths: []string{writeBackupCRD(t)}, ErrorIfCRDPathMissing: true}
	cfg, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer env.Stop()
	reconcilertest.Run(t, cfg, cgNamespace(t, cgDynamic(t), "envtest"))
}
