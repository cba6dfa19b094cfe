// Package assets gives the envtest suites a KUBEBUILDER_ASSETS: this
// checkout's watchcache built into a temporary folder as kube-apiserver and
// etcd (the binary acts as either by its name).
package assets

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Main runs m's tests with KUBEBUILDER_ASSETS naming a folder of
// watchcache as kube-apiserver and etcd, unless the variable is set already
// (then the suites run on the binaries it names: kube-apiserver's and
// etcd's own, to compare).
func Main(m *testing.M) {
	if os.Getenv("KUBEBUILDER_ASSETS") != "" {
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "watchcache-envtest-assets-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	err = Build(dir)
	if err == nil {
		err = os.Setenv("KUBEBUILDER_ASSETS", dir)
	}
	code := 1
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
	} else {
		code = m.Run()
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// Build builds cmd/watchcache into dir as kube-apiserver, and links etcd
// to it.
func Build(dir string) error {
	bin := filepath.Join(dir, "kube-apiserver")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/watchcache/watchcache/cmd/watchcache").CombinedOutput()
	if err != nil {
		return fmt.Errorf("go build ./cmd/watchcache: %v\n%s", err, out)
	}
	return os.Symlink("kube-apiserver", filepath.Join(dir, "etcd"))
}
