// The read scenarios: initialization, KEP-2340's consistent-LIST matrix,
// kubelet, select-nothing and paginated, each against the cache-on and the
// cache-off server.

package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/watchcache/watchcache/pkg/benchdata"
)

// finish adds a scenario to the report and prints it.
func (b *bench) finish(s Scenario) error {
	b.report.Scenarios = append(b.report.Scenarios, s)
	return WriteScenarioText(b.cfg.Output, s)
}

// initialization restarts the cache-off server and starts the cache-on one
// over all the loaded data, timing each from process start to /readyz, and
// compares their memory. Unless the run includes the initialization
// scenario, it only starts the cache-on server.
func (b *bench) initialization(ctx context.Context) error {
	var err error
	if !b.cfg.runs("initialization") {
		b.cache, err = b.startServer(ctx, true)
		return err
	}
	b.direct.stop()
	if b.direct, err = b.startServer(ctx, false); err != nil {
		return err
	}
	directReady := time.Since(b.direct.started)
	if b.cache, err = b.startServer(ctx, true); err != nil {
		return err
	}
	cacheReady := time.Since(b.cache.started)
	cacheMem, err := b.cache.memoryAfterGC(ctx)
	if err != nil {
		return err
	}
	directMem, err := b.direct.memoryAfterGC(ctx)
	if err != nil {
		return err
	}
	var took []string
	for _, res := range []string{"pods", "configmaps"} {
		seconds, err := b.cache.scrape(ctx, `apiserver_watch_cache_initialization_duration_seconds_sum{resource="`+res+`"}`)
		if err != nil {
			return err
		}
		took = append(took, fmt.Sprintf("%s %s", res, FormatValue(Seconds, seconds)))
	}
	n, json := float64(b.loaded.objects), float64(b.loaded.jsonBytes)
	perObject := func(cache, direct int64) string {
		grown := float64(cache-direct) / n
		return fmt.Sprintf("%s (%.2f× its JSON)", FormatValue(Bytes, grown), grown/(json/n))
	}
	return b.finish(Scenario{
		ID:    "initialization",
		Title: "Cache initialization and memory",
		Workload: fmt.Sprintf("Both servers started over %s objects (%s of JSON, %s each on average): time from process start to /readyz passing, "+
			"then memory after a forced GC. The two largest caches initialized (concurrently) in: %s. "+
			"Per cached object, the cache-on server's resident memory is larger by %s and its Go heap by %s.",
			FormatValue(Count, n), FormatValue(Bytes, json), FormatValue(Bytes, json/n), strings.Join(took, ", "),
			perObject(cacheMem.resident, directMem.resident), perObject(cacheMem.heap, directMem.heap)),
		Rows: []Row{{Label: fmt.Sprintf("%s objects", FormatValue(Count, n)), Metrics: []Metric{
			{Name: "start to ready", Unit: Seconds, Cache: cacheReady.Seconds(), Etcd: directReady.Seconds()},
			{Name: "resident memory", Unit: Bytes, Cache: float64(cacheMem.resident), Etcd: float64(directMem.resident)},
			{Name: "Go heap after GC", Unit: Bytes, Cache: float64(cacheMem.heap), Etcd: float64(directMem.heap)},
		}}},
	})
}

// matrix is KEP-2340's benchmark: consistent LISTs of collections of each
// size, of objects of each size.
func (b *bench) matrix(ctx context.Context) error {
	sc := Scenario{
		ID:    "matrix",
		Title: "Consistent LIST by collection size and object size",
		Workload: fmt.Sprintf("%d clients in a closed loop LIST one namespace's config maps (no resourceVersion: a consistent read) for %s per cell and side, "+
			"at least 2 requests each; the response is read to the end.", b.cfg.MatrixClients, b.cfg.CellDuration),
	}
	for _, c := range b.matrixCells() {
		row := Row{
			Label: fmt.Sprintf("%s × %s", FormatValue(Count, float64(c.count)), sizeLabel(c.objectSize)),
			Group: sizeLabel(c.objectSize) + " objects", X: float64(c.count), Skipped: b.skipped(c),
		}
		if row.Skipped == "" {
			path := "/api/v1/namespaces/" + c.namespace() + "/configmaps"
			minBytes := int64(c.count) * int64(c.objectSize) * 9 / 10
			sides, err := b.closedLoopSides(ctx, b.cfg.MatrixClients, b.cfg.CellDuration, 2, func(ctx context.Context, s *server, _, _ int) error {
				return s.listAtLeast(ctx, path, minBytes)
			})
			if err != nil {
				return err
			}
			row.Metrics, row.Incomplete = latencyMetrics(sides["cache"], sides["etcd"]), failures(sides)
		}
		sc.Rows = append(sc.Rows, row)
	}
	return b.finish(sc)
}

// sizeLabel names an object size as KEP-2340 does: "5 KB", "25 KB".
func sizeLabel(bytes int) string {
	if bytes%1000 == 0 {
		return fmt.Sprintf("%d KB", bytes/1000)
	}
	return FormatValue(Bytes, float64(bytes))
}

// listAtLeast LISTs path and fails unless the response has at least min
// bytes (a list that lost its items would be fast for the wrong reason).
func (c *apiClient) listAtLeast(ctx context.Context, path string, min int64) error {
	n, err := c.do(ctx, http.MethodGet, path, "", nil)
	if err == nil && n < min {
		err = fmt.Errorf("GET %s: %d bytes, expected at least %d", path, n, min)
	}
	return err
}

// closedLoopSides runs a closed loop against each server alone (see
// closedLoop and sides) and returns the outcomes by side, "cache" and "etcd".
func (b *bench) closedLoopSides(ctx context.Context, clients int, d time.Duration, minEach int, op func(ctx context.Context, s *server, client, i int) error) (map[string]*outcome, error) {
	return b.closedLoopPair(ctx, b.cache, b.direct, clients, d, minEach, op)
}

// closedLoopPair is closedLoopSides against first and second.
func (b *bench) closedLoopPair(ctx context.Context, first, second *server, clients int, d time.Duration, minEach int, op func(ctx context.Context, s *server, client, i int) error) (map[string]*outcome, error) {
	out := map[string]*outcome{}
	err := b.pair(ctx, first, second, func(ctx context.Context, s *server) error {
		out[s.side()] = closedLoop(ctx, clients, forDuration(clients, d, minEach), func(ctx context.Context, client, i int) error { return op(ctx, s, client, i) })
		return nil
	})
	return out, err
}

// side names a server in reports: "cache", "etcd" or "allow".
func (s *server) side() string { return s.label }

// kubelet has each client list one node's pods by spec.nodeName, as a
// kubelet does, over and over.
func (b *bench) kubelet(ctx context.Context) error {
	sc := Scenario{
		ID:    "kubelet",
		Title: "Kubelets: consistent LIST of a node's pods",
		Workload: fmt.Sprintf("%s pods on %s nodes in %s namespaces; each client, in a closed loop for %s per side, LISTs all pods with fieldSelector spec.nodeName of a node (%s pods), consistently.",
			FormatValue(Count, float64(b.cfg.Pods)), FormatValue(Count, float64(b.cfg.Nodes)), FormatValue(Count, float64(b.cfg.Namespaces)), b.cfg.Duration,
			FormatValue(Count, float64(b.cfg.Pods/b.cfg.Nodes))),
	}
	for _, clients := range b.cfg.KubeletClients {
		sides, err := b.closedLoopSides(ctx, clients, b.cfg.Duration, 1, func(ctx context.Context, s *server, client, i int) error {
			return s.listNodePods(ctx, b.cfg.Pods, b.cfg.Nodes, client*7919+i*31)
		})
		if err != nil {
			return err
		}
		sc.Rows = append(sc.Rows, Row{Label: fmt.Sprintf("%d clients", clients), Metrics: latencyMetrics(sides["cache"], sides["etcd"]), Incomplete: failures(sides)})
	}
	return b.finish(sc)
}

// nodePodsPath is the path of a kubelet's LIST of its node's pods.
func nodePodsPath(node string) string {
	return "/api/v1/pods?fieldSelector=" + url.QueryEscape("spec.nodeName="+node)
}

// listNodePods LISTs, consistently, the pods of node n of nodes, as its
// kubelet does, checking that the answer holds about their share of pods.
func (c *apiClient) listNodePods(ctx context.Context, pods, nodes, n int) error {
	return c.listAtLeast(ctx, nodePodsPath(benchdata.Node(n, nodes)), int64(pods/nodes)*1000)
}

// selectNothing is KEP-2340's load test: LISTs with a selector matching no
// object at a fixed rate; what each costs the server and etcd in CPU.
func (b *bench) selectNothing(ctx context.Context) error {
	sides := map[string]*outcome{}
	cpu := map[string]cpuUsage{}
	path := "/api/v1/pods?labelSelector=" + url.QueryEscape("watchcache-bench=nothing")
	err := b.sides(ctx, func(ctx context.Context, s *server) error {
		var err error
		cpu[s.side()], err = b.cpuDuring(s, func() error {
			sides[s.side()] = openLoop(ctx, b.cfg.NothingRate, b.cfg.NothingDuration, func(ctx context.Context) error {
				_, err := s.do(ctx, http.MethodGet, path, "", nil)
				return err
			})
			return nil
		})
		return err
	})
	if err != nil {
		return err
	}
	metrics := append(percentileMetrics(sides["cache"], sides["etcd"], "p50", "p90", "p99"), cpuMetrics("request", cpu, sides)...)
	return b.finish(Scenario{
		ID:    "select-nothing",
		Title: "A selector that selects nothing",
		Workload: fmt.Sprintf("LIST of all %s pods with a label selector no pod matches, consistently, started at %g per second for %s whether or not earlier ones have returned "+
			"(KEP-2340's load). CPU is the processor time of the server's and etcd's processes over the run, from /proc, divided by the requests.",
			FormatValue(Count, float64(b.cfg.Pods)), b.cfg.NothingRate, b.cfg.NothingDuration),
		Rows: []Row{{Label: fmt.Sprintf("%g/s", b.cfg.NothingRate), Metrics: metrics, Incomplete: failures(sides)}},
	})
}

// paginated times full passes over the pods in pages, the first page a
// consistent read and the rest following the continue token.
func (b *bench) paginated(ctx context.Context) error {
	wantPages := (b.cfg.Pods + b.cfg.PageLimit - 1) / b.cfg.PageLimit
	sides, err := b.closedLoopSides(ctx, 1, 0, b.cfg.Passes, func(ctx context.Context, s *server, _, _ int) error {
		pages, err := s.fullPass(ctx, b.cfg.PageLimit)
		if err == nil && pages < wantPages {
			err = fmt.Errorf("a full pass took %d pages of %d, expected at least %d", pages, b.cfg.PageLimit, wantPages)
		}
		return err
	})
	if err != nil {
		return err
	}
	return b.finish(Scenario{
		ID:    "paginated",
		Title: "Paginated consistent LIST: a full pass",
		Workload: fmt.Sprintf("One client LISTs all %s pods in pages of %d (the first page consistent, the rest following the continue token), %d passes per side.",
			FormatValue(Count, float64(b.cfg.Pods)), b.cfg.PageLimit, b.cfg.Passes),
		Rows: []Row{{Label: fmt.Sprintf("limit %d", b.cfg.PageLimit), Metrics: percentileMetrics(sides["cache"], sides["etcd"], "p50", "max"), Incomplete: failures(sides)}},
	})
}

// fullPass lists all pods page by page and returns how many pages it took.
func (s *server) fullPass(ctx context.Context, limit int) (int, error) {
	var page bytes.Buffer
	token := ""
	for pages := 1; ; pages++ {
		path := fmt.Sprintf("/api/v1/pods?limit=%d&continue=%s", limit, url.QueryEscape(token))
		resp, err := s.send(ctx, http.MethodGet, path, "", nil)
		if err != nil {
			return pages, err
		}
		page.Reset()
		_, err = io.Copy(&page, resp.Body)
		resp.Body.Close()
		if err != nil {
			return pages, err
		}
		if token = continueToken(page.Bytes()); token == "" {
			return pages, nil
		}
	}
}

// continueToken finds the continue token in a list's metadata.
func continueToken(list []byte) string { return listField(list, "continue") }

// listField finds a string field of a list's metadata, which the server
// writes before the items, without decoding the items.
func listField(list []byte, name string) string {
	head := list[:min(len(list), 4096)]
	if items := bytes.Index(head, []byte(`"items":`)); items >= 0 {
		head = head[:items]
	}
	_, rest, ok := bytes.Cut(head, []byte(`"`+name+`":"`))
	if !ok {
		return ""
	}
	value, _, _ := bytes.Cut(rest, []byte(`"`))
	return string(value)
}
