// Package testenv is a control plane for controller tests: the whole
// server (embedded etcd, generated credentials, watch caches, the
// namespace controller and garbage collector) in the test's process, on a
// temporary directory, started in well under a second. It takes the place
// of controller-runtime's envtest, which downloads and runs kube-apiserver
// and etcd binaries:
//
//	env := &testenv.Environment{CRDDirectoryPaths: []string{"config/crd/bases"}}
//	cfg, err := env.Start()        // a *rest.Config of the administrator
//	...                            // run the manager and the tests against cfg
//	env.Stop()
//
// It installs what envtest's users rely on, with envtest's field names:
// CustomResourceDefinitions from files and directories, and admission
// webhook configurations pointed at the test's own webhook server with a
// generated serving certificate (WebhookInstallOptions). An envtest suite
// moves to it by its constructor alone: testenv.Environment for
// envtest.Environment.
//
// An existing envtest suite can instead use a server started with
// `go run ./cmd/watchcache`: USE_EXISTING_CLUSTER=true with KUBECONFIG set
// to the kubeconfig it writes.
package testenv

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/watchcache/watchcache/pkg/app"
	"github.com/watchcache/watchcache/pkg/crd/crdfile"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Environment is one control plane.
type Environment struct {
	// CRDDirectoryPaths are directories (or files) of
	// CustomResourceDefinitions in YAML or JSON, installed at start: Start
	// returns once they are served.
	CRDDirectoryPaths []string
	// CRDs are more definitions to install.
	CRDs []*unstructured.Unstructured
	// ErrorIfCRDPathMissing fails Start when a CRDDirectoryPaths entry
	// does not exist (otherwise it is skipped), as envtest's option.
	ErrorIfCRDPathMissing bool
	// WebhookInstallOptions are admission webhook configurations installed
	// at start, pointed at the test's own webhook server.
	WebhookInstallOptions WebhookInstallOptions
	// BinaryAssetsDirectory is ignored: it is envtest's folder of
	// kube-apiserver and etcd binaries, which this package does without.
	// It is here so that an envtest suite that sets it (kubebuilder's
	// scaffolding does) needs no other change than its constructor.
	BinaryAssetsDirectory string
	// Log receives the server's log (nil: discarded).
	Log *slog.Logger

	// Config is the administrator's configuration, set by Start.
	Config *rest.Config

	dir string
	app *app.App
}

// Start starts the control plane and returns the administrator's
// configuration (also in Config).
func (e *Environment) Start() (*rest.Config, error) {
	crds, err := e.readCRDs()
	if err != nil {
		return nil, err
	}
	if err := e.WebhookInstallOptions.prepare(); err != nil {
		e.Stop()
		return nil, err
	}
	if e.dir, err = os.MkdirTemp("", "watchcache-testenv-"); err != nil {
		return nil, err
	}
	log := e.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	e.app, err = app.Start(app.Config{
		DataDir: e.dir, EtcdPrefix: "/registry", EtcdUnsafeNoFsync: true,
		WatchCache: true, ConsistentListFromCache: true, ConsistentGetFromCache: true,
		BindAddress: "127.0.0.1", CustomResourceDefinitions: crds, Log: log,
	})
	if err != nil {
		e.Stop()
		return nil, err
	}
	if e.Config, err = clientcmd.BuildConfigFromFlags("", e.app.Kubeconfig); err != nil {
		e.Stop()
		return nil, err
	}
	// Tests create objects in bursts: no client-side throttling.
	e.Config.QPS, e.Config.Burst = -1, -1
	if err := e.WebhookInstallOptions.install(context.Background(), e.Config); err != nil {
		e.Stop()
		return nil, err
	}
	return e.Config, nil
}

// Kubeconfig is the path of the administrator's kubeconfig (for kubectl
// in tests), once started.
func (e *Environment) Kubeconfig() string { return e.app.Kubeconfig }

// Stop stops the control plane and removes its directory and the webhook
// server's certificate.
func (e *Environment) Stop() error {
	var err error
	if e.app != nil {
		err = e.app.Close()
		e.app = nil
	}
	for _, dir := range []string{e.dir, e.WebhookInstallOptions.LocalServingCertDir} {
		if dir != "" {
			err = errors.Join(err, os.RemoveAll(dir))
		}
	}
	e.dir = ""
	return err
}

// readCRDs reads the definitions of CRDDirectoryPaths (*.yaml, *.yml and
// *.json files) and adds CRDs.
func (e *Environment) readCRDs() ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for _, path := range e.CRDDirectoryPaths {
		files, err := manifestFiles(path)
		if errors.Is(err, os.ErrNotExist) && !e.ErrorIfCRDPathMissing {
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, file := range files {
			defs, err := readFile(file)
			if err != nil {
				return nil, err
			}
			out = append(out, defs...)
		}
	}
	return append(out, e.CRDs...), nil
}

// manifestFiles lists the files of a path of manifests: itself if a file,
// its YAML and JSON files if a directory.
func manifestFiles(path string) ([]string, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		return []string{path}, nil
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, entry := range entries {
		switch strings.ToLower(filepath.Ext(entry.Name())) {
		case ".yaml", ".yml", ".json":
			files = append(files, filepath.Join(path, entry.Name()))
		}
	}
	return files, nil
}

func readFile(path string) ([]*unstructured.Unstructured, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	defs, err := crdfile.Read(f, path)
	if err != nil {
		return nil, fmt.Errorf("testenv: %w", err)
	}
	return defs, nil
}
