// Loading the shared setup's data through the cache-off server: namespaces,
// benchdata's pods and the consistent-LIST matrix's collections.

package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/watchcache/watchcache/pkg/benchdata"
)

// loadedData counts what was loaded before the cache-on server started:
// the objects it will cache and their size as served (JSON).
type loadedData struct {
	objects   int64
	jsonBytes int64
}

// loadWorkers is how many creates are in flight while loading.
const loadWorkers = 32

// The namespaces of the scenarios that write their own objects; the write
// scenario has one per side, suffixed "-cache" and "-etcd".
const (
	fanoutNamespace = "fanout"
	writesNamespace = "writes"
)

// matrixCell is one collection of the consistent-LIST matrix.
type matrixCell struct {
	count, objectSize int
}

func (c matrixCell) namespace() string { return fmt.Sprintf("matrix-%d-%d", c.objectSize, c.count) }

// matrixCells returns every cell of the matrix, skipped or not.
func (b *bench) matrixCells() []matrixCell {
	var cells []matrixCell
	for _, size := range b.cfg.ObjectSizes {
		for _, count := range b.cfg.ListSizes {
			cells = append(cells, matrixCell{count: count, objectSize: size})
		}
	}
	return cells
}

// skipped says why a cell is not run, or "" if it is.
func (b *bench) skipped(c matrixCell) string {
	if total := int64(c.count) * int64(c.objectSize); total > b.cfg.MaxListBytes {
		return fmt.Sprintf("%s of data is over the %s limit (--max-list-bytes)",
			FormatValue(Bytes, float64(total)), FormatValue(Bytes, float64(b.cfg.MaxListBytes)))
	}
	return ""
}

// podScenarios are the shared scenarios that read the pods (shards also
// updates them).
var podScenarios = []string{"initialization", "kubelet", "kubelet-auth", "select-nothing", "paginated", "shards"}

// load creates every object the scenarios to run read, through the
// cache-off server, before the cache-on server starts (so that its start
// measures initialization over all of them).
func (b *bench) load(ctx context.Context) error {
	var namespaces []string
	if b.cfg.runs("fanout") {
		namespaces = append(namespaces, fanoutNamespace)
	}
	if b.cfg.runs("writes") {
		namespaces = append(namespaces, writesNamespace+"-cache", writesNamespace+"-etcd")
	}
	needPods := slices.ContainsFunc(podScenarios, b.cfg.runs)
	if needPods {
		for i := range b.cfg.Namespaces {
			namespaces = append(namespaces, benchdata.Namespace(i, b.cfg.Namespaces))
		}
	}
	var cells []matrixCell
	cellObjects := 0
	for _, c := range b.matrixCells() {
		if b.skipped(c) == "" && b.cfg.runs("matrix") {
			cells = append(cells, c)
			namespaces = append(namespaces, c.namespace())
			cellObjects += c.count
		}
	}
	err := b.createAll(ctx, "namespaces", len(namespaces), func(i int) (string, []byte) {
		return "/api/v1/namespaces", namespaceObject(namespaces[i])
	})
	if err != nil {
		return err
	}
	err = b.createAll(ctx, "matrix config maps", cellObjects, func(i int) (string, []byte) {
		for _, c := range cells {
			if i < c.count {
				ns := c.namespace()
				return "/api/v1/namespaces/" + ns + "/configmaps", benchdata.ConfigMap(ns, fmt.Sprintf("cm-%06d", i), c.objectSize)
			}
			i -= c.count
		}
		panic("unreachable: more objects than cells hold")
	})
	if err != nil {
		return err
	}
	if b.cfg.runs("fanout") {
		err = b.createAll(ctx, "fan-out config maps", b.cfg.FanoutObjects, func(i int) (string, []byte) {
			return "/api/v1/namespaces/" + fanoutNamespace + "/configmaps", benchdata.ConfigMap(fanoutNamespace, fmt.Sprintf("cm-%06d", i), 300)
		})
		if err != nil {
			return err
		}
	}
	if !needPods {
		return nil
	}
	// A pod is created without status, as kube-apiserver creates it, and
	// without owners (see withoutOwners); its kubelet then writes the status
	// through /status. The data counts the pods as they end up.
	pods := "/api/v1/namespaces/%s/pods"
	if _, _, err := b.createVia(ctx, b.direct, "pods", b.cfg.Pods, func(i int) (string, []byte) {
		return fmt.Sprintf(pods, benchdata.Namespace(i, b.cfg.Namespaces)), withoutOwners(benchdata.Pod(i, b.cfg.Namespaces, b.cfg.Nodes))
	}); err != nil {
		return err
	}
	objects, size, err := b.writeAll(ctx, "pod statuses", b.cfg.Pods, func(ctx context.Context, i int) (int64, error) {
		pod := benchdata.Pod(i, b.cfg.Namespaces, b.cfg.Nodes)
		var status struct {
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
			Status json.RawMessage `json:"status"`
		}
		if err := json.Unmarshal(pod, &status); err != nil {
			return 0, err
		}
		path := fmt.Sprintf(pods, benchdata.Namespace(i, b.cfg.Namespaces)) + "/" + status.Metadata.Name + "/status"
		return b.direct.do(ctx, http.MethodPatch, path, "application/merge-patch+json", append(append([]byte(`{"status":`), status.Status...), '}'))
	})
	b.loaded.objects += objects
	b.loaded.jsonBytes += size
	return err
}

// namespaceObject is a Namespace's JSON.
func namespaceObject(name string) []byte {
	return fmt.Appendf(nil, `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":%q}}`, name)
}

// createPodNamespaces creates, through s, the namespaces benchdata's pods
// are spread over.
func (b *bench) createPodNamespaces(ctx context.Context, s *server) error {
	_, _, err := b.createVia(ctx, s, "namespaces", b.cfg.Namespaces, func(i int) (string, []byte) {
		return "/api/v1/namespaces", namespaceObject(benchdata.Namespace(i, b.cfg.Namespaces))
	})
	return err
}

// createAll creates n objects of the data through the cache-off server,
// loadWorkers at a time, showing a progress bar.
func (b *bench) createAll(ctx context.Context, label string, n int, object func(i int) (collection string, body []byte)) error {
	objects, size, err := b.createVia(ctx, b.direct, label, n, object)
	b.loaded.objects += objects
	b.loaded.jsonBytes += size
	return err
}

// createVia creates n objects through s, loadWorkers at a time, showing a
// progress bar; it returns how many it created and their JSON's size.
func (b *bench) createVia(ctx context.Context, s *server, label string, n int, object func(i int) (collection string, body []byte)) (int64, int64, error) {
	return b.writeAll(ctx, label, n, func(ctx context.Context, i int) (int64, error) {
		collection, body := object(i)
		return s.create(ctx, collection, body)
	})
}

// writeAll makes n writes, loadWorkers at a time, showing a progress bar;
// it returns how many succeeded and the size of the objects they returned.
func (b *bench) writeAll(ctx context.Context, label string, n int, write func(ctx context.Context, i int) (int64, error)) (int64, int64, error) {
	b.bar.start("loading "+label, n)
	defer b.bar.finish()
	var next, objects, size atomic.Int64
	var firstErr error
	var once sync.Once
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for range loadWorkers {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n && ctx.Err() == nil; i = int(next.Add(1) - 1) {
				served, err := write(ctx, i)
				if err != nil {
					once.Do(func() { firstErr = err; cancel() })
					return
				}
				objects.Add(1)
				size.Add(served)
				b.bar.add(1)
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return objects.Load(), size.Load(), fmt.Errorf("loading %s: %w", label, firstErr)
	}
	return objects.Load(), size.Load(), ctx.Err()
}
