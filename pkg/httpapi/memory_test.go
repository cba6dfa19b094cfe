package httpapi

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"runtime/debug"
	rtmetrics "runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/watchcache/watchcache/pkg/requestinfo"
	"github.com/watchcache/watchcache/pkg/resource"
	"github.com/watchcache/watchcache/pkg/storage/etcd3"
	"github.com/watchcache/watchcache/pkg/storage/storagetest"
)

// listMemoryEnv sizes TestListMemory: the megabytes of config maps of 4 KB
// it loads (default 64; the case is 400, 100,000 objects).
const listMemoryEnv = "WATCHCACHE_LIST_MEMORY_MB"

// maxListGrowth is the bound on what ten concurrent lists of a
// whole resource may grow the server's RSS by.
const maxListGrowth = 1 << 30

// TestListMemory measures what ten concurrent lists of a whole resource
// cost a server that reads etcd (no watch cache), as a user meets it: the
// growth of the process's peak RSS (VmHWM, reset before the lists) over
// its RSS before them, with the embedded etcd in the process as in the
// default deployment. Unstreamed, each list held its response about four
// times at once (etcd's range, gRPC's buffers, the decoded objects, the
// encoding): some 40× the resource for ten lists. Streamed, each holds a
// few of etcd's chunks (RangeStream's, of up to twice etcd's
// --max-request-bytes, in etcd, gRPC and here) whatever the resource's
// size: about 35 MB per list with the embedded etcd's 4 MiB, twice that
// with the garbage collector's headroom. The test fails if ten lists grow
// the peak RSS by 1 GiB or more, the bound, whatever the
// resource's size; unstreamed lists exceed it already at the default 64 MB
// (some 2.5 GiB). Run the case with
//
//	WATCHCACHE_LIST_MEMORY_MB=400 go test ./pkg/httpapi -run TestListMemory -v -timeout 30m
//
// Under the race detector (whose shadow memory scales with the heap) it
// is skipped: `go test -race` does not run it.
func TestListMemory(t *testing.T) {
	if raceEnabled {
		t.Skip("memory is measured without -race")
	}
	if _, err := os.Stat("/proc/self/clear_refs"); err != nil {
		t.Skip("needs Linux's /proc to measure RSS")
	}
	mb := 64
	if v := os.Getenv(listMemoryEnv); v != "" {
		var err error
		if mb, err = strconv.Atoi(v); err != nil || mb <= 0 {
			t.Fatalf("%s=%q: want a number of megabytes", listMemoryEnv, v)
		}
	}
	const objectSize, lists = 4 << 10, 10
	n := mb << 20 / objectSize

	reg, err := resource.NewRegistry(resource.Builtins()...)
	if err != nil {
		t.Fatal(err)
	}
	cms := reg.Lookup("", "v1", "configmaps")
	store := etcd3.New(etcd3.Config{Client: storagetest.Client(), Prefix: cms.EtcdPrefix(fmt.Sprintf("/memory-test/%d", streamSeq.Add(1))),
		Schema: cms.Schema(), Resource: cms.String()})
	reg.SetStore(cms, store)
	start := time.Now()
	loadConfigMaps(t, store, n, objectSize)
	t.Logf("loaded %d config maps of %d B in %v", n, objectSize, time.Since(start).Round(time.Millisecond))
	ts := httptest.NewServer(requestinfo.WithRequestInfo(New(Config{Registry: reg})))
	defer ts.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: lists}}
	list := func() int64 {
		resp, err := client.Get(ts.URL + "/api/v1/configmaps")
		if err != nil {
			t.Error(err)
			return 0
		}
		defer resp.Body.Close()
		size, err := io.Copy(io.Discard, resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Errorf("list: %d %v", resp.StatusCode, err)
		}
		return size
	}
	// A first list maps etcd's database into memory (file pages count in
	// RSS): a running server has done it long ago.
	start = time.Now()
	size := list()
	t.Logf("one list alone: %.1f MiB in %v", mib(size), time.Since(start).Round(time.Millisecond))

	runtime.GC()
	debug.FreeOSMemory()
	before := procStatus(t, "VmRSS")
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		t.Skipf("cannot reset the peak RSS: %v", err)
	}
	stop := make(chan struct{})
	peakHeap := make(chan uint64)
	go samplePeakHeap(stop, peakHeap)
	start = time.Now()
	var wg sync.WaitGroup
	var total atomic.Int64
	for range lists {
		wg.Add(1)
		go func() {
			defer wg.Done()
			total.Add(list())
		}()
	}
	wg.Wait()
	took := time.Since(start)
	close(stop)
	heap := <-peakHeap
	growth := procStatus(t, "VmHWM") - before
	if total.Load() != lists*size {
		t.Fatalf("the lists returned %d bytes, want %d × %d", total.Load(), lists, size)
	}
	t.Logf("%d concurrent lists of %d objects (%.1f MiB each) in %v: peak RSS grew by %.1f MiB over %.1f MiB (%.2f× one response, %.1f MiB per list); peak Go heap in use %.1f MiB",
		lists, n, mib(size), took.Round(time.Millisecond), mib(growth), mib(before), float64(growth)/float64(size), mib(growth)/lists, mib(int64(heap)))
	if growth >= maxListGrowth {
		t.Fatalf("ten lists of %.1f MiB grew the peak RSS by %.1f MiB, not less than %.0f MiB: they are not streamed", mib(size), mib(growth), mib(maxListGrowth))
	}
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// loadConfigMaps writes n config maps of about size bytes, from a few
// goroutines, stored as the server stores them (kind and apiVersion first,
// which lets a list copy their JSON instead of re-encoding each item).
func loadConfigMaps(t *testing.T, store *etcd3.Store, n, size int) {
	t.Helper()
	ctx := context.Background()
	filler := strings.Repeat("x", size-200)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1)) - 1; i < n && !t.Failed(); i = int(next.Add(1)) - 1 {
				ns, name := fmt.Sprintf("ns-%02d", i%50), fmt.Sprintf("cm-%06d", i)
				var b bytes.Buffer
				fmt.Fprintf(&b, `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":%q,"namespace":%q,"uid":"uid-%06d"},"data":{"filler":%q}}`, name, ns, i, filler)
				if _, err := store.Create(ctx, ns+"/"+name, b.Bytes()); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
}

// procStatus returns a size field of /proc/self/status in bytes.
func procStatus(t *testing.T, field string) int64 {
	t.Helper()
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no %s in /proc/self/status", field)
	return 0
}

// samplePeakHeap reports the largest Go heap in use (objects, live or not
// yet swept) seen every millisecond until stop is closed.
func samplePeakHeap(stop <-chan struct{}, peak chan<- uint64) {
	sample := []rtmetrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	var max uint64
	t := time.NewTicker(time.Millisecond)
	defer t.Stop()
	for {
		rtmetrics.Read(sample)
		if v := sample[0].Value.Uint64(); v > max {
			max = v
		}
		select {
		case <-stop:
			peak <- max
			return
		case <-t.C:
		}
	}
}
