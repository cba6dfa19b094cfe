// The garbage collector (kube-controller-manager's garbagecollector): the
// owner graph fed by informers, deleting objects whose owners are gone, and
// orphan and foreground deletion of dependents.

package controller

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/watchcache/watchcache/pkg/deletion"
	"github.com/watchcache/watchcache/pkg/informer"
	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/resource"
	"github.com/watchcache/watchcache/pkg/storage"
	"github.com/watchcache/watchcache/pkg/strategy"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// gcWorkers is how many objects the garbage collector works on at once.
const gcWorkers = 2

// blockedWait is how long an owner in foreground deletion waits before
// looking at its dependents again (their deletions normally wake it
// sooner).
const blockedWait = 5 * time.Second

// GarbageCollector is kube-controller-manager's garbage collector, fed by
// every resource's watch cache: it keeps a graph of ownerReferences in
// memory (only objects that have owners are in it) and
//   - deletes an object all of whose owners are gone (background deletion),
//   - removes references to owners that are gone while another owner is
//     still there,
//   - orphans the dependents of an object deleted with the orphan
//     finalizer (removes their references to it), then removes that
//     finalizer,
//   - deletes the dependents of an object deleted with the
//     foregroundDeletion finalizer and removes that finalizer once no
//     dependent with blockOwnerDeletion remains.
//
// An owner counts as gone only when a consistent read does not find it
// (or finds another uid): the cache may not have seen a new owner yet.
// Owners of kinds the server does not serve, and namespaced owners of
// cluster-scoped objects, are never gone (such objects are not collected,
// as in Kubernetes).
type GarbageCollector struct {
	// Registry resolves ownerReferences' kinds.
	Registry *resource.Registry
	Log      *slog.Logger

	q Queue[objectRef]

	mu sync.Mutex
	// dependents are the objects that name an owner, by its uid.
	dependents map[string]map[objectRef]bool
	// owners are the ownerReferences of the objects in dependents.
	owners map[objectRef][]metav1.OwnerReference
	// watching holds the informers' cancels, by resource.
	watching map[*resource.Resource]context.CancelFunc
}

// objectRef names a stored object.
type objectRef struct {
	res *resource.Resource
	key string
}

// Run runs the garbage collector until ctx ends.
func (gc *GarbageCollector) Run(ctx context.Context) {
	gc.dependents = map[string]map[objectRef]bool{}
	gc.owners = map[objectRef][]metav1.OwnerReference{}
	gc.watching = map[*resource.Resource]context.CancelFunc{}
	gc.q = NewQueue[objectRef](ctx, "garbage-collector")
	followResources(ctx, gc.Registry, gc.watch, gc.unwatch)
	var wg sync.WaitGroup
	for range gcWorkers {
		wg.Go(func() { Work(ctx, gc.q, gc.sync, gc.Log) })
	}
	wg.Wait()
}

// watch starts the informer of a resource with a store of its own, once.
func (gc *GarbageCollector) watch(ctx context.Context, res *resource.Resource) {
	store := gc.Registry.Store(res)
	gc.mu.Lock()
	defer gc.mu.Unlock()
	if !res.OwnStorage() || store == nil || gc.watching[res] != nil {
		return
	}
	ctx, cancel := context.WithCancel(ctx)
	gc.watching[res] = cancel
	go informer.Run(ctx, store, informer.Handler{
		Replace: func(items []*object.Object, _ uint64) { gc.replace(res, items) },
		Apply:   func(ev storage.Event) { gc.apply(res, ev) },
	}, res.String()+" for the garbage collector", gc.Log)
}

// unwatch stops the informer of a resource no longer served and forgets
// its objects.
func (gc *GarbageCollector) unwatch(res *resource.Resource) {
	gc.mu.Lock()
	defer gc.mu.Unlock()
	if cancel := gc.watching[res]; cancel != nil {
		cancel()
		delete(gc.watching, res)
	}
	for ref := range gc.owners {
		if ref.res == res {
			gc.setOwnersLocked(ref, "", nil)
		}
	}
}

// store is res's store; a resource no longer served finds nothing.
func (gc *GarbageCollector) store(res *resource.Resource) storage.Interface {
	return storeOf(gc.Registry, res)
}

// gcMeta is the part of an object's metadata the garbage collector reads.
type gcMeta struct {
	UID               string                  `json:"uid"`
	DeletionTimestamp *string                 `json:"deletionTimestamp"`
	Finalizers        []string                `json:"finalizers"`
	OwnerReferences   []metav1.OwnerReference `json:"ownerReferences"`
}

// readGCMeta reads obj's metadata; interesting says whether the garbage
// collector has anything to do with obj (owners or its finalizers).
func readGCMeta(obj *object.Object) (m gcMeta, interesting bool) {
	raw := obj.AppendMetadata(nil)
	if !bytes.Contains(raw, []byte(`"ownerReferences"`)) && !bytes.Contains(raw, []byte(`"`+strategy.FinalizerOrphan+`"`)) &&
		!bytes.Contains(raw, []byte(`"`+strategy.FinalizerForeground+`"`)) {
		return m, false
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return m, false
	}
	return m, len(m.OwnerReferences) > 0 || m.gcFinalizer() != ""
}

// gcFinalizer is the garbage collector's finalizer an object being
// deleted has, if any.
func (m gcMeta) gcFinalizer() string {
	if m.DeletionTimestamp == nil {
		return ""
	}
	for _, f := range m.Finalizers {
		if f == strategy.FinalizerOrphan || f == strategy.FinalizerForeground {
			return f
		}
	}
	return ""
}

// replace takes in a whole list of res.
func (gc *GarbageCollector) replace(res *resource.Resource, items []*object.Object) {
	gc.mu.Lock()
	for ref := range gc.owners {
		if ref.res == res {
			gc.setOwnersLocked(ref, "", nil)
		}
	}
	gc.mu.Unlock()
	for _, o := range items {
		if m, ok := readGCMeta(o); ok {
			ref := objectRef{res, o.Key()}
			gc.mu.Lock()
			gc.setOwnersLocked(ref, m.UID, m.OwnerReferences)
			gc.mu.Unlock()
			gc.q.Add(ref)
		}
	}
}

// apply takes in one event of res.
func (gc *GarbageCollector) apply(res *resource.Resource, ev storage.Event) {
	if ev.Type == storage.EventBookmark {
		return
	}
	ref := objectRef{res, ev.Object.Key()}
	m, interesting := readGCMeta(ev.Object)
	gc.mu.Lock()
	defer gc.mu.Unlock()
	if ev.Type == storage.EventDeleted {
		// Its dependents may now be orphans, and owners in foreground
		// deletion may be waiting for it.
		for dep := range gc.dependents[ev.Object.UID()] {
			gc.q.Add(dep)
		}
		for _, o := range gc.owners[ref] {
			if owner, ok := gc.resolve(ev.Object.Namespace(), o); ok {
				gc.q.Add(owner)
			}
		}
		gc.setOwnersLocked(ref, "", nil)
		return
	}
	changed := !reflect.DeepEqual(gc.owners[ref], m.OwnerReferences) // their pointer fields compare by value
	if changed {
		// An owner in foreground deletion may no longer wait for it.
		for _, o := range gc.owners[ref] {
			if owner, ok := gc.resolve(ev.Object.Namespace(), o); ok {
				gc.q.Add(owner)
			}
		}
	}
	gc.setOwnersLocked(ref, m.UID, m.OwnerReferences)
	if ev.Type == storage.EventAdded && interesting || changed || m.gcFinalizer() != "" {
		gc.q.Add(ref)
	}
}

// setOwnersLocked records ref's owner references (none: ref leaves the
// graph).
func (gc *GarbageCollector) setOwnersLocked(ref objectRef, uid string, owners []metav1.OwnerReference) {
	for _, o := range gc.owners[ref] {
		delete(gc.dependents[string(o.UID)], ref)
		if len(gc.dependents[string(o.UID)]) == 0 {
			delete(gc.dependents, string(o.UID))
		}
	}
	delete(gc.owners, ref)
	if len(owners) == 0 {
		return
	}
	gc.owners[ref] = owners
	for _, o := range owners {
		if gc.dependents[string(o.UID)] == nil {
			gc.dependents[string(o.UID)] = map[objectRef]bool{}
		}
		gc.dependents[string(o.UID)][ref] = true
	}
}

// resolve finds the object an owner reference of an object in namespace
// ns names; false if it cannot name one here (unknown kind, or a
// namespaced owner of a cluster-scoped object).
func (gc *GarbageCollector) resolve(ns string, o metav1.OwnerReference) (objectRef, bool) {
	group, _, _ := strings.Cut(o.APIVersion, "/")
	if !strings.Contains(o.APIVersion, "/") {
		group = ""
	}
	res := gc.Registry.ByKind(group, o.Kind)
	if res == nil || !res.Stored() || res.Namespaced && ns == "" {
		return objectRef{}, false
	}
	if !res.Namespaced {
		ns = ""
	}
	return objectRef{res, res.Key(ns, o.Name)}, true
}

// sync does what the garbage collector must for one object.
func (gc *GarbageCollector) sync(ctx context.Context, ref objectRef) (Result, error) {
	obj, err := gc.store(ref.res).Get(ctx, ref.key, storage.GetOptions{ResourceVersion: "0"})
	if storage.CodeOf(err) == storage.ErrNotFound {
		return Result{}, nil
	}
	if err != nil {
		return Result{}, err
	}
	m, _ := readGCMeta(obj)
	switch m.gcFinalizer() {
	case strategy.FinalizerOrphan:
		return Result{}, gc.orphanDependents(ctx, ref, obj)
	case strategy.FinalizerForeground:
		return gc.deleteDependentsFirst(ctx, ref, obj)
	}
	if len(m.OwnerReferences) == 0 || m.DeletionTimestamp != nil {
		return Result{}, nil
	}
	return Result{}, gc.checkOwners(ctx, ref, obj, m)
}

// ownerState is what became of an object's owner.
type ownerState int

const (
	ownerThere   ownerState = iota
	ownerGone               // not found, or another object of its name
	ownerWaiting            // being deleted in the foreground
)

// checkOwners deletes an object whose owners are all gone or waiting for
// their dependents to go, and removes references to such owners from an
// object that still has another owner.
func (gc *GarbageCollector) checkOwners(ctx context.Context, ref objectRef, obj *object.Object, m gcMeta) error {
	var there, waiting int
	stale := map[string]bool{}
	for _, o := range m.OwnerReferences {
		state, err := gc.ownerStateOf(ctx, obj.Namespace(), o)
		if err != nil {
			return err
		}
		switch state {
		case ownerThere:
			there++
		case ownerWaiting:
			waiting++
			stale[string(o.UID)] = true
		default:
			stale[string(o.UID)] = true
		}
	}
	switch {
	case there > 0 && len(stale) == 0:
		return nil
	case there > 0:
		return gc.removeOwnerReferences(ctx, ref, obj.UID(), stale)
	}
	policy := metav1.DeletePropagationBackground
	switch {
	case waiting > 0 && gc.hasDependents(obj.UID()):
		policy = metav1.DeletePropagationForeground
	case slices.Contains(m.Finalizers, strategy.FinalizerOrphan):
		policy = metav1.DeletePropagationOrphan
	case slices.Contains(m.Finalizers, strategy.FinalizerForeground):
		policy = metav1.DeletePropagationForeground
	}
	gc.Log.Debug("garbage collector: deleting an object whose owners are gone", "resource", ref.res.String(), "key", ref.key, "propagation", policy)
	return gc.delete(ctx, ref, obj.UID(), policy)
}

// ownerStateOf looks an owner up: in the cache first, and consistently
// before calling it gone.
func (gc *GarbageCollector) ownerStateOf(ctx context.Context, ns string, o metav1.OwnerReference) (ownerState, error) {
	ref, ok := gc.resolve(ns, o)
	if !ok {
		return ownerThere, nil // never collected on this reference's account
	}
	store := gc.store(ref.res)
	owner, err := store.Get(ctx, ref.key, storage.GetOptions{ResourceVersion: "0"})
	if storage.CodeOf(err) == storage.ErrNotFound || err == nil && owner.UID() != string(o.UID) {
		owner, err = store.Get(ctx, ref.key, storage.GetOptions{})
	}
	switch {
	case storage.CodeOf(err) == storage.ErrNotFound:
		return ownerGone, nil
	case err != nil:
		return 0, err
	case owner.UID() != string(o.UID):
		return ownerGone, nil
	}
	if m, _ := readGCMeta(owner); m.gcFinalizer() == strategy.FinalizerForeground {
		return ownerWaiting, nil
	}
	return ownerThere, nil
}

func (gc *GarbageCollector) hasDependents(uid string) bool {
	gc.mu.Lock()
	defer gc.mu.Unlock()
	return len(gc.dependents[uid]) > 0
}

// dependentsOf lists the graph's dependents of uid, each with whether its
// reference blocks the owner's deletion.
func (gc *GarbageCollector) dependentsOf(uid string) map[objectRef]bool {
	gc.mu.Lock()
	defer gc.mu.Unlock()
	out := map[objectRef]bool{}
	for dep := range gc.dependents[uid] {
		for _, o := range gc.owners[dep] {
			if string(o.UID) == uid {
				out[dep] = out[dep] || o.BlockOwnerDeletion != nil && *o.BlockOwnerDeletion
			}
		}
	}
	return out
}

// delete deletes an object (if it is still the one of uid) with a
// propagation policy.
func (gc *GarbageCollector) delete(ctx context.Context, ref objectRef, uid string, policy metav1.DeletionPropagation) error {
	_, err := deletion.Delete(ctx, ref.res, gc.store(ref.res), ref.key, &storage.Preconditions{UID: &uid},
		strategy.Deletion{Propagation: &policy, Now: time.Now()}, nil)
	if storage.CodeOf(err) == storage.ErrNotFound || storage.CodeOf(err) == storage.ErrConflict {
		return nil // gone, or another object now: its own events bring it back
	}
	return err
}

// removeOwnerReferences removes the references to the owners of uids
// from an object.
func (gc *GarbageCollector) removeOwnerReferences(ctx context.Context, ref objectRef, uid string, uids map[string]bool) error {
	return gc.update(ctx, ref, uid, func(meta map[string]any) bool {
		return RemoveFromList(meta, "ownerReferences", func(r any) bool {
			m, _ := r.(map[string]any)
			uid, _ := m["uid"].(string)
			return uids[uid]
		})
	})
}

// removeFinalizer removes one of metadata.finalizers from an object being
// deleted, which goes if that was its last.
func (gc *GarbageCollector) removeFinalizer(ctx context.Context, ref objectRef, uid, finalizer string) error {
	return gc.update(ctx, ref, uid, func(meta map[string]any) bool {
		return RemoveFromList(meta, "finalizers", func(f any) bool { return f == finalizer })
	})
}

// update changes an object's metadata with change (which reports whether
// it changed anything), if the object is still the one of uid, and
// removes it if it was being deleted and lost its last finalizer.
func (gc *GarbageCollector) update(ctx context.Context, ref objectRef, uid string, change func(meta map[string]any) bool) error {
	store := gc.store(ref.res)
	updated, err := store.GuaranteedUpdate(ctx, ref.key, &storage.Preconditions{UID: &uid}, func(cur *object.Object) ([]byte, error) {
		obj, err := Decode(cur)
		if err != nil {
			return nil, err
		}
		meta, _ := obj["metadata"].(map[string]any)
		if meta == nil || !change(meta) {
			return nil, ErrUnchanged
		}
		delete(meta, "resourceVersion")
		return ref.res.Encode(obj)
	}, nil)
	switch {
	case err == ErrUnchanged, storage.CodeOf(err) == storage.ErrNotFound, storage.CodeOf(err) == storage.ErrConflict:
		return nil
	case err != nil:
		return err
	}
	_, err = deletion.FinishUpdate(ctx, ref.res, store, updated)
	return err
}

// orphanDependents removes the references to an object deleted with the
// orphan finalizer from its dependents, then the finalizer.
func (gc *GarbageCollector) orphanDependents(ctx context.Context, ref objectRef, obj *object.Object) error {
	uid := obj.UID()
	for dep := range gc.dependentsOf(uid) {
		depObj, err := gc.store(dep.res).Get(ctx, dep.key, storage.GetOptions{ResourceVersion: "0"})
		if storage.CodeOf(err) == storage.ErrNotFound {
			continue
		}
		if err != nil {
			return err
		}
		if err := gc.removeOwnerReferences(ctx, dep, depObj.UID(), map[string]bool{uid: true}); err != nil {
			return err
		}
	}
	return gc.removeFinalizer(ctx, ref, uid, strategy.FinalizerOrphan)
}

// deleteDependentsFirst deletes the dependents of an object deleted with
// the foregroundDeletion finalizer and removes that finalizer once no
// dependent that blocks its deletion is left.
func (gc *GarbageCollector) deleteDependentsFirst(ctx context.Context, ref objectRef, obj *object.Object) (Result, error) {
	uid := obj.UID()
	blocked := false
	for dep, blocking := range gc.dependentsOf(uid) {
		depObj, err := gc.store(dep.res).Get(ctx, dep.key, storage.GetOptions{ResourceVersion: "0"})
		if storage.CodeOf(err) == storage.ErrNotFound {
			continue
		}
		if err != nil {
			return Result{}, err
		}
		blocked = blocked || blocking
		if m, _ := readGCMeta(depObj); m.DeletionTimestamp == nil {
			gc.q.Add(dep) // its owners decide: it goes unless another owner keeps it
		}
	}
	if blocked {
		return Result{RequeueAfter: blockedWait}, nil
	}
	return Result{}, gc.removeFinalizer(ctx, ref, uid, strategy.FinalizerForeground)
}

// followResources calls watch for every resource registry serves, now and
// as they are added, and unwatch for those removed, until ctx ends. The
// subscription outlives ctx (the registry has no way to cancel one): once
// ctx ends it does nothing.
func followResources(ctx context.Context, registry *resource.Registry, watch func(context.Context, *resource.Resource), unwatch func(*resource.Resource)) {
	registry.OnChange(func(added, removed []*resource.Resource) {
		if ctx.Err() != nil {
			return
		}
		for _, res := range added {
			watch(ctx, res)
		}
		for _, res := range removed {
			unwatch(res)
		}
	})
	for _, res := range registry.All() {
		watch(ctx, res)
	}
}
