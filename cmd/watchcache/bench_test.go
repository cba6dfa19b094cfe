package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/watchcache/watchcache/pkg/bench"
)

// runMainEnv makes the test binary behave as the watchcache binary, so that
// the benchmark can start it as etcd and as the servers.
const runMainEnv = "WATCHCACHE_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestBenchSmoke runs every scenario of `watchcache bench` at a tiny size
// through the real flags, processes and HTTP, so the command never rots.
func TestBenchSmoke(t *testing.T) {
	cfg, out, err := parseBenchFlags([]string{
		"--list-sizes=1,10", "--object-sizes=1000,5000", "--max-list-bytes=20000", "--matrix-clients=1", "--cell-duration=50ms",
		"--pods=100", "--nodes=5", "--namespaces=3", "--kubelet-clients=1,2", "--duration=100ms",
		"--nothing-rate=20", "--nothing-duration=200ms", "--page-limit=30", "--passes=1",
		"--watchers=3", "--updates=20", "--fanout-objects=4", "--fanout-writers=2", "--writers=2",
		"--out", filepath.Join(t.TempDir(), "out"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Executable, err = os.Executable(); err != nil {
		t.Fatal(err)
	}
	cfg.Env = []string{runMainEnv + "=1"}
	var text bytes.Buffer
	cfg.Progress, cfg.Output = &text, &text
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	report, err := bench.Run(ctx, cfg)
	if err != nil {
		t.Fatalf("%v\n%s", err, text.String())
	}
	var ids []string
	for _, s := range report.Scenarios {
		ids = append(ids, s.ID)
		for _, row := range s.Rows {
			checkRow(t, s.ID, row)
		}
	}
	want := []string{"initialization", "matrix", "kubelet", "kubelet-auth", "select-nothing", "paginated", "fanout", "writes"}
	if !slices.Equal(ids, want) {
		t.Errorf("scenarios %v, want %v", ids, want)
	}
	if !strings.Contains(text.String(), "10 × 5 KB") || !strings.Contains(text.String(), "cache advantage") || !strings.Contains(text.String(), "RBAC advantage") {
		t.Errorf("the printed results lack the matrix or the ratio column:\n%s", text.String())
	}
	if err := bench.WriteOut(out, report); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(out, "README.md"))
	if err != nil || !strings.Contains(string(page), "Watch fan-out") {
		t.Errorf("README.md: %v\n%s", err, page)
	}
}

// checkRow fails unless a row was run to completion (or skipped for its
// size) and measured something on both sides.
func checkRow(t *testing.T, scenario string, row bench.Row) {
	t.Helper()
	if row.Incomplete != "" {
		t.Errorf("%s %s: %s", scenario, row.Label, row.Incomplete)
	}
	if row.Skipped != "" {
		if row.Label != "10 × 5 KB" {
			t.Errorf("%s %s skipped: %s", scenario, row.Label, row.Skipped)
		}
		return
	}
	if len(row.Metrics) == 0 {
		t.Errorf("%s %s: no metrics", scenario, row.Label)
	}
	for _, m := range row.Metrics {
		// CPU time is read in 10 ms ticks: at this size it may be 0.
		if m.Unit != bench.CPUSeconds && (m.Cache <= 0 || m.Etcd <= 0) {
			t.Errorf("%s %s %s: cache %v, etcd %v", scenario, row.Label, m.Name, m.Cache, m.Etcd)
		}
	}
}
