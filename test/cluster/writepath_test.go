package cluster

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// BenchmarkWritePath is issue 29's comparison of the write path with
// kube-apiserver: WRITEPATH_PODS pods (default 5,000; the table
// has 30,000) of about 2.3 KB created by 32 clients, then given a 1.5 KB
// pods/status merge patch each, then consistent LISTs of a node's pods by
// 16 clients and of all pods with resourceVersion unset. kube-apiserver
// (on a `watchcache etcd` of its own) and watchcache (its etcd embedded)
// run one after the other, each alone on fresh data, and neither runs
// controllers (watchcache with --controllers=, kube-apiserver without
// kube-controller-manager). The load is `watchcache bench --scenarios
// writepath --writepath-server`, the same code and objects against both;
// it reads each server's CPU time and memory (and its etcd's, where etcd
// runs apart) from /proc. The table of both, with the ratios, is printed
// at the end. Run it alone:
//
//	cd test/cluster && WRITEPATH_PODS=30000 go test -run '^$' -bench WritePath -benchtime 1x -timeout 2h
func BenchmarkWritePath(b *testing.B) {
	pods := envInt(b, "WRITEPATH_PODS", 5000)
	results := map[string]writePathResult{}
	for _, server := range servers {
		b.Run(server.name, func(b *testing.B) {
			for range b.N {
				r := runWritePath(b, server, pods)
				results[server.name] = r
				b.ReportMetric(r.value("creates, 32 clients", "creates per second"), "creates/s")
				b.ReportMetric(r.value("status patches, 32 clients", "status patches per second"), "patches/s")
				b.ReportMetric(r.value("after the load", "RSS")/(1<<20), "server-rss-MiB")
				b.ReportMetric(r.value("after the load", "server CPU, creates + patches"), "server-cpu-s")
			}
		})
	}
	if len(results) == len(servers) {
		fmt.Print(writePathTable(pods, results["kube-apiserver"], results["watchcache"]))
	}
}

// writePathResult is the writepath scenario's figures from
// `watchcache bench`'s results.json: by row label, then metric name.
type writePathResult map[string]map[string]writePathMetric

type writePathMetric struct {
	Unit           string  `json:"unit"`
	Value          float64 `json:"cache"` // the scenario's only side
	HigherIsBetter bool    `json:"higherIsBetter"`
}

func (r writePathResult) value(row, metric string) float64 { return r[row][metric].Value }

// runWritePath starts server alone in a new directory and runs the
// writepath scenario of `watchcache bench` against it.
func runWritePath(b *testing.B, server apiServer, pods int) writePathResult {
	c := newCluster(b, "writepath-"+server.name+"-")
	c.url = server.start(b, c)
	c.waitReady(b)
	// The administrator's client certificate, as `watchcache bench` uses
	// against a server of its own.
	c.pki.client(b, "admin", "admin", "system:masters")
	pids := strconv.Itoa(c.server.cmd.Process.Pid)
	if c.etcd != nil {
		pids += "," + strconv.Itoa(c.etcd.cmd.Process.Pid)
	}
	out := filepath.Join(c.dir, "bench")
	log, err := os.Create(filepath.Join(c.dir, "bench.log"))
	check(b, err)
	defer log.Close()
	cmd := exec.Command(filepath.Join(bin, "watchcache"), "bench", "--scenarios=writepath",
		"--writepath-pods="+strconv.Itoa(pods), "--writepath-server="+c.pki.kubeconfig(b, "admin", c.url), "--writepath-pids="+pids,
		"--work-dir="+filepath.Join(c.dir, "bench-work"), "--out="+out)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Run(); err != nil {
		text, _ := os.ReadFile(log.Name())
		b.Fatalf("watchcache bench against %s: %v\n%s", server.name, err, text)
	}
	data, err := os.ReadFile(filepath.Join(out, "results.json"))
	check(b, err)
	var report struct {
		Scenarios []struct {
			ID   string `json:"id"`
			Rows []struct {
				Label      string `json:"label"`
				Incomplete string `json:"incomplete"`
				Metrics    []struct {
					Name string `json:"name"`
					writePathMetric
				} `json:"metrics"`
			} `json:"rows"`
		} `json:"scenarios"`
	}
	check(b, json.Unmarshal(data, &report))
	r := writePathResult{}
	for _, s := range report.Scenarios {
		for _, row := range s.Rows {
			if row.Incomplete != "" {
				b.Fatalf("%s: %s: %s", server.name, row.Label, row.Incomplete)
			}
			r[row.Label] = map[string]writePathMetric{}
			for _, m := range row.Metrics {
				r[row.Label][m.Name] = m.writePathMetric
			}
		}
	}
	if len(r) == 0 {
		b.Fatalf("%s: no writepath results in %s", server.name, data)
	}
	return r
}

// writePathTable is the figures of both servers side by side, in
// Markdown: kube-apiserver alone and, for costs, with its etcd
// (watchcache's etcd is in its process), and watchcache's advantage over
// kube-apiserver (with its etcd, for costs): for throughputs watchcache's
// figure over kube-apiserver's, for latencies and costs kube-apiserver's
// over watchcache's.
func writePathTable(pods int, kas, wc writePathResult) string {
	var out strings.Builder
	fmt.Fprintf(&out, "\nBenchmarkWritePath, %d pods (WRITEPATH_PODS):\n\n", pods)
	out.WriteString("| | kube-apiserver | kube-apiserver + etcd | watchcache | watchcache advantage |\n|---|---:|---:|---:|---:|\n")
	// line writes a figure of both; withEtcd < 0: etcd's share is not
	// the question (latencies, throughputs).
	line := func(label, unit string, higherIsBetter bool, kasAlone, withEtcd, watchcache float64) {
		compared, withEtcdText := withEtcd, formatWritePath(unit, withEtcd)
		if withEtcd < 0 {
			compared, withEtcdText = kasAlone, ""
		}
		ratio := compared / watchcache
		if higherIsBetter {
			ratio = 1 / ratio
		}
		fmt.Fprintf(&out, "| %s | %s | %s | %s | %.2f |\n", label, formatWritePath(unit, kasAlone), withEtcdText, formatWritePath(unit, watchcache), ratio)
	}
	same := func(label, row, name string) {
		m := kas[row][name]
		line(label, m.Unit, m.HigherIsBetter, m.Value, -1, wc.value(row, name))
	}
	for _, phase := range []struct{ name, one string }{{"creates", "create"}, {"status patches", "status patch"}} {
		row := phase.name + ", 32 clients"
		same(row+", per second", row, phase.name+" per second")
		same(phase.one+" p50", row, "p50")
		same(phase.one+" p99", row, "p99")
		alone := kas.value(row, "server CPU per write")
		line("server CPU per "+phase.one, "s", false, alone, alone+kas.value(row, "etcd CPU per write"),
			wc.value(row, "server CPU per write")+wc.value(row, "etcd CPU per write"))
	}
	const after = "after the load"
	alone := kas.value(after, "server CPU, creates + patches")
	line("server CPU, creates + patches", "CPU s", false, alone, alone+kas.value(after, "etcd CPU, creates + patches"),
		wc.value(after, "server CPU, creates + patches")+wc.value(after, "etcd CPU, creates + patches"))
	alone = kas.value(after, "RSS")
	line("RSS after the load", "B", false, alone, alone+kas.value(after, "etcd RSS"), wc.value(after, "RSS")+wc.value(after, "etcd RSS"))
	same("server's live Go heap after the load", after, "live heap")
	const byNode, all = "consistent LIST by node, 16 clients", "LIST all pods, resourceVersion unset"
	same(byNode+", per second", byNode, "throughput")
	same(byNode+", p99", byNode, "p99")
	same(all+", p50", all, "p50")
	return out.String()
}

// formatWritePath writes a value of `watchcache bench`'s unit.
func formatWritePath(unit string, v float64) string {
	switch unit {
	case "s":
		if v < 1 {
			return fmt.Sprintf("%.2f ms", v*1000)
		}
		return fmt.Sprintf("%.2f s", v)
	case "/s":
		return fmt.Sprintf("%.0f/s", v)
	case "B":
		return fmt.Sprintf("%.0f MiB", v/(1<<20))
	case "CPU s":
		return fmt.Sprintf("%.1f s", v)
	}
	return fmt.Sprint(v)
}
