package cluster

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// bin is the directory of the binaries TestMain builds: kube-apiserver,
// kube-controller-manager, kube-scheduler (k8s.io/kubernetes v1.37.2, this
// module), kwok (its own module, ./kwok: its k8s.io dependencies are older
// than 1.37's) and watchcache (this checkout). They are rebuilt at every
// run; Go's build cache makes that a link of each (seconds) once the first
// build (minutes) is done.
var bin string

// kwokStages are the Stage files of kwok's "fast" set (nodes Ready with a
// Lease heartbeat, pods Running at once, Jobs' pods Succeeded), read from
// the kwok module unchanged, as kwokctl uses them.
var kwokStages []string

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		fmt.Println("cluster: skipped in -short mode")
		os.Exit(0)
	}
	bin = os.Getenv("CLUSTER_BIN_DIR")
	if bin == "" {
		bin = filepath.Join(os.TempDir(), "watchcache-cluster-bin")
	}
	if err := build(); err != nil {
		fmt.Fprintln(os.Stderr, "cluster: build:", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

func build() error {
	start := time.Now()
	if err := goCmd(".", "build", "-o", bin+"/", "./cmd/..."); err != nil {
		return err
	}
	if err := goCmd("../..", "build", "-o", filepath.Join(bin, "watchcache"), "./cmd/watchcache"); err != nil {
		return err
	}
	if err := goCmd("kwok", "build", "-o", filepath.Join(bin, "kwok"), "sigs.k8s.io/kwok/cmd/kwok"); err != nil {
		return err
	}
	out, err := exec.Command("go", "-C", "kwok", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/kwok").Output()
	if err != nil {
		return fmt.Errorf("locating the kwok module: %v", err)
	}
	stage := filepath.Join(strings.TrimSpace(string(out)), "kustomize", "stage")
	for _, pattern := range []string{"node/fast/*.yaml", "node/heartbeat-with-lease/*.yaml", "pod/fast/*.yaml"} {
		files, _ := filepath.Glob(filepath.Join(stage, pattern))
		for _, f := range files {
			if filepath.Base(f) != "kustomization.yaml" {
				kwokStages = append(kwokStages, f)
			}
		}
	}
	if len(kwokStages) < 5 {
		return fmt.Errorf("kwok's stages not found under %s: %v", stage, kwokStages)
	}
	fmt.Printf("cluster: binaries built in %s in %.0fs\n", bin, time.Since(start).Seconds())
	return nil
}

func goCmd(dir string, args ...string) error {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go %s in %s: %v", strings.Join(args, " "), dir, err)
	}
	return nil
}
