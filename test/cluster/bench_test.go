package cluster

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// BenchmarkClusterScale loads each server with CLUSTER_BENCH_NODES kwok
// nodes (default 1,000) and CLUSTER_BENCH_PODS pods (default 30,000) made
// by Deployments of 100 replicas, and reports, from the server's start to
// every pod Running: the time, the server's CPU seconds (kube-apiserver's
// with and without its etcd; watchcache's etcd is in its process), its
// peak RSS, and the 50th and 99th percentiles of its request latency per
// verb (from its apiserver_request_duration_seconds, watches left out).
// Run it alone:
//
//	cd test/cluster && go test -run '^$' -bench ClusterScale -benchtime 1x -timeout 2h
//
// With CLUSTER_BENCH_DUMP=dir, it also writes there, per server, the CPU
// profile of the first CLUSTER_BENCH_PROFILE_SECONDS (default 50) after the
// Deployments are created (<server>.cpu.pprof) and the server's /metrics at
// the end (<server>.metrics), and every 2 s the server's goroutines
// (<server>.goroutines.<seconds since the start>).
func BenchmarkClusterScale(b *testing.B) {
	nodes, pods := envInt(b, "CLUSTER_BENCH_NODES", 1000), envInt(b, "CLUSTER_BENCH_PODS", 30000)
	const perDeployment = 100
	for _, server := range servers {
		b.Run(server.name, func(b *testing.B) {
			for range b.N {
				start := time.Now()
				// kubelets' 40s Leases; a grace of 2m, not 50s: on a
				// loaded machine kwok renews 1,000 Leases late, and a
				// node NotReady for a moment leaves its pods NotReady for
				// good (kwok makes a pod Ready once).
				c := startCluster(b, server, 40*time.Second, 2*time.Minute)
				dump := os.Getenv("CLUSTER_BENCH_DUMP")
				stopDumps := make(chan struct{})
				if dump != "" {
					go func() {
						for {
							select {
							case <-stopDumps:
								return
							case <-time.After(2 * time.Second):
							}
							c.save(b, "/debug/pprof/goroutine?debug=1", filepath.Join(dump, fmt.Sprintf("%s.goroutines.%03.0f", server.name, time.Since(start).Seconds())))
						}
					}()
				}
				c.createNodesParallel(b, nodes)
				c.waitFor(b, 10*time.Minute, "nodes Ready", func() (bool, string, error) {
					ready, err := c.readyNodes("pool=bench")
					return len(ready) == nodes, fmt.Sprintf("%d Ready", len(ready)), err
				})
				var profiled sync.WaitGroup
				if dump != "" {
					seconds := envInt(b, "CLUSTER_BENCH_PROFILE_SECONDS", 50)
					profiled.Go(func() {
						c.save(b, fmt.Sprintf("/debug/pprof/profile?seconds=%d", seconds), filepath.Join(dump, server.name+".cpu.pprof"))
					})
				}
				deployments := (pods + perDeployment - 1) / perDeployment
				for i := range deployments {
					ns := fmt.Sprintf("bench-%d", i/10)
					if i%10 == 0 {
						c.namespace(b, ns)
					}
					d := &appsv1.Deployment{
						ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("d%d", i)},
						Spec: appsv1.DeploymentSpec{
							Replicas: ptr.To(int32(min(perDeployment, pods-i*perDeployment))),
							Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": fmt.Sprintf("d%d", i)}},
							Template: podTemplate(fmt.Sprintf("d%d", i), "fake:1"),
						},
					}
					d.Spec.Template.Spec.NodeSelector = map[string]string{"pool": "bench"}
					_, err := c.client.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{})
					check(b, err)
				}
				c.waitFor(b, time.Hour, "every pod available", func() (bool, string, error) {
					list, err := c.client.AppsV1().Deployments("").List(ctx, metav1.ListOptions{})
					if err != nil {
						return false, "", err
					}
					available := 0
					for _, d := range list.Items {
						available += int(d.Status.AvailableReplicas)
					}
					return available == pods, fmt.Sprintf("%d of %d available", available, pods), nil
				})
				elapsed := time.Since(start)
				close(stopDumps)
				if dump != "" {
					profiled.Wait()
					c.save(b, "/metrics", filepath.Join(dump, server.name+".metrics"))
				}
				b.ReportMetric(elapsed.Seconds(), "s-to-running")
				cpu, rss := procStats(b, c.server)
				b.ReportMetric(cpu, "server-cpu-s")
				b.ReportMetric(rss/(1<<20), "server-peak-rss-MiB")
				if c.etcd != nil {
					etcdCPU, etcdRSS := procStats(b, c.etcd)
					b.ReportMetric(cpu+etcdCPU, "with-etcd-cpu-s")
					b.ReportMetric((rss+etcdRSS)/(1<<20), "with-etcd-peak-rss-MiB")
				}
				for verb, q := range c.latencies(b) {
					b.ReportMetric(q[0]*1000, "p50-ms-"+verb)
					b.ReportMetric(q[1]*1000, "p99-ms-"+verb)
				}
			}
		})
	}
}

// save writes the server's answer to GET path into file, or logs why not
// (it runs beside the load, in its own goroutine).
func (c *cluster) save(b *testing.B, path, file string) {
	resp, err := c.get(b, path)
	if err == nil {
		defer resp.Body.Close()
		var data []byte
		if data, err = io.ReadAll(resp.Body); err == nil {
			err = os.WriteFile(file, data, 0o644)
		}
	}
	if err != nil {
		b.Logf("saving %s: %v", path, err)
	}
}

func envInt(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	check(b, err)
	return n
}

// createNodesParallel creates n nodes bench-0..bench-(n-1) of the main kwok
// with 8 clients at once.
func (c *cluster) createNodesParallel(b *testing.B, n int) {
	var wg sync.WaitGroup
	per := (n + 7) / 8
	for w := 0; w*per < n; w++ {
		wg.Go(func() {
			for i := w * per; i < min(n, (w+1)*per); i++ {
				c.createNodes(b, fmt.Sprintf("bench-%d", i), 1, "kwok", "bench", nil)
			}
		})
	}
	wg.Wait()
}

// procStats is p's CPU seconds (user and system) and peak RSS in bytes,
// from /proc.
func procStats(b *testing.B, p *process) (cpuSeconds, peakRSS float64) {
	pid := strconv.Itoa(p.cmd.Process.Pid)
	stat, err := os.ReadFile(filepath.Join("/proc", pid, "stat"))
	check(b, err)
	// The fields after the command's closing parenthesis; utime and
	// stime are the 14th and 15th of the line, in clock ticks (100/s).
	f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+2:]))
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	status, err := os.ReadFile(filepath.Join("/proc", pid, "status"))
	check(b, err)
	for _, line := range strings.Split(string(status), "\n") {
		if kb, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			v, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(kb), " kB"), 64)
			peakRSS = v * 1024
		}
	}
	return (utime + stime) / 100, peakRSS
}

var bucketLine = regexp.MustCompile(`^apiserver_request_duration_seconds_bucket\{(.*)\} (\S+)$`)
var labelPair = regexp.MustCompile(`(\w+)="([^"]*)"`)

// latencies are the 50th and 99th percentiles of the server's request
// latency per verb (watches and connects left out), interpolated in its
// histogram's buckets as Prometheus' histogram_quantile does.
func (c *cluster) latencies(b *testing.B) map[string][2]float64 {
	resp, err := c.get(b, "/metrics")
	check(b, err)
	defer resp.Body.Close()
	buckets := map[string]map[float64]float64{} // verb → le → count
	lines := bufio.NewScanner(resp.Body)
	lines.Buffer(nil, 1<<20)
	for lines.Scan() {
		m := bucketLine.FindStringSubmatch(lines.Text())
		if m == nil {
			continue
		}
		labels := map[string]string{}
		for _, l := range labelPair.FindAllStringSubmatch(m[1], -1) {
			labels[l[1]] = l[2]
		}
		verb := labels["verb"]
		if verb == "WATCH" || verb == "WATCHLIST" || verb == "CONNECT" {
			continue
		}
		le, _ := strconv.ParseFloat(labels["le"], 64) // "+Inf" parses as Inf
		n, _ := strconv.ParseFloat(m[2], 64)
		if buckets[verb] == nil {
			buckets[verb] = map[float64]float64{}
		}
		buckets[verb][le] += n
	}
	out := map[string][2]float64{}
	for verb, counts := range buckets {
		out[verb] = [2]float64{quantile(0.5, counts), quantile(0.99, counts)}
	}
	return out
}

// quantile is the q-quantile of a cumulative histogram (upper bound →
// count), linearly interpolated within its bucket.
func quantile(q float64, counts map[float64]float64) float64 {
	var bounds []float64
	for le := range counts {
		bounds = append(bounds, le)
	}
	sort.Float64s(bounds)
	total := counts[math.Inf(1)]
	if total == 0 {
		return 0
	}
	rank := q * total
	lower, below := 0.0, 0.0
	for _, le := range bounds {
		if counts[le] >= rank {
			if math.IsInf(le, 1) {
				return lower
			}
			return lower + (le-lower)*(rank-below)/(counts[le]-below)
		}
		lower, below = le, counts[le]
	}
	return lower
}
