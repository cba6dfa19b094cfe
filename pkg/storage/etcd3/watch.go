// Watch from etcd, following storage.PlanWatch: the initial list as ADDED
// events, etcd's events translated through the watch's selectors, Stop.

package etcd3

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/storage"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// resultBuffer is the number of events a watcher holds for a slow reader
// before its etcd stream is no longer drained.
const resultBuffer = 100

// Watch implements storage.Interface, following storage.PlanWatch. Errors
// that can be known before the stream starts (validation, a resourceVersion
// ahead of etcd, a failed first chunk of the initial list) are returned
// here; later ones (including a compaction while the initial list is read,
// chunk by chunk as the watcher takes its events) arrive as an EventError,
// after which the channel closes.
func (s *Store) Watch(ctx context.Context, scope string, opts storage.ListOptions) (storage.Watcher, error) {
	if s.noSharding {
		opts.Shard = nil
	}
	plan, err := storage.PlanWatch(opts)
	if err != nil {
		return nil, err
	}
	if err := opts.CheckScopeAndSelectors(scope, s.schema); err != nil {
		return nil, err
	}
	// The watch's context: the initial list's reading ends with it too.
	wctx, cancel := context.WithCancel(ctx)
	var initial *storage.List
	var from uint64 // stream events after this revision
	switch {
	case plan.Initial != 0:
		if initial, err = s.listAll(wctx, scope, plan.Initial, plan.RV, &opts); err != nil {
			cancel()
			return nil, err
		}
		from = initial.ResourceVersion
	case plan.FromNow:
		if from, err = s.CurrentResourceVersion(ctx); err != nil {
			cancel()
			return nil, err
		}
	default:
		from = plan.RV
		if plan.RequireReached {
			current, err := s.CurrentResourceVersion(ctx)
			if err != nil {
				cancel()
				return nil, err
			}
			if current < plan.RV {
				cancel()
				return nil, storage.NewTooLargeResourceVersion(plan.RV, current)
			}
		}
	}

	w := &watcher{
		store:          s,
		opts:           opts,
		plan:           plan,
		from:           from,
		keyOnlyDeletes: opts.KeyOnlyDeletes && !opts.Filtered(),
		result:         make(chan storage.Event, resultBuffer),
		cancel:         cancel,
	}
	key, prefix := s.watchRange(scope, &opts)
	watchOpts := []clientv3.OpOption{clientv3.WithRev(int64(from) + 1)}
	if !w.keyOnlyDeletes {
		// etcd reads each event's previous value from its database (bbolt
		// pages mapped into its memory): asked for only where it is used.
		watchOpts = append(watchOpts, clientv3.WithPrevKV())
	}
	if prefix {
		watchOpts = append(watchOpts, clientv3.WithPrefix())
	}
	if plan.Bookmarks {
		watchOpts = append(watchOpts, clientv3.WithProgressNotify())
	}
	// Opened before returning so that the start revision is pinned now.
	etcdEvents := s.client.Watch(s.watchContext(wctx), key, watchOpts...)
	s.written.watches.Add(1)
	w.done.Add(1)
	go w.run(wctx, initial, etcdEvents)
	return w, nil
}

type watcher struct {
	store *Store
	opts  storage.ListOptions
	plan  storage.WatchPlan
	from  uint64
	// keyOnlyDeletes: the watch asked for no previous values (see
	// storage.ListOptions.KeyOnlyDeletes) and does not filter.
	keyOnlyDeletes bool
	result         chan storage.Event
	cancel         context.CancelFunc
	done           sync.WaitGroup
}

func (w *watcher) ResultChan() <-chan storage.Event { return w.result }

// Stop ends the watch and waits until its goroutine has let go of the etcd
// stream.
func (w *watcher) Stop() {
	w.cancel()
	w.done.Wait()
}

func (w *watcher) run(ctx context.Context, initial *storage.List, etcdEvents clientv3.WatchChan) {
	defer w.done.Done()
	defer w.store.written.watches.Add(-1)
	defer close(w.result)
	defer w.cancel()
	if initial != nil && !w.sendInitial(ctx, initial) {
		return
	}
	if w.plan.InitialEventsEnd {
		if !w.send(ctx, storage.Event{Type: storage.EventBookmark, ResourceVersion: w.from, InitialEventsEnd: true}) {
			return
		}
	}
	for resp := range etcdEvents {
		if resp.CompactRevision != 0 {
			w.send(ctx, storage.Event{Type: storage.EventError, Err: storage.NewExpired(w.from,
				fmt.Sprintf("the etcd history before revision %d has been compacted", resp.CompactRevision))})
			return
		}
		if err := resp.Err(); err != nil {
			se, _ := interpret(err, "").(*storage.Error)
			if se == nil { // cancelled by us
				return
			}
			w.send(ctx, storage.Event{Type: storage.EventError, Err: se})
			return
		}
		if resp.IsProgressNotify() {
			if w.plan.Bookmarks && !w.send(ctx, storage.Event{Type: storage.EventBookmark, ResourceVersion: uint64(resp.Header.Revision)}) {
				return
			}
			continue
		}
		for _, e := range resp.Events {
			ev, ok, err := w.translate(e)
			if err != nil {
				w.send(ctx, storage.Event{Type: storage.EventError, Err: err})
				return
			}
			if ok && !w.send(ctx, ev) {
				return
			}
		}
	}
}

// errWatchStopped stops the reading of the initial list when the watch
// ends.
var errWatchStopped = errors.New("the watch ended")

// sendInitial delivers the initial list as ADDED events, reading its rest
// chunk by chunk as the watcher takes them; a failed read is delivered as
// an ERROR event. It reports whether the watch goes on.
func (w *watcher) sendInitial(ctx context.Context, initial *storage.List) bool {
	err := initial.Each(func(obj *object.Object) error {
		if !w.send(ctx, storage.Event{Type: storage.EventAdded, Object: obj, ResourceVersion: obj.ResourceVersion()}) {
			return errWatchStopped
		}
		return nil
	})
	if err == nil {
		return true
	}
	var se *storage.Error
	if errors.As(err, &se) {
		w.send(ctx, storage.Event{Type: storage.EventError, Err: se})
	}
	return false
}

// send delivers an event unless the watch ends first.
func (w *watcher) send(ctx context.Context, ev storage.Event) bool {
	select {
	case w.result <- ev:
		return true
	case <-ctx.Done():
		return false
	}
}

// translate turns an etcd event into the event this watcher's selectors
// see: an object that starts matching is ADDED, one that stops matching is
// DELETED (with its last matching state at the event's revision; only its
// key with keyOnlyDeletes).
func (w *watcher) translate(e *clientv3.Event) (storage.Event, bool, *storage.Error) {
	rev := uint64(e.Kv.ModRevision)
	if e.Type == mvccpb.DELETE && w.keyOnlyDeletes {
		key := strings.TrimPrefix(string(e.Kv.Key), w.store.prefix)
		return storage.Event{Type: storage.EventDeleted, Object: object.KeyOnly(key).WithResourceVersion(rev), ResourceVersion: rev}, true, nil
	}
	var cur, old *object.Object
	if e.Type == mvccpb.PUT {
		// The store's own write is remembered (see written), anyone
		// else's is decoded.
		cur = w.store.written.take(e.Kv.Key, e.Kv.Value, e.Kv.ModRevision)
		if cur == nil {
			obj, err := w.store.decodeKV(e.Kv.Key, e.Kv.Value, e.Kv.ModRevision)
			if err != nil {
				return storage.Event{}, false, err.(*storage.Error)
			}
			cur = obj
		}
	}
	// An update's previous state matters only to a watch with selectors
	// (did the object match before?); it is not decoded for the others,
	// such as the watch cache's.
	if e.PrevKv != nil && (e.Type == mvccpb.DELETE || w.selects()) {
		obj, err := w.store.decodeKV(e.PrevKv.Key, e.PrevKv.Value, e.Kv.ModRevision)
		if err != nil {
			return storage.Event{}, false, err.(*storage.Error)
		}
		old = obj
	}
	if !e.IsCreate() && old == nil && (e.Type == mvccpb.DELETE || w.selects()) {
		// The previous state was compacted away (a watch that started at
		// the compaction boundary): a deletion has no object to send, and
		// for an update whether the object matched before is unknown, so
		// no right event can be sent. The client relists.
		return storage.Event{}, false, storage.NewExpired(rev-1, "the previous state of "+string(e.Kv.Key)+" is compacted")
	}
	curPasses := cur != nil && w.opts.Matches(cur)
	oldPasses := old != nil && w.opts.Matches(old)
	switch {
	case e.Type == mvccpb.DELETE:
		return storage.Event{Type: storage.EventDeleted, Object: old, ResourceVersion: rev}, oldPasses, nil
	case e.IsCreate() || (curPasses && !oldPasses && old != nil):
		return storage.Event{Type: storage.EventAdded, Object: cur, ResourceVersion: rev}, curPasses, nil
	case curPasses:
		return storage.Event{Type: storage.EventModified, Object: cur, ResourceVersion: rev}, true, nil
	case oldPasses:
		return storage.Event{Type: storage.EventDeleted, Object: old, ResourceVersion: rev}, true, nil
	}
	return storage.Event{}, false, nil
}

// selects reports whether the watch has a label or field selector. A shard
// selector does not count: an object's shard never changes (its uid and
// namespace do not), so its previous state passed it if its new one does.
func (w *watcher) selects() bool {
	return w.opts.Labels != nil && !w.opts.Labels.Empty() || w.opts.Fields != nil && !w.opts.Fields.Empty()
}
