package etcdembed

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// BenchmarkMemory measures what an embedded etcd keeps in memory per key
// after issue 29's write load: keys of 2.3 KB created by 32 clients, then
// each rewritten at 3.8 KB (a pod after its kubelet's status patch), with a
// watch on the prefix: with previous values (prevkv=true, as a watch from
// etcd with selectors asks) or without (as the server's cache watches). The
// writes are plain puts, or (compare=true) transactions that compare the
// key's revisions first as the server's writes do: etcd reads a compared
// key's value, the one a previous value would be. It reports, per key, the growth of the live Go heap (after two collections)
// and of the anonymous and file-backed resident memory, for etcd's default
// SnapshotCatchUpEntries and a single member's. WATCHCACHE_MEMORY_KEYS sets
// the keys (default 30,000); WATCHCACHE_MEMORY_PROFILE, a file name prefix,
// writes each case's heap profile (go tool pprof -sample_index=inuse_space)
// to attribute the heap to etcd's parts.
func BenchmarkMemory(b *testing.B) {
	keys := 30000
	if v := os.Getenv("WATCHCACHE_MEMORY_KEYS"); v != "" {
		var err error
		if keys, err = strconv.Atoi(v); err != nil {
			b.Fatal(err)
		}
	}
	for _, catchUp := range []uint64{5000, 0} {
		name := "catchup=" + strconv.FormatUint(catchUp, 10)
		if catchUp == 0 {
			name = fmt.Sprintf("catchup=default(%d)", singleCatchUpEntries)
		}
		for _, prevKV := range []bool{true, false} {
			for _, compare := range []bool{false, true} {
				name := fmt.Sprintf("%s/prevkv=%t/compare=%t", name, prevKV, compare)
				b.Run(name, func(b *testing.B) {
					for range b.N {
						measureMemory(b, keys, Config{DataDir: b.TempDir(), UnsafeNoFsync: true, SnapshotCatchUpEntries: catchUp}, prevKV, compare, name)
					}
				})
			}
		}
	}
}

// measureMemory runs the load of BenchmarkMemory once on a new etcd of cfg.
func measureMemory(b *testing.B, keys int, cfg Config, prevKV, compare bool, name string) {
	heap0, set0 := settledMemory(b)
	s, err := Start(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	c, err := s.NewClient()
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var events atomic.Int64
	watchOpts := []clientv3.OpOption{clientv3.WithPrefix()}
	if prevKV {
		watchOpts = append(watchOpts, clientv3.WithPrevKV())
	}
	watch := c.Watch(ctx, "/registry/", watchOpts...)
	go func() {
		for r := range watch {
			events.Add(int64(len(r.Events)))
		}
	}()
	created, patched := strings.Repeat("c", 2300), strings.Repeat("p", 3800)
	for _, value := range []string{created, patched} {
		write := func(key string) error {
			_, err := c.Put(ctx, key, value)
			return err
		}
		if compare {
			// A create compares the key's create_revision, an update its
			// mod_revision (here: that it has one).
			write = func(key string) error {
				cmp := clientv3.Compare(clientv3.CreateRevision(key), "=", 0)
				if value == patched {
					cmp = clientv3.Compare(clientv3.ModRevision(key), ">", 0)
				}
				resp, err := c.Txn(ctx).If(cmp).Then(clientv3.OpPut(key, value)).Commit()
				if err == nil && !resp.Succeeded {
					err = fmt.Errorf("%s: the compare failed", key)
				}
				return err
			}
		}
		var next atomic.Int64
		var wg sync.WaitGroup
		for range 32 {
			wg.Go(func() {
				for i := next.Add(1) - 1; i < int64(keys); i = next.Add(1) - 1 {
					if err := write(fmt.Sprintf("/registry/pods/ns-%d/pod-%06d", i%100, i)); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
	}
	for deadline := time.Now().Add(time.Minute); events.Load() < int64(2*keys); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			b.Fatalf("the watch saw %d events of %d", events.Load(), 2*keys)
		}
	}
	heap1, set1 := settledMemory(b)
	per := func(v int64) float64 { return float64(v) / float64(keys) }
	b.ReportMetric(per(heap1-heap0), "heap-B/key")
	b.ReportMetric(per(set1.anon-set0.anon), "anonRSS-B/key")
	b.ReportMetric(per(set1.file-set0.file), "fileRSS-B/key")
	if prefix := os.Getenv("WATCHCACHE_MEMORY_PROFILE"); prefix != "" {
		f, err := os.Create(prefix + strings.NewReplacer("=", "-", "(", "-", ")", "", "/", "-").Replace(name) + ".pprof")
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
			b.Fatal(err)
		}
	}
}

// residentSet is this process's anonymous and file-backed resident memory.
type residentSet struct{ anon, file int64 }

// settledMemory collects garbage twice (sync.Pools keep their buffers
// through one), returns freed pages to the OS and reads the live heap
// (runtime/metrics) and the resident set (/proc/self/status).
func settledMemory(b *testing.B) (int64, residentSet) {
	runtime.GC()
	runtime.GC()
	debug.FreeOSMemory()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(sample)
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Fatal(err)
	}
	var set residentSet
	for _, line := range strings.Split(string(status), "\n") {
		for prefix, dst := range map[string]*int64{"RssAnon:": &set.anon, "RssFile:": &set.file} {
			if rest, ok := strings.CutPrefix(line, prefix); ok {
				kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
				if err != nil {
					b.Fatal(err)
				}
				*dst = kb * 1024
			}
		}
	}
	return int64(sample[0].Value.Uint64()), set
}
