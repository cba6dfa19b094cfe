package cacher

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/storage"
	"github.com/watchcache/watchcache/pkg/storage/storagemetrics"
	"github.com/watchcache/watchcache/pkg/storage/storagetest"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
)

// holdingStore is the test hook of these tests: a storage.Interface double
// over a real etcd3 store that can hold the cache in initialization. While
// held, the reflector's list blocks until the test releases it; every
// other read passes through, and gets and lists are counted (the
// reflector's are not). When failWatch is set, the first watch fails once
// failWatch is closed (as in compaction_test.go), which makes the cache
// list again.
type holdingStore struct {
	storage.Interface
	storagetest.Gate              // initial lists pass it
	initial          atomic.Int64 // initial lists (held or not)
	gets             atomic.Int64 // gets that reached etcd
	lists            atomic.Int64 // lists that reached etcd, other than the reflector's
	watches          atomic.Int64
	failWatch        chan struct{}
}

func (s *holdingStore) Get(ctx context.Context, key string, opts storage.GetOptions) (*object.Object, error) {
	s.gets.Add(1)
	return s.Interface.Get(ctx, key, opts)
}

func (s *holdingStore) GetList(ctx context.Context, scope string, opts storage.ListOptions) (*storage.List, error) {
	switch {
	case IsReflectorList(ctx):
		s.initial.Add(1)
		if err := s.Pass(ctx); err != nil {
			return nil, err
		}
	default:
		s.lists.Add(1)
	}
	return s.Interface.GetList(ctx, scope, opts)
}

func (s *holdingStore) Watch(ctx context.Context, scope string, opts storage.ListOptions) (storage.Watcher, error) {
	w, err := s.Interface.Watch(ctx, scope, opts)
	if err != nil {
		return nil, err
	}
	if s.watches.Add(1) == 1 && s.failWatch != nil {
		return storagetest.NewBreakableWatcher(w, s.failWatch), nil
	}
	return w, nil
}

// waitHeld waits until the cache's initial list is held.
func waitHeld(t *testing.T, s *holdingStore) {
	t.Helper()
	waitUntil(t, "holding the initial list", func() bool { return s.Waiting() == 1 })
}

// noWait is how fast a request must be answered while the cache
// initializes: it must not wait for the cache, which the tests hold until
// they release it, so a request that waits never returns in time (the
// reads' contexts end after 5 s). Generous: how slow an answer is on a
// loaded machine (the whole suite under -race on 2 cores) is not what
// these tests are about.
const noWait = 3 * time.Second

// answered runs a request and fails the test unless it returns within
// noWait.
func answered(t *testing.T, what string, f func() error) error {
	t.Helper()
	start := time.Now()
	err := f()
	if took := time.Since(start); took > noWait {
		t.Errorf("%s took %v while the cache initializes, want at most %v", what, took, noWait)
	}
	return err
}

// wantTooMany fails the test unless err is a 429 (ErrTooManyRequests)
// naming the initializing cache, with the given Retry-After.
func wantTooMany(t *testing.T, what string, err error, retryAfter int) {
	t.Helper()
	var se *storage.Error
	if !errors.As(err, &se) || se.Code != storage.ErrTooManyRequests {
		t.Errorf("%s: %v, want TooManyRequests", what, err)
		return
	}
	if se.RetryAfterSeconds != retryAfter {
		t.Errorf("%s: Retry-After %d, want %d", what, se.RetryAfterSeconds, retryAfter)
	}
	if !strings.Contains(se.Message, "initializing") {
		t.Errorf("%s: message %q does not say the cache is initializing", what, se.Message)
	}
}

// histogramCount reads how many samples a histogram of reg holds, over
// its labels.
func histogramCount(t *testing.T, reg *prometheus.Registry, name string) uint64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var n uint64
	for _, f := range families {
		if f.GetName() == name {
			for _, m := range f.GetMetric() {
				n += m.GetHistogram().GetSampleCount()
			}
		}
	}
	return n
}

// checkWhileNotReady sends every kind of read to a cache that is not ready
// (its list held) and checks the answers of KEP-4568: gets, lists with a
// limit and no selector, and lists by name in a namespace (one key) from
// etcd, every other list and every watch a 429 with Retry-After 1, none
// waiting for the cache.
func checkWhileNotReady(t *testing.T, ctx context.Context, c *Cacher, hs *holdingStore) {
	t.Helper()
	if c.Ready() {
		t.Fatal("the cache is ready while its list is held")
	}
	// A read that waits for the cache fails the test, soon.
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	gets, lists := hs.gets.Load(), hs.lists.Load()

	for _, rv := range []string{"", "0"} {
		var obj *object.Object
		err := answered(t, "get rv="+rv, func() (err error) {
			obj, err = c.Get(ctx, "ns/a-00", storage.GetOptions{ResourceVersion: rv})
			return err
		})
		if err != nil || obj.Key() != "ns/a-00" {
			t.Errorf("get ns/a-00 rv=%q: %v, %v", rv, obj, err)
		}
	}
	err := answered(t, "get of a missing object", func() error {
		_, err := c.Get(ctx, "ns/missing", storage.GetOptions{})
		return err
	})
	if storage.CodeOf(err) != storage.ErrNotFound {
		t.Errorf("get of a missing object: %v, want NotFound", err)
	}
	if got := hs.gets.Load() - gets; got != 3 {
		t.Errorf("%d gets reached etcd, want 3", got)
	}

	// Lists with a limit and no selector: etcd, pages and all.
	var page *storage.List
	err = answered(t, "list limit=3", func() (err error) {
		page, err = c.GetList(ctx, "ns/", storage.ListOptions{Limit: 3})
		return err
	})
	if err != nil || len(page.Items) != 3 || page.Continue == "" {
		t.Fatalf("list limit=3: %v, %v; want 3 items and a continue token", page, err)
	}
	want, err := hs.Interface.GetList(ctx, "ns/", exactList(page.ResourceVersion, 0))
	if err != nil {
		t.Fatal(err)
	}
	sameObjects(t, "first page", page.Items, want.Items[:3])
	var next *storage.List
	err = answered(t, "list continue", func() (err error) {
		next, err = c.GetList(ctx, "ns/", storage.ListOptions{Limit: 3, Continue: page.Continue})
		return err
	})
	if err != nil {
		t.Fatalf("continuing the list: %v", err)
	}
	sameObjects(t, "second page", next.Items, want.Items[3:6])
	err = answered(t, "list rv=0 limit=5", func() error {
		l, err := c.GetList(ctx, "", storage.ListOptions{ResourceVersion: "0", Limit: 5})
		if err == nil && len(l.Items) != 5 {
			err = fmt.Errorf("%d items, want 5", len(l.Items))
		}
		return err
	})
	if err != nil {
		t.Errorf("list rv=0 limit=5: %v", err)
	}
	// A list by name in a namespace: etcd reads one key (with another
	// selector too, which it applies to that object).
	byName := fields.OneTermEqualSelector("metadata.name", "a-00")
	for _, opts := range []storage.ListOptions{{Fields: byName}, {Fields: byName, Labels: labels.SelectorFromSet(labels.Set{"app": "none"})}} {
		var l *storage.List
		err = answered(t, "list by name", func() (err error) {
			l, err = c.GetList(ctx, "ns/", opts)
			return err
		})
		want := 1
		if opts.Labels != nil {
			want = 0
		}
		if err != nil || len(l.Items) != want || want == 1 && l.Items[0].Key() != "ns/a-00" {
			t.Errorf("list by name %v: %v, %v; want %d item(s)", opts, l, err, want)
		}
	}
	if got := hs.lists.Load() - lists; got != 5 {
		t.Errorf("%d lists reached etcd, want 5", got)
	}
	lists = hs.lists.Load()

	// Every other list: 429.
	byApp := labels.SelectorFromSet(labels.Set{"app": "a"})
	byNode := fields.OneTermEqualSelector("spec.nodeName", "node-1")
	for _, l := range []struct {
		name  string
		scope string
		opts  storage.ListOptions
	}{
		{"list without limit", "", storage.ListOptions{}},
		{"list of a namespace without limit, rv=0", "ns/", storage.ListOptions{ResourceVersion: "0"}},
		{"list with a label selector and a limit", "", storage.ListOptions{Limit: 5, Labels: byApp}},
		{"list with a field selector and a limit", "ns/", storage.ListOptions{Limit: 5, Fields: byNode}},
		{"list with a label selector", "", storage.ListOptions{Labels: byApp}},
		{"list by name over all namespaces (one key per namespace)", "", storage.ListOptions{Fields: byName}},
	} {
		err := answered(t, l.name, func() error {
			_, err := c.GetList(ctx, l.scope, l.opts)
			return err
		})
		wantTooMany(t, l.name, err, 1)
	}
	// Every watch: 429.
	for _, w := range []struct {
		name string
		opts storage.ListOptions
	}{
		{"watch", storage.ListOptions{}},
		{"watch rv=0", storage.ListOptions{ResourceVersion: "0"}},
		{"watch from a revision", storage.ListOptions{ResourceVersion: storage.FormatResourceVersion(page.ResourceVersion)}},
		{"watch with a selector", storage.ListOptions{Labels: byApp, AllowWatchBookmarks: true}},
		{"watch by name", storage.ListOptions{Fields: byName}},
	} {
		err := answered(t, w.name, func() error {
			wt, err := c.Watch(ctx, "", w.opts)
			if err == nil {
				wt.Stop()
			}
			return err
		})
		wantTooMany(t, w.name, err, 1)
	}
	if got := hs.lists.Load() - lists; got != 0 {
		t.Errorf("%d refused lists reached etcd", got)
	}
}

// checkFromCache checks that a ready cache serves every kind of read
// itself.
func checkFromCache(t *testing.T, ctx context.Context, c *Cacher, hs *holdingStore, wantItems int) {
	t.Helper()
	gets, lists := hs.gets.Load(), hs.lists.Load()
	if _, err := c.Get(ctx, "ns/a-00", storage.GetOptions{}); err != nil {
		t.Errorf("get: %v", err)
	}
	if _, err := c.Get(ctx, "ns/a-00", storage.GetOptions{ResourceVersion: "0"}); err != nil {
		t.Errorf("get rv=0: %v", err)
	}
	all, err := c.GetList(ctx, "", storage.ListOptions{})
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	if len(all.Items) != wantItems {
		t.Errorf("list: %d items, want %d", len(all.Items), wantItems)
	}
	want, err := hs.Interface.GetList(ctx, "", exactList(all.ResourceVersion, 0))
	if err != nil {
		t.Fatal(err)
	}
	sameObjects(t, "list from the cache", all.Items, want.Items)
	if l, err := c.GetList(ctx, "ns/", storage.ListOptions{Limit: 3}); err != nil || len(l.Items) != 3 {
		t.Errorf("list limit=3: %v, %v", l, err)
	}
	if _, err := c.GetList(ctx, "", storage.ListOptions{Limit: 5, Labels: labels.SelectorFromSet(labels.Set{"app": "a"})}); err != nil {
		t.Errorf("list with a selector: %v", err)
	}
	if _, err := c.GetList(ctx, "", storage.ListOptions{Fields: fields.OneTermEqualSelector("spec.nodeName", "node-1")}); err != nil {
		t.Errorf("list with a field selector: %v", err)
	}
	w, err := c.Watch(ctx, "", storage.ListOptions{ResourceVersion: storage.FormatResourceVersion(all.ResourceVersion)})
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	defer w.Stop()
	if got := hs.gets.Load() - gets; got != 0 {
		t.Errorf("%d gets reached etcd once the cache is ready", got)
	}
	if got := hs.lists.Load() - lists; got != 0 {
		t.Errorf("%d lists reached etcd once the cache is ready", got)
	}
	name := fmt.Sprintf("w-%d", time.Now().UnixNano())
	if _, err := c.Create(ctx, "ns/"+name, podJSON("ns", name, "node-1", "Running", nil, 0)); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-w.ResultChan():
		if ev.Type != storage.EventAdded || ev.Object.Name() != name {
			t.Errorf("watch delivered %s %v, want ADDED %s", ev.Type, ev.Object, name)
		}
	case <-time.After(5 * time.Second):
		t.Error("the watch delivered nothing for 5s after a create")
	}
}

// newHeldCache creates 10 pods in a fresh etcd prefix and starts a cache
// over them whose initial list is held.
func newHeldCache(t *testing.T, ctx context.Context, wait bool) (*Cacher, *holdingStore, *prometheus.Registry) {
	t.Helper()
	hs := &holdingStore{Interface: newEtcdStore("initialization-test")}
	createPods(t, ctx, hs.Interface, "ns", "a", 10)
	hs.Hold()
	reg := prometheus.NewRegistry()
	c := New(Config{Store: hs, Resource: "pods", IndexedFields: []string{"spec.nodeName"}, Metrics: storagemetrics.NewStorage(reg),
		ConsistentListFromCache: true, ConsistentGetFromCache: true, WaitWhileInitializing: wait})
	t.Cleanup(c.Stop)
	t.Cleanup(hs.Release) // before Stop
	waitHeld(t, hs)
	return c, hs, reg
}

// TestRetryAfterUnready: Retry-After grows with the time the cache has
// been down, as upstream's curve e^(0.06·s), from 1 s up to 30 s.
func TestRetryAfterUnready(t *testing.T) {
	for _, tc := range []struct {
		down time.Duration
		want int
	}{
		{0, 1}, {time.Second, 1}, {10 * time.Second, 1}, {20 * time.Second, 3}, {30 * time.Second, 6},
		{40 * time.Second, 11}, {50 * time.Second, 20}, {56 * time.Second, 28}, {57 * time.Second, 30},
		{60 * time.Second, 30}, {time.Hour, 30}, {-time.Second, 1},
	} {
		if got := retryAfterUnready(tc.down); got != tc.want {
			t.Errorf("retryAfterUnready(%v) = %d, want %d", tc.down, got, tc.want)
		}
	}
}

// TestInitializationHeld: while the cache's first list is held, reads get
// KEP-4568's answers at once; the Retry-After grows with the downtime; once
// released everything is served from the cache and the initialization is
// counted.
func TestInitializationHeld(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, hs, reg := newHeldCache(t, ctx, false)

	checkWhileNotReady(t, ctx, c, hs)
	if n := metricValue(t, reg, "apiserver_watch_cache_initializations_total", "pods"); n != 0 {
		t.Errorf("%v initializations counted while the first is held", n)
	}

	// The Retry-After follows the time the cache has been down.
	for _, tc := range []struct {
		down time.Duration
		want int
	}{{20 * time.Second, 3}, {40 * time.Second, 11}, {10 * time.Minute, 30}} {
		c.readiness.mu.Lock()
		c.readiness.notSince = time.Now().Add(-tc.down)
		c.readiness.mu.Unlock()
		_, err := c.Watch(ctx, "", storage.ListOptions{})
		wantTooMany(t, fmt.Sprintf("watch after %v down", tc.down), err, tc.want)
		_, err = c.GetList(ctx, "", storage.ListOptions{})
		wantTooMany(t, fmt.Sprintf("list after %v down", tc.down), err, tc.want)
	}

	hs.Release()
	waitReady(t, c, 10*time.Second)
	checkFromCache(t, ctx, c, hs, 10)
	if n := hs.initial.Load(); n != 1 {
		t.Errorf("%d initial lists, want 1", n)
	}
	if n := metricValue(t, reg, "apiserver_watch_cache_initializations_total", "pods"); n != 1 {
		t.Errorf("%v initializations counted, want 1", n)
	}
	if n := histogramCount(t, reg, "apiserver_watch_cache_initialization_duration_seconds"); n != 1 {
		t.Errorf("%v initialization durations observed, want 1", n)
	}
}

// TestInitializationWaitWhileInitializing: with the gate off
// (WaitWhileInitializing), reads wait for the cache instead, nothing goes
// to etcd, a cancelled read returns at once, and once the list is released
// the waiting reads are served from the cache.
func TestInitializationWaitWhileInitializing(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, hs, _ := newHeldCache(t, ctx, true)

	type result struct {
		name string
		err  error
		n    int // objects received
	}
	results := make(chan result, 16)
	run := func(name string, ctx context.Context, f func(ctx context.Context) (int, error)) {
		go func() {
			n, err := f(ctx)
			results <- result{name, err, n}
		}()
	}
	get := func(ctx context.Context) (int, error) {
		obj, err := c.Get(ctx, "ns/a-00", storage.GetOptions{})
		if err != nil {
			return 0, err
		}
		if obj.Key() != "ns/a-00" {
			return 0, fmt.Errorf("got %s", obj)
		}
		return 1, nil
	}
	list := func(opts storage.ListOptions) func(ctx context.Context) (int, error) {
		return func(ctx context.Context) (int, error) {
			l, err := c.GetList(ctx, "", opts)
			if err != nil {
				return 0, err
			}
			return len(l.Items), nil
		}
	}
	watchInitial := func(ctx context.Context) (int, error) {
		w, err := c.Watch(ctx, "", storage.ListOptions{})
		if err != nil {
			return 0, err
		}
		defer w.Stop()
		n := 0
		for n < 10 {
			select {
			case ev := <-w.ResultChan():
				if ev.Type != storage.EventAdded {
					return n, fmt.Errorf("event %s, want ADDED", ev.Type)
				}
				n++
			case <-time.After(5 * time.Second):
				return n, errors.New("no event for 5s")
			}
		}
		return n, nil
	}
	want := map[string]int{
		"get": 1, "list limit=3": 3, "list": 10, "list with a selector and a limit": 5, "watch": 10,
	}
	run("get", ctx, get)
	run("list limit=3", ctx, list(storage.ListOptions{Limit: 3}))
	run("list", ctx, list(storage.ListOptions{}))
	run("list with a selector and a limit", ctx, list(storage.ListOptions{Limit: 5, Labels: labels.SelectorFromSet(labels.Set{"app": "a"})}))
	run("watch", ctx, watchInitial)

	// Cancelled reads return at once.
	cctx, ccancel := context.WithCancel(ctx)
	run("cancelled get", cctx, get)
	run("cancelled list", cctx, list(storage.ListOptions{Limit: 3}))
	run("cancelled watch", cctx, watchInitial)
	time.Sleep(50 * time.Millisecond)
	ccancel()
	cancelled := time.Now()
	for range 3 {
		select {
		case r := <-results:
			if !strings.HasPrefix(r.name, "cancelled") || !errors.Is(r.err, context.Canceled) {
				t.Errorf("%s returned %v (%d objects); want only the cancelled reads to return, with context.Canceled", r.name, r.err, r.n)
			}
		case <-time.After(time.Second):
			t.Fatal("cancelled reads still wait 1s after the cancellation")
		}
	}
	if took := time.Since(cancelled); took > noWait {
		t.Errorf("cancelled reads returned %v after the cancellation", took)
	}

	// The others still wait.
	select {
	case r := <-results:
		t.Fatalf("%s returned (%v) while the cache initializes; it should wait", r.name, r.err)
	case <-time.After(200 * time.Millisecond):
	}
	if g, l := hs.gets.Load(), hs.lists.Load(); g != 0 || l != 0 {
		t.Errorf("%d gets and %d lists reached etcd while waiting for the cache", g, l)
	}

	hs.Release()
	for range len(want) {
		select {
		case r := <-results:
			if r.err != nil || r.n != want[r.name] {
				t.Errorf("%s after the release: %v, %d objects; want %d", r.name, r.err, r.n, want[r.name])
			}
			delete(want, r.name)
		case <-time.After(10 * time.Second):
			t.Fatalf("reads still waiting 10s after the release: %v", want)
		}
	}
	if g, l := hs.gets.Load(), hs.lists.Load(); g != 0 || l != 0 {
		t.Errorf("%d gets and %d lists reached etcd; the waiting reads should be served from the cache", g, l)
	}
	checkFromCache(t, ctx, c, hs, 10)
}

// TestReinitializationHeld: when the cache's watch fails and its re-list is
// held, its watchers end, reads get the same answers as during the first
// initialization, and the re-initialization is counted.
func TestReinitializationHeld(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	hs := &holdingStore{Interface: newEtcdStore("reinitialization-test"), failWatch: make(chan struct{})}
	createPods(t, ctx, hs.Interface, "ns", "a", 10)
	reg := prometheus.NewRegistry()
	c := New(Config{Store: hs, Resource: "pods", IndexedFields: []string{"spec.nodeName"}, Metrics: storagemetrics.NewStorage(reg),
		ConsistentListFromCache: true, ConsistentGetFromCache: true})
	t.Cleanup(c.Stop)
	t.Cleanup(hs.Release)
	waitReady(t, c, 10*time.Second)
	waitUntil(t, "watching", func() bool { return hs.watches.Load() == 1 })

	w, err := c.Watch(ctx, "", storage.ListOptions{ResourceVersion: "0"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	hs.Hold()
	close(hs.failWatch)
	waitHeld(t, hs)
	// The watcher ends cleanly: the events it has, then the end.
	deadline := time.After(2 * time.Second)
	for ended := false; !ended; {
		select {
		case ev, ok := <-w.ResultChan():
			ended = !ok
			if ok && ev.Type == storage.EventError {
				t.Errorf("the watcher got an error event: %v", ev.Err)
			}
		case <-deadline:
			t.Fatal("the watcher did not end 2s after the cache lost its watch")
		}
	}

	checkWhileNotReady(t, ctx, c, hs)
	// Writes go on, and gets see them, from etcd.
	if _, err := c.Create(ctx, "ns/during", podJSON("ns", "during", "node-1", "Running", nil, 0)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(ctx, "ns/during", storage.GetOptions{}); err != nil {
		t.Errorf("get of an object created during the re-initialization: %v", err)
	}
	if n := metricValue(t, reg, "apiserver_watch_cache_initializations_total", "pods"); n != 1 {
		t.Errorf("%v initializations counted while the second is held, want 1", n)
	}
	if n := metricValue(t, reg, "apiserver_watch_cache_initialization_errors_total", "pods"); n != 1 {
		t.Errorf("%v initialization errors counted, want 1 (the broken watch)", n)
	}

	hs.Release()
	waitReady(t, c, 10*time.Second)
	checkFromCache(t, ctx, c, hs, 11)
	if n := hs.initial.Load(); n != 2 {
		t.Errorf("%d initial lists, want 2", n)
	}
	if n := metricValue(t, reg, "apiserver_watch_cache_initializations_total", "pods"); n != 2 {
		t.Errorf("%v initializations counted, want 2", n)
	}
}
