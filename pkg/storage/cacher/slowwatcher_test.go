package cacher

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/storage"
	"github.com/watchcache/watchcache/pkg/storage/storagemetrics"
	"k8s.io/apimachinery/pkg/fields"
)

// metricValue reads a metric of a resource from reg: a counter's or a
// gauge's value, a histogram's sum; 0 when it has no sample yet.
func metricValue(t *testing.T, reg *prometheus.Registry, name, resource string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() != "resource" || l.GetValue() != resource {
					continue
				}
				switch {
				case m.GetCounter() != nil:
					return m.GetCounter().GetValue()
				case m.GetGauge() != nil:
					return m.GetGauge().GetValue()
				case m.GetHistogram() != nil:
					return m.GetHistogram().GetSampleSum()
				}
			}
		}
	}
	return 0
}

// newMeteredCacher starts a ready cache of pods over a fresh etcd prefix,
// with metrics on a new registry.
func newMeteredCacher(t *testing.T, name string, cfg Config) (*Cacher, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	if cfg.Store == nil {
		cfg.Store = newEtcdStore(name)
	}
	cfg.Resource, cfg.IndexedFields, cfg.Metrics = "pods", []string{"spec.nodeName"}, storagemetrics.NewStorage(reg)
	c := New(cfg)
	t.Cleanup(c.Stop)
	waitReady(t, c, 10*time.Second)
	return c, reg
}

// received is an event and when a reader got it.
type received struct {
	ev storage.Event
	at time.Time
}

// readAll reads w until its channel closes.
func readAll(w storage.Watcher) []received {
	var out []received
	for ev := range w.ResultChan() {
		out = append(out, received{ev, time.Now()})
	}
	return out
}

// sameEvent says how a received event differs from an expected one
// (type, revisions, key, bytes), or "".
func sameEvent(got storage.Event, typ storage.EventType, want *object.Object) string {
	if got.Type != typ || got.Object == nil || got.ResourceVersion != want.ResourceVersion() ||
		got.Object.Key() != want.Key() || got.Object.ResourceVersion() != want.ResourceVersion() {
		return fmt.Sprintf("got %s, want %s %v", watchEventString(got), typ, want)
	}
	if !bytes.Equal(got.Object.JSON(), want.JSON()) {
		return fmt.Sprintf("%s: got %s, want %s", watchEventString(got), got.Object.JSON(), want.JSON())
	}
	return ""
}

// percentile returns the p-th percentile of sorted durations.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(p*float64(len(sorted))))]
}

// TestSlowWatcherIsClosed: one watcher that never reads and 100 that do,
// all watching everything from the same revision, while 500 writes are
// made. The stuck watcher's buffer overflows: it is closed (counted in
// apiserver_terminated_watchers_total) and, when finally read, delivers
// the events it had buffered, in order and without gap, then ends. The
// readers get every event exactly, in order, and are not held up much by
// the stuck one. Then, once the dispatcher's blocking budget has refilled,
// a reader that stalls briefly while its buffer is full is waited for,
// not closed.
func TestSlowWatcherIsClosed(t *testing.T) {
	const (
		readers = 100
		writes  = 500
	)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, reg := newMeteredCacher(t, "slow-watcher-test", Config{})
	startRV := dispatchedRV(c)
	from := storage.ListOptions{ResourceVersion: storage.FormatResourceVersion(startRV)}

	stuck, err := c.Watch(ctx, "", from)
	if err != nil {
		t.Fatal(err)
	}
	defer stuck.Stop()
	got := make([][]received, readers)
	progress := make([]atomic.Int64, readers) // events each reader got
	var wg sync.WaitGroup
	for i := range readers {
		w, err := c.Watch(ctx, "", from)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		wg.Go(func() {
			for ev := range w.ResultChan() {
				got[i] = append(got[i], received{ev, time.Now()})
				progress[i].Add(1)
			}
		})
	}
	// The writer stays at most lead events ahead of the slowest reader, so
	// that a reader the scheduler leaves aside for a while under -race is
	// not closed as too slow (its buffer holds minWatcherBuffer).
	const lead = minWatcherBuffer / 2
	pace := func(i int) {
		deadline := time.Now().Add(5 * time.Second)
		for r := range progress {
			for progress[r].Load() < int64(i-lead) {
				if time.Now().After(deadline) {
					t.Fatalf("reader %d got %d events of %d after 5s", r, progress[r].Load(), i)
				}
				time.Sleep(100 * time.Microsecond)
			}
		}
	}
	if g := metricValue(t, reg, "apiserver_watch_cache_watchers", "pods"); g != readers+1 {
		t.Fatalf("watchers gauge %v, want %d", g, readers+1)
	}

	// 500 writes, one after the other: 300 creates, then 200 updates.
	type write struct {
		typ   storage.EventType
		obj   *object.Object
		start time.Time
	}
	var ws []write
	rng := rand.New(rand.NewPCG(1, 2))
	writingStart := time.Now()
	for i := range writes {
		pace(i)
		var obj *object.Object
		start := time.Now()
		typ := storage.EventAdded
		if i < 300 {
			ns, name := fmt.Sprintf("ns-%d", i%5), fmt.Sprintf("pod-%03d", i)
			obj, err = c.Create(ctx, ns+"/"+name, podJSON(ns, name, fmt.Sprintf("node-%d", i%7), "Running", nil, i))
		} else {
			typ = storage.EventModified
			j := rng.IntN(300)
			ns, name := fmt.Sprintf("ns-%d", j%5), fmt.Sprintf("pod-%03d", j)
			obj, err = c.GuaranteedUpdate(ctx, ns+"/"+name, nil, func(*object.Object) ([]byte, error) {
				return podJSON(ns, name, fmt.Sprintf("node-%d", i%7), "Pending", nil, i), nil
			}, nil)
		}
		if err != nil {
			t.Fatal(err)
		}
		ws = append(ws, write{typ, obj, start})
	}
	writing := time.Since(writingStart)
	lastRV := ws[len(ws)-1].obj.ResourceVersion()
	if err := c.waitFor(ctx, lastRV); err != nil {
		t.Fatal(err)
	}
	if n := metricValue(t, reg, "apiserver_terminated_watchers_total", "pods"); n != 1 {
		t.Errorf("apiserver_terminated_watchers_total = %v, want 1 (the stuck watcher)", n)
	}
	if g := metricValue(t, reg, "apiserver_watch_cache_watchers", "pods"); g != readers {
		t.Errorf("watchers gauge %v after the stuck watcher was closed, want %d", g, readers)
	}

	// Every event is dispatched: end the readers' watches cleanly (each
	// delivers what it buffered, then closes) and check what they got.
	c.endAllWatchers()
	wg.Wait()
	var delays []time.Duration
	for i, evs := range got {
		if len(evs) != writes {
			t.Errorf("reader %d got %d events, want %d", i, len(evs), writes)
		}
		for j := range min(len(evs), writes) {
			if d := sameEvent(evs[j].ev, ws[j].typ, ws[j].obj); d != "" {
				t.Fatalf("reader %d, event %d: %s", i, j, d)
			}
			delays = append(delays, evs[j].at.Sub(ws[j].start))
		}
	}
	slices.Sort(delays)
	maxDelay := delays[len(delays)-1]
	t.Logf("%d writes in %s (%s each); delay from a write's start to its receipt by a reader: p50 %s, p99 %s, max %s",
		writes, writing.Round(time.Millisecond), (writing / writes).Round(time.Microsecond),
		percentile(delays, 0.5).Round(time.Microsecond), percentile(delays, 0.99).Round(time.Microsecond), maxDelay.Round(time.Microsecond))
	if maxDelay > 2*time.Second {
		t.Errorf("a reader got an event %s after its write began", maxDelay)
	}

	// The stuck watcher: its buffered events, in order from the first
	// write, without gap, then the end.
	stuckGot := make(chan []received, 1)
	go func() { stuckGot <- readAll(stuck) }()
	var evs []received
	select {
	case evs = <-stuckGot:
	case <-time.After(5 * time.Second):
		t.Fatal("the stuck watcher's channel is not closed 5s after it was terminated")
	}
	if buf := cap(stuck.(*cacheWatcher).result); len(evs) < buf || len(evs) >= writes {
		t.Errorf("the stuck watcher delivered %d events, want its buffer's worth (%d, or one or two more) and fewer than the %d writes", len(evs), buf, writes)
	}
	for j := range min(len(evs), writes) {
		if d := sameEvent(evs[j].ev, ws[j].typ, ws[j].obj); d != "" {
			t.Fatalf("stuck watcher, event %d: %s", j, d)
		}
	}
	t.Logf("the stuck watcher delivered %d events (revisions %d to %d) before it ended", len(evs), startRV+1, ws[max(0, len(evs)-1)].obj.ResourceVersion())

	// The budget has refilled after a second: a watcher whose buffer is
	// full and whose reader resumes 20ms later is waited for.
	time.Sleep(1100 * time.Millisecond)
	stallWithinBudget(t, ctx, c, reg, 1)

	stuck.Stop()
	if g := metricValue(t, reg, "apiserver_watch_cache_watchers", "pods"); g != 0 {
		t.Errorf("watchers gauge %v at the end, want 0", g)
	}
}

// stallWithinBudget starts a watcher, fills its buffer with writes while
// its reader waits, makes one more write and lets the reader start 20ms
// after the cache received it: the dispatcher should wait for it within
// its blocking budget rather than close it.
// terminatedBefore is apiserver_terminated_watchers_total before.
func stallWithinBudget(t *testing.T, ctx context.Context, c *Cacher, reg *prometheus.Registry, terminatedBefore float64) {
	t.Helper()
	w, err := c.Watch(ctx, "", storage.ListOptions{ResourceVersion: storage.FormatResourceVersion(dispatchedRV(c))})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	cw := w.(*cacheWatcher)
	n := 0
	write := func() uint64 {
		n++
		ns, name := "stall", fmt.Sprintf("pod-%03d", n)
		obj, err := c.Create(ctx, ns+"/"+name, podJSON(ns, name, "node-1", "Running", nil, n))
		if err != nil {
			t.Fatal(err)
		}
		return obj.ResourceVersion()
	}
	buf := cap(cw.result)
	for range buf {
		write()
	}
	waitUntil(t, "the stalled watcher's buffer full", func() bool { return len(cw.result) == buf })
	dispatchBefore := metricValue(t, reg, "apiserver_watch_cache_dispatch_duration_seconds", "pods")
	received := metricValue(t, reg, "apiserver_watch_cache_events_received_total", "pods")
	last := write()
	// Once the cache has the event, its dispatcher finds the buffer full
	// and waits, holding watchMu, before publishing the revision (unless
	// it closes the watcher at once); the reader resumes 20ms later.
	held := 0
	waitUntil(t, "the dispatcher delivering the write", func() bool {
		if metricValue(t, reg, "apiserver_watch_cache_events_received_total", "pods") == received {
			return false
		}
		if c.fresh.current() >= last {
			return true // done: it did not wait
		}
		if c.watchMu.TryLock() {
			c.watchMu.Unlock()
			held = 0
			return false
		}
		held++
		return held >= 2
	})
	time.Sleep(20 * time.Millisecond)
	var evs []storage.Event
	deadline := time.After(5 * time.Second)
	for len(evs) < buf+1 {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("the watcher was closed after a 20ms stall (after %d events; %v watchers terminated in all): the dispatcher did not wait within its blocking budget",
					len(evs), metricValue(t, reg, "apiserver_terminated_watchers_total", "pods"))
			}
			evs = append(evs, ev)
		case <-deadline:
			t.Fatalf("%d events of %d after 5s", len(evs), buf+1)
		}
	}
	if evs[len(evs)-1].ResourceVersion != last {
		t.Errorf("the last event is at %d, want %d", evs[len(evs)-1].ResourceVersion, last)
	}
	if n := metricValue(t, reg, "apiserver_terminated_watchers_total", "pods"); n != terminatedBefore {
		t.Errorf("apiserver_terminated_watchers_total = %v after a stall within the budget, want %v", n, terminatedBefore)
	}
	if err := c.waitFor(ctx, last); err != nil { // the dispatch is recorded
		t.Fatal(err)
	}
	blocked := time.Duration((metricValue(t, reg, "apiserver_watch_cache_dispatch_duration_seconds", "pods") - dispatchBefore) * float64(time.Second))
	t.Logf("the dispatcher waited %s for the stalled reader", blocked.Round(time.Millisecond))
	if blocked < 10*time.Millisecond || blocked > budgetMax+50*time.Millisecond {
		t.Errorf("dispatching the write after the stall took %s; want about the 20ms stall (the dispatcher waits within its budget)", blocked)
	}
}

// TestFirstStallWithinBudgetIsTolerated: a cache that has been running
// for a second has a full blocking budget (it refills at 100ms per second
// up to 100ms, as upstream's, whose budget counts from its creation); the
// first time a watcher's buffer is full, the dispatcher should wait for
// it within that budget, not close it at once.
func TestFirstStallWithinBudgetIsTolerated(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, reg := newMeteredCacher(t, "first-stall-test", Config{})
	time.Sleep(1100 * time.Millisecond)
	stallWithinBudget(t, ctx, c, reg, 0)
}

// TestIndexedWatcherGetsOnlyItsNode: watchers selecting one node (served
// by the spec.nodeName index) get exactly their node's events: ADDED when
// a pod is created on or moves onto the node, MODIFIED while it stays,
// DELETED with its last state when it moves off or is deleted, and
// nothing about other nodes. Every event the dispatcher delivers is one a
// watcher receives (apiserver_watch_cache_events_dispatched_total), and a
// watcher of a node without pods, which never reads, gets nothing and is
// never closed.
func TestIndexedWatcherGetsOnlyItsNode(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, reg := newMeteredCacher(t, "indexed-watcher-test", Config{})
	startRV := dispatchedRV(c)

	type spec struct {
		what string
		sel  *propSelector
	}
	onNode := func(node string) *propSelector {
		return &propSelector{fsel: fields.OneTermEqualSelector("spec.nodeName", node), match: func(p *propPod) bool { return p.node == node }}
	}
	specs := []spec{
		{"spec.nodeName=node-a", onNode("node-a")},
		{"spec.nodeName=node-b", onNode("node-b")},
		{"spec.nodeName= (unscheduled)", onNode("")},
		{"spec.nodeName=node-a,status.phase=Running", &propSelector{fsel: fields.ParseSelectorOrDie("spec.nodeName=node-a,status.phase=Running"),
			match: func(p *propPod) bool { return p.node == "node-a" && p.phase == "Running" }}},
		{"namespace ns-1, spec.nodeName=node-a", &propSelector{scope: "ns-1/", fsel: fields.OneTermEqualSelector("spec.nodeName", "node-a"),
			match: func(p *propPod) bool { return p.node == "node-a" }}},
	}
	from := storage.FormatResourceVersion(startRV)
	got := make([][]received, len(specs))
	watchers := make([]*cacheWatcher, len(specs))
	var wg sync.WaitGroup
	for i, s := range specs {
		w, err := c.Watch(ctx, s.sel.scope, storage.ListOptions{ResourceVersion: from, Fields: s.sel.fsel})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		watchers[i] = w.(*cacheWatcher)
		wg.Go(func() { got[i] = readAll(w) })
	}
	idle, err := c.Watch(ctx, "", storage.ListOptions{ResourceVersion: from, Fields: fields.OneTermEqualSelector("spec.nodeName", "node-idle")})
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Stop()

	// They are all filed under their node's value, none unindexed.
	c.watchMu.Lock()
	for i, w := range watchers {
		if _, ok := c.watchers.byValue[w.indexValue][w]; !ok || !w.indexed {
			t.Errorf("%s: not filed under %q in the index", specs[i].what, w.indexValue)
		}
	}
	if n := len(c.watchers.unindexed); n != 0 {
		t.Errorf("%d unindexed watchers, want 0", n)
	}
	c.watchMu.Unlock()

	// Writes: a scripted tour of the transitions, then random ones over
	// five nodes (node-a, node-b, node-c, node-d, unscheduled).
	r := &propRun{c: c, startRV: startRV}
	gen := 0
	live := map[string]*propPod{}
	apply := func(p *propPod, del bool) {
		t.Helper()
		gen++
		key := p.key()
		var obj *object.Object
		var err error
		switch {
		case del:
			obj, err = c.Delete(ctx, key, nil, nil)
			delete(live, key)
			p = nil
		case live[key] == nil:
			obj, err = c.Create(ctx, key, p.json(gen))
		default:
			data := p.json(gen)
			obj, err = c.GuaranteedUpdate(ctx, key, nil, func(*object.Object) ([]byte, error) { return data, nil }, nil)
		}
		if err != nil {
			t.Fatal(err)
		}
		if p != nil {
			live[key] = p
		}
		r.record(propWrite{rv: obj.ResourceVersion(), key: key, pod: p, obj: obj})
		// Let the readers keep up (an indexed watcher buffers only
		// indexedWatcherBuffer events): each write adds at most one event
		// per watcher.
		if err := c.waitFor(ctx, obj.ResourceVersion()); err != nil {
			t.Fatal(err)
		}
		waitUntil(t, "the readers caught up", func() bool {
			for _, w := range watchers {
				if len(w.result) > indexedWatcherBuffer/2 {
					return false
				}
			}
			return true
		})
	}
	pod := func(ns, name, node, phase string) *propPod {
		return &propPod{ns: ns, name: name, node: node, phase: phase}
	}
	apply(pod("ns-1", "p1", "node-a", "Running"), false) // ADDED to node-a
	apply(pod("ns-1", "p2", "node-b", "Running"), false) // node-b only
	apply(pod("ns-1", "p1", "node-a", "Pending"), false) // MODIFIED on node-a; leaves Running
	apply(pod("ns-1", "p1", "node-b", "Pending"), false) // moves a → b: DELETED on a, ADDED on b
	apply(pod("ns-1", "p2", "node-a", "Running"), false) // moves b → a
	apply(pod("ns-2", "p3", "", "Pending"), false)       // unscheduled
	apply(pod("ns-2", "p3", "node-a", "Running"), false) // scheduled onto node-a
	apply(pod("ns-1", "p2", "", "Running"), false)       // back to unscheduled
	apply(pod("ns-2", "p3", "", ""), true)               // deleted on node-a
	apply(pod("ns-1", "p1", "", ""), true)               // deleted on node-b
	rng := rand.New(rand.NewPCG(3, 4))
	nodes := []string{"node-a", "node-b", "node-c", "node-d", ""}
	for range 200 {
		p := pod(fmt.Sprintf("ns-%d", rng.IntN(3)), fmt.Sprintf("q%d", rng.IntN(12)), nodes[rng.IntN(len(nodes))], propPhases[rng.IntN(2)])
		apply(p, live[p.key()] != nil && rng.IntN(4) == 0)
	}
	lastRV := r.acked.Load()
	if err := c.waitFor(ctx, lastRV); err != nil {
		t.Fatal(err)
	}
	c.endAllWatchers()
	wg.Wait()

	slices.SortFunc(r.writes, func(a, b propWrite) int { return cmp.Compare(a.rv, b.rv) })
	o := &propOracle{writes: r.writes}
	total := 0
	for i, s := range specs {
		want := o.stream(s.sel)
		var evs []storage.Event
		for _, g := range got[i] {
			evs = append(evs, g.ev)
		}
		total += len(evs)
		if len(evs) != len(want) {
			t.Errorf("%s: %d events, want %d: %s", s.what, len(evs), len(want), watchEventsString(evs))
		}
		for j := range min(len(evs), len(want)) {
			if d := eventDiff(evs[j], want[j]); d != "" {
				t.Errorf("%s: event %d: %s", s.what, j, d)
				break
			}
		}
		t.Logf("%s: %d events", s.what, len(evs))
	}
	// The scripted tour gives node-a's watcher ADDED, MODIFIED, DELETED
	// (moved off), ADDED (moved on), ADDED (scheduled), DELETED (moved to
	// unscheduled), DELETED (deleted) first.
	var tour []storage.EventType
	for _, g := range got[0][:min(7, len(got[0]))] {
		tour = append(tour, g.ev.Type)
	}
	wantTour := []storage.EventType{storage.EventAdded, storage.EventModified, storage.EventDeleted, storage.EventAdded, storage.EventAdded, storage.EventDeleted, storage.EventDeleted}
	if !slices.Equal(tour, wantTour) {
		t.Errorf("node-a's watcher began with %v, want %v", tour, wantTour)
	}
	var idleEvs []storage.Event
	for ev := range idle.ResultChan() {
		idleEvs = append(idleEvs, ev)
	}
	if len(idleEvs) != 0 {
		t.Errorf("the watcher of a node without pods got %s", watchEventsString(idleEvs))
	}
	if n := metricValue(t, reg, "apiserver_terminated_watchers_total", "pods"); n != 0 {
		t.Errorf("%v watchers terminated, want 0", n)
	}
	if d := metricValue(t, reg, "apiserver_watch_cache_events_dispatched_total", "pods"); int(d) != total {
		t.Errorf("apiserver_watch_cache_events_dispatched_total = %v, but the watchers received %d events", d, total)
	}
}
