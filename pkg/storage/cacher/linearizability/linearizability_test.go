// Package linearizability checks with porcupine that consistent reads
// served from the watch cache (KEP-2340) are linearizable with the writes
// that go to etcd, while the cache lags behind etcd by a random delay and
// etcd restarts mid-run.
//
// It starts its own embedded etcd, since it restarts it.
package linearizability

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/url"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/watchcache/watchcache/pkg/etcdembed"
	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/storage"
	"github.com/watchcache/watchcache/pkg/storage/cacher"
	"github.com/watchcache/watchcache/pkg/storage/etcd3"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
)

const (
	numClients = 5
	// beforeRestart is how long the clients run before etcd restarts;
	// afterRestart how long they keep running once it serves again. A
	// graceful etcd shutdown waits about 5 s for the cache's watch stream
	// to end, so the whole run lasts about 10 s. breakAfter into
	// afterRestart, the cache's watch is broken, so that it lists again.
	beforeRestart = 2 * time.Second
	afterRestart  = 2500 * time.Millisecond
	breakAfter    = time.Second
	// maxEventDelay bounds the random delay the cache's watch adds to each
	// event.
	maxEventDelay = 20 * time.Millisecond
	// Per-operation timeouts. They are shorter than etcd's outage during
	// its restart, so writes made then time out and are recorded as of
	// unknown outcome.
	readTimeout  = 2 * time.Second
	writeTimeout = 2 * time.Second
	// checkTimeout bounds porcupine's search.
	checkTimeout = 60 * time.Second
	// minReads is the least number of successful consistent reads a run
	// must make, and minReadsAfterRestart the least of them after etcd
	// restarted.
	minReads             = 300
	minReadsAfterRestart = 50
)

// schema makes spec.nodeName, where the clients put their values,
// readable from objects.
var schema = object.MustSchema("spec.nodeName")

// TestConsistentReadsAreLinearizable runs clients that write to etcd and
// read consistently from the cache, restarts etcd in the middle (the cache
// resumes its watch), then breaks the cache's watch (it lists again), and
// checks the history with porcupine. The cache sees etcd's events late, by a
// random delay; with etcd's periodic progress notifications off, only the
// cache's own progress requests let it learn that it is current when no
// event comes.
func TestConsistentReadsAreLinearizable(t *testing.T) {
	for _, tc := range []struct {
		name           string
		progressNotify time.Duration
	}{
		{"EtcdProgressNotify", 100 * time.Millisecond},
		{"RequestedProgressOnly", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runClients(t, runConfig{progressNotify: tc.progressNotify, restart: true})
			switch r.result {
			case porcupine.Ok:
			case porcupine.Illegal:
				t.Errorf("consistent reads from the cache are not linearizable: see %s", visualize(t, r.info))
			default:
				t.Errorf("porcupine could not decide within %s whether the history is linearizable (result %s): see %s", checkTimeout, r.result, visualize(t, r.info))
			}
			// The test must not pass vacuously: enough reads were served,
			// after the restart too, and the cache (not etcd) served them.
			if r.reads < minReads {
				t.Errorf("only %d successful consistent reads, want at least %d", r.reads, minReads)
			}
			if r.readsAfterRestart < minReadsAfterRestart {
				t.Errorf("only %d successful consistent reads after etcd restarted, want at least %d", r.readsAfterRestart, minReadsAfterRestart)
			}
			if r.delegated*10 > int64(r.reads) {
				t.Errorf("the cache delegated %d of %d successful reads to etcd; it should serve nearly all of them", r.delegated, r.reads)
			}
			if r.relists < 2 {
				t.Errorf("the cache listed %d times; the broken watch should have made it list again", r.relists)
			}
			if r.writesOK < minReads/3 {
				t.Errorf("only %d successful writes", r.writesOK)
			}
		})
	}
}

// TestStaleRevisionIsCaught is the harness's negative control: when the
// cache is given etcd's current revision minus one (a read may then miss
// the write acknowledged just before it), porcupine must find the stale
// reads.
func TestStaleRevisionIsCaught(t *testing.T) {
	r := runClients(t, runConfig{progressNotify: 100 * time.Millisecond, staleRevision: true, duration: 1500 * time.Millisecond})
	if r.result != porcupine.Illegal {
		t.Errorf("porcupine found the history %s, want %s: the test cannot detect reads that miss the last write", r.result, porcupine.Illegal)
	}
}

// runConfig says how to run the clients.
type runConfig struct {
	progressNotify time.Duration
	// restart restarts etcd after beforeRestart, runs afterRestart more
	// and breaks the cache's watch on the way; otherwise the clients run
	// for duration.
	restart  bool
	duration time.Duration
	// staleRevision makes the wrapped store report etcd's current revision
	// minus one (a bug, for the negative control).
	staleRevision bool
}

// runResult is what a run did, with porcupine's verdict.
type runResult struct {
	stats
	readsAfterRestart int
	delegated         int64
	relists           int64
	result            porcupine.CheckResult
	info              porcupine.LinearizationInfo
}

// runClients starts etcd and a lagging cache over it, runs the clients
// (restarting etcd mid-run if asked), and checks their history.
func runClients(t *testing.T, cfg runConfig) runResult {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	e := startEtcd(t, cfg.progressNotify)
	client, err := newClient(e.server().Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	store := &laggingStore{
		Interface:     etcd3.New(etcd3.Config{Client: client, Prefix: "/linearizability/pods", Schema: schema, Resource: "pods"}),
		maxDelay:      maxEventDelay,
		seed:          seed,
		staleRevision: cfg.staleRevision,
	}
	c := cacher.New(cacher.Config{Store: store, Resource: "pods", ConsistentListFromCache: true, ConsistentGetFromCache: true})
	// Cleanups run last-in first-out: the cache ends its watch, then the
	// client closes, then etcd (which waits for live watch streams).
	t.Cleanup(e.close)
	t.Cleanup(func() { client.Close() })
	t.Cleanup(c.Stop)
	waitReady(t, c)

	base := time.Now()
	now := func() int64 { return int64(time.Since(base)) } // monotonic
	var nextClientID atomic.Int64
	nextClientID.Store(numClients)

	stop := make(chan struct{})
	restartedAt := int64(math.MaxInt64) // when etcd served again
	var timeline sync.WaitGroup
	timeline.Add(1)
	go func() {
		defer timeline.Done()
		defer close(stop)
		if !cfg.restart {
			time.Sleep(cfg.duration)
			return
		}
		time.Sleep(beforeRestart)
		begin := time.Now()
		if err := e.restart(); err != nil {
			t.Errorf("restart etcd: %v", err)
			return
		}
		waitServing(t, client)
		t.Logf("etcd restarted and serving the test's client again in %s", time.Since(begin).Round(time.Millisecond))
		restartedAt = now()
		time.Sleep(breakAfter)
		store.breakWatches()
		time.Sleep(afterRestart - breakAfter)
	}()

	clients := make([]*kvClient, numClients)
	var wg sync.WaitGroup
	for i := range clients {
		cl := &kvClient{
			t: t, id: i, store: c, now: now, nextID: &nextClientID, visID: i,
			rng: rand.New(rand.NewPCG(seed, uint64(i)+1)), stop: stop,
		}
		clients[i] = cl
		wg.Add(1)
		go func() { defer wg.Done(); cl.run() }()
	}
	wg.Wait()
	timeline.Wait()

	var r runResult
	var history []porcupine.Operation
	for _, cl := range clients {
		history = append(history, cl.ops...)
		r.add(&cl.stats)
	}
	for _, op := range history {
		if in := op.Input.(kvInput); (in.kind == opGet || in.kind == opList) && op.Call > restartedAt {
			r.readsAfterRestart++
		}
	}
	delegatedGets, delegatedLists, relists := store.gets.Load(), store.lists.Load(), store.relists.Load()
	r.delegated, r.relists = delegatedGets+delegatedLists, relists
	t.Logf("history: %d operations (%d writes: %d ok, %d definite failures, %d unknown; %d consistent reads: %d gets, %d lists, %d after the restart); dropped %d failed reads %v",
		len(history), r.writes, r.writesOK, r.writesFailed, r.writesUnknown, r.reads, r.gets, r.lists, r.readsAfterRestart, r.droppedReads, r.dropped)
	t.Logf("wrapped store: %d gets and %d lists delegated by the cache, %d lists by its reflector", delegatedGets, delegatedLists, relists)

	begin := time.Now()
	r.result, r.info = porcupine.CheckOperationsVerbose(kvModel, history, checkTimeout)
	t.Logf("porcupine: %s in %s", r.result, time.Since(begin).Round(time.Millisecond))
	return r
}

// visualize writes porcupine's visualization of the history to a file that
// outlives the test and returns its path.
func visualize(t *testing.T, info porcupine.LinearizationInfo) string {
	f, err := os.CreateTemp("", "linearizability-*.html")
	if err != nil {
		t.Errorf("create visualization file: %v", err)
		return "(no visualization)"
	}
	f.Close()
	if err := porcupine.VisualizePath(kvModel, info, f.Name()); err != nil {
		t.Errorf("write visualization: %v", err)
	}
	return f.Name()
}

// newClient is a client of the test's etcd that reconnects quickly: gRPC's
// default reconnection backoff (1 s, growing to 2 min) would keep it away
// from a restarted etcd for seconds.
func newClient(endpoint string) (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{
		Endpoints:   []string{endpoint},
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
		DialOptions: []grpc.DialOption{grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 50 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 200 * time.Millisecond},
			MinConnectTimeout: time.Second,
		})},
	})
}

// waitServing waits until etcd answers the client again after a restart.
func waitServing(t *testing.T, client *clientv3.Client) {
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		_, err := client.Get(ctx, "/linearizability/health")
		cancel()
		if err == nil {
			return
		}
	}
	t.Errorf("etcd not serving 20s after its restart")
}

// waitReady waits until the cache has listed.
func waitReady(t *testing.T, c *cacher.Cacher) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !c.Ready() {
		if time.Now().After(deadline) {
			t.Fatal("cache not ready after 10s")
		}
		time.Sleep(time.Millisecond)
	}
}

// etcd is the test's own embedded etcd, restartable on the same data
// directory and client port.
type etcd struct {
	cfg etcdembed.Config
	mu  sync.Mutex
	srv *etcdembed.Server
}

func startEtcd(t *testing.T, progressNotify time.Duration) *etcd {
	t.Helper()
	cfg := etcdembed.Config{DataDir: t.TempDir(), UnsafeNoFsync: true, ProgressNotifyInterval: progressNotify}
	srv, err := etcdembed.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(srv.Endpoint)
	if err == nil {
		cfg.ClientPort, err = strconv.Atoi(u.Port())
	}
	if err != nil {
		srv.Close()
		t.Fatalf("client port of %s: %v", srv.Endpoint, err)
	}
	return &etcd{cfg: cfg, srv: srv}
}

func (e *etcd) server() *etcdembed.Server {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.srv
}

// restart closes etcd gracefully (acknowledged writes are kept) and starts
// it again on the same data directory and client port; clients reconnect
// by themselves.
func (e *etcd) restart() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.srv.Close()
	e.srv = nil
	srv, err := etcdembed.Start(e.cfg)
	if err != nil {
		return err
	}
	e.srv = srv
	return nil
}

func (e *etcd) close() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.srv != nil {
		e.srv.Close()
		e.srv = nil
	}
}

// stats counts what the clients did.
type stats struct {
	writes, writesOK, writesFailed, writesUnknown int
	reads, gets, lists                            int
	droppedReads                                  int
	dropped                                       map[string]int // failed reads by error code
}

func (s *stats) add(o *stats) {
	s.writes += o.writes
	s.writesOK += o.writesOK
	s.writesFailed += o.writesFailed
	s.writesUnknown += o.writesUnknown
	s.reads += o.reads
	s.gets += o.gets
	s.lists += o.lists
	s.droppedReads += o.droppedReads
	for k, v := range o.dropped {
		if s.dropped == nil {
			s.dropped = map[string]int{}
		}
		s.dropped[k] += v
	}
}

// kvClient does random operations on the keys through the cache and
// records them.
type kvClient struct {
	t     *testing.T
	id    int
	store storage.Interface
	now   func() int64
	rng   *rand.Rand
	stop  <-chan struct{}
	// visID is the porcupine client id; after a write of unknown outcome
	// (which stays open forever) the client continues under a new one, so
	// that the visualization shows one operation at a time per row.
	visID  int
	nextID *atomic.Int64
	// uids are the UIDs the client last saw per key, for preconditions.
	uids [numKeys]string
	seq  int
	ops  []porcupine.Operation
	stats
}

func (c *kvClient) run() {
	for {
		select {
		case <-c.stop:
			return
		default:
		}
		key := c.rng.IntN(numKeys)
		switch r := c.rng.IntN(20); {
		case r < 4:
			c.create(key)
		case r < 8:
			c.update(key)
		case r < 10:
			c.delete(key)
		case r < 15:
			c.get(key)
		default:
			c.list()
		}
	}
}

// nextValue returns a value no other write of the run uses.
func (c *kvClient) nextValue() string {
	c.seq++
	return fmt.Sprintf("c%d-%d", c.id, c.seq)
}

// precondition returns, half of the time, a UID precondition with the UID
// the client last saw for key (possibly stale, so it may fail).
func (c *kvClient) precondition(key int) string {
	if c.uids[key] == "" || c.rng.IntN(2) == 0 {
		return ""
	}
	return c.uids[key]
}

// pod is the JSON of the object under key index i with value v.
func pod(i int, v, uid string) []byte {
	return fmt.Appendf(nil, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"k%d","namespace":"ns","uid":%q},"spec":{"nodeName":%q},"status":{"phase":"Running"}}`, i, uid, v)
}

// entryOf is the model's view of an object.
func entryOf(obj *object.Object) entry {
	return entry{value: obj.Fields().Get("spec.nodeName"), uid: obj.UID()}
}

func (c *kvClient) create(key int) {
	in := kvInput{kind: opCreate, key: key, value: c.nextValue()}
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	call := c.now()
	obj, err := c.store.Create(ctx, keyName(key), pod(key, in.value, uidFor(in.value)))
	c.recordWrite(key, in, call, obj, err)
}

func (c *kvClient) update(key int) {
	in := kvInput{kind: opUpdate, key: key, value: c.nextValue(), precondUID: c.precondition(key)}
	var pre *storage.Preconditions
	if in.precondUID != "" {
		pre = &storage.Preconditions{UID: &in.precondUID}
	}
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	call := c.now()
	obj, err := c.store.GuaranteedUpdate(ctx, keyName(key), pre, func(cur *object.Object) ([]byte, error) {
		return pod(key, in.value, cur.UID()), nil
	}, nil)
	c.recordWrite(key, in, call, obj, err)
}

func (c *kvClient) delete(key int) {
	in := kvInput{kind: opDelete, key: key, precondUID: c.precondition(key)}
	var pre *storage.Preconditions
	if in.precondUID != "" {
		pre = &storage.Preconditions{UID: &in.precondUID}
	}
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	call := c.now()
	obj, err := c.store.Delete(ctx, keyName(key), pre, nil)
	c.recordWrite(key, in, call, obj, err)
}

// recordWrite records a write: a success or a definite failure with its
// return time, any other failure as of unknown outcome, open forever.
func (c *kvClient) recordWrite(key int, in kvInput, call int64, obj *object.Object, err error) {
	ret := c.now()
	c.writes++
	var out kvOutput
	switch code := storage.CodeOf(err); code {
	case 0:
		out.entry = entryOf(obj)
		if obj.Key() != keyName(key) {
			c.t.Errorf("write of %s returned %s", keyName(key), obj.Key())
		}
		if in.kind == opDelete {
			c.uids[key] = ""
		} else {
			c.uids[key] = out.entry.uid
		}
		c.writesOK++
	case storage.ErrNotFound, storage.ErrAlreadyExists, storage.ErrConflict:
		out.result = map[storage.ErrorCode]outcome{
			storage.ErrNotFound: outNotFound, storage.ErrAlreadyExists: outAlreadyExists, storage.ErrConflict: outConflict,
		}[code]
		c.writesFailed++
	case storage.ErrBadRequest, storage.ErrInvalid:
		c.t.Errorf("write %s: %v", describeOp(in, out), err)
		fallthrough
	default:
		out.result = outUnknown
		ret = math.MaxInt64
		c.writesUnknown++
	}
	c.ops = append(c.ops, porcupine.Operation{ClientId: c.visID, Input: in, Call: call, Output: out, Return: ret})
	if out.result == outUnknown {
		c.visID = int(c.nextID.Add(1) - 1)
	}
}

func (c *kvClient) get(key int) {
	in := kvInput{kind: opGet, key: key}
	ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
	defer cancel()
	call := c.now()
	obj, err := c.store.Get(ctx, keyName(key), storage.GetOptions{})
	ret := c.now()
	var out kvOutput
	switch {
	case err == nil:
		out.entry = entryOf(obj)
		if obj.Key() != keyName(key) {
			c.t.Errorf("get %s returned %s", keyName(key), obj.Key())
		}
		c.uids[key] = out.entry.uid
	case storage.IsNotFound(err):
		out.result = outNotFound
		c.uids[key] = ""
	default:
		c.dropRead(err)
		return
	}
	c.reads++
	c.gets++
	c.ops = append(c.ops, porcupine.Operation{ClientId: c.visID, Input: in, Call: call, Output: out, Return: ret})
}

func (c *kvClient) list() {
	in := kvInput{kind: opList}
	ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
	defer cancel()
	call := c.now()
	list, err := c.store.GetList(ctx, "ns/", storage.ListOptions{})
	ret := c.now()
	if err != nil {
		c.dropRead(err)
		return
	}
	var out kvOutput
	for _, obj := range list.Items {
		i := -1
		for k := range numKeys {
			if obj.Key() == keyName(k) {
				i = k
			}
		}
		if i < 0 || out.list[i].value != "" {
			c.t.Errorf("list returned an unexpected or duplicate key %s", obj.Key())
			return
		}
		out.list[i] = entryOf(obj)
	}
	for k, e := range out.list {
		c.uids[k] = e.uid
	}
	c.reads++
	c.lists++
	c.ops = append(c.ops, porcupine.Operation{ClientId: c.visID, Input: in, Call: call, Output: out, Return: ret})
}

// dropRead counts a failed read; it is left out of the history (a read
// that returns nothing constrains nothing).
func (c *kvClient) dropRead(err error) {
	c.droppedReads++
	if c.dropped == nil {
		c.dropped = map[string]int{}
	}
	what := storage.CodeOf(err).String()
	if errors.Is(err, context.DeadlineExceeded) {
		what = "DeadlineExceeded"
	}
	c.dropped[what]++
}

// laggingStore wraps the etcd3 store under the cache: it counts the reads
// the cache sends to etcd, and makes the cache's watch deliver every event
// late by a random delay (keeping their order), as if the cache lagged
// behind etcd. Everything else is delegated.
type laggingStore struct {
	storage.Interface
	maxDelay time.Duration
	seed     uint64
	watches  atomic.Uint64
	// staleRevision reports etcd's current revision minus one (a bug).
	staleRevision bool
	mu            sync.Mutex
	watchers      []*laggingWatcher
	// gets and lists count reads delegated by the cache; relists count the
	// reflector's lists.
	gets, lists, relists atomic.Int64
}

func (s *laggingStore) Get(ctx context.Context, key string, opts storage.GetOptions) (*object.Object, error) {
	s.gets.Add(1)
	return s.Interface.Get(ctx, key, opts)
}

func (s *laggingStore) GetList(ctx context.Context, scope string, opts storage.ListOptions) (*storage.List, error) {
	if cacher.IsReflectorList(ctx) {
		s.relists.Add(1)
	} else {
		s.lists.Add(1)
	}
	return s.Interface.GetList(ctx, scope, opts)
}

func (s *laggingStore) CurrentResourceVersion(ctx context.Context) (uint64, error) {
	rv, err := s.Interface.CurrentResourceVersion(ctx)
	if err == nil && s.staleRevision && rv > 1 {
		rv--
	}
	return rv, err
}

func (s *laggingStore) Watch(ctx context.Context, scope string, opts storage.ListOptions) (storage.Watcher, error) {
	w, err := s.Interface.Watch(ctx, scope, opts)
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(s.seed, 1<<32+s.watches.Add(1)))
	lw := newLaggingWatcher(w, s.maxDelay, rng)
	s.mu.Lock()
	s.watchers = append(s.watchers, lw)
	s.mu.Unlock()
	return lw, nil
}

// breakWatches breaks every watch made so far, as if etcd's watch stream
// was lost: the cache must list again.
func (s *laggingStore) breakWatches() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, w := range s.watchers {
		w.fail()
	}
}

// laggingWatcher forwards a watcher's events, each no earlier than a
// random delay after it arrived and never before the previous one. fail
// breaks it as a lost etcd watch would: the events not yet delivered are
// dropped and an error event ends the stream.
type laggingWatcher struct {
	inner    storage.Watcher
	out      chan storage.Event
	stop     chan struct{}
	stopOnce sync.Once
	failc    chan struct{}
	failOnce sync.Once
	done     sync.WaitGroup
}

// delayed is an event and when to deliver it.
type delayed struct {
	ev storage.Event
	at time.Time
}

func newLaggingWatcher(inner storage.Watcher, maxDelay time.Duration, rng *rand.Rand) *laggingWatcher {
	w := &laggingWatcher{inner: inner, out: make(chan storage.Event), stop: make(chan struct{}), failc: make(chan struct{})}
	queue := make(chan delayed, 100000)
	w.done.Add(2)
	go func() { // receive: stamp each event with its delivery time
		defer w.done.Done()
		defer close(queue)
		var last time.Time
		for ev := range inner.ResultChan() {
			at := time.Now().Add(time.Duration(rng.Int64N(int64(maxDelay) + 1)))
			if at.Before(last) {
				at = last
			}
			last = at
			select {
			case queue <- delayed{ev, at}:
			case <-w.stop:
				return
			}
		}
	}()
	go func() { // deliver, in order, each at its time
		defer w.done.Done()
		defer close(w.out)
		failed := storage.Event{Type: storage.EventError, Err: &storage.Error{Code: storage.ErrUnavailable, Message: "injected watch failure"}}
		timer := time.NewTimer(0)
		defer timer.Stop()
		for {
			var d delayed
			var ok bool
			select {
			case d, ok = <-queue:
				if !ok {
					return
				}
			case <-w.failc:
				w.send(failed)
				return
			case <-w.stop:
				return
			}
			timer.Reset(time.Until(d.at))
			select {
			case <-timer.C:
			case <-w.failc:
				w.send(failed)
				return
			case <-w.stop:
				return
			}
			select {
			case w.out <- d.ev:
			case <-w.failc:
				w.send(failed)
				return
			case <-w.stop:
				return
			}
		}
	}()
	return w
}

// send delivers ev unless the watcher stops first.
func (w *laggingWatcher) send(ev storage.Event) {
	select {
	case w.out <- ev:
	case <-w.stop:
	}
}

// fail breaks the watch (see laggingWatcher).
func (w *laggingWatcher) fail() { w.failOnce.Do(func() { close(w.failc) }) }

func (w *laggingWatcher) ResultChan() <-chan storage.Event { return w.out }

// Stop ends the inner watch and the forwarding; safe to call more than
// once and concurrently.
func (w *laggingWatcher) Stop() {
	w.stopOnce.Do(func() { close(w.stop) })
	w.inner.Stop()
	w.done.Wait()
}
