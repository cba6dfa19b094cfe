package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/watchcache/watchcache/pkg/conversion"
	"github.com/watchcache/watchcache/pkg/crd"
	"github.com/watchcache/watchcache/pkg/informer"
	"github.com/watchcache/watchcache/pkg/jsonmap"
	"github.com/watchcache/watchcache/pkg/lifecycle"
	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/resource"
	"github.com/watchcache/watchcache/pkg/storage"
	"github.com/watchcache/watchcache/pkg/strategy"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FinalizerCRDCleanup holds a deleted CustomResourceDefinition until its
// objects are deleted, as kube-apiserver's finalizer of that name.
const FinalizerCRDCleanup = "customresourcecleanup.apiextensions.k8s.io"

// CRDs is apiextensions-apiserver's work on CustomResourceDefinitions: a
// definition whose names are free is served (its resources registered,
// with a watch cache of its own) and marked NamesAccepted and Established
// in its status; a changed definition is served anew; a deleted one has
// its objects deleted, then stops being served and goes.
type CRDs struct {
	// Registry is where the definitions' resources are registered.
	Registry *resource.Registry
	// NewStore makes the store (watch cache) of a storage version;
	// StopStore releases one no longer served.
	NewStore  func(*resource.Resource) storage.Interface
	StopStore func(storage.Interface)
	Log       *slog.Logger

	crds *resource.Resource
	q    queue[string]

	mu     sync.Mutex
	served map[string]*servedCRD // by definition name
}

// servedCRD is what a definition serves now.
type servedCRD struct {
	// spec is the definition's spec it serves, to tell a change.
	spec []byte
	// resources are registered, the storage version first.
	resources []*resource.Resource
	store     storage.Interface
	// storeKey says what the store depends on (group, plural, scope): when
	// it changes the store is made anew.
	storeKey string
}

// Start serves the definitions stored now (before the server takes
// requests, so that they are served at once, unless their watch cache is
// not ready: then as soon as it is) and then follows changes until ctx
// ends.
func (c *CRDs) Start(ctx context.Context) {
	c.crds = c.Registry.Lookup("apiextensions.k8s.io", "v1", "customresourcedefinitions")
	c.served = map[string]*servedCRD{}
	c.q = newQueue[string](ctx, "crd")
	store := c.Registry.Store(c.crds)
	if list, err := store.GetList(ctx, "", storage.ListOptions{}); err == nil {
		for _, o := range list.Items {
			if _, err := c.sync(ctx, o.Name()); err != nil {
				c.Log.Warn("serving a custom resource definition", "name", o.Name(), "err", err)
			}
		}
	}
	go informer.Run(ctx, store, informer.Handler{
		Replace: func(items []*object.Object, _ uint64) {
			c.mu.Lock()
			for name := range c.served {
				c.q.Add(name) // may be gone
			}
			c.mu.Unlock()
			for _, o := range items {
				c.q.Add(o.Name())
			}
		},
		Apply: func(ev storage.Event) {
			if ev.Type != storage.EventBookmark {
				c.q.Add(ev.Object.Name())
			}
		},
	}, "customresourcedefinitions", c.Log)
	go work(ctx, c.q, c.sync, c.Log)
}

// sync serves definition name as it is now.
func (c *CRDs) sync(ctx context.Context, name string) (result, error) {
	// The cache holds at least the state whose event queued name.
	obj, err := c.Registry.Store(c.crds).Get(ctx, name, storage.GetOptions{ResourceVersion: "0"})
	if storage.CodeOf(err) == storage.ErrNotFound {
		c.unserve(name)
		return result{}, nil
	}
	if err != nil {
		return result{}, err
	}
	var def apiextensionsv1.CustomResourceDefinition
	if err := json.Unmarshal(obj.JSON(), &def); err != nil {
		return result{}, err
	}
	if def.DeletionTimestamp != nil {
		return c.terminate(ctx, obj, &def)
	}
	if conflict := c.nameConflict(&def); conflict != "" {
		return result{}, c.setStatus(ctx, obj, func(status map[string]any) {
			setCondition(status, "NamesAccepted", "False", "NameConflict", conflict)
		})
	}
	if err := c.serve(&def); err != nil {
		return result{}, c.setStatus(ctx, obj, func(status map[string]any) {
			setCondition(status, "Established", "False", "Invalid", err.Error())
		})
	}
	return result{}, c.setStatus(ctx, obj, func(status map[string]any) {
		names, _ := json.Marshal(def.Spec.Names)
		var accepted map[string]any
		json.Unmarshal(names, &accepted)
		status["acceptedNames"] = accepted
		setCondition(status, "NamesAccepted", "True", "NoConflicts", "no conflicts found")
		setCondition(status, "Established", "True", "InitialNamesAccepted", "the initial names have been accepted")
		stored, _ := status["storedVersions"].([]any)
		if v := crd.StorageVersion(&def); !slices.Contains(stored, any(v)) {
			status["storedVersions"] = append(stored, v)
		}
	})
}

// nameConflict says which of def's names another served resource of its
// group holds ("" if none), as kube-apiserver's naming controller.
func (c *CRDs) nameConflict(def *apiextensionsv1.CustomResourceDefinition) string {
	for _, r := range c.Registry.All() {
		if r.Group != def.Spec.Group || r.Definition == def.Name {
			continue
		}
		switch {
		case r.Plural == def.Spec.Names.Plural:
			return fmt.Sprintf("%q is already in use", def.Spec.Names.Plural)
		case r.Kind == def.Spec.Names.Kind:
			return fmt.Sprintf("%q is already in use", def.Spec.Names.Kind)
		}
	}
	return ""
}

// serve registers def's resources, anew if its spec changed since it was
// served, keeping the store if group, plural and scope are the same.
func (c *CRDs) serve(def *apiextensionsv1.CustomResourceDefinition) error {
	spec, _ := json.Marshal(def.Spec)
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.served[def.Name]
	if old != nil && string(old.spec) == string(spec) {
		return nil
	}
	resources, err := crd.Resources(def)
	if err != nil {
		return err
	}
	storageRes := resources[0]
	key := fmt.Sprintf("%s/%s/%v", storageRes.Group, storageRes.Plural, storageRes.Namespaced)
	next := &servedCRD{spec: spec, resources: resources, storeKey: key}
	if old != nil && old.storeKey == key {
		next.store = old.store
	} else {
		next.store = c.NewStore(storageRes)
	}
	stores := map[*resource.Resource]storage.Interface{}
	stored := storageRes.GroupVersion()
	for _, r := range resources {
		stores[r] = next.store
		if len(resources) > 1 {
			stores[r] = conversion.Store(next.store, conversion.APIVersion(stored, r.GroupVersion()))
		}
	}
	if old != nil {
		c.Registry.Remove(old.resources...)
	}
	if err := c.Registry.Add(stores); err != nil {
		if old != nil {
			c.Registry.Add(storesOf(old)) // serve what was served
		}
		if old == nil || next.store != old.store {
			c.StopStore(next.store)
		}
		return err
	}
	if old != nil && old.store != next.store {
		c.StopStore(old.store)
	}
	c.served[def.Name] = next
	return nil
}

// storesOf maps a served definition's resources to their stores again.
func storesOf(s *servedCRD) map[*resource.Resource]storage.Interface {
	out := map[*resource.Resource]storage.Interface{}
	for _, r := range s.resources {
		out[r] = s.store
	}
	return out
}

// unserve stops serving definition name.
func (c *CRDs) unserve(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.served[name]
	if s == nil {
		return
	}
	delete(c.served, name)
	c.Registry.Remove(s.resources...)
	c.StopStore(s.store)
}

// crdCleanupWait is how long a deleted definition whose objects
// finalizers hold waits before the next look.
const crdCleanupWait = time.Second

// terminate deletes a deleted definition's objects, then removes its
// cleanup finalizer (it goes with its last finalizer).
func (c *CRDs) terminate(ctx context.Context, obj *object.Object, def *apiextensionsv1.CustomResourceDefinition) (result, error) {
	if !slices.Contains(def.Finalizers, FinalizerCRDCleanup) {
		return result{}, nil
	}
	if err := c.setStatus(ctx, obj, func(status map[string]any) {
		setCondition(status, "Terminating", "True", "InstanceDeletionInProgress", "CustomResource deletion is in progress")
	}); err != nil {
		return result{}, err
	}
	c.mu.Lock()
	s := c.served[def.Name]
	c.mu.Unlock()
	if s != nil {
		zero := int64(0)
		left, err := lifecycle.DeleteAll(ctx, s.resources[0], s.store, "", storage.ListOptions{},
			strategy.Deletion{GracePeriodSeconds: &zero, Now: time.Now()})
		if err != nil {
			return result{}, err
		}
		if len(left.Items) > 0 {
			return result{requeueAfter: crdCleanupWait}, nil
		}
	}
	uid := obj.UID()
	store := c.Registry.Store(c.crds)
	updated, err := store.GuaranteedUpdate(ctx, obj.Key(), &storage.Preconditions{UID: &uid}, func(cur *object.Object) ([]byte, error) {
		o, err := decode(cur)
		if err != nil {
			return nil, err
		}
		meta := jsonmap.Child(o, "metadata")
		removeFromList(meta, "finalizers", func(f any) bool { return f == FinalizerCRDCleanup })
		delete(meta, "resourceVersion")
		return json.Marshal(o)
	}, obj)
	if storage.CodeOf(err) == storage.ErrNotFound {
		return result{}, nil
	}
	if err != nil {
		return result{}, err
	}
	_, err = lifecycle.FinishUpdate(ctx, c.crds, store, updated)
	return result{}, err
}

// setStatus changes a definition's status with change, writing only if
// something changed.
func (c *CRDs) setStatus(ctx context.Context, obj *object.Object, change func(status map[string]any)) error {
	uid := obj.UID()
	_, err := c.Registry.Store(c.crds).GuaranteedUpdate(ctx, obj.Key(), &storage.Preconditions{UID: &uid}, func(cur *object.Object) ([]byte, error) {
		o, err := decode(cur)
		if err != nil {
			return nil, err
		}
		before, _ := json.Marshal(o["status"])
		change(jsonmap.Child(o, "status"))
		if after, _ := json.Marshal(o["status"]); string(after) == string(before) {
			return nil, errUnchanged
		}
		delete(jsonmap.Child(o, "metadata"), "resourceVersion")
		return json.Marshal(o)
	}, obj)
	if err == errUnchanged || storage.CodeOf(err) == storage.ErrNotFound {
		return nil
	}
	return err
}

// setCondition sets a condition of a status's conditions, keeping its
// lastTransitionTime when its status does not change.
func setCondition(status map[string]any, kind, value, reason, message string) {
	conditions, _ := status["conditions"].([]any)
	cond := map[string]any{"type": kind, "status": value, "reason": reason, "message": message,
		"lastTransitionTime": metav1.Now().UTC().Format(time.RFC3339)}
	for i, existing := range conditions {
		m, _ := existing.(map[string]any)
		if m["type"] != kind {
			continue
		}
		if m["status"] == value {
			cond["lastTransitionTime"] = m["lastTransitionTime"]
		}
		conditions[i] = cond
		return
	}
	status["conditions"] = append(conditions, cond)
}
