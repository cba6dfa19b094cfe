package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/watchcache/watchcache/pkg/app"
	"github.com/watchcache/watchcache/pkg/etcdembed"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Shape of the load: objects spread over loadNamespaces namespaces and
// loadGroups label values (label group=g-N); each client works on one
// namespace and one group.
const (
	loadNamespaces = 100
	loadGroups     = 10
	// loadHeld is how long the clients run against the held cache before
	// the test stops counting new requests as sent while held.
	loadHeld = 4 * time.Second
	// loadHeldAnswer bounds the wait for the answers of the requests sent
	// while the cache was held, before the test releases it: a request that
	// waits for the cache is never answered before the release, so it fails
	// whatever the bound; the bound is generous because a slow answer on a
	// loaded machine is not what the test is about.
	loadHeldAnswer = 30 * time.Second
	// loadClusterPagers of the clients list the whole collection with a
	// limit.
	loadClusterPagers = 2
)

func loadNamespace(i int) string { return fmt.Sprintf("load-%02d", i%loadNamespaces) }
func loadGroup(i int) string     { return fmt.Sprintf("g-%d", i%loadGroups) }

// loadObject is the stored JSON of configmap j (about 150 bytes): in
// namespace j%loadNamespaces, group (j/loadNamespaces)%loadGroups.
func loadObject(j int) (key, value string) {
	ns, name := loadNamespace(j), fmt.Sprintf("cm-%06d", j)
	return "/registry/configmaps/" + ns + "/" + name, fmt.Sprintf(
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q,"namespace":%q,"labels":{"group":%q}},"data":{"i":"%d"}}`,
		name, ns, loadGroup(j/loadNamespaces), j)
}

// loadEtcd writes n configmaps (and their namespaces) straight into etcd,
// 128 puts per transaction (etcd's default limit).
func loadEtcd(t *testing.T, client *clientv3.Client, n int) {
	t.Helper()
	start := time.Now()
	// 13 s alone; several times that beside the rest of the suite under
	// -race on 2 cores. The load is setup, not what the test measures.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var ops []clientv3.Op
	for i := range loadNamespaces {
		ns := loadNamespace(i)
		ops = append(ops, clientv3.OpPut("/registry/namespaces/"+ns,
			fmt.Sprintf(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":%q},"spec":{"finalizers":["kubernetes"]},"status":{"phase":"Active"}}`, ns)))
	}
	for j := range n {
		ops = append(ops, clientv3.OpPut(loadObject(j)))
	}
	const batch, workers = 128, 4
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := w * batch; i < len(ops); i += workers * batch {
				if _, err := client.Txn(ctx).Then(ops[i:min(i+batch, len(ops))]...).Commit(); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	t.Logf("wrote %d configmaps into etcd in %v", n, time.Since(start).Round(time.Millisecond))
}

// loadStats collects the answers of every client.
type loadStats struct {
	mu       sync.Mutex
	answers  []time.Duration
	max      time.Duration
	slowest  string
	byKind   map[string]map[int]int // client kind → status → count
	maxKind  map[string]time.Duration
	failures []string
	// heldOver is set when the test stops counting requests as sent while
	// the cache is held; heldInFlight counts those still unanswered.
	heldOver     bool
	heldInFlight int
}

// sending counts a request about to be sent, and returns the function to
// call on its answer (or failure).
func (s *loadStats) sending() (answered func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.heldOver {
		return func() {}
	}
	s.heldInFlight++
	return func() {
		s.mu.Lock()
		s.heldInFlight--
		s.mu.Unlock()
	}
}

// awaitHeldAnswers stops counting new requests as sent while held and waits
// until every counted one is answered, or timeout; it returns how many are
// still unanswered.
func (s *loadStats) awaitHeldAnswers(timeout time.Duration) int {
	deadline := time.Now().Add(timeout)
	s.mu.Lock()
	s.heldOver = true
	for s.heldInFlight > 0 && time.Now().Before(deadline) {
		s.mu.Unlock()
		time.Sleep(10 * time.Millisecond)
		s.mu.Lock()
	}
	defer s.mu.Unlock()
	return s.heldInFlight
}

func (s *loadStats) record(kind, what string, code int, took time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.answers = append(s.answers, took)
	if took >= s.max {
		s.max = took
		s.slowest = fmt.Sprintf("%s (%d) in %v", what, code, took)
	}
	s.maxKind[kind] = max(s.maxKind[kind], took)
	if s.byKind[kind] == nil {
		s.byKind[kind] = map[int]int{}
	}
	s.byKind[kind][code]++
}

func (s *loadStats) fail(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.failures) < 20 {
		s.failures = append(s.failures, fmt.Sprintf(format, args...))
	}
}

// loadClient sends requests to the server, recording the time to each
// answer.
type loadClient struct {
	a     *app.App
	http  *http.Client
	stats *loadStats
	kind  string
}

// do sends a GET and returns the answer (the caller closes the body), or
// nil after recording a failure.
func (c *loadClient) do(ctx context.Context, path string) *http.Response {
	req, err := http.NewRequestWithContext(ctx, "GET", c.a.URL+path, nil)
	if err != nil {
		c.stats.fail("%s: %v", path, err)
		return nil
	}
	answered := c.stats.sending()
	start := time.Now()
	resp, err := c.http.Do(req)
	took := time.Since(start)
	answered()
	if err != nil {
		if ctx.Err() == nil {
			c.stats.fail("%s: %v after %v", path, err, took)
		}
		return nil
	}
	c.stats.record(c.kind, path, resp.StatusCode, took)
	return resp
}

// retryAfter waits as a 429 says (Retry-After seconds), or until ctx ends.
func retryAfter(ctx context.Context, resp *http.Response) {
	d := time.Second
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
		d = time.Duration(s) * time.Second
	}
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// drain reads and closes a body.
func drain(resp *http.Response) []byte {
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return data
}

// syncUntil repeats a request, honouring 429s, until it succeeds; check
// says whether the answer is the expected view.
func (c *loadClient) syncUntil(ctx context.Context, path string, check func([]byte) error) bool {
	for ctx.Err() == nil {
		resp := c.do(ctx, path)
		if resp == nil {
			return false
		}
		switch resp.StatusCode {
		case http.StatusTooManyRequests:
			drain(resp)
			retryAfter(ctx, resp)
		case http.StatusOK:
			if err := check(drain(resp)); err != nil {
				c.stats.fail("%s: %v", path, err)
				return false
			}
			return true
		default:
			c.stats.fail("%s: %d %s", path, resp.StatusCode, htShort(drain(resp)))
			return false
		}
	}
	return false
}

// loadItems decodes a list and returns the names of its items.
func loadItems(data []byte) ([]string, string, error) {
	var l struct {
		Metadata struct{ Continue string }
		Items    []struct{ Metadata struct{ Name string } }
	}
	if err := json.Unmarshal(data, &l); err != nil {
		return nil, "", err
	}
	names := make([]string, len(l.Items))
	for i, it := range l.Items {
		names[i] = it.Metadata.Name
	}
	return names, l.Metadata.Continue, nil
}

// TestInitializationLoad: 100,000 configmaps (10,000 with -short) in etcd;
// a server starts with its configmaps cache held in initialization, 200
// clients start (watches and lists with a label selector, which get 429s
// until the cache is ready; gets, lists with a limit and lists by name in a
// namespace, which etcd serves), and the cache is released once every request sent in the
// first loadHeld is answered. No request waits for the cache (one that
// did would never be answered while it is held; the slowest answer of all
// is logged), etcd receives no unbounded
// list while the cache initializes, and every client's view syncs after
// the release: lists return the selected objects, watches deliver them and
// then a new object.
func TestInitializationLoad(t *testing.T) {
	objects := 100000
	if testing.Short() {
		objects = 10000
	}
	const watchers, labelListers, fieldListers, getters, pagers = 50, 50, 25, 25, 50
	perSelection := objects / (loadNamespaces * loadGroups)

	dir := t.TempDir()
	etcd, err := etcdembed.Start(etcdembed.Config{DataDir: filepath.Join(dir, "etcd"), UnsafeNoFsync: true, ProgressNotifyInterval: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(etcd.Close) // after the server's Close
	etcdClient, err := etcd.NewClient()
	if err != nil {
		t.Fatal(err)
	}
	loadEtcd(t, etcdClient, objects)
	etcdClient.Close()

	hook := newInitHook("configmaps")
	started := time.Now()
	a := startInitServer(t, app.Config{DataDir: dir, EtcdServers: []string{etcd.Endpoint}}, hook)
	cms := hook.store("configmaps")
	cms.waitHeld(t, 1)
	t.Logf("server started in %v", time.Since(started).Round(time.Millisecond))

	stats := &loadStats{byKind: map[string]map[int]int{}, maxKind: map[string]time.Duration{}}
	transport := &http.Transport{MaxIdleConnsPerHost: 400, TLSClientConfig: adminTLS}
	defer transport.CloseIdleConnections()
	httpClient := &http.Client{Transport: transport}
	// A guard against hangs, not a bound on speed: 200 clients syncing
	// 100,000 objects took 26-56 s alone and over 90 s beside the rest of
	// the suite on a loaded 2-core machine.
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	// Gets and limited lists go on until the watchers and listers are done.
	busyCtx, stopBusy := context.WithCancel(ctx)
	defer stopBusy()

	var synced, watching, done sync.WaitGroup
	var syncedCount atomic.Int64
	client := func(kind string) *loadClient {
		return &loadClient{a: a, http: httpClient, stats: stats, kind: kind}
	}
	selection := func(i int) (ns, group string) { return loadNamespace(i), loadGroup(i / loadNamespaces) }
	clientsStarted := time.Now()

	// Watchers: a namespace and a group each; the initial ADDED events, then
	// the object the test creates for them.
	newObject := func(i int) string { return fmt.Sprintf("new-%03d", i) }
	for i := range watchers {
		synced.Add(1)
		watching.Add(1)
		done.Go(func() {
			c := client("watch")
			ns, group := selection(i)
			path := "/api/v1/namespaces/" + ns + "/configmaps?watch=true&labelSelector=group%3D" + group
			isSynced, isWatching := false, false
			defer func() {
				if !isSynced {
					synced.Done()
				}
				if !isWatching {
					watching.Done()
				}
			}()
			for ctx.Err() == nil {
				resp := c.do(ctx, path)
				if resp == nil {
					return
				}
				if resp.StatusCode == http.StatusTooManyRequests {
					drain(resp)
					retryAfter(ctx, resp)
					continue
				}
				if resp.StatusCode != http.StatusOK {
					stats.fail("%s: %d %s", path, resp.StatusCode, htShort(drain(resp)))
					return
				}
				defer resp.Body.Close()
				dec := json.NewDecoder(resp.Body)
				added := 0
				for {
					var ev struct {
						Type   string
						Object struct{ Metadata struct{ Name string } }
					}
					if err := dec.Decode(&ev); err != nil {
						stats.fail("%s: after %d ADDED: %v", path, added, err)
						return
					}
					if ev.Type != "ADDED" {
						stats.fail("%s: %s event", path, ev.Type)
						return
					}
					if ev.Object.Metadata.Name == newObject(i) {
						if added != perSelection {
							stats.fail("%s: the new object after %d ADDED, want %d", path, added, perSelection)
						}
						return
					}
					if added++; added == perSelection {
						isSynced, isWatching = true, true
						syncedCount.Add(1)
						synced.Done()
						watching.Done()
					}
				}
			}
		})
	}
	// Listers with a label selector, and with a field selector.
	for i := range labelListers + fieldListers {
		synced.Add(1)
		done.Go(func() {
			defer synced.Done()
			ns, group := selection(i)
			path, want := "/api/v1/namespaces/"+ns+"/configmaps?labelSelector=group%3D"+group, perSelection
			kind := "label list"
			if i >= labelListers {
				j := (i*7919 + 13) % objects
				kind, ns = "field list", loadNamespace(j)
				path, want = "/api/v1/namespaces/"+ns+"/configmaps?fieldSelector=metadata.name%3D"+fmt.Sprintf("cm-%06d", j), 1
			}
			if client(kind).syncUntil(ctx, path, func(data []byte) error {
				names, _, err := loadItems(data)
				if err == nil && len(names) != want {
					err = fmt.Errorf("%d items, want %d", len(names), want)
				}
				return err
			}) {
				syncedCount.Add(1)
			}
		})
	}
	// Gets and lists with a limit (a page and the next one), every 0.5 to
	// 1.5 s: served by etcd meanwhile, by the cache after. A few lists are
	// of the whole collection, every 1 to 3 s: their limit bounds what etcd
	// reads and sends, but etcd still counts every key of the range (for
	// remainingItemCount), about 90 ms each under -race with 100,000
	// objects; dozens a second would starve the cache's own list.
	for i := range getters + pagers {
		done.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(i), 1))
			kind, pause := "get", 500*time.Millisecond
			if i >= getters {
				kind = "limited list"
			}
			clusterWide := i >= getters+pagers-loadClusterPagers
			if clusterWide {
				pause = time.Second
			}
			c := client(kind)
			for busyCtx.Err() == nil {
				j := rng.IntN(objects)
				path := "/api/v1/namespaces/" + loadNamespace(j) + "/configmaps/" + fmt.Sprintf("cm-%06d", j)
				switch {
				case clusterWide:
					path = "/api/v1/configmaps?limit=500"
				case kind == "limited list":
					path = "/api/v1/namespaces/" + loadNamespace(j) + "/configmaps?limit=50"
				}
				if resp := c.do(busyCtx, path); resp != nil {
					data := drain(resp)
					if resp.StatusCode != http.StatusOK {
						stats.fail("%s: %d %s", path, resp.StatusCode, htShort(data))
					} else if kind == "limited list" {
						if _, cont, err := loadItems(data); err != nil || cont == "" {
							stats.fail("%s: continue %q, %v", path, cont, err)
						} else if resp := c.do(busyCtx, path+"&continue="+cont); resp != nil {
							if data := drain(resp); resp.StatusCode != http.StatusOK {
								stats.fail("%s (next page): %d %s", path, resp.StatusCode, htShort(data))
							}
						}
					}
				}
				select {
				case <-busyCtx.Done():
				case <-time.After(pause + time.Duration(rng.Int64N(int64(2*pause)))):
				}
			}
		})
	}

	time.Sleep(loadHeld)
	if n := stats.awaitHeldAnswers(loadHeldAnswer); n != 0 {
		t.Errorf("%d requests sent while the cache was held got no answer in %v: they wait for the cache", n, loadHeldAnswer)
	}
	if cms.complete.Load() != 0 {
		t.Fatal("the cache listed while held")
	}
	released := time.Now()
	cms.Release()
	readyWait := make(chan time.Duration, 1)
	go func() {
		for cms.complete.Load() == 0 && ctx.Err() == nil {
			time.Sleep(time.Millisecond)
		}
		readyWait <- time.Since(released)
	}()
	synced.Wait()
	allSynced := time.Since(released)
	listed := <-readyWait
	initBounded, initUnbounded, initGets := cms.boundedInit.Load(), cms.unboundedInit.Load(), cms.gets.Load()

	// Every watcher gets an object created for it.
	watching.Wait()
	for i := range watchers {
		ns, group := selection(i)
		initExpect(t, a, "POST", "/api/v1/namespaces/"+ns+"/configmaps", initConfigMap(newObject(i), map[string]string{"group": group}), http.StatusCreated)
	}
	waited := make(chan struct{})
	go func() { stopBusy(); done.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-ctx.Done():
		t.Fatal("the clients did not finish in time")
	}
	took := time.Since(clientsStarted)

	stats.mu.Lock()
	defer stats.mu.Unlock()
	for _, f := range stats.failures {
		t.Error(f)
	}
	answers := slices.Clone(stats.answers)
	slices.Sort(answers)
	maxAnswer := answers[len(answers)-1]
	t.Logf("%d objects, %d clients: the cache was held %v, listed %v after the release; every client synced %v after the release; all done %v after the clients started",
		objects, watchers+labelListers+fieldListers+getters+pagers, released.Sub(clientsStarted).Round(time.Millisecond), listed.Round(time.Millisecond), allSynced.Round(time.Millisecond), took.Round(time.Millisecond))
	t.Logf("%d answers: median %v, p99 %v, max %v (%s)", len(answers), answers[len(answers)/2].Round(time.Microsecond),
		answers[len(answers)*99/100].Round(time.Microsecond), maxAnswer.Round(time.Microsecond), stats.slowest)
	for _, kind := range []string{"watch", "label list", "field list", "get", "limited list"} {
		t.Logf("  %-12s answers by status: %v, slowest in %v", kind, stats.byKind[kind], stats.maxKind[kind].Round(time.Millisecond))
	}
	t.Logf("etcd while the cache initialized: %d gets, %d bounded lists, %d unbounded lists; after: %d bounded, %d unbounded lists; %d etcd watches; cache lists: %d",
		initGets, initBounded, initUnbounded, cms.boundedLater.Load(), cms.unboundedLater.Load(), cms.watches.Load(), cms.initial.Load())
	if initUnbounded != 0 {
		t.Errorf("%d unbounded lists reached etcd while the cache initialized", initUnbounded)
	}
	if n := syncedCount.Load(); n != watchers+labelListers+fieldListers {
		t.Errorf("%d of %d watchers and listers synced", n, watchers+labelListers+fieldListers)
	}
	if stats.byKind["watch"][http.StatusTooManyRequests] == 0 || stats.byKind["label list"][http.StatusTooManyRequests] == 0 {
		t.Error("no watch or selector list got a 429: the clients did not start while the cache initialized")
	}
	if n := cms.initial.Load(); n != 1 {
		t.Errorf("the cache listed %d times, want once", n)
	}
	if n := cms.watches.Load(); n != 1 {
		t.Errorf("%d etcd watches of configmaps, want 1 (the cache's): watches while it initialized reached etcd", n)
	}
}
