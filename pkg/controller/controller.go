// Package controller runs inside the server the controllers of
// kube-controller-manager that the API's own lifecycle depends on (the
// namespace controller and its companions, the garbage collector, the
// quota controller), fed by
// the watch cache through package informer and writing to the stores
// directly, as the system itself. It also holds the plumbing its
// controllers share with package crdcontroller (apiextensions-apiserver's
// work on CustomResourceDefinitions): a work queue and its workers, and
// updates of objects decoded as JSON trees.
//
// Several servers may share one etcd. Manager's controllers (those of
// kube-controller-manager's role) must then run on one server at a time:
// the server runs them under package leaderelect (package crdcontroller's
// run on every server).
package controller

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/watchcache/watchcache/pkg/informer"
	"github.com/watchcache/watchcache/pkg/jsontree"
	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/resource"
	"github.com/watchcache/watchcache/pkg/servicenet"
	"github.com/watchcache/watchcache/pkg/storage"
	"k8s.io/client-go/util/workqueue"
	kjson "sigs.k8s.io/json"
)

// Manager is the controllers of kube-controller-manager's role, those that
// must run on one server at a time: the namespace controller (with the
// default ServiceAccount and kube-root-ca.crt of every namespace), the
// garbage collector and the quota controller.
type Manager struct {
	Registry *resource.Registry
	// RootCA is the PEM bundle published as kube-root-ca.crt.
	RootCA []byte
	// NodePorts, if not nil, is the node port allocator whose record
	// is repaired.
	NodePorts *servicenet.NodePorts
	// Controllers selects the controllers that run (--controllers; the
	// zero Selection: all). The cluster IP and node port repairs run
	// either way.
	Controllers Selection
	// QuotaResync is the quota controller's full recomputation period (0:
	// DefaultQuotaResync).
	QuotaResync time.Duration
	// RepairInterval is how often the cluster IP and node port repair
	// passes run (0: every 30 s).
	RepairInterval time.Duration
	// Others are the controllers of other packages (package
	// certificates'), run as Controllers selects them.
	Others []Named
	Log    *slog.Logger
}

// Named is a controller of kube-controller-manager's role kept in another
// package, by kube-controller-manager's name. Run runs it until ctx ends;
// it may be called again after it returned.
type Named struct {
	Name string
	Run  func(ctx context.Context)
}

// Run runs the controllers until ctx ends and returns once their workers
// have stopped. It may be called again after it returned (a leadership
// regained): each call runs controllers made anew, with no state carried
// over from the last.
func (m Manager) Run(ctx context.Context) {
	on := m.Controllers.Enabled
	namespaces := &Namespaces{Registry: m.Registry, RootCA: m.RootCA, Log: m.Log,
		NoDeletion: !on(NamespaceController), NoServiceAccount: !on(ServiceAccountController), NoRootCA: !on(RootCACertificatePublisherController)}
	var wg sync.WaitGroup
	if !namespaces.NoDeletion || !namespaces.NoServiceAccount || !namespaces.NoRootCA {
		wg.Go(func() { namespaces.Run(ctx) })
	}
	if on(GarbageCollectorController) {
		gc := &GarbageCollector{Registry: m.Registry, Log: m.Log}
		wg.Go(func() { gc.Run(ctx) })
	}
	if on(ResourceQuotaController) {
		quotas := &Quotas{Registry: m.Registry, Resync: m.QuotaResync, Log: m.Log}
		wg.Go(func() { quotas.Run(ctx) })
	}
	for _, o := range m.Others {
		if on(o.Name) {
			wg.Go(func() { o.Run(ctx) })
		}
	}
	every := cmp.Or(m.RepairInterval, repairInterval)
	wg.Go(func() { repair(ctx, "cluster IP", (&servicenet.Allocator{Registry: m.Registry}).Repair, every, m.Log) })
	if m.NodePorts != nil {
		r := &servicenet.NodePortRepair{NodePorts: m.NodePorts, Registry: m.Registry, Log: m.Log}
		wg.Go(func() { repair(ctx, "node port", r.Repair, every, m.Log) })
	}
	wg.Wait()
}

// Queue is a rate-limited work queue of keys.
type Queue[T comparable] = workqueue.TypedRateLimitingInterface[T]

// NewQueue makes a queue that shuts down when ctx ends.
func NewQueue[T comparable](ctx context.Context, name string) Queue[T] {
	q := workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedItemExponentialFailureRateLimiter[T](informer.MinBackoff, informer.MaxBackoff),
		workqueue.TypedRateLimitingQueueConfig[T]{Name: name})
	context.AfterFunc(ctx, q.ShutDown)
	return q
}

// Result is what a sync asks of the queue besides success: to be looked at
// again after a while (work that waits on others, such as finalizers).
type Result struct{ RequeueAfter time.Duration }

// Work runs sync on q's keys until q shuts down: a failed key is retried
// with backoff, a key may ask to be requeued, each key is synced by one
// worker at a time.
func Work[T comparable](ctx context.Context, q Queue[T], sync func(context.Context, T) (Result, error), log *slog.Logger) {
	for {
		key, shutdown := q.Get()
		if shutdown {
			return
		}
		res, err := sync(ctx, key)
		switch {
		case err != nil && ctx.Err() == nil:
			log.Warn("controller: retrying", "key", key, "err", err)
			q.AddRateLimited(key)
		case res.RequeueAfter > 0:
			q.Forget(key)
			q.AddAfter(key, res.RequeueAfter)
		default:
			q.Forget(key)
		}
		q.Done(key)
	}
}

// Decode decodes a stored object into a JSON tree, integers as int64.
func Decode(o *object.Object) (map[string]any, error) {
	var obj map[string]any
	err := kjson.UnmarshalCaseSensitivePreserveInts(o.JSON(), &obj)
	return obj, err
}

// ErrUnchanged ends an update that would write nothing new.
var ErrUnchanged = fmt.Errorf("unchanged")

// RemoveFromList removes the entries of list meta[field] that drop
// selects and reports whether it removed any.
func RemoveFromList(meta map[string]any, field string, drop func(any) bool) bool {
	list, _ := meta[field].([]any)
	kept := slices.DeleteFunc(slices.Clone(list), drop)
	if len(kept) == len(list) {
		return false
	}
	jsontree.SetList(meta, field, kept)
	return true
}

// storeOf is res's store in reg, or, for a resource no longer served (a
// deleted custom resource definition), a store in which nothing is found.
func storeOf(reg *resource.Registry, res *resource.Resource) storage.Interface {
	if s := reg.Store(res); s != nil {
		return s
	}
	return goneStore{}
}

// goneStore is the store of a resource no longer served: reads and writes
// find nothing (it is never watched).
type goneStore struct{ storage.Interface }

func (goneStore) Get(_ context.Context, key string, _ storage.GetOptions) (*object.Object, error) {
	return nil, storage.NewNotFound(key)
}

func (goneStore) GetList(context.Context, string, storage.ListOptions) (*storage.List, error) {
	return &storage.List{}, nil
}

func (goneStore) GuaranteedUpdate(_ context.Context, key string, _ *storage.Preconditions, _ storage.UpdateFunc, _ *object.Object) (*object.Object, error) {
	return nil, storage.NewNotFound(key)
}

func (goneStore) Delete(_ context.Context, key string, _ *storage.Preconditions, _ *object.Object) (*object.Object, error) {
	return nil, storage.NewNotFound(key)
}

// repairInterval is how often the cluster IPs and node ports are
// repaired by default.
const repairInterval = 30 * time.Second

// repair runs one of kube-apiserver's repairs (servicenet's: cluster IPs,
// node ports) at once and every repairInterval.
func repair(ctx context.Context, what string, pass func(context.Context) error, every time.Duration, log *slog.Logger) {
	for {
		if err := pass(ctx); err != nil && ctx.Err() == nil {
			log.Warn(what+" repair", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
	}
}
