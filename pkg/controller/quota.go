// kube-controller-manager's resourcequota-controller: each ResourceQuota's
// status.hard kept equal to its spec.hard and its status.used recomputed
// from the watch cache.

package controller

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/watchcache/watchcache/pkg/informer"
	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/quota"
	"github.com/watchcache/watchcache/pkg/resource"
	"github.com/watchcache/watchcache/pkg/storage"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// DefaultQuotaResync is kube-controller-manager's
// --resource-quota-sync-period: how often every quota is recomputed.
const DefaultQuotaResync = 5 * time.Minute

// quotaWorkers is kube-controller-manager's
// --concurrent-resource-quota-syncs.
const quotaWorkers = 5

// Quotas is kube-controller-manager's resourcequota-controller. A quota is
// synced (status.hard set to spec.hard, status.used recomputed by package
// quota from the objects in the watch cache, written if it changed, with
// the quota's resourceVersion as precondition) when it is created, when
// its spec.hard differs from its status, when an object it counts is
// deleted or changes its usage (a pod that ended, a Service's type), and
// every Resync. Usage that quota admission reserved for writes that never
// happened is so given back.
//
// As in kube-controller-manager, a recomputation that runs while a write
// has reserved usage but is not yet stored may count without it (the
// reservation is lost until the next sync sees the object); the Resync
// repairs it.
type Quotas struct {
	Registry *resource.Registry
	// Resync is how often every quota is recomputed (0:
	// DefaultQuotaResync).
	Resync time.Duration
	Log    *slog.Logger

	quotas *resource.Resource
	q      Queue[string] // "namespace/name" of quotas

	mu       sync.Mutex
	watching map[*resource.Resource]context.CancelFunc
	// states are the quota States of the objects whose updates may change
	// their usage (pods, Services, claims), by resource and key, kept only
	// for the objects of namespaces that have a quota: an update elsewhere
	// has no quota to sync, and an object without a State counts as
	// changed on its next update (the quotas created since were synced,
	// from the same cache, when they were created).
	states map[*resource.Resource]map[string]string
	// quotaNames are the names of the quotas of each namespace that has
	// one, as the quotas' watch has them.
	quotaNames map[string]map[string]bool
}

// Run runs the controller until ctx ends.
func (c *Quotas) Run(ctx context.Context) {
	c.quotas = c.Registry.Lookup("", "v1", "resourcequotas")
	c.q = NewQueue[string](ctx, "resourcequota")
	c.watching = map[*resource.Resource]context.CancelFunc{}
	c.states = map[*resource.Resource]map[string]string{}
	c.quotaNames = map[string]map[string]bool{}
	go informer.Run(ctx, storeOf(c.Registry, c.quotas), informer.Handler{
		Replace: func(items []*object.Object, _ uint64) {
			c.mu.Lock()
			clear(c.quotaNames)
			for _, o := range items {
				c.noteQuota(o, true)
			}
			c.mu.Unlock()
			for _, o := range items {
				c.q.Add(o.Namespace() + "/" + o.Name())
			}
		},
		Apply: func(ev storage.Event) {
			if ev.Type != storage.EventBookmark {
				c.mu.Lock()
				c.noteQuota(ev.Object, ev.Type != storage.EventDeleted)
				c.mu.Unlock()
			}
			if ev.Type == storage.EventAdded || ev.Type == storage.EventModified && c.intentNotCaptured(ev.Object) {
				c.q.Add(ev.Object.Namespace() + "/" + ev.Object.Name())
			}
		},
	}, "resourcequotas for the quota controller", c.Log)
	followResources(ctx, c.Registry, c.watch, c.unwatch)
	var wg sync.WaitGroup
	for range quotaWorkers {
		wg.Go(func() { Work(ctx, c.q, c.sync, c.Log) })
	}
	resync := c.Resync
	if resync <= 0 {
		resync = DefaultQuotaResync
	}
	for {
		select {
		case <-ctx.Done():
			wg.Wait()
			return
		case <-time.After(resync):
			c.replenish(ctx, "", nil)
		}
	}
}

// noteQuota records that quota o exists or, if !exists, no longer does.
// c.mu is held.
func (c *Quotas) noteQuota(o *object.Object, exists bool) {
	ns, name := o.Namespace(), o.Name()
	names := c.quotaNames[ns]
	switch {
	case exists && names == nil:
		c.quotaNames[ns] = map[string]bool{name: true}
	case exists:
		names[name] = true
	case names != nil:
		delete(names, name)
		if len(names) == 0 {
			delete(c.quotaNames, ns)
		}
	}
}

// hasQuota says whether namespace ns has a quota. c.mu is held.
func (c *Quotas) hasQuota(ns string) bool { return len(c.quotaNames[ns]) > 0 }

// intentNotCaptured says whether a quota's status lags its spec (an
// update of spec.hard); the status writes of this controller and of quota
// admission are not worth a sync.
func (c *Quotas) intentNotCaptured(o *object.Object) bool {
	var q corev1.ResourceQuota
	if err := json.Unmarshal(o.JSON(), &q); err != nil {
		return false
	}
	return !quota.Equal(q.Spec.Hard, q.Status.Hard) || q.Status.Used == nil
}

// watch starts the informer of a namespaced resource with a store of its
// own whose objects quota counts, once: its deletes, and the updates that
// change an object's State, sync the quotas of the object's namespace
// that count the resource; a re-list syncs all of them.
func (c *Quotas) watch(ctx context.Context, res *resource.Resource) {
	e := quota.For(schema.GroupResource{Group: res.Group, Resource: res.Plural})
	store := c.Registry.Store(res)
	c.mu.Lock()
	defer c.mu.Unlock()
	if e == nil || !res.OwnStorage() || !res.Namespaced || store == nil || c.watching[res] != nil {
		return
	}
	ctx, cancel := context.WithCancel(ctx)
	c.watching[res] = cancel
	state := func(o *object.Object) string {
		obj, err := e.Decode(o.JSON())
		if err != nil {
			return ""
		}
		return e.State(obj, time.Now())
	}
	go informer.Run(ctx, store, informer.Handler{
		Replace: func(items []*object.Object, _ uint64) {
			if e.UsageChangesOnUpdate() {
				c.mu.Lock()
				counted := slices.DeleteFunc(slices.Clone(items), func(o *object.Object) bool { return !c.hasQuota(o.Namespace()) })
				c.mu.Unlock()
				states := make(map[string]string, len(counted))
				for _, o := range counted {
					states[o.Key()] = state(o)
				}
				c.mu.Lock()
				c.states[res] = states
				c.mu.Unlock()
			}
			c.replenish(ctx, "", e)
		},
		Apply: func(ev storage.Event) {
			if ev.Type == storage.EventBookmark {
				return
			}
			changed := ev.Type == storage.EventDeleted
			if e.UsageChangesOnUpdate() {
				c.mu.Lock()
				counted := c.hasQuota(ev.Object.Namespace())
				c.mu.Unlock()
				var s string
				if counted && ev.Type != storage.EventDeleted {
					s = state(ev.Object) // decodes the object: only where a quota may count it
				}
				c.mu.Lock()
				states := c.states[res]
				changed = changed || counted && ev.Type == storage.EventModified && states[ev.Object.Key()] != s
				if s == "" {
					delete(states, ev.Object.Key())
				} else {
					states[ev.Object.Key()] = s
				}
				c.mu.Unlock()
			}
			if changed {
				c.replenish(ctx, ev.Object.Namespace(), e)
			}
		},
	}, res.String()+" for the quota controller", c.Log)
}

// unwatch stops the informer of a resource no longer served.
func (c *Quotas) unwatch(res *resource.Resource) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cancel := c.watching[res]; cancel != nil {
		cancel()
		delete(c.watching, res)
		delete(c.states, res)
	}
}

// replenish queues the quotas of namespace ns (all: "") that count what e
// measures (nil: every quota), as the watch cache has them.
func (c *Quotas) replenish(ctx context.Context, ns string, e *quota.Evaluator) {
	list, err := storeOf(c.Registry, c.quotas).GetList(ctx, c.quotas.Scope(ns), storage.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return // the next event or resync tries again
	}
	for _, o := range list.Items {
		if e != nil {
			var q corev1.ResourceQuota
			if json.Unmarshal(o.JSON(), &q) != nil || len(e.Matching(quota.Names(q.Status.Hard))) == 0 {
				continue
			}
		}
		c.q.Add(o.Namespace() + "/" + o.Name())
	}
}

// sync brings quota key's status to its spec and the usage in its
// namespace, as kube-controller-manager's syncResourceQuota: usage that
// no evaluator measures keeps its last value, names no longer hard are
// dropped.
func (c *Quotas) sync(ctx context.Context, key string) (Result, error) {
	store := storeOf(c.Registry, c.quotas)
	cur, err := store.Get(ctx, key, storage.GetOptions{ResourceVersion: "0"})
	if storage.IsNotFound(err) {
		return Result{}, nil
	}
	if err != nil {
		return Result{}, err
	}
	var q corev1.ResourceQuota
	if err := json.Unmarshal(cur.JSON(), &q); err != nil {
		return Result{}, nil // not a quota kube could read either
	}
	dirty := !quota.Equal(q.Spec.Hard, q.Status.Hard) || q.Status.Hard == nil || q.Status.Used == nil
	used := quota.Add(corev1.ResourceList{}, q.Status.Used)
	hard := quota.Add(corev1.ResourceList{}, q.Spec.Hard)
	measured, usageErr := quota.Used(&q, c.evaluators(q.Spec.Hard), func(gr schema.GroupResource) ([]*object.Object, error) {
		res := c.served(gr)
		if res == nil {
			return nil, nil
		}
		list, err := storeOf(c.Registry, res).GetList(ctx, res.Scope(q.Namespace), storage.ListOptions{ResourceVersion: "0"})
		if err != nil {
			return nil, err
		}
		return list.Items, nil
	}, time.Now())
	for n, v := range measured {
		used[n] = v
	}
	used = quota.Mask(used, quota.Names(hard))
	if !dirty && quota.Equal(used, q.Status.Used) {
		return Result{}, usageErr
	}
	status := map[string]any{"hard": quantities(hard), "used": quantities(used)}
	rv := storage.FormatResourceVersion(cur.ResourceVersion())
	_, err = store.GuaranteedUpdate(ctx, key, &storage.Preconditions{ResourceVersion: &rv}, func(cur *object.Object) ([]byte, error) {
		obj, err := Decode(cur)
		if err != nil {
			return nil, err
		}
		obj["status"] = status
		return c.quotas.Encode(obj)
	}, cur)
	if err == nil {
		err = usageErr
	}
	return Result{}, err
}

// quantities is list as a JSON tree.
func quantities(list corev1.ResourceList) map[string]any {
	out := make(map[string]any, len(list))
	for n, v := range list {
		out[string(n)] = v.String()
	}
	return out
}

// evaluators are those the controller measures a quota of hard with:
// kube-controller-manager's static ones, and the object counts of the
// served resources that hard names.
func (c *Quotas) evaluators(hard corev1.ResourceList) []*quota.Evaluator {
	var out []*quota.Evaluator
	seen := map[schema.GroupResource]bool{}
	add := func(gr schema.GroupResource) {
		if e := quota.For(gr); e != nil && !seen[gr] {
			seen[gr] = true
			out = append(out, e)
		}
	}
	for _, gr := range quota.Evaluated {
		add(gr)
	}
	for n := range hard {
		if gr, ok := quota.CountedResource(n); ok && c.served(gr) != nil {
			add(gr)
		}
	}
	return out
}

// served is the resource gr's objects are stored as; nil if none is served.
func (c *Quotas) served(gr schema.GroupResource) *resource.Resource {
	for _, r := range c.Registry.All() {
		if r.Group == gr.Group && r.Plural == gr.Resource && r.OwnStorage() && r.Namespaced {
			return r
		}
	}
	return nil
}
