// Consistent reads from the cache (KEP-2340): etcd's current revision read
// once for many concurrent requests, then a snapshot waited for at that
// revision.

package cacher

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/watchcache/watchcache/pkg/storage"
)

// revisionFetchTimeout bounds one shared read of etcd's current revision.
const revisionFetchTimeout = 10 * time.Second

// revisionFetcher shares reads of etcd's current revision among concurrent
// consistent reads (KEP-2340's "potential optimization"). A read must only
// use a fetch that started after it arrived (an older one could miss a
// write acknowledged before the read began), so: a read arriving while
// fewer than maxFetchesInFlight fetches run starts its own; otherwise it
// joins the next fetch, which starts when a running one ends. A lone or
// second concurrent read thus costs one fetch duration (a single fetch in
// flight made the second wait for the first's end, then a whole fetch:
// 1.5 durations on average); under load every read costs at most two, and
// etcd sees at most maxFetchesInFlight requests at a time, however many
// reads share them.
type revisionFetcher struct {
	fetch func(context.Context) (uint64, error)

	mu      sync.Mutex
	running int            // fetches in flight
	next    *revisionFetch // not started yet; joined by reads arriving now

	// fetches and reads count etcd requests and the reads they served.
	fetches, reads atomic.Int64
}

// maxFetchesInFlight bounds the concurrent reads of etcd's revision.
const maxFetchesInFlight = 2

// revisionFetch is one read of etcd's current revision.
type revisionFetch struct {
	done chan struct{}
	rv   uint64
	err  error
}

func newRevisionFetcher(fetch func(context.Context) (uint64, error)) *revisionFetcher {
	return &revisionFetcher{fetch: fetch}
}

// currentRevision returns etcd's current revision as of some moment after
// the call began.
func (f *revisionFetcher) currentRevision(ctx context.Context) (uint64, error) {
	f.reads.Add(1)
	f.mu.Lock()
	var r *revisionFetch
	if f.running < maxFetchesInFlight {
		r = &revisionFetch{done: make(chan struct{})}
		f.running++
		go f.run(r)
	} else {
		if f.next == nil {
			f.next = &revisionFetch{done: make(chan struct{})}
		}
		r = f.next
	}
	f.mu.Unlock()
	select {
	case <-r.done:
		return r.rv, r.err
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// run performs fetches until none is waiting: r, then whatever next
// gathered meanwhile.
func (f *revisionFetcher) run(r *revisionFetch) {
	for r != nil {
		f.fetches.Add(1)
		ctx, cancel := context.WithTimeout(context.Background(), revisionFetchTimeout)
		r.rv, r.err = f.fetch(ctx)
		cancel()
		close(r.done)
		f.mu.Lock()
		r, f.next = f.next, nil
		if r == nil {
			f.running--
		}
		f.mu.Unlock()
	}
}

// consistentRetryAfter is the Retry-After of a consistent read refused
// because the cache could not catch up in time.
const consistentRetryAfter = 1

// consistentSnapshot returns a snapshot that reflects every write
// acknowledged before the call (KEP-2340): it reads etcd's current
// revision (shared with concurrent reads), waits until the cache reaches
// it, and returns the newest snapshot. If the cache does not catch up in
// time it fails with 429 and Retry-After, or, with fallback, returns nil
// to let the caller read etcd. Every outcome is counted.
func (c *Cacher) consistentSnapshot(ctx context.Context) (*snapshot, error) {
	rv, err := c.revisions.currentRevision(ctx)
	if err != nil {
		return nil, err
	}
	err = c.waitFor(ctx, rv)
	switch {
	case err == nil:
		c.metrics.ConsistentRead(c.resource, true, false)
		return c.newest.Load(), nil
	case storage.CodeOf(err) != storage.ErrTooLargeResourceVersion:
		return nil, err
	case c.consistentFallback:
		c.metrics.ConsistentRead(c.resource, false, true)
		return nil, nil
	default:
		c.metrics.ConsistentRead(c.resource, false, false)
		return nil, &storage.Error{Code: storage.ErrTooManyRequests, RetryAfterSeconds: consistentRetryAfter,
			Message: "the watch cache could not catch up with etcd in time to serve a consistent read; retry later", Err: err}
	}
}
