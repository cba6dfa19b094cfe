package ha

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Sizes of the list-by-node benchmark: pods spread over nodes, and the
// background writes that make every consistent read wait for its cache.
const (
	benchNodes       = 50
	benchPodsPerNode = 20
	benchWritesPerS  = 50
	benchClients     = 16
)

// BenchmarkConsistentListByNode compares a consistent list of one node's
// pods (a kubelet's list: field selector spec.nodeName, no resourceVersion)
// through one replica on a one-member etcd with the same clients spread over
// three replicas on a three-member cluster, under a steady write load:
//
//	go test ./test/ha -run XXX -bench ConsistentListByNode -benchtime 20000x
//
// It reports the aggregate lists per second and the p99 latency.
func BenchmarkConsistentListByNode(b *testing.B) {
	exe := watchcacheBinary(b)
	for _, size := range []int{1, 3} {
		// One cluster per topology, started once (b.Run calls its function
		// more than once) and stopped before the next starts, so that the
		// two never share the machine.
		c := startCluster(b, exe, size, size)
		ctx, stop := context.WithCancel(context.Background())
		c.loadPods(b, ctx)
		b.Run(fmt.Sprintf("members=%d,replicas=%d", size, size), func(b *testing.B) { c.listByNode(b) })
		stop()
		c.stop()
	}
}

// listByNode runs b.N consistent lists by node from about benchClients
// goroutines, spread over the replicas, and reports lists/s and p99.
func (c *cluster) listByNode(b *testing.B) {
	var next atomic.Int64
	var mu sync.Mutex
	var latencies []time.Duration
	b.SetParallelism(benchClients / runtime.GOMAXPROCS(0))
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		var mine []time.Duration
		for pb.Next() {
			n := next.Add(1)
			r := c.replicas[int(n)%len(c.replicas)]
			opts := metav1.ListOptions{FieldSelector: fmt.Sprintf("spec.nodeName=node-%d", n%benchNodes)}
			t0 := time.Now()
			list, err := r.client.CoreV1().Pods("default").List(context.Background(), opts)
			if err != nil {
				b.Error(err)
				return
			}
			mine = append(mine, time.Since(t0))
			if len(list.Items) != benchPodsPerNode {
				b.Errorf("node-%d has %d pods, want %d", n%benchNodes, len(list.Items), benchPodsPerNode)
				return
			}
		}
		mu.Lock()
		latencies = append(latencies, mine...)
		mu.Unlock()
	})
	elapsed := time.Since(start)
	b.StopTimer()
	slices.Sort(latencies)
	if len(latencies) > 0 {
		b.ReportMetric(float64(latencies[len(latencies)*99/100].Microseconds())/1000, "p99-ms")
		b.ReportMetric(float64(len(latencies))/elapsed.Seconds(), "lists/s")
	}
}

// loadPods creates the benchmark's pods, then updates config maps at
// benchWritesPerS through every replica until ctx ends.
func (c *cluster) loadPods(b *testing.B, ctx context.Context) {
	pods := c.replicas[0].client.CoreV1().Pods("default")
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < benchNodes*benchPodsPerNode; i += 8 {
				pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pod-%d", i)},
					Spec: corev1.PodSpec{NodeName: fmt.Sprintf("node-%d", i%benchNodes), Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}}}
				if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	go func() {
		tick := time.NewTicker(time.Second / benchWritesPerS)
		defer tick.Stop()
		for n := 0; ; n++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "churn"}, Data: map[string]string{"n": fmt.Sprint(n)}}
			cms := c.replicas[n%len(c.replicas)].client.CoreV1().ConfigMaps("default")
			if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
				cms.Create(ctx, cm, metav1.CreateOptions{})
			}
		}
	}()
}
