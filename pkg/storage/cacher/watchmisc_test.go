package cacher

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/storage"
	"github.com/watchcache/watchcache/pkg/storage/storagetest"
	"k8s.io/apimachinery/pkg/fields"
)

// relistStore wraps a real store so that a test can break the cache's
// etcd watch at will (an EventError, as etcd3 sends when its watch fails),
// hold the re-list that follows, and pause a consistent watch between its
// read of etcd's revision and its registration.
type relistStore struct {
	storage.Interface

	mu      sync.Mutex
	trigger chan struct{} // closed: the current etcd watches fail
	gate    chan struct{} // not nil: GetList waits until it is closed
	listing chan struct{} // receives when a GetList waits at the gate
	// afterCRV, if set, runs once after CurrentResourceVersion read etcd.
	afterCRV func()
}

func newRelistStore(inner storage.Interface) *relistStore {
	return &relistStore{Interface: inner, trigger: make(chan struct{}), listing: make(chan struct{}, 1)}
}

func (s *relistStore) Watch(ctx context.Context, scope string, opts storage.ListOptions) (storage.Watcher, error) {
	w, err := s.Interface.Watch(ctx, scope, opts)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	trigger := s.trigger
	s.mu.Unlock()
	return storagetest.NewBreakableWatcher(w, trigger), nil
}

// fail makes the etcd watches opened so far fail.
func (s *relistStore) fail() {
	s.mu.Lock()
	defer s.mu.Unlock()
	close(s.trigger)
	s.trigger = make(chan struct{})
}

// holdLists makes GetList wait until releaseLists.
func (s *relistStore) holdLists() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gate = make(chan struct{})
}

func (s *relistStore) releaseLists() {
	s.mu.Lock()
	defer s.mu.Unlock()
	close(s.gate)
	s.gate = nil
}

func (s *relistStore) GetList(ctx context.Context, scope string, opts storage.ListOptions) (*storage.List, error) {
	s.mu.Lock()
	gate := s.gate
	s.mu.Unlock()
	if gate != nil {
		select {
		case s.listing <- struct{}{}:
		default:
		}
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return s.Interface.GetList(ctx, scope, opts)
}

func (s *relistStore) CurrentResourceVersion(ctx context.Context) (uint64, error) {
	rv, err := s.Interface.CurrentResourceVersion(ctx)
	s.mu.Lock()
	hook := s.afterCRV
	s.afterCRV = nil
	s.mu.Unlock()
	if hook != nil {
		hook()
	}
	return rv, err
}

// collect reads w in the background until its channel closes.
type collected struct {
	mu     sync.Mutex
	events []storage.Event
	closed chan struct{}
}

func collect(w storage.Watcher) *collected {
	c := &collected{closed: make(chan struct{})}
	go func() {
		defer close(c.closed)
		for ev := range w.ResultChan() {
			c.mu.Lock()
			c.events = append(c.events, ev)
			c.mu.Unlock()
		}
	}()
	return c
}

func (c *collected) get() []storage.Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]storage.Event(nil), c.events...)
}

// waitClosed waits for the channel's end and returns every event.
func (c *collected) waitClosed(t *testing.T, what string, d time.Duration) []storage.Event {
	t.Helper()
	select {
	case <-c.closed:
	case <-time.After(d):
		t.Fatalf("%s: the channel is not closed after %s; events %s", what, d, watchEventsString(c.get()))
	}
	return c.get()
}

// waitFor waits until an event at rv or later arrived (or the channel
// closed) and returns the events.
func (c *collected) waitForRV(t *testing.T, what string, rv uint64, d time.Duration) []storage.Event {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		evs := c.get()
		if len(evs) > 0 && evs[len(evs)-1].ResourceVersion >= rv {
			return evs
		}
		select {
		case <-c.closed:
			return c.get()
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: no event at %d after %s; events %s", what, rv, d, watchEventsString(evs))
		}
		time.Sleep(time.Millisecond)
	}
}

// expectAdded checks that evs are exactly ADDED events for objs, in order.
func expectAdded(t *testing.T, what string, evs []storage.Event, objs ...*object.Object) {
	t.Helper()
	if len(evs) != len(objs) {
		t.Fatalf("%s: %d events %s, want ADDED for %v", what, len(evs), watchEventsString(evs), objs)
	}
	for i, obj := range objs {
		if d := sameEvent(evs[i], storage.EventAdded, obj); d != "" {
			t.Fatalf("%s: event %d: %s", what, i, d)
		}
	}
}

func createPod(t *testing.T, ctx context.Context, c storage.Interface, ns, name, node string) *object.Object {
	t.Helper()
	obj, err := c.Create(ctx, ns+"/"+name, podJSON(ns, name, node, "Running", nil, 0))
	if err != nil {
		t.Fatal(err)
	}
	return obj
}

// waitGauge waits until the watchers gauge reads want.
func waitGauge(t *testing.T, what string, get func() float64, want float64) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for get() != want {
		if time.Now().After(deadline) {
			t.Fatalf("%s: watchers gauge %v, want %v", what, get(), want)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestRelistEndsWatchersCleanly: when the cache's etcd watch fails and it
// re-lists, its watchers are ended cleanly: every event up to the failure,
// then the end of the channel, no ERROR event, and they are deregistered.
// A client resuming from its last revision continues exactly when the
// re-listed cache still covers it (nothing was written meanwhile), and
// gets a 410 ERROR when writes happened during the outage.
func TestRelistEndsWatchersCleanly(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s := newRelistStore(newEtcdStore("relist-watch-test"))
	c, reg := newMeteredCacher(t, "", Config{Store: s})
	gauge := func() float64 { return metricValue(t, reg, "apiserver_watch_cache_watchers", "pods") }
	from := storage.ListOptions{ResourceVersion: storage.FormatResourceVersion(dispatchedRV(c))}

	all, err := c.Watch(ctx, "", from)
	if err != nil {
		t.Fatal(err)
	}
	defer all.Stop()
	byNode, err := c.Watch(ctx, "", storage.ListOptions{ResourceVersion: from.ResourceVersion, Fields: fields.OneTermEqualSelector("spec.nodeName", "node-1")})
	if err != nil {
		t.Fatal(err)
	}
	defer byNode.Stop()
	allGot, byNodeGot := collect(all), collect(byNode)
	var pods []*object.Object
	for i := range 5 {
		pods = append(pods, createPod(t, ctx, c, "ns", fmt.Sprintf("a-%d", i), fmt.Sprintf("node-%d", i%2)))
	}
	L1 := pods[4].ResourceVersion()
	allGot.waitForRV(t, "before the failure", L1, 5*time.Second)

	// The etcd watch fails: both watches end cleanly after every event.
	s.fail()
	expectAdded(t, "ended watch of everything", allGot.waitClosed(t, "watch of everything", 5*time.Second), pods...)
	expectAdded(t, "ended watch of node-1", byNodeGot.waitClosed(t, "watch of node-1", 5*time.Second), pods[1], pods[3])
	waitGauge(t, "after the re-list ended the watches", gauge, 0)
	waitReady(t, c, 10*time.Second)

	// Nothing was written during the outage: the re-listed cache starts at
	// L1, and a watch resuming from L1 continues exactly.
	c.watchMu.Lock()
	logStart := c.events.start
	c.watchMu.Unlock()
	if logStart != L1 {
		t.Fatalf("after a re-list with no writes the event log starts at %d, want %d", logStart, L1)
	}
	resumed, err := c.Watch(ctx, "", storage.ListOptions{ResourceVersion: storage.FormatResourceVersion(L1)})
	if err != nil {
		t.Fatal(err)
	}
	defer resumed.Stop()
	resumedGot := collect(resumed)
	more := []*object.Object{createPod(t, ctx, c, "ns", "b-0", "node-0"), createPod(t, ctx, c, "ns", "b-1", "node-1")}
	L2 := more[1].ResourceVersion()
	expectAdded(t, "watch resumed from L1", resumedGot.waitForRV(t, "watch resumed from L1", L2, 5*time.Second), more...)

	// Fail again and write while the re-list is held: the resumed watch
	// ends cleanly; resuming from its last revision is now a 410.
	s.holdLists()
	s.fail()
	expectAdded(t, "ended resumed watch", resumedGot.waitClosed(t, "resumed watch", 5*time.Second), more...)
	select {
	case <-s.listing:
	case <-time.After(5 * time.Second):
		t.Fatal("no re-list 5s after the second failure")
	}
	during := createPod(t, ctx, c, "ns", "c-0", "node-0")
	s.releaseLists()
	waitReady(t, c, 10*time.Second)
	waitGauge(t, "after the second re-list", gauge, 0)
	expired, err := c.Watch(ctx, "", storage.ListOptions{ResourceVersion: storage.FormatResourceVersion(L2)})
	if err != nil {
		t.Fatal(err)
	}
	evs := collect(expired).waitClosed(t, "watch from before the outage", 5*time.Second)
	if len(evs) != 1 || evs[0].Type != storage.EventError || storage.CodeOf(evs[0].Err) != storage.ErrExpired {
		t.Fatalf("watch from %d after writes during the outage: events %s, want one ERROR 410 Expired", L2, watchEventsString(evs))
	}
	// From the write made during the outage (the re-list's revision), it
	// continues.
	again, err := c.Watch(ctx, "", storage.ListOptions{ResourceVersion: storage.FormatResourceVersion(during.ResourceVersion())})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Stop()
	againGot := collect(again)
	last := createPod(t, ctx, c, "ns", "d-0", "node-0")
	expectAdded(t, "watch from the re-list's revision", againGot.waitForRV(t, "watch from the re-list's revision", last.ResourceVersion(), 5*time.Second), last)
	if n := metricValue(t, reg, "apiserver_terminated_watchers_total", "pods"); n != 0 {
		t.Errorf("%v watchers counted as terminated; a re-list ends watchers cleanly", n)
	}
}

// TestWatchDuringRelistGap: a consistent watch that read etcd's revision
// just before the cache's etcd watch failed, and registers after the
// cache ended its watchers but before the re-list, must not miss the
// writes made meanwhile: it must either be ended (the client resumes) or
// deliver every event.
func TestWatchDuringRelistGap(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s := newRelistStore(newEtcdStore("relist-gap-test"))
	c, _ := newMeteredCacher(t, "", Config{Store: s})
	a := createPod(t, ctx, c, "ns", "a", "node-0")
	if err := c.waitFor(ctx, a.ResourceVersion()); err != nil {
		t.Fatal(err)
	}

	// The watch reads etcd's revision, then waits for the test.
	inCRV, release := make(chan struct{}), make(chan struct{})
	s.mu.Lock()
	s.afterCRV = func() { close(inCRV); <-release }
	s.mu.Unlock()
	type result struct {
		w   storage.Watcher
		err error
	}
	started := make(chan result, 1)
	go func() {
		w, err := c.Watch(ctx, "", storage.ListOptions{})
		started <- result{w, err}
	}()
	<-inCRV

	// The cache's watch fails; it ends its watchers and waits to re-list.
	s.holdLists()
	s.fail()
	select {
	case <-s.listing:
	case <-time.After(5 * time.Second):
		t.Fatal("no re-list 5s after the failure")
	}
	b := createPod(t, ctx, c, "ns", "b", "node-0")
	close(release)
	var r result
	select {
	case r = <-started:
	case <-time.After(5 * time.Second):
		t.Fatal("the watch did not start")
	}
	if r.err != nil {
		// Refused because the cache is initializing (429): the client
		// retries later; nothing was missed.
		if storage.CodeOf(r.err) != storage.ErrTooManyRequests {
			t.Fatal(r.err)
		}
		s.releaseLists()
		return
	}
	defer r.w.Stop()
	got := collect(r.w)
	s.releaseLists()
	waitReady(t, c, 10*time.Second)
	cPod := createPod(t, ctx, c, "ns", "c", "node-0")
	evs := got.waitForRV(t, "the watch started during the gap", cPod.ResourceVersion(), 5*time.Second)
	select {
	case <-got.closed:
		t.Logf("the watch was ended (events %s): the client resumes", watchEventsString(evs))
		return
	default:
	}
	// Not ended: it must deliver b, in its initial state or as an event.
	sawB := false
	for _, ev := range evs {
		if ev.Type == storage.EventError {
			t.Fatalf("ERROR event %v", ev.Err)
		}
		if ev.Object != nil && ev.Object.Key() == b.Key() {
			sawB = true
		}
	}
	if !sawB {
		t.Errorf("the watch delivered %s: it misses the creation of %v, written while the cache re-listed (a=%d, b=%d, c=%d)",
			watchEventsString(evs), b, a.ResourceVersion(), b.ResourceVersion(), cPod.ResourceVersion())
	}
}

// TestBookmarks: with AllowWatchBookmarks a watcher gets a BOOKMARK about
// every BookmarkInterval, at the cache's revision, never going back and
// never before the events it covers; without it, none. A watch whose
// context has a deadline gets one last bookmark shortly before it (with a
// BookmarkInterval far longer), then ends at the deadline.
func TestBookmarks(t *testing.T) {
	t.Run("interval", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		const interval = 100 * time.Millisecond
		c, _ := newMeteredCacher(t, "bookmark-interval-test", Config{BookmarkInterval: interval})
		p := createPod(t, ctx, c, "ns", "p", "node-0")
		if err := c.waitFor(ctx, p.ResourceVersion()); err != nil {
			t.Fatal(err)
		}
		opts := storage.ListOptions{ResourceVersion: storage.FormatResourceVersion(p.ResourceVersion())}
		with := opts
		with.AllowWatchBookmarks = true
		wb, err := c.Watch(ctx, "", with)
		if err != nil {
			t.Fatal(err)
		}
		defer wb.Stop()
		wn, err := c.Watch(ctx, "", opts)
		if err != nil {
			t.Fatal(err)
		}
		defer wn.Stop()
		start := time.Now()
		type stamped struct {
			ev storage.Event
			at time.Time
		}
		var got []stamped
		done := make(chan struct{})
		go func() {
			defer close(done)
			for ev := range wb.ResultChan() {
				got = append(got, stamped{ev, time.Now()})
			}
		}()
		gotN := collect(wn)
		var writes []*object.Object
		for i := range 3 {
			time.Sleep(300 * time.Millisecond)
			writes = append(writes, createPod(t, ctx, c, "ns", fmt.Sprintf("q-%d", i), "node-0"))
		}
		time.Sleep(300 * time.Millisecond)
		window := time.Since(start)
		wb.Stop()
		wn.Stop()
		<-done
		current, err := c.CurrentResourceVersion(ctx)
		if err != nil {
			t.Fatal(err)
		}

		expectAdded(t, "watch without bookmarks", gotN.waitClosed(t, "watch without bookmarks", time.Second), writes...)
		var events []storage.Event
		var bookmarks []time.Time
		last := p.ResourceVersion()
		for i, s := range got {
			ev := s.ev
			if ev.Type != storage.EventBookmark {
				if ev.ResourceVersion <= last {
					t.Errorf("event %d %s after revision %d", i, watchEventString(ev), last)
				}
				events = append(events, ev)
				last = ev.ResourceVersion
				continue
			}
			if ev.ResourceVersion < last || ev.ResourceVersion > current || ev.Object != nil || ev.InitialEventsEnd {
				t.Errorf("bookmark %d %s: want a plain bookmark between %d and etcd's revision %d", i, watchEventString(ev), last, current)
			}
			last = ev.ResourceVersion
			bookmarks = append(bookmarks, s.at)
		}
		expectAdded(t, "watch with bookmarks, events", events, writes...)
		var gaps []time.Duration
		prev := start
		for _, at := range bookmarks {
			gaps = append(gaps, at.Sub(prev).Round(time.Millisecond))
			prev = at
		}
		t.Logf("%d bookmarks in %s (interval %s); gaps from the watch's start: %v", len(bookmarks), window.Round(time.Millisecond), interval, gaps)
		if want := int(window / interval); len(bookmarks) < want/2 || len(bookmarks) > want+1 {
			t.Errorf("%d bookmarks in %s, want about %d (one per %s)", len(bookmarks), window.Round(time.Millisecond), want, interval)
		}
		// Gaps as received: one bookmark received late shortens the next
		// gap (under load), so too frequent bookmarks are caught by the
		// count above, not by a gap.
		for i, g := range gaps {
			if g > 5*interval {
				t.Errorf("bookmark %d came %s after the previous one (or the start), want about %s", i, g, interval)
			}
		}
	})

	t.Run("before deadline", func(t *testing.T) {
		t.Parallel()
		const ahead = 3500 * time.Millisecond
		c, _ := newMeteredCacher(t, "bookmark-deadline-test", Config{BookmarkInterval: time.Hour})
		p := createPod(t, context.Background(), c, "ns", "p", "node-0")
		ctx, cancel := context.WithTimeout(context.Background(), ahead)
		defer cancel()
		deadline, _ := ctx.Deadline()
		opts := storage.ListOptions{ResourceVersion: storage.FormatResourceVersion(p.ResourceVersion())}
		with := opts
		with.AllowWatchBookmarks = true
		wb, err := c.Watch(ctx, "", with)
		if err != nil {
			t.Fatal(err)
		}
		defer wb.Stop()
		wn, err := c.Watch(ctx, "", opts)
		if err != nil {
			t.Fatal(err)
		}
		defer wn.Stop()
		gotN := collect(wn)
		var got []storage.Event
		var at []time.Time
		for ev := range wb.ResultChan() {
			got, at = append(got, ev), append(at, time.Now())
		}
		closedAt := time.Now()
		// At the cache's revision: the pod's, or later (progress
		// notifications bring revisions of other tests' writes).
		current, err := c.CurrentResourceVersion(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0].Type != storage.EventBookmark || got[0].ResourceVersion < p.ResourceVersion() || got[0].ResourceVersion > current {
			t.Fatalf("events %s before the deadline, want one BOOKMARK between %d and %d", watchEventsString(got), p.ResourceVersion(), current)
		}
		before := deadline.Sub(at[0])
		t.Logf("the bookmark came %s before the deadline (%s after the watch began); the channel closed %s after the deadline",
			before.Round(time.Millisecond), (ahead - before).Round(time.Millisecond), closedAt.Sub(deadline).Round(time.Millisecond))
		if before < 1500*time.Millisecond || before > bookmarkBeforeDeadline+time.Second+50*time.Millisecond {
			t.Errorf("the bookmark came %s before the deadline, want about %s (within a check interval of 1s)", before.Round(time.Millisecond), bookmarkBeforeDeadline)
		}
		if d := closedAt.Sub(deadline); d < -10*time.Millisecond || d > time.Second {
			t.Errorf("the channel closed %s after the deadline", d)
		}
		if evs := gotN.waitClosed(t, "watch without bookmarks", time.Second); len(evs) != 0 {
			t.Errorf("the watch without AllowWatchBookmarks got %s", watchEventsString(evs))
		}
	})
}

// TestStopAndCancelDeregister: Stop and the cancellation of the watch's
// context close its channel (after what was buffered) and deregister the
// watcher: the watchers gauge returns to 0 and does not go below it on a
// second Stop. A watch from a revision the log no longer holds (a 410)
// and a watch whose context is already cancelled leave it at 0.
func TestStopAndCancelDeregister(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, reg := newMeteredCacher(t, "stop-cancel-test", Config{})
	gauge := func() float64 { return metricValue(t, reg, "apiserver_watch_cache_watchers", "pods") }
	from := storage.FormatResourceVersion(dispatchedRV(c))

	const n = 20
	ws := make([]storage.Watcher, n)
	cancels := make([]context.CancelFunc, n)
	readers := make([]*collected, n)
	for i := range n {
		wctx, wcancel := context.WithCancel(ctx)
		cancels[i] = wcancel
		opts := storage.ListOptions{ResourceVersion: from}
		if i%2 == 1 {
			opts.Fields = fields.OneTermEqualSelector("spec.nodeName", "node-1")
		}
		w, err := c.Watch(wctx, "", opts)
		if err != nil {
			t.Fatal(err)
		}
		ws[i] = w
		if i%4 < 2 { // half of them read; the others leave events buffered
			readers[i] = collect(w)
		}
	}
	if g := gauge(); g != n {
		t.Fatalf("watchers gauge %v with %d watchers, want %d", g, n, n)
	}
	var last *object.Object
	for i := range 5 {
		last = createPod(t, ctx, c, "ns", fmt.Sprintf("p-%d", i), "node-1")
	}
	if err := c.waitFor(ctx, last.ResourceVersion()); err != nil {
		t.Fatal(err)
	}

	// Stop: deregistered when it returns; the channel ends.
	drain := func(i int) {
		t.Helper()
		if readers[i] != nil {
			readers[i].waitClosed(t, fmt.Sprintf("watcher %d", i), 2*time.Second)
			return
		}
		timeout := time.After(2 * time.Second)
		for {
			select {
			case _, ok := <-ws[i].ResultChan():
				if !ok {
					return
				}
			case <-timeout:
				t.Fatalf("watcher %d: the channel is not closed 2s after the end of its watch", i)
			}
		}
	}
	for i := range n / 2 {
		ws[i].Stop()
		if g, want := gauge(), float64(n-i-1); g != want {
			t.Errorf("watchers gauge %v after %d Stops, want %v", g, i+1, want)
		}
		drain(i)
	}
	// Cancelling the context: deregistered soon, the channel ends.
	for i := n / 2; i < n; i++ {
		cancels[i]()
	}
	waitGauge(t, "after cancelling every context", gauge, 0)
	for i := n / 2; i < n; i++ {
		drain(i)
	}
	for i := range n {
		ws[i].Stop() // again, or after the cancellation: harmless
	}
	if g := gauge(); g != 0 {
		t.Errorf("watchers gauge %v after a second Stop of every watcher, want 0", g)
	}
	c.watchMu.Lock()
	count := c.watchers.count
	c.watchMu.Unlock()
	if count != 0 {
		t.Errorf("%d watchers registered after every one ended", count)
	}

	// A watch whose context is already cancelled ends at once.
	done, doneCancel := context.WithCancel(ctx)
	doneCancel()
	if w, err := c.Watch(done, "", storage.ListOptions{ResourceVersion: from}); err == nil {
		collect(w).waitClosed(t, "watch with a cancelled context", 2*time.Second)
		w.Stop()
	}
	// A watch from before the log's start is a 410 and registers nothing.
	c.watchMu.Lock()
	logStart := c.events.start
	c.watchMu.Unlock()
	if logStart > 1 {
		w, err := c.Watch(ctx, "", storage.ListOptions{ResourceVersion: storage.FormatResourceVersion(logStart - 1)})
		if err != nil {
			t.Fatal(err)
		}
		evs := collect(w).waitClosed(t, "watch from before the log", 2*time.Second)
		if len(evs) != 1 || evs[0].Type != storage.EventError || storage.CodeOf(evs[0].Err) != storage.ErrExpired {
			t.Errorf("watch from %d, before the log's start %d: %s, want one ERROR 410", logStart-1, logStart, watchEventsString(evs))
		}
		w.Stop()
	}
	waitGauge(t, "at the end", gauge, 0)
}
