package storagetest

import (
	"sync"

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
