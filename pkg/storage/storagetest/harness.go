// Package storagetest is the conformance suite of storage.Interface: every
// row of the list and watch tables of KEP-2340 (docs/design.md) and every
// rule of KEP-365 (limit, continue, 410, token validation), run against any
// implementation with a real embedded etcd behind it.
//
// An implementation's test package calls Main from TestMain and Run from a
// test:
//
//	func TestMain(m *testing.M) { storagetest.Main(m) }
//	func TestConformance(t *testing.T) { storagetest.Run(t, newStore) }
//
// Each test gets its own key prefix in the package's one etcd, so tests do
// not see each other's objects. Tests are sequential: compaction is
// etcd-wide, and a test that compacts must not cut another's history.
package storagetest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/watchcache/watchcache/pkg/etcdembed"
	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/storage"
	"github.com/watchcache/watchcache/pkg/storage/etcd3"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// ProgressNotifyInterval is the embedded etcd's periodic progress
// notification interval in these tests (etcd's minimum is 100ms).
const ProgressNotifyInterval = 200 * time.Millisecond

var (
	etcdServer *etcdembed.Server
	etcdClient *clientv3.Client
	prefixSeq  atomic.Int64
)

// Main starts the package's embedded etcd, runs the tests and stops it.
func Main(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "storagetest-etcd-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	etcdServer, err = etcdembed.Start(etcdembed.Config{DataDir: dir, UnsafeNoFsync: true, ProgressNotifyInterval: ProgressNotifyInterval})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer etcdServer.Close()
	etcdClient, err = etcdServer.NewClient()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer etcdClient.Close()
	return m.Run()
}

// Client is the package's etcd client (valid after Main started etcd).
func Client() *clientv3.Client { return etcdClient }

// PodSchema is the schema of the suite's objects: pod-like, with
// spec.nodeName and status.phase selectable.
var PodSchema = object.MustSchema("spec.nodeName", "status.phase")

// NewStoreFunc builds the implementation under test on top of an etcd3
// store configuration (the cacher wraps an etcd3 store; etcd3 uses it as
// is). The implementation is stopped by t.Cleanup. Its feature gates are
// cfg's (DisableShardedListAndWatch): a wrapper takes them from there.
type NewStoreFunc func(t *testing.T, cfg etcd3.Config) storage.Interface

// NewEtcd3 is the NewStoreFunc of the etcd3 store itself.
func NewEtcd3(t *testing.T, cfg etcd3.Config) storage.Interface { return etcd3.New(cfg) }

// env is one test's store and the means to look behind it.
type env struct {
	t      *testing.T
	ctx    context.Context
	store  storage.Interface
	prefix string // the resource's etcd prefix
	client *clientv3.Client
	hist   *history
	// newStore and cfg are what built store (see storeWith).
	newStore NewStoreFunc
	cfg      etcd3.Config
}

// ChunkKeys is the etcd3 stores' ListChunkKeys in the suite: lists
// without a limit span several chunks even over the small fixtures.
const ChunkKeys = 3

// newEnv gives a test a fresh resource prefix and a store over it.
func newEnv(t *testing.T, newStore NewStoreFunc) *env {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	name := strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())
	prefix := fmt.Sprintf("/storagetest/%d-%s/pods", prefixSeq.Add(1), name)
	cfg := etcd3.Config{Client: etcdClient, Prefix: prefix, Schema: PodSchema, ListChunkKeys: ChunkKeys}
	return &env{t: t, ctx: ctx, store: newStore(t, cfg), prefix: prefix, client: etcdClient, hist: newHistory(),
		newStore: newStore, cfg: cfg}
}

// storeWith builds another store of the implementation under test over
// the test's objects, with its configuration changed by change.
func (e *env) storeWith(change func(*etcd3.Config)) storage.Interface {
	cfg := e.cfg
	change(&cfg)
	return e.newStore(e.t, cfg)
}

// Run runs the whole suite against the implementation newStore builds.
func Run(t *testing.T, newStore NewStoreFunc) {
	for _, tc := range suite {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, newEnv(t, newStore)) })
	}
}

// testCase is one test of the suite.
type testCase struct {
	name string
	fn   func(t *testing.T, e *env)
}

// suite lists every test; files add theirs with register.
var suite []testCase

func register(name string, fn func(t *testing.T, e *env)) struct{} {
	suite = append(suite, testCase{name, fn})
	return struct{}{}
}
