package cacher

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// rfFake is a fake fetch of etcd's current revision for revisionFetcher.
// Reads and fetches share one logical clock, and a fetch's revision is the
// time it started, so a read can tell which fetch served it and whether
// that fetch started after the read did. Fetches announce themselves on
// started and block until the test releases them, unless auto is set.
type rfFake struct {
	clock       atomic.Int64
	started     chan *rfFetch
	inFlight    atomic.Int64
	maxInFlight atomic.Int64
	// auto, if not nil, ends each fetch by itself: it returns whether the
	// fetch fails.
	auto func(start int64) bool
}

// rfFetch is one fetch in progress.
type rfFetch struct {
	start int64
	// release ends the fetch: true fails it.
	release chan bool
}

// rfError is the error of a failed fetch.
type rfError struct{ start int64 }

func (e rfError) Error() string { return fmt.Sprintf("fetch started at %d failed", e.start) }

func newRFFake() *rfFake { return &rfFake{started: make(chan *rfFetch)} }

func (f *rfFake) fetch(ctx context.Context) (uint64, error) {
	n := f.inFlight.Add(1)
	defer f.inFlight.Add(-1)
	for m := f.maxInFlight.Load(); n > m && !f.maxInFlight.CompareAndSwap(m, n); m = f.maxInFlight.Load() {
	}
	r := &rfFetch{start: f.clock.Add(1), release: make(chan bool)}
	var fail bool
	if f.auto != nil {
		fail = f.auto(r.start)
	} else {
		// The fetcher's own timeout ends a fetch the test never releases
		// (after a failure), so that no goroutine is left blocked.
		select {
		case f.started <- r:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
		select {
		case fail = <-r.release:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	if fail {
		return 0, rfError{r.start}
	}
	return uint64(r.start), nil
}

// rfResult is what a read got.
type rfResult struct {
	start int64 // when the read began
	rv    uint64
	err   error
}

// fetchedBy returns the start of the fetch whose result the read got (-1
// if it got none).
func (r rfResult) fetchedBy() int64 {
	var fe rfError
	switch {
	case r.err == nil:
		return int64(r.rv)
	case errors.As(r.err, &fe):
		return fe.start
	}
	return -1
}

// read starts a read in the background.
func (f *rfFake) read(ctx context.Context, rf *revisionFetcher) <-chan rfResult {
	start := f.clock.Add(1)
	done := make(chan rfResult, 1)
	go func() {
		rv, err := rf.currentRevision(ctx)
		done <- rfResult{start, rv, err}
	}()
	return done
}

// The helpers below run inside a synctest bubble: they wait until every
// other goroutine is blocked, then look without blocking, so that a bug
// fails the test instead of hanging it.

// rfNextFetch returns the fetch that has started.
func rfNextFetch(t *testing.T, f *rfFake) *rfFetch {
	t.Helper()
	synctest.Wait()
	select {
	case r := <-f.started:
		return r
	default:
		t.Fatal("no fetch started")
	}
	return nil
}

// rfNoFetch checks that no fetch has started.
func rfNoFetch(t *testing.T, f *rfFake, why string) {
	t.Helper()
	synctest.Wait()
	select {
	case r := <-f.started:
		t.Fatalf("%s: a fetch started at %d", why, r.start)
	default:
	}
}

// rfPending checks that reads have not returned.
func rfPending(t *testing.T, reads ...<-chan rfResult) {
	t.Helper()
	synctest.Wait()
	for i, r := range reads {
		select {
		case res := <-r:
			t.Fatalf("read %d (began at %d) returned %+v; it should still wait", i, res.start, res)
		default:
		}
	}
}

// rfReturned returns the result of a read that has returned.
func rfReturned(t *testing.T, r <-chan rfResult) rfResult {
	t.Helper()
	synctest.Wait()
	select {
	case res := <-r:
		return res
	default:
		t.Fatal("a read has not returned")
	}
	return rfResult{}
}

// rfServedBy checks that reads returned fetch's result (fail: its error),
// and that fetch started after they began.
func rfServedBy(t *testing.T, fetch *rfFetch, fail bool, reads ...<-chan rfResult) {
	t.Helper()
	for i, r := range reads {
		res := rfReturned(t, r)
		if res.fetchedBy() != fetch.start || (res.err != nil) != fail {
			t.Fatalf("read %d (began at %d) got %+v, want the result of the fetch started at %d (failed: %v)", i, res.start, res, fetch.start, fail)
		}
		if fetch.start <= res.start {
			t.Fatalf("read %d (began at %d) used a fetch started at %d, before it", i, res.start, fetch.start)
		}
	}
}

// TestRevisionFetchSharing: a read starts its own fetch while fewer than
// maxFetchesInFlight run; reads that arrive while that many run do not use
// them: they share the next fetch, which starts when one ends; with no read
// waiting, no fetch runs.
func TestRevisionFetchSharing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newRFFake()
		rf := newRevisionFetcher(f.fetch)
		ctx := t.Context()

		r1 := f.read(ctx, rf)
		f1 := rfNextFetch(t, f)
		r2 := f.read(ctx, rf) // a second slot: its own fetch at once
		f2 := rfNextFetch(t, f)
		r3, r4 := f.read(ctx, rf), f.read(ctx, rf)
		rfNoFetch(t, f, "while two fetches are in flight")
		rfPending(t, r1, r2, r3, r4)

		f1.release <- false
		rfServedBy(t, f1, false, r1)
		rfPending(t, r2, r3, r4) // r3 and r4 must not take f1's result
		f3 := rfNextFetch(t, f)
		r5 := f.read(ctx, rf) // arrives while f2 and f3 run: the fetch after
		rfNoFetch(t, f, "while two fetches are in flight again")
		rfPending(t, r2, r3, r4, r5)

		f2.release <- false
		rfServedBy(t, f2, false, r2)
		f4 := rfNextFetch(t, f)
		f3.release <- false
		rfServedBy(t, f3, false, r3, r4)
		f4.release <- false
		rfServedBy(t, f4, false, r5)
		rfNoFetch(t, f, "with no read waiting")

		// Idle again: a read starts a fetch at once.
		r6 := f.read(ctx, rf)
		f5 := rfNextFetch(t, f)
		f5.release <- false
		rfServedBy(t, f5, false, r6)

		if got, want := rf.fetches.Load(), int64(5); got != want {
			t.Errorf("%d fetches, want %d", got, want)
		}
		if got, want := rf.reads.Load(), int64(6); got != want {
			t.Errorf("%d reads counted, want %d", got, want)
		}
		if m := f.maxInFlight.Load(); m != maxFetchesInFlight {
			t.Errorf("%d fetches in flight at once, want %d", m, maxFetchesInFlight)
		}
	})
}

// TestRevisionFetchErrors: a failed fetch fails exactly the reads that
// joined it; the reads of the fetches before and after succeed.
func TestRevisionFetchErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newRFFake()
		rf := newRevisionFetcher(f.fetch)
		ctx := t.Context()

		r1 := f.read(ctx, rf)
		f1 := rfNextFetch(t, f)
		r2 := f.read(ctx, rf)
		f2 := rfNextFetch(t, f)
		r3, r4 := f.read(ctx, rf), f.read(ctx, rf) // they join the next fetch
		rfPending(t, r1, r2, r3, r4)
		f1.release <- false
		rfServedBy(t, f1, false, r1)
		rfPending(t, r2, r3, r4)

		f3 := rfNextFetch(t, f)
		f3.release <- true
		rfServedBy(t, f3, true, r3, r4)
		rfPending(t, r2)
		f2.release <- false
		rfServedBy(t, f2, false, r2)

		// After a failure, the next read fetches afresh.
		r5 := f.read(ctx, rf)
		f4 := rfNextFetch(t, f)
		f4.release <- false
		rfServedBy(t, f4, false, r5)
	})
}

// TestRevisionFetchCancel: a read whose context ends returns at once with
// the context's error; the fetch goes on and serves the other reads.
func TestRevisionFetchCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newRFFake()
		rf := newRevisionFetcher(f.fetch)
		ctx := t.Context()

		cctx1, cancel1 := context.WithCancel(ctx)
		r1 := f.read(cctx1, rf)
		f1 := rfNextFetch(t, f)
		r2 := f.read(ctx, rf) // its own fetch: the second slot
		f2 := rfNextFetch(t, f)
		cctx3, cancel3 := context.WithCancel(ctx)
		r3 := f.read(cctx3, rf) // joins the next fetch
		r4 := f.read(ctx, rf)   // joins the next fetch too
		rfPending(t, r1, r2, r3, r4)
		cancel1()
		cancel3()
		for i, r := range []<-chan rfResult{r1, r3} {
			if res := rfReturned(t, r); !errors.Is(res.err, context.Canceled) {
				t.Fatalf("cancelled read %d got %+v, want context.Canceled", i, res)
			}
		}
		rfPending(t, r2, r4)
		f1.release <- false
		f3 := rfNextFetch(t, f)
		f3.release <- false
		rfServedBy(t, f3, false, r4)
		f2.release <- false
		rfServedBy(t, f2, false, r2)
	})
}

// TestRevisionFetchConcurrent runs many reads at once against fetches that
// take a little while and sometimes fail: every read gets the result of a
// fetch that started after it began, each fetch's result (value or error)
// reaches only the reads that joined it, at most maxFetchesInFlight run at
// a time, and fetches are shared.
func TestRevisionFetchConcurrent(t *testing.T) {
	f := newRFFake()
	f.auto = func(start int64) bool {
		time.Sleep(time.Duration(rand.N(200)) * time.Microsecond)
		return start%3 == 0
	}
	rf := newRevisionFetcher(f.fetch)
	const readers, readsEach = 20, 50
	results := make(chan rfResult, readers*readsEach)
	var wg sync.WaitGroup
	for range readers {
		wg.Go(func() {
			for range readsEach {
				results <- <-f.read(context.Background(), rf)
			}
		})
	}
	wg.Wait()
	close(results)
	perFetch := map[int64]int{}
	for res := range results {
		by := res.fetchedBy()
		if by <= res.start {
			t.Fatalf("read began at %d got %+v: not the result of a fetch started after it", res.start, res)
		}
		if failed := by%3 == 0; (res.err != nil) != failed {
			t.Fatalf("read began at %d got %+v, but the fetch started at %d failed: %v", res.start, res, by, failed)
		}
		perFetch[by]++
	}
	if m := f.maxInFlight.Load(); m > maxFetchesInFlight {
		t.Errorf("%d fetches in flight at once, want at most %d", m, maxFetchesInFlight)
	}
	fetches, reads := rf.fetches.Load(), rf.reads.Load()
	if reads != readers*readsEach || int64(len(perFetch)) > fetches {
		t.Errorf("%d reads counted, %d fetches counted, %d fetches served reads", reads, fetches, len(perFetch))
	}
	if fetches >= reads {
		t.Errorf("%d fetches for %d reads: concurrent reads did not share fetches", fetches, reads)
	}
	t.Logf("%d reads shared %d fetches", reads, fetches)
}
