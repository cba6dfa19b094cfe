// kube-controller-manager's namespace work: an active namespace's default
// ServiceAccount and kube-root-ca.crt ConfigMap; a terminating namespace's
// content deleted, its deletion conditions, and the kubernetes finalizer
// removed once it is empty.

package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/watchcache/watchcache/pkg/deletion"
	"github.com/watchcache/watchcache/pkg/informer"
	"github.com/watchcache/watchcache/pkg/jsontree"
	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/resource"
	"github.com/watchcache/watchcache/pkg/storage"
	"github.com/watchcache/watchcache/pkg/strategy"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
)

// What every active namespace holds, as kube-controller-manager's
// serviceaccounts-controller and root-ca-certificate-publisher create it.
const (
	defaultServiceAccount = "default"
	rootCAConfigMap       = "kube-root-ca.crt"
	rootCAKey             = "ca.crt"
	rootCADescription     = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints " +
		"such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters."
)

// contentWait is how long a terminating namespace whose content is held by
// finalizers waits before the next look.
const contentWait = time.Second

// deletionWorkers is how many terminating namespaces are emptied at once
// (kube-controller-manager's --concurrent-namespace-syncs). A deletion
// pass lists every resource; the quick work of active namespaces has a
// queue and worker of its own, so that a new namespace gets its
// ServiceAccount and kube-root-ca.crt at once while others are emptied.
const deletionWorkers = 10

// Namespaces is kube-controller-manager's namespace work: an active
// namespace gets its default ServiceAccount and its kube-root-ca.crt
// ConfigMap (recreated when deleted, corrected when changed); a namespace
// being deleted has its content deleted, its deletion conditions kept in
// its status, and, once nothing is left, the kubernetes finalizer removed,
// so that it goes.
//
// Deliberate difference: pods are deleted with grace period 0, since no
// kubelet here would confirm a graceful end.
type Namespaces struct {
	// Registry lists the resources whose content a namespace holds.
	Registry *resource.Registry
	// RootCA is the PEM bundle published as kube-root-ca.crt.
	RootCA []byte
	// NoDeletion, NoServiceAccount and NoRootCA leave out a part of the
	// work, as kube-controller-manager's --controllers leaves out its
	// namespace-controller (a terminating namespace is then left as it
	// is), serviceaccount-controller or
	// root-ca-certificate-publisher-controller.
	NoDeletion, NoServiceAccount, NoRootCA bool
	Log                                    *slog.Logger

	namespaces, serviceAccounts, configMaps *resource.Resource

	// terminating queues the namespaces being deleted.
	terminating Queue[string]

	mu    sync.Mutex
	known map[string]bool // namespaces seen by the informer
}

// Run runs the controller until ctx ends.
func (c *Namespaces) Run(ctx context.Context) {
	c.namespaces = c.Registry.Lookup("", "v1", "namespaces")
	c.serviceAccounts = c.Registry.Lookup("", "v1", "serviceaccounts")
	c.configMaps = c.Registry.Lookup("", "v1", "configmaps")
	c.known = map[string]bool{}
	q := NewQueue[string](ctx, "namespace")
	go informer.Run(ctx, c.store(c.namespaces), informer.Handler{
		Replace: func(items []*object.Object, _ uint64) {
			c.mu.Lock()
			c.known = map[string]bool{}
			for _, o := range items {
				c.known[o.Name()] = true
				q.Add(o.Name())
			}
			c.mu.Unlock()
		},
		Apply: func(ev storage.Event) {
			if ev.Type == storage.EventBookmark {
				return
			}
			c.mu.Lock()
			if ev.Type == storage.EventDeleted {
				delete(c.known, ev.Object.Name())
			} else {
				c.known[ev.Object.Name()] = true
			}
			c.mu.Unlock()
			q.Add(ev.Object.Name())
		},
	}, "namespaces", c.Log)
	if !c.NoServiceAccount {
		c.watchOwned(ctx, q, c.serviceAccounts, defaultServiceAccount)
	}
	if !c.NoRootCA {
		c.watchOwned(ctx, q, c.configMaps, rootCAConfigMap)
	}
	c.terminating = NewQueue[string](ctx, "namespace-deletion")
	var wg sync.WaitGroup
	if !c.NoDeletion {
		for range deletionWorkers {
			wg.Go(func() { Work(ctx, c.terminating, c.syncDeletion, c.Log) })
		}
	}
	Work(ctx, q, c.sync, c.Log)
	wg.Wait()
}

// watchOwned queues a namespace when its object of resource res named name
// changes or goes, and every namespace when res's informer re-lists (it
// may have missed a deletion).
func (c *Namespaces) watchOwned(ctx context.Context, q Queue[string], res *resource.Resource, name string) {
	go informer.Run(ctx, c.store(res), informer.Handler{
		Replace: func([]*object.Object, uint64) {
			c.mu.Lock()
			for ns := range c.known {
				q.Add(ns)
			}
			c.mu.Unlock()
		},
		Apply: func(ev storage.Event) {
			if ev.Type != storage.EventBookmark && ev.Type != storage.EventAdded && ev.Object.Name() == name {
				q.Add(ev.Object.Namespace())
			}
		},
	}, res.Plural+" for namespaces", c.Log)
}

// store is res's store; a resource no longer served finds nothing.
func (c *Namespaces) store(res *resource.Resource) storage.Interface { return storeOf(c.Registry, res) }

// sync brings active namespace name to what it should be, and hands a
// namespace being deleted to the deletion workers.
func (c *Namespaces) sync(ctx context.Context, name string) (Result, error) {
	ns, err := c.store(c.namespaces).Get(ctx, name, storage.GetOptions{ResourceVersion: "0"})
	if storage.CodeOf(err) == storage.ErrNotFound {
		return Result{}, nil
	}
	if err != nil {
		return Result{}, err
	}
	if deletion.BeingDeleted(ns) {
		if !c.NoDeletion {
			c.terminating.Add(name)
		}
		return Result{}, nil
	}
	if !c.NoServiceAccount {
		if err := c.ensureServiceAccount(ctx, name); err != nil {
			return Result{}, err
		}
	}
	if c.NoRootCA {
		return Result{}, nil
	}
	return Result{}, c.ensureRootCA(ctx, name)
}

// syncDeletion empties namespace name if it is being deleted.
func (c *Namespaces) syncDeletion(ctx context.Context, name string) (Result, error) {
	ns, err := c.store(c.namespaces).Get(ctx, name, storage.GetOptions{ResourceVersion: "0"})
	if storage.CodeOf(err) == storage.ErrNotFound {
		return Result{}, nil
	}
	if err != nil || !deletion.BeingDeleted(ns) {
		return Result{}, err
	}
	return c.terminate(ctx, ns)
}

// ensureServiceAccount creates the namespace's default ServiceAccount if
// it is missing.
func (c *Namespaces) ensureServiceAccount(ctx context.Context, ns string) error {
	store := c.store(c.serviceAccounts)
	key := c.serviceAccounts.Key(ns, defaultServiceAccount)
	_, err := store.Get(ctx, key, storage.GetOptions{ResourceVersion: "0"})
	if storage.CodeOf(err) != storage.ErrNotFound {
		return err
	}
	return create(ctx, store, key, newObject(c.serviceAccounts, ns, defaultServiceAccount, nil, nil))
}

// ensureRootCA creates the namespace's kube-root-ca.crt ConfigMap if it is
// missing and puts RootCA back into it if it was changed.
func (c *Namespaces) ensureRootCA(ctx context.Context, ns string) error {
	store := c.store(c.configMaps)
	key := c.configMaps.Key(ns, rootCAConfigMap)
	cur, err := store.Get(ctx, key, storage.GetOptions{ResourceVersion: "0"})
	if storage.CodeOf(err) == storage.ErrNotFound {
		return create(ctx, store, key, newObject(c.configMaps, ns, rootCAConfigMap,
			map[string]any{"kubernetes.io/description": rootCADescription}, map[string]any{"data": map[string]any{rootCAKey: string(c.RootCA)}}))
	}
	if err != nil || c.holdsRootCA(cur) {
		return err
	}
	uid := cur.UID()
	_, err = store.GuaranteedUpdate(ctx, key, &storage.Preconditions{UID: &uid}, func(cur *object.Object) ([]byte, error) {
		obj, err := Decode(cur)
		if err != nil {
			return nil, err
		}
		jsontree.Child(obj, "data")[rootCAKey] = string(c.RootCA)
		return c.configMaps.Encode(obj)
	}, cur)
	if storage.CodeOf(err) == storage.ErrNotFound || storage.CodeOf(err) == storage.ErrConflict {
		return nil // deleted or replaced meanwhile: its event queues the namespace again
	}
	return err
}

func (c *Namespaces) holdsRootCA(cm *object.Object) bool {
	var v struct {
		Data map[string]string `json:"data"`
	}
	return json.Unmarshal(cm.JSON(), &v) == nil && v.Data[rootCAKey] == string(c.RootCA)
}

// terminate deletes a terminating namespace's content and, once nothing is
// left, removes the kubernetes finalizer (the namespace goes with its last
// finalizer).
func (c *Namespaces) terminate(ctx context.Context, ns *object.Object) (Result, error) {
	obj, err := Decode(ns)
	if err != nil {
		return Result{}, err
	}
	if !slices.Contains(specFinalizers(obj), strategy.FinalizerKubernetes) {
		return Result{}, nil // another finalizer holds it: not this controller's
	}
	left, err := c.deleteContent(ctx, ns.Name())
	if err != nil {
		return Result{}, err
	}
	if err := c.setConditions(ctx, ns, left); err != nil {
		return Result{}, err
	}
	switch {
	case len(left.resources) > 0:
		return Result{RequeueAfter: contentWait}, nil
	case left.deleted:
		// Look once more: an object may have been created while the
		// namespace turned Terminating, after this pass listed.
		return Result{RequeueAfter: time.Millisecond}, nil
	}
	return Result{}, c.removeFinalizer(ctx, ns)
}

// contentLeft is what a pass over a terminating namespace found.
type contentLeft struct {
	// deleted says the pass deleted or marked something.
	deleted bool
	// resources counts the objects left per resource ("pods.",
	// "widgets.example.com"), finalizers per finalizer.
	resources, finalizers map[string]int
}

// deleteContent deletes every object in namespace ns (grace period 0) and
// reports what is left: objects that finalizers hold.
func (c *Namespaces) deleteContent(ctx context.Context, ns string) (contentLeft, error) {
	left := contentLeft{resources: map[string]int{}, finalizers: map[string]int{}}
	zero, background := int64(0), metav1.DeletePropagationBackground
	d := strategy.Deletion{GracePeriodSeconds: &zero, Propagation: &background, Now: time.Now()}
	for _, res := range c.Registry.All() {
		if !res.Namespaced || !res.OwnStorage() {
			continue
		}
		list, err := deletion.DeleteAll(ctx, res, c.store(res), res.Scope(ns), storage.ListOptions{}, d)
		if err != nil {
			return left, fmt.Errorf("deleting %s in %s: %w", res, ns, err)
		}
		for _, o := range list.Items {
			left.deleted = true
			finalizers := metadataFinalizers(o)
			if len(finalizers) == 0 {
				continue
			}
			left.resources[res.Plural+"."+res.Group]++
			for _, f := range finalizers {
				left.finalizers[f]++
			}
		}
	}
	return left, nil
}

// removeFinalizer takes the kubernetes finalizer out of the namespace's
// spec.finalizers and removes the namespace if that was the last.
func (c *Namespaces) removeFinalizer(ctx context.Context, ns *object.Object) error {
	store := c.store(c.namespaces)
	uid := ns.UID()
	updated, err := store.GuaranteedUpdate(ctx, ns.Key(), &storage.Preconditions{UID: &uid}, func(cur *object.Object) ([]byte, error) {
		obj, err := Decode(cur)
		if err != nil {
			return nil, err
		}
		RemoveFromList(jsontree.Child(obj, "spec"), "finalizers", func(f any) bool { return f == strategy.FinalizerKubernetes })
		return c.namespaces.Encode(obj)
	}, ns)
	if storage.CodeOf(err) == storage.ErrNotFound {
		return nil
	}
	if err != nil {
		return err
	}
	_, err = deletion.FinishUpdate(ctx, c.namespaces, store, updated)
	return err
}

// deletionConditions are the conditions of a terminating namespace's
// status, with their type, their reason and message when all is well
// (status False), and their reason when not (status True), as
// kube-controller-manager's namespace controller writes them.
var deletionConditions = []struct{ kind, okReason, okMessage, badReason string }{
	{"NamespaceDeletionDiscoveryFailure", "ResourcesDiscovered", "All resources successfully discovered", "DiscoveryFailed"},
	{"NamespaceDeletionGroupVersionParsingFailure", "ParsedGroupVersions", "All legacy kube types successfully parsed", "GroupVersionParsingFailed"},
	{"NamespaceDeletionContentFailure", "ContentDeleted", "All content successfully deleted, may be waiting on finalization", "ContentDeletionFailed"},
	{"NamespaceContentRemaining", "ContentRemoved", "All content successfully removed", "SomeResourcesRemain"},
	{"NamespaceFinalizersRemaining", "ContentHasNoFinalizers", "All content-preserving finalizers finished", "SomeFinalizersRemain"},
}

// setConditions writes the deletion conditions for what is left into the
// namespace's status, if they changed (apart from their times).
func (c *Namespaces) setConditions(ctx context.Context, ns *object.Object, left contentLeft) error {
	bad := map[string]string{}
	if len(left.resources) > 0 {
		bad["NamespaceContentRemaining"] = "Some resources are remaining: " + countList(left.resources, "%s has %d resource instances")
		bad["NamespaceFinalizersRemaining"] = "Some content in the namespace has finalizers remaining: " +
			countList(left.finalizers, "%s in %d resource instances")
	}
	now := time.Now().UTC().Format(time.RFC3339)
	var conditions []any
	for _, dc := range deletionConditions {
		cond := map[string]any{"type": dc.kind, "status": "False", "reason": dc.okReason, "message": dc.okMessage, "lastTransitionTime": now}
		if msg, ok := bad[dc.kind]; ok {
			cond["status"], cond["reason"], cond["message"] = "True", dc.badReason, msg
		}
		conditions = append(conditions, cond)
	}
	uid := ns.UID()
	_, err := c.store(c.namespaces).GuaranteedUpdate(ctx, ns.Key(), &storage.Preconditions{UID: &uid}, func(cur *object.Object) ([]byte, error) {
		obj, err := Decode(cur)
		if err != nil {
			return nil, err
		}
		status := jsontree.Child(obj, "status")
		old, _ := status["conditions"].([]any)
		if sameConditions(old, conditions) {
			return nil, ErrUnchanged
		}
		status["conditions"] = conditions
		return c.namespaces.Encode(obj)
	}, ns)
	if err == ErrUnchanged || storage.CodeOf(err) == storage.ErrNotFound {
		return nil
	}
	return err
}

// sameConditions compares conditions apart from lastTransitionTime.
func sameConditions(a, b []any) bool {
	strip := func(l []any) []map[string]any {
		out := make([]map[string]any, 0, len(l))
		for _, c := range l {
			m, _ := c.(map[string]any)
			m = maps.Clone(m)
			delete(m, "lastTransitionTime")
			out = append(out, m)
		}
		return out
	}
	return reflect.DeepEqual(strip(a), strip(b))
}

// countList formats counts as kube-controller-manager does: sorted, each
// by format, comma-separated.
func countList(counts map[string]int, format string) string {
	var parts []string
	for k, n := range counts {
		parts = append(parts, fmt.Sprintf(format, k, n))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// newObject is a new core/v1 object's JSON, with the metadata a create
// would give it.
func newObject(res *resource.Resource, namespace, name string, annotations map[string]any, fields map[string]any) []byte {
	meta := map[string]any{"name": name, "namespace": namespace, "uid": string(uuid.NewUUID()),
		"creationTimestamp": time.Now().UTC().Format(time.RFC3339)}
	if annotations != nil {
		meta["annotations"] = annotations
	}
	obj := map[string]any{"apiVersion": res.GroupVersion(), "kind": res.Kind, "metadata": meta}
	maps.Copy(obj, fields)
	data, _ := res.Encode(obj) // of maps of plain values: it encodes
	return data
}

// create stores a new object; one created meanwhile is as good.
func create(ctx context.Context, store storage.Interface, key string, data []byte) error {
	_, err := store.Create(ctx, key, data)
	if storage.CodeOf(err) == storage.ErrAlreadyExists {
		return nil
	}
	return err
}

// specFinalizers reads a namespace's spec.finalizers.
func specFinalizers(obj map[string]any) []string {
	spec, _ := obj["spec"].(map[string]any)
	list, _ := spec["finalizers"].([]any)
	var out []string
	for _, f := range list {
		if s, ok := f.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// metadataFinalizers reads an object's metadata.finalizers.
func metadataFinalizers(o *object.Object) []string {
	var meta struct {
		Finalizers []string `json:"finalizers"`
	}
	json.Unmarshal(o.AppendMetadata(nil), &meta)
	return meta.Finalizers
}
