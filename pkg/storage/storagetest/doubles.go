// Test doubles for stores: a watcher that breaks on a trigger with an
// injected error, and a Gate that holds callers back.

package storagetest

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/watchcache/watchcache/pkg/storage"
)

// InjectedWatchError is the error a BreakableWatcher delivers.
var InjectedWatchError = storage.NewExpired(1, "injected by the test")

// breakableWatcher forwards a watch's events until its trigger is closed,
// then delivers one ERROR event and ends: a test double of a broken etcd
// watch, for the watch cache's re-list paths (etcd itself stays real).
type breakableWatcher struct {
	inner    storage.Watcher
	result   chan storage.Event
	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{}
}

// NewBreakableWatcher wraps inner; closing trigger breaks the watch.
func NewBreakableWatcher(inner storage.Watcher, trigger <-chan struct{}) storage.Watcher {
	w := &breakableWatcher{inner: inner, result: make(chan storage.Event), stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		defer close(w.result)
		for {
			select {
			case ev, ok := <-inner.ResultChan():
				if !ok {
					return
				}
				select {
				case w.result <- ev:
				case <-w.stop:
					return
				}
			case <-trigger:
				select {
				case w.result <- storage.Event{Type: storage.EventError, Err: InjectedWatchError}:
				case <-w.stop:
				}
				return
			case <-w.stop:
				return
			}
		}
	}()
	return w
}

func (w *breakableWatcher) ResultChan() <-chan storage.Event { return w.result }

func (w *breakableWatcher) Stop() {
	w.stopOnce.Do(func() { close(w.stop) })
	w.inner.Stop()
	<-w.done
}

// Gate holds callers back while it is held: a test hook to keep, say, a
// watch cache's initial list waiting. The zero value is open.
type Gate struct {
	mu      sync.Mutex
	held    chan struct{} // not nil while held
	waiting atomic.Int64
}

// Hold makes later Pass calls wait until Release.
func (g *Gate) Hold() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.held == nil {
		g.held = make(chan struct{})
	}
}

// Release lets the waiting calls (and later ones) pass.
func (g *Gate) Release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.held != nil {
		close(g.held)
		g.held = nil
	}
}

// Pass returns at once if the gate is open, else when it is released or
// ctx ends (then with ctx's error).
func (g *Gate) Pass(ctx context.Context) error {
	g.mu.Lock()
	held := g.held
	g.mu.Unlock()
	if held == nil {
		return nil
	}
	g.waiting.Add(1)
	defer g.waiting.Add(-1)
	select {
	case <-held:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Waiting is the number of calls waiting in Pass now.
func (g *Gate) Waiting() int64 { return g.waiting.Load() }
