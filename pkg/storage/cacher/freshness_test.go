package cacher

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/storage"
	"github.com/watchcache/watchcache/pkg/storage/storagetest"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// waitAsync runs f.waitFor in a goroutine and returns its result channel.
func waitAsync(ctx context.Context, f *freshness, rv uint64, timeout time.Duration) <-chan error {
	done := make(chan error, 1)
	go func() { done <- f.waitFor(ctx, rv, timeout) }()
	return done
}

// waitUntil polls cond every millisecond for up to a second.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not %s after 1s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func expectPending(t *testing.T, done <-chan error, d time.Duration) {
	t.Helper()
	select {
	case err := <-done:
		t.Fatalf("waitFor returned %v; it should still wait", err)
	case <-time.After(d):
	}
}

func expectDone(t *testing.T, done <-chan error, d time.Duration) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		t.Fatalf("waitFor did not return within %s", d)
	}
	return nil
}

// TestFreshnessReached: waitFor returns at once when the revision is
// reached, without counting as a waiter.
func TestFreshnessReached(t *testing.T) {
	f := newFreshness()
	ctx := context.Background()
	if err := f.waitFor(ctx, 0, time.Millisecond); err != nil {
		t.Fatalf("waitFor(0) on a new freshness: %v", err)
	}
	f.advance(5)
	for _, rv := range []uint64{0, 1, 5} {
		start := time.Now()
		if err := f.waitFor(ctx, rv, time.Hour); err != nil {
			t.Fatalf("waitFor(%d) at 5: %v", rv, err)
		}
		if d := time.Since(start); d > 100*time.Millisecond {
			t.Fatalf("waitFor(%d) at 5 took %s", rv, d)
		}
	}
	// Even a cancelled context does not matter when nothing must be waited for.
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := f.waitFor(cancelled, 5, time.Hour); err != nil {
		t.Fatalf("waitFor(5) at 5 with a cancelled context: %v", err)
	}
	if f.hasWaiters() {
		t.Fatal("waiters counted after reads that did not wait")
	}
	select {
	case <-f.wake:
		t.Fatal("a read that did not wait woke the progress requester")
	default:
	}
}

// TestFreshnessAdvanceWakes: a waiter wakes when the revision is reached,
// not before (an advance short of it leaves it waiting).
func TestFreshnessAdvanceWakes(t *testing.T) {
	f := newFreshness()
	f.advance(3)
	ctx := context.Background()
	done := waitAsync(ctx, f, 10, 10*time.Second)
	other := waitAsync(ctx, f, 12, 10*time.Second)
	waitUntil(t, "waiting", f.hasWaiters)
	f.advance(7)
	expectPending(t, done, 30*time.Millisecond)
	f.advance(10)
	start := time.Now()
	if err := expectDone(t, done, time.Second); err != nil {
		t.Fatalf("waitFor(10) after advance(10): %v", err)
	}
	if d := time.Since(start); d > 200*time.Millisecond {
		t.Errorf("waitFor(10) returned %s after advance(10)", d)
	}
	expectPending(t, other, 30*time.Millisecond)
	f.advance(20) // past it
	if err := expectDone(t, other, time.Second); err != nil {
		t.Fatalf("waitFor(12) after advance(20): %v", err)
	}
	waitUntil(t, "without waiters", func() bool { return !f.hasWaiters() })
}

// TestFreshnessManyWaiters: one advance wakes every waiter it satisfies.
func TestFreshnessManyWaiters(t *testing.T) {
	f := newFreshness()
	ctx := context.Background()
	var dones []<-chan error
	for rv := uint64(1); rv <= 50; rv++ {
		dones = append(dones, waitAsync(ctx, f, rv, 10*time.Second))
	}
	waitUntil(t, "waiting", f.hasWaiters)
	f.advance(25)
	for i, done := range dones {
		if i < 25 {
			if err := expectDone(t, done, time.Second); err != nil {
				t.Fatalf("waitFor(%d): %v", i+1, err)
			}
		}
	}
	for _, done := range dones[25:] {
		select {
		case err := <-done:
			t.Fatalf("a waiter beyond 25 returned %v", err)
		default:
		}
	}
	f.advance(50)
	for i, done := range dones[25:] {
		if err := expectDone(t, done, time.Second); err != nil {
			t.Fatalf("waitFor(%d): %v", i+26, err)
		}
	}
}

// TestFreshnessTimeout: a revision not reached in time fails with
// ErrTooLargeResourceVersion and Retry-After 1.
func TestFreshnessTimeout(t *testing.T) {
	f := newFreshness()
	f.advance(4)
	start := time.Now()
	err := f.waitFor(context.Background(), 9, 50*time.Millisecond)
	elapsed := time.Since(start)
	var se *storage.Error
	if !errors.As(err, &se) || se.Code != storage.ErrTooLargeResourceVersion {
		t.Fatalf("waitFor(9) at 4: %v, want TooLargeResourceVersion", err)
	}
	if se.RetryAfterSeconds != 1 || se.ResourceVersion != 9 {
		t.Errorf("error %+v: want RetryAfterSeconds 1 and ResourceVersion 9", se)
	}
	if elapsed < 50*time.Millisecond || elapsed > 5*time.Second {
		t.Errorf("timed out after %s, want 50ms", elapsed)
	}
	if f.hasWaiters() {
		t.Error("a timed-out waiter is still counted")
	}
	// Advances short of the revision do not extend the timeout.
	done := waitAsync(context.Background(), f, 100, 80*time.Millisecond)
	start = time.Now()
	for range 10 {
		time.Sleep(10 * time.Millisecond)
		f.advance(f.current() + 1)
	}
	err = expectDone(t, done, time.Second)
	if storage.CodeOf(err) != storage.ErrTooLargeResourceVersion {
		t.Fatalf("waitFor(100) while advancing to 14: %v", err)
	}
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Errorf("timed out after %s, want about 80ms", d)
	}
}

// TestFreshnessContext: a cancelled or expired context ends the wait with
// the context's error.
func TestFreshnessContext(t *testing.T) {
	f := newFreshness()
	ctx, cancel := context.WithCancel(context.Background())
	done := waitAsync(ctx, f, 10, 10*time.Second)
	waitUntil(t, "waiting", f.hasWaiters)
	cancel()
	if err := expectDone(t, done, time.Second); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled wait: %v, want context.Canceled", err)
	}
	dctx, dcancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer dcancel()
	if err := f.waitFor(dctx, 10, 10*time.Second); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("wait past the context's deadline: %v, want context.DeadlineExceeded", err)
	}
	waitUntil(t, "without waiters", func() bool { return !f.hasWaiters() })
}

// TestFreshnessNeverGoesBack: advance ignores older revisions.
func TestFreshnessNeverGoesBack(t *testing.T) {
	f := newFreshness()
	for _, step := range []struct{ advance, want uint64 }{{5, 5}, {3, 5}, {5, 5}, {0, 5}, {8, 8}, {7, 8}} {
		f.advance(step.advance)
		if got := f.current(); got != step.want {
			t.Fatalf("after advance(%d): current %d, want %d", step.advance, got, step.want)
		}
	}
	if err := f.waitFor(context.Background(), 8, time.Millisecond); err != nil {
		t.Fatalf("waitFor(8) at 8: %v", err)
	}
}

// progressCalls records the times of the fake progress requests.
type progressCalls struct {
	mu    sync.Mutex
	times []time.Time
}

func (p *progressCalls) request(context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.times = append(p.times, time.Now())
	return nil
}

func (p *progressCalls) snapshot() []time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]time.Time(nil), p.times...)
}

// TestRequestProgress: progress is requested at once when a read starts
// waiting, then about every progressInterval while any read waits, and
// never while nobody waits.
func TestRequestProgress(t *testing.T) {
	f := newFreshness()
	calls := &progressCalls{}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { defer close(stopped); f.requestProgress(ctx, calls.request) }()
	defer func() {
		cancel()
		<-stopped
	}()

	time.Sleep(3 * progressInterval)
	if n := len(calls.snapshot()); n != 0 {
		t.Fatalf("%d progress requests while nobody waited", n)
	}

	// A waiter for 5.5 intervals.
	wait := 550 * time.Millisecond
	start := time.Now()
	done := waitAsync(context.Background(), f, 10, wait)
	if err := expectDone(t, done, 5*time.Second); storage.CodeOf(err) != storage.ErrTooLargeResourceVersion {
		t.Fatalf("waitFor: %v", err)
	}
	end := time.Now()
	times := calls.snapshot()
	if len(times) == 0 {
		t.Fatal("no progress request while a read waited")
	}
	if d := times[0].Sub(start); d > 50*time.Millisecond {
		t.Errorf("first progress request %s after the read started waiting, want at once", d)
	}
	// At once, then every interval: about 6 in 550ms.
	if n := len(times); n < 4 || n > 8 {
		t.Errorf("%d progress requests during a %s wait, want about %d (at once, then every %s): %v",
			n, wait, int(wait/progressInterval)+1, progressInterval, offsets(start, times))
	}
	t.Logf("progress requests at %v after the read started waiting", offsets(start, times))

	// Once the read is gone: at most the one request already due, then
	// none.
	time.Sleep(3 * progressInterval)
	after := 0
	for _, tm := range calls.snapshot() {
		if tm.After(end) {
			after++
		}
	}
	if after > 1 {
		t.Errorf("%d progress requests after the last read stopped waiting", after)
	}

	// A read that waits again starts the requests again, at once.
	n0 := len(calls.snapshot())
	start = time.Now()
	done = waitAsync(context.Background(), f, 10, 10*time.Second)
	waitUntil(t, "requesting progress again", func() bool { return len(calls.snapshot()) > n0 })
	if d := time.Since(start); d > 50*time.Millisecond {
		t.Errorf("progress requested %s after a new read started waiting, want at once", d)
	}
	f.advance(10)
	if err := expectDone(t, done, time.Second); err != nil {
		t.Fatal(err)
	}
}

// TestRequestProgressSpacing: the requests made while a read waits are
// progressInterval apart, the first at once. It fails: requestProgress's
// ticker runs while nobody waits, so when a read starts waiting after the
// ticker has ticked, the first request is followed at once by a second
// one (the tick left pending while idle), and the later ones follow the
// ticker's phase, not the wait's start.
func TestRequestProgressSpacing(t *testing.T) {
	f := newFreshness()
	calls := &progressCalls{}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { defer close(stopped); f.requestProgress(ctx, calls.request) }()
	defer func() {
		cancel()
		<-stopped
	}()
	time.Sleep(progressInterval + progressInterval/2) // idle: the ticker ticks
	start := time.Now()
	if err := f.waitFor(context.Background(), 10, 350*time.Millisecond); storage.CodeOf(err) != storage.ErrTooLargeResourceVersion {
		t.Fatalf("waitFor: %v", err)
	}
	times := calls.snapshot()
	if len(times) == 0 || times[0].Sub(start) > 50*time.Millisecond {
		t.Fatalf("first request not at once: %v", offsets(start, times))
	}
	for i := 1; i < len(times); i++ {
		if gap := times[i].Sub(times[i-1]); gap < progressInterval*3/4 {
			t.Fatalf("progress requests %d and %d only %s apart, want %s: requests at %v after the read started waiting",
				i-1, i, gap, progressInterval, offsets(start, times))
		}
	}
}

// TestRequestProgressNewWaiterRightAfterAnother: a read that starts
// waiting shortly after the previous wait ended gets a progress request at
// once. It fails: after the last waiter leaves, requestProgress sleeps
// until its next tick before looking at f.wake again, so the new read's
// first request comes up to progressInterval late (the cacher-level
// TestCacherReachesRevisionsOfOtherResources shows reads served after
// ~95ms instead of a few ms).
func TestRequestProgressNewWaiterRightAfterAnother(t *testing.T) {
	f := newFreshness()
	calls := &progressCalls{}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { defer close(stopped); f.requestProgress(ctx, calls.request) }()
	defer func() {
		cancel()
		<-stopped
	}()
	time.Sleep(5 * time.Millisecond)
	// A first read waits briefly, and gets its request at once.
	first := waitAsync(context.Background(), f, 1, 10*time.Second)
	waitUntil(t, "requesting progress", func() bool { return len(calls.snapshot()) > 0 })
	f.advance(1)
	if err := expectDone(t, first, time.Second); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	// A second read, well within the interval.
	n0 := len(calls.snapshot())
	start := time.Now()
	second := waitAsync(context.Background(), f, 2, 10*time.Second)
	waitUntil(t, "requesting progress for the second read", func() bool { return len(calls.snapshot()) > n0 })
	if d := time.Since(start); d > progressInterval/3 {
		t.Errorf("the second read's first progress request came %s after it started waiting, want at once", d.Round(time.Millisecond))
	}
	f.advance(2)
	if err := expectDone(t, second, time.Second); err != nil {
		t.Fatal(err)
	}
}

// offsets shows request times relative to start, for failure messages.
func offsets(start time.Time, times []time.Time) []time.Duration {
	out := make([]time.Duration, len(times))
	for i, tm := range times {
		out[i] = tm.Sub(start).Round(time.Millisecond)
	}
	return out
}

// TestCacherReachesRevisionsOfOtherResources: a read not older than (or
// exactly at) a revision written under another prefix, which the
// resource's watch never delivers as an event, is served by the cache once
// a progress notification brings it there: well within the 3s the read
// may wait, and with the state etcd has at that revision.
func TestCacherReachesRevisionsOfOtherResources(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	etcd := newEtcdStore("freshness-test")
	spy := &spyStore{Interface: etcd}
	c := New(Config{Store: spy, Resource: "pods", IndexedFields: []string{"spec.nodeName"}})
	t.Cleanup(c.Stop)
	waitReady(t, c, 10*time.Second)
	createPods(t, ctx, c, "ns", "a", 3)
	lists, gets := spy.lists.Load(), spy.gets.Load()
	other := uniquePrefix("freshness-test-other") + "/ns/x"
	for i := range 5 {
		resp, err := storagetest.Client().Put(ctx, other, "v")
		if err != nil {
			t.Fatal(err)
		}
		X := uint64(resp.Header.Revision)
		rv := storage.FormatResourceVersion(X)
		start := time.Now()
		var l *storage.List
		switch i % 3 {
		case 0:
			l, err = c.GetList(ctx, "", storage.ListOptions{ResourceVersion: rv, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
		case 1:
			l, err = c.GetList(ctx, "", exactList(X, 0))
		case 2:
			var obj *object.Object
			if obj, err = c.Get(ctx, "ns/a-01", storage.GetOptions{ResourceVersion: rv}); err == nil {
				l = &storage.List{Items: []*object.Object{obj}, ResourceVersion: X}
			}
		}
		took := time.Since(start)
		if err != nil {
			t.Fatalf("read %d at revision %d of another prefix: %v (after %s)", i, X, err, took)
		}
		// Well below freshnessTimeout (3 s), which a read that waited for a
		// write to the resource itself would reach.
		if took > freshnessTimeout*3/4 {
			t.Errorf("read %d at revision %d took %s", i, X, took)
		}
		if l.ResourceVersion < X || i%3 == 1 && l.ResourceVersion != X {
			t.Fatalf("read %d at %d: list at %d", i, X, l.ResourceVersion)
		}
		want, err := etcd.GetList(ctx, "", exactList(l.ResourceVersion, 0))
		if err != nil {
			t.Fatal(err)
		}
		if i%3 == 2 {
			want.Items = want.Items[1:2]
		}
		sameObjects(t, "read at a revision of another prefix", l.Items, want.Items)
		t.Logf("read %d at revision %d served after %s", i, X, took.Round(time.Millisecond))
	}
	if spy.lists.Load() != lists || spy.gets.Load() != gets {
		t.Error("reads were delegated to etcd")
	}
}
