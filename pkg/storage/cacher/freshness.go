// The revision the cache has reached, reads waiting for a revision, and
// progress notifications asked of etcd while reads wait.

package cacher

import (
	"context"
	"sync"
	"time"

	"github.com/watchcache/watchcache/pkg/storage"
)

// freshness tracks the revision the cache has reached and lets reads wait
// for a revision. Each advance wakes every waiter (the channel is closed
// and replaced), so a wait costs no polling.
type freshness struct {
	mu      sync.Mutex
	rv      uint64
	changed chan struct{}
	waiters int
	// wake tells the progress requester that a waiter arrived.
	wake chan struct{}
}

func newFreshness() *freshness {
	return &freshness{changed: make(chan struct{}), wake: make(chan struct{}, 1)}
}

// advance records that the cache reached rv (it never goes back).
func (f *freshness) advance(rv uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if rv <= f.rv {
		return
	}
	f.rv = rv
	close(f.changed)
	f.changed = make(chan struct{})
}

// current returns the revision reached.
func (f *freshness) current() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.rv
}

// waitFor blocks until the cache reaches rv, for at most timeout; then it
// fails with ErrTooLargeResourceVersion (504, Retry-After: 1).
func (f *freshness) waitFor(ctx context.Context, rv uint64, timeout time.Duration) error {
	f.mu.Lock()
	if f.rv >= rv {
		f.mu.Unlock()
		return nil
	}
	f.waiters++
	select {
	case f.wake <- struct{}{}:
	default:
	}
	changed := f.changed
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.waiters--
		f.mu.Unlock()
	}()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		select {
		case <-changed:
		case <-timer.C:
			return storage.NewTooLargeResourceVersion(rv, f.current())
		case <-ctx.Done():
			return ctx.Err()
		}
		f.mu.Lock()
		reached := f.rv >= rv
		changed = f.changed
		f.mu.Unlock()
		if reached {
			return nil
		}
	}
}

// hasWaiters reports whether any read is waiting.
func (f *freshness) hasWaiters() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.waiters > 0
}

// progressInterval is how often etcd is asked for a progress notification
// while reads wait (KEP-2340: 100 ms). etcd ≥ 3.4.31/3.5.13 drops a request
// while a watcher on the stream is unsynced, so asking once is not enough.
const progressInterval = 100 * time.Millisecond

// requestProgress asks etcd for progress notifications at once when a read
// starts waiting, and then every progressInterval while any read waits; it
// sleeps otherwise.
func (f *freshness) requestProgress(ctx context.Context, request func(context.Context) error) {
	timer := time.NewTimer(progressInterval)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-f.wake:
		}
		for f.hasWaiters() {
			request(ctx)
			timer.Reset(progressInterval)
			select {
			case <-ctx.Done():
				return
			case <-f.wake: // a new read: ask again at once
			case <-timer.C:
			}
		}
	}
}
