// The curves scenario: initialization, memory, lists and fan-out measured at
// growing numbers of pods, and whether the per-pod costs stay linear.

package bench

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/watchcache/watchcache/pkg/benchdata"
)

// The metrics of the curves scenario that are charted against the number
// of pods.
const (
	curveReady    = "start to ready"
	curveHeap     = "Go heap per pod"
	curveListAll  = "LIST all, resourceVersion=0"
	curveKubelet  = "kubelet LIST p99"
	curveFanout   = "fan-out p99"
	curveInit     = "cache initialization (metric)"
	fanoutPodsMax = 100 // pods the curves' fan-out updates, round robin
	listAllPasses = 5   // LISTs of all pods, whose median is reported
)

// linearSlack is how much a per-pod cost may grow from the smallest to the
// largest size and still count as linear: this machine is shared and its
// figures move by about that much from run to run.
const linearSlack = 1.1

// curvePoint is what the curves scenario measured at one size.
type curvePoint struct {
	size                     int
	loaded                   directLoad
	ready, init              time.Duration
	mem                      memory
	listAll, kubelet, fanout *outcome
	fanoutSide               *fanoutSide
}

// curves is the curves scenario: for each of CurveSizes, a new etcd with
// that many pods written straight into it (PodsPerNode per node, over
// Namespaces namespaces) and a cache-on server started over them,
// measuring what the cache costs: initialization, memory per pod, a LIST of
// everything, kubelets' LISTs and watch fan-out.
func (b *bench) curves(ctx context.Context) error {
	var baseline memory
	var points []curvePoint
	for _, size := range b.cfg.CurveSizes {
		p, err := b.curvePoint(ctx, size, &baseline)
		if err != nil {
			return err
		}
		points = append(points, p)
	}
	return b.finish(b.curvesScenario(points, baseline))
}

// curvePoint measures the cache over size pods. The first call also
// measures, into baseline, a cache-on server over an empty etcd.
func (b *bench) curvePoint(ctx context.Context, size int, baseline *memory) (curvePoint, error) {
	p := curvePoint{size: size}
	etcdDir := fmt.Sprintf("etcd-curves-%d", size)
	if err := b.startEtcd(ctx, etcdDir); err != nil {
		return p, err
	}
	var s *server
	defer func() { b.stopOwn(s, etcdDir) }()
	if baseline.heap == 0 {
		empty, err := b.startServerAs(ctx, "curves-empty", true)
		if err != nil {
			return p, err
		}
		*baseline, err = empty.memoryAfterGC(ctx)
		empty.stop()
		if err != nil {
			return p, err
		}
	}
	nodes := max(1, size/b.cfg.PodsPerNode)
	var err error
	if p.loaded, err = b.putPods(ctx, 0, size, b.cfg.Namespaces, nodes); err != nil {
		return p, err
	}
	if s, err = b.startServerAs(ctx, fmt.Sprintf("curves-%d", size), true); err != nil {
		return p, err
	}
	p.ready = time.Since(s.started)
	seconds, err := s.scrape(ctx, `apiserver_watch_cache_initialization_duration_seconds_sum{resource="pods"}`)
	if err != nil {
		return p, err
	}
	p.init = time.Duration(seconds * float64(time.Second))
	if p.mem, err = s.memoryAfterGC(ctx); err != nil {
		return p, err
	}
	fmt.Fprintf(b.cfg.Progress, "%s pods: ready in %s\n", FormatValue(Count, float64(size)), p.ready.Round(time.Millisecond))
	p.listAll = closedLoop(ctx, 1, forDuration(1, 0, listAllPasses), func(ctx context.Context, _, _ int) error {
		return s.listAtLeast(ctx, "/api/v1/pods?resourceVersion=0", int64(size)*1000)
	})
	clients := 2
	p.kubelet = closedLoop(ctx, clients, forDuration(clients, b.cfg.Duration, 1), func(ctx context.Context, client, i int) error {
		return s.listNodePods(ctx, size, nodes, client*7919+i*31)
	})
	if err := b.createPodNamespaces(ctx, s); err != nil {
		return p, err
	}
	w := fanoutWork{collection: "/api/v1/pods", watchers: b.cfg.CurveWatchers, updates: b.cfg.CurveUpdates, writers: b.cfg.FanoutWriters, timeout: b.cfg.FanoutTimeout}
	p.fanoutSide, err = w.run(ctx, s, func(ctx context.Context, i int) error {
		ns, name := podIdentity(benchdata.Pod(i%min(size, fanoutPodsMax), b.cfg.Namespaces, nodes))
		return stampedPatch(ctx, s, "/api/v1/namespaces/"+ns+"/pods/"+name, `{"metadata":{"annotations":{"sent":"%d"}}}`)
	})
	if err != nil {
		return p, err
	}
	p.fanout = &p.fanoutSide.delivery
	return p, s.alive()
}

// perPod is a cost divided by the number of pods it was measured over.
func (p curvePoint) perPod(v float64) float64 { return v / float64(p.size) }

// heapPerPod is the growth of the server's Go heap per cached pod.
func (p curvePoint) heapPerPod(baseline memory) float64 {
	return p.perPod(float64(p.mem.heap - baseline.heap))
}

// curvesScenario reports the curves: a row per size, then how the per-pod
// costs grew from the smallest size to the largest.
func (b *bench) curvesScenario(points []curvePoint, baseline memory) Scenario {
	sc := Scenario{
		ID:     "curves",
		Title:  "Cost curves: the cache at growing numbers of pods",
		Sides:  []string{"cache"},
		XAxis:  "pods in the cache",
		Charts: []string{curveReady, curveHeap, curveListAll, curveKubelet, curveFanout},
	}
	for _, p := range points {
		jsonPerPod := p.perPod(float64(p.loaded.jsonBytes))
		row := Row{Label: FormatValue(Count, float64(p.size)) + " pods", X: float64(p.size), Metrics: []Metric{
			{Name: curveReady, Unit: Seconds, Cache: p.ready.Seconds()},
			{Name: curveInit, Unit: Seconds, Cache: p.init.Seconds()},
			{Name: curveHeap, Unit: Bytes, Cache: p.heapPerPod(baseline)},
			{Name: "Go heap per pod ÷ its JSON", Unit: Count, Cache: p.heapPerPod(baseline) / jsonPerPod},
			{Name: "resident memory per pod", Unit: Bytes, Cache: p.perPod(float64(p.mem.resident - baseline.resident))},
			{Name: curveListAll, Unit: Seconds, Cache: p.listAll.latency.percentile(0.5).Seconds()},
			{Name: curveKubelet, Unit: Seconds, Cache: p.kubelet.latency.percentile(0.99).Seconds()},
			{Name: curveFanout, Unit: Seconds, Cache: p.fanout.latency.percentile(0.99).Seconds()},
			{Name: "fan-out events per second", Unit: PerSecond, Cache: p.fanoutSide.eventRate, HigherIsBetter: true},
		}}
		row.Incomplete = failures(map[string]*outcome{"LIST all": p.listAll, "kubelet LIST": p.kubelet})
		if p.fanoutSide.short > 0 {
			row.Incomplete += fmt.Sprintf(" %d watchers did not receive every event (ended early or past the %s deadline).", p.fanoutSide.short, b.cfg.FanoutTimeout)
			row.Incomplete = strings.TrimSpace(row.Incomplete)
		}
		sc.Rows = append(sc.Rows, row)
	}
	growth := ""
	if len(points) >= 2 {
		var row Row
		row, growth = curveGrowth(points[0], points[len(points)-1], baseline)
		sc.Rows = append(sc.Rows, row)
	}
	var loads []string
	for _, p := range points {
		loads = append(loads, p.loaded.describe())
	}
	sc.Workload = fmt.Sprintf("For each size, a new etcd with that many pods (%d per node, over %d namespaces, without managedFields) written straight into it: %s. "+
		"Then a cache-on server started over them: time from process start to /readyz, and its pods cache's initialization as its metric says; memory after a forced GC, "+
		"less that of a cache-on server over an empty etcd (Go heap %s, resident %s); the median of %d LISTs of all pods at resourceVersion=0; "+
		"2 kubelets LISTing their node's pods (fieldSelector spec.nodeName, consistent) in a closed loop for %s; a fan-out of %d watchers of all pods while %d writers "+
		"make %s merge patches of %d pods, latency from the start of each patch to each watcher's receipt of its event. %s",
		b.cfg.PodsPerNode, b.cfg.Namespaces, strings.Join(loads, "; "), FormatValue(Bytes, float64(baseline.heap)), FormatValue(Bytes, float64(baseline.resident)),
		listAllPasses, b.cfg.Duration, b.cfg.CurveWatchers, b.cfg.FanoutWriters, FormatValue(Count, float64(b.cfg.CurveUpdates)), fanoutPodsMax, growth)
	return sc
}

// curveGrowth compares the largest size with the smallest: per pod for
// the costs that grow with the pods (linear growth is 1×), as they are for
// the others (a kubelet's answer and an event are the same at every size:
// flat is 1×). It returns the comparison as a row and in words.
func curveGrowth(small, large curvePoint, baseline memory) (Row, string) {
	type ratio struct {
		name string
		v    float64
		// verdict: a per-pod cost, linear or not
		verdict bool
	}
	per := func(p curvePoint, v float64) float64 { return p.perPod(v) }
	ratios := []ratio{
		{curveReady + ", per pod", per(large, large.ready.Seconds()) / per(small, small.ready.Seconds()), true},
		{curveInit + ", per pod", per(large, large.init.Seconds()) / per(small, small.init.Seconds()), true},
		{curveHeap, large.heapPerPod(baseline) / small.heapPerPod(baseline), true},
		{curveListAll + ", per pod", per(large, large.listAll.latency.percentile(0.5).Seconds()) / per(small, small.listAll.latency.percentile(0.5).Seconds()), true},
		{curveKubelet, large.kubelet.latency.percentile(0.99).Seconds() / small.kubelet.latency.percentile(0.99).Seconds(), false},
		{curveFanout, large.fanout.latency.percentile(0.99).Seconds() / small.fanout.latency.percentile(0.99).Seconds(), false},
	}
	row := Row{Label: fmt.Sprintf("%s ÷ %s pods", FormatValue(Count, float64(large.size)), FormatValue(Count, float64(small.size)))}
	var words []string
	for _, r := range ratios {
		row.Metrics = append(row.Metrics, Metric{Name: r.name, Unit: Count, Cache: r.v})
		verdict := "linear or better"
		switch {
		case !r.verdict:
			verdict = "per request; its answer is the same at every size"
		case r.v > linearSlack:
			verdict = "worse than linear"
		}
		words = append(words, fmt.Sprintf("%s %s× (%s)", r.name, significant(r.v, 2), verdict))
	}
	return row, fmt.Sprintf("From %s to %s pods (%s×): %s. Linear or better means a per-pod cost that grew at most %g× (this machine is shared and noisy).",
		FormatValue(Count, float64(small.size)), FormatValue(Count, float64(large.size)), FormatValue(Count, float64(large.size)/float64(small.size)),
		strings.Join(words, "; "), linearSlack)
}
