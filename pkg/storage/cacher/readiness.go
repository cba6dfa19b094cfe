// The cache's readiness: when it stopped serving, waiting for it, the
// Retry-After of refused requests, and what reads do while it is not ready.

package cacher

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/watchcache/watchcache/pkg/storage"
)

// readiness records when the cache stopped serving (for Retry-After) and
// lets requests wait until it serves again (without resilient
// initialization). The ready flag itself is Cacher.ready, read lock-free.
type readiness struct {
	mu       sync.Mutex
	notSince time.Time     // when the cache last stopped being ready
	changed  chan struct{} // closed and replaced when it becomes ready
}

func newReadiness() *readiness {
	return &readiness{notSince: time.Now(), changed: make(chan struct{})}
}

// setReady changes the cache's readiness.
func (c *Cacher) setReady(ready bool) {
	c.readiness.mu.Lock()
	defer c.readiness.mu.Unlock()
	if c.ready.Load() == ready {
		return
	}
	c.ready.Store(ready)
	if ready {
		close(c.readiness.changed)
		c.readiness.changed = make(chan struct{})
	} else {
		c.readiness.notSince = time.Now()
	}
}

// notReadyFor is how long the cache has not been ready.
func (c *Cacher) notReadyFor() time.Duration {
	c.readiness.mu.Lock()
	defer c.readiness.mu.Unlock()
	return time.Since(c.readiness.notSince)
}

// waitReady blocks until the cache is ready or ctx ends.
func (c *Cacher) waitReady(ctx context.Context) error {
	for !c.ready.Load() {
		c.readiness.mu.Lock()
		changed := c.readiness.changed
		c.readiness.mu.Unlock()
		if c.ready.Load() {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// retryAfterUnready is the Retry-After for requests refused while the cache
// initializes: 1 s at first, growing with the time it has been down, up to
// 30 s (upstream's curve: e^(0.06·seconds)).
func retryAfterUnready(down time.Duration) int {
	return int(math.Min(30, math.Max(1, math.Exp(0.06*down.Seconds()))))
}

// Request kinds, for whileNotReady.
const (
	readGet = iota
	readList
	readWatch
)

// whileNotReady says how a read proceeds while the cache is not ready
// (KEP-4568): from the cache (true: it is ready, or became ready while the
// read waited, without resilient initialization), from etcd (false, nil:
// gets, lists with a limit and no selector, and lists by name that etcd
// answers with one key, whose cost is bounded), or not at all (429 with a
// Retry-After growing with the downtime: watches and every other list).
// Nothing waits for the cache unless resilient initialization is off.
func (c *Cacher) whileNotReady(ctx context.Context, kind int, scope string, opts *storage.ListOptions) (bool, error) {
	if c.ready.Load() {
		return true, nil
	}
	if !c.resilient {
		if err := c.waitReady(ctx); err != nil {
			return false, err
		}
		return true, nil
	}
	switch {
	case kind == readGet:
		return false, nil
	case kind == readList && opts.Limit > 0 && !opts.Filtered():
		return false, nil
	case kind == readList && c.oneKeyByName(scope, opts):
		return false, nil
	}
	return false, &storage.Error{Code: storage.ErrTooManyRequests, RetryAfterSeconds: retryAfterUnready(c.notReadyFor()),
		Message: "the watch cache of " + c.resource + " is initializing; retry later"}
}

// oneKeyByName says whether a list selects by name in a scope where one
// key can hold that name (storage.LookupByName): etcd answers it with a
// single-key read.
func (c *Cacher) oneKeyByName(scope string, opts *storage.ListOptions) bool {
	l, ok := opts.LookupByName(scope, c.store.Schema().ClusterScoped())
	return ok && l.Key != ""
}
