// Cacher, the storage.Interface in front of etcd (k8s.io/apiserver's
// cacher.Cacher): its Config, New and Stop, writes passed to etcd, and Get
// and GetList served from memory or etcd by the decisions table.

package cacher

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/storage"
	"github.com/watchcache/watchcache/pkg/storage/storagemetrics"
)

// Defaults of Config.
const (
	DefaultHistoryWindow   = 75 * time.Second
	DefaultHistoryCapacity = 10000
	// maxLoggedEvents bounds the event log (it also keeps at most the
	// history window).
	maxLoggedEvents = 100000
	// freshnessTimeout bounds how long a read waits for the cache to reach
	// the revision it needs before failing with 504 and Retry-After: 1.
	freshnessTimeout = 3 * time.Second
)

// Config configures a Cacher.
type Config struct {
	// Store is the wrapped store (etcd3): the source of the cache, and
	// where writes and delegated reads go.
	Store storage.Interface
	// Resource names the resource in logs and metrics.
	Resource string
	// IndexedFields are selectable fields to index (exact-value field
	// selectors on them are served by index lookup).
	IndexedFields []string
	// HistoryWindow and HistoryCapacity bound the snapshots kept for
	// exact-revision lists and continuations (0: the defaults).
	HistoryWindow   time.Duration
	HistoryCapacity int
	// IsCompacted, if not nil, tells whether etcd has compacted a revision;
	// every CompactionPollInterval (0: 10 s) the snapshots that only stand
	// for compacted revisions are dropped.
	IsCompacted            func(ctx context.Context, rev uint64) (bool, error)
	CompactionPollInterval time.Duration
	// ConsistentListFromCache and ConsistentGetFromCache serve consistent
	// lists and gets (resourceVersion unset) from the cache (KEP-2340);
	// false sends them to etcd. ConsistentReadFallback sends a consistent
	// read to etcd when the cache cannot catch up in time, instead of
	// refusing it with 429.
	ConsistentListFromCache bool
	ConsistentGetFromCache  bool
	ConsistentReadFallback  bool
	// WaitWhileInitializing makes reads wait while the cache is not ready
	// (the behaviour before KEP-4568, gate ResilientWatchCacheInitialization
	// off). By default nothing waits: gets and bounded lists go to etcd and
	// every other read is refused with 429 at once.
	WaitWhileInitializing bool
	// ConsistencyCheckInterval is how often the inconsistency detector
	// compares the cache with etcd (0: never).
	ConsistencyCheckInterval time.Duration
	// BookmarkInterval is how often watchers that allow bookmarks get one
	// (0: a minute, as kube-apiserver).
	BookmarkInterval time.Duration
	// DisableShardedListAndWatch turns the ShardedListAndWatch feature gate
	// off: lists and watches ignore ListOptions.Shard, those delegated to
	// Store included. The zero value (on) is the default. Either way every
	// cached object carries the hashes a shard selector compares
	// (object.Object.UIDHash, NamespaceHash), computed once when it is
	// decoded.
	DisableShardedListAndWatch bool

	Metrics *storagemetrics.Storage
	Log     *slog.Logger
}

// Cacher is a storage.Interface that mirrors one resource of etcd in
// memory and serves reads from it (see the package doc).
type Cacher struct {
	store       storage.Interface
	resource    string
	indexed     []string
	metrics     *storagemetrics.Storage
	log         *slog.Logger
	isCompacted func(context.Context, uint64) (bool, error)
	compactPoll time.Duration

	// newest is the latest snapshot; readers load it without locks.
	newest    atomic.Pointer[snapshot]
	ready     atomic.Bool // changed through setReady
	readiness *readiness
	resilient bool
	fresh     *freshness
	history   *snapshotHistory

	// watchMu guards the watchers, the event log and dispatchRV. The
	// reflector holds it while it logs and dispatches a revision and
	// publishes its snapshot; a new watch holds it while it takes its
	// snapshot and backlog and registers.
	bookmarkInterval time.Duration
	// revisions shares reads of etcd's current revision among consistent
	// reads.
	revisions          *revisionFetcher
	consistentList     bool
	consistentGet      bool
	consistentFallback bool
	// noSharding is Config.DisableShardedListAndWatch.
	noSharding bool
	// inconsistent is set by the detector until the next list completes.
	inconsistent atomic.Bool
	// stopWatch ends the reflector's current watch (for relist).
	relistMu   sync.Mutex
	stopWatch  context.CancelFunc
	watchMu    sync.Mutex
	watchers   *watchers
	events     *eventLog
	dispatchRV uint64
	budget     timeBudget

	cancel context.CancelFunc
	done   sync.WaitGroup
}

var _ storage.Interface = (*Cacher)(nil)

// New starts a cache of cfg.Store: it lists, then watches, in the
// background; until the first list completes it delegates reads to etcd.
func New(cfg Config) *Cacher {
	if cfg.HistoryWindow == 0 {
		cfg.HistoryWindow = DefaultHistoryWindow
	}
	if cfg.HistoryCapacity == 0 {
		cfg.HistoryCapacity = DefaultHistoryCapacity
	}
	if cfg.BookmarkInterval == 0 {
		cfg.BookmarkInterval = defaultBookmarkInterval
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &Cacher{
		store:              cfg.Store,
		resource:           cfg.Resource,
		indexed:            cfg.IndexedFields,
		metrics:            cfg.Metrics,
		log:                cfg.Log.With("resource", cfg.Resource),
		isCompacted:        cfg.IsCompacted,
		compactPoll:        cfg.CompactionPollInterval,
		fresh:              newFreshness(),
		history:            newSnapshotHistory(cfg.HistoryWindow, cfg.HistoryCapacity),
		watchers:           newWatchers(),
		bookmarkInterval:   cfg.BookmarkInterval,
		readiness:          newReadiness(),
		resilient:          !cfg.WaitWhileInitializing,
		consistentList:     cfg.ConsistentListFromCache,
		consistentGet:      cfg.ConsistentGetFromCache,
		consistentFallback: cfg.ConsistentReadFallback,
		noSharding:         cfg.DisableShardedListAndWatch,
		revisions:          newRevisionFetcher(cfg.Store.CurrentResourceVersion),
		events:             newEventLog(cfg.HistoryWindow, maxLoggedEvents),
		cancel:             cancel,
	}
	c.budget.last = time.Now() // the blocking budget fills from the start
	c.done.Add(3)
	go func() { defer c.done.Done(); c.reflect(ctx) }()
	go func() { defer c.done.Done(); c.fresh.requestProgress(ctx, c.store.RequestProgress) }()
	go func() { defer c.done.Done(); c.sendBookmarks(ctx) }()
	if c.compactPoll == 0 {
		c.compactPoll = defaultCompactionPollInterval
	}
	if cfg.ConsistencyCheckInterval > 0 {
		c.done.Add(1)
		go func() { defer c.done.Done(); c.checkConsistencyEvery(ctx, cfg.ConsistencyCheckInterval) }()
	}
	if c.isCompacted != nil {
		c.done.Add(1)
		go func() { defer c.done.Done(); c.trimCompacted(ctx) }()
	}
	return c
}

// Stop stops the cache's goroutines, ends its watchers and waits.
func (c *Cacher) Stop() {
	c.cancel()
	c.done.Wait()
	c.endAllWatchers()
}

// Ready reports whether the cache serves reads: its list is complete (the
// watch from the list's revision starts right after and keeps it current).
func (c *Cacher) Ready() bool { return c.ready.Load() }

// Count is the number of objects the cache holds under scope ("" for all,
// "namespace/" for one namespace's) at its newest revision: exact, and
// counted in the scope's objects (the whole resource's at once). ok is
// false while the cache is not ready. API Priority and Fairness estimates
// a list's work from it.
func (c *Cacher) Count(scope string) (n int, ok bool) {
	sn := c.newest.Load()
	if !c.Ready() || sn == nil {
		return 0, false
	}
	return sn.count(scope), true
}

// Resource names the cached resource.
func (c *Cacher) Resource() string { return c.resource }

// ConsistentReadsFromCache reports whether consistent lists or gets are
// served from the cache.
func (c *Cacher) ConsistentReadsFromCache() bool { return c.consistentList || c.consistentGet }

// Schema implements storage.Interface.
func (c *Cacher) Schema() *object.Schema { return c.store.Schema() }

// Create implements storage.Interface: writes go to etcd.
func (c *Cacher) Create(ctx context.Context, key string, data []byte) (*object.Object, error) {
	return c.store.Create(ctx, key, data)
}

// GuaranteedUpdate implements storage.Interface: the write goes to etcd,
// with the cached object as the suggested current state, so the common
// case costs no extra etcd read.
func (c *Cacher) GuaranteedUpdate(ctx context.Context, key string, pre *storage.Preconditions, tryUpdate storage.UpdateFunc, cached *object.Object) (*object.Object, error) {
	if cached == nil {
		cached = c.cachedObject(key)
	}
	return c.store.GuaranteedUpdate(ctx, key, pre, tryUpdate, cached)
}

// Delete implements storage.Interface, like GuaranteedUpdate.
func (c *Cacher) Delete(ctx context.Context, key string, pre *storage.Preconditions, cached *object.Object) (*object.Object, error) {
	if cached == nil {
		cached = c.cachedObject(key)
	}
	return c.store.Delete(ctx, key, pre, cached)
}

// cachedObject returns the newest cached state of key, if the cache is
// ready and has it.
func (c *Cacher) cachedObject(key string) *object.Object {
	if !c.ready.Load() {
		return nil
	}
	obj, _ := c.newest.Load().get(key)
	return obj
}

// CurrentResourceVersion implements storage.Interface.
func (c *Cacher) CurrentResourceVersion(ctx context.Context) (uint64, error) {
	return c.store.CurrentResourceVersion(ctx)
}

// RequestProgress implements storage.Interface.
func (c *Cacher) RequestProgress(ctx context.Context) error { return c.store.RequestProgress(ctx) }

// Get implements storage.Interface, following the decisions table.
func (c *Cacher) Get(ctx context.Context, key string, opts storage.GetOptions) (*object.Object, error) {
	plan, err := storage.PlanGet(opts)
	if err != nil {
		return nil, err
	}
	if err := storage.CheckKey(key); err != nil {
		return nil, err
	}
	if fromCache, err := c.whileNotReady(ctx, readGet, "", nil); err != nil || !fromCache {
		if err != nil {
			return nil, err
		}
		return c.store.Get(ctx, key, opts)
	}
	var sn *snapshot
	switch decide(plan.Read, c.state(c.consistentGet)) {
	case fromEtcd:
		return c.store.Get(ctx, key, opts)
	case fromConsistent:
		if sn, err = c.consistentSnapshot(ctx); err != nil {
			return nil, err
		}
		if sn == nil { // fallback
			return c.store.Get(ctx, key, opts)
		}
	default:
		if sn, err = c.newestAt(ctx, plan.RV); err != nil {
			return nil, err
		}
	}
	obj, ok := sn.get(key)
	if !ok {
		return nil, storage.NewNotFound(key)
	}
	return obj, nil
}

// GetList implements storage.Interface, following the decisions table.
func (c *Cacher) GetList(ctx context.Context, scope string, opts storage.ListOptions) (*storage.List, error) {
	if c.noSharding {
		opts.Shard = nil
	}
	plan, err := storage.PlanList(opts, scope)
	if err != nil {
		return nil, err
	}
	if err := opts.CheckScopeAndSelectors(scope, c.store.Schema()); err != nil {
		return nil, err
	}
	if fromCache, err := c.whileNotReady(ctx, readList, scope, &opts); err != nil || !fromCache {
		if err != nil {
			return nil, err
		}
		return c.store.GetList(ctx, scope, opts)
	}
	var sn *snapshot
	var listRV uint64
	switch decide(plan.Read, c.state(c.consistentList)) {
	case fromEtcd:
		return c.store.GetList(ctx, scope, opts)
	case fromConsistent:
		if sn, err = c.consistentSnapshot(ctx); err != nil {
			return nil, err
		}
		if sn == nil { // fallback
			return c.store.GetList(ctx, scope, opts)
		}
		listRV = sn.rv
	case fromNewest:
		if sn, err = c.newestAt(ctx, plan.RV); err != nil {
			return nil, err
		}
		listRV = sn.rv
	case fromHistory:
		if err := c.waitFor(ctx, plan.RV); err != nil {
			return nil, err
		}
		var kept bool
		if sn, kept = c.history.at(plan.RV); !kept {
			return c.store.GetList(ctx, scope, opts)
		}
		listRV = plan.RV
	}
	p := sn.list(scope, plan.StartKey, plan.Limit, &opts)
	c.metrics.ListServed(c.resource, storagemetrics.StorageCache, p.scanned, len(p.items))
	list := &storage.List{Items: p.items, ResourceVersion: listRV, Shard: opts.Shard}
	if p.next != "" {
		list.Continue = storage.EncodeContinue(int64(listRV), p.next)
		if p.remaining >= 0 {
			list.RemainingItemCount = &p.remaining
		}
	}
	return list, nil
}

// state is the cache's state for decide, with the given consistent-read
// gate.
func (c *Cacher) state(consistentFromCache bool) cacheState {
	return cacheState{ready: c.ready.Load(), consistentFromCache: consistentFromCache, inconsistent: c.inconsistent.Load()}
}

// relist makes the reflector drop its watch and list again.
func (c *Cacher) relist() {
	c.relistMu.Lock()
	defer c.relistMu.Unlock()
	if c.stopWatch != nil {
		c.stopWatch()
	}
}

// newestAt returns the newest snapshot once the cache has reached rv.
func (c *Cacher) newestAt(ctx context.Context, rv uint64) (*snapshot, error) {
	if err := c.waitFor(ctx, rv); err != nil {
		return nil, err
	}
	return c.newest.Load(), nil
}

// waitFor waits until the cache reaches rv, recording the wait.
func (c *Cacher) waitFor(ctx context.Context, rv uint64) error {
	if c.fresh.current() >= rv {
		return nil
	}
	start := time.Now()
	err := c.fresh.waitFor(ctx, rv, freshnessTimeout)
	c.metrics.ReadWaited(c.resource, time.Since(start).Seconds())
	return err
}
