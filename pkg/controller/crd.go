package controller

import (
	"context"
	"encoding/json"
	"errors"
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
//
// It runs on every server sharing an etcd, as in kube-apiserver, and is
// safe so (see the package comment): whether a definition's names are free
// is decided, as by kube-apiserver's naming controller, from the names
// other definitions accepted in their stored status, not from what this
// server happens to have registered first; a definition is served under
// its accepted names whichever server wrote them; status writes are
// GuaranteedUpdates that write nothing when nothing changes; and the
// cleanup of a deleted definition's objects tolerates another server's
// deleting them too, and happens even on a server that never served it.
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
	// claims are the names each definition's stored status accepted, by
	// definition name, as the informer (and this controller's own writes)
	// last saw them.
	claims map[string]crdClaim
}

// crdClaim is what the naming check needs of a stored definition: the
// names its status accepted (its claim on them) and its age, which settles
// two claims on one name.
type crdClaim struct {
	rv                   uint64
	group, created, name string
	plural, kind         string
}

// readClaim reads o's claim.
func readClaim(o *object.Object) crdClaim {
	var d struct {
		Metadata struct {
			CreationTimestamp string `json:"creationTimestamp"`
		} `json:"metadata"`
		Spec struct {
			Group string `json:"group"`
		} `json:"spec"`
		Status struct {
			AcceptedNames struct {
				Plural string `json:"plural"`
				Kind   string `json:"kind"`
			} `json:"acceptedNames"`
		} `json:"status"`
	}
	json.Unmarshal(o.JSON(), &d)
	created := d.Metadata.CreationTimestamp
	if t, err := time.Parse(time.RFC3339, created); err == nil {
		created = formatCreated(t)
	}
	return crdClaim{rv: o.ResourceVersion(), group: d.Spec.Group, created: created, name: o.Name(),
		plural: d.Status.AcceptedNames.Plural, kind: d.Status.AcceptedNames.Kind}
}

// formatCreated formats a creationTimestamp for claims to compare.
func formatCreated(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// precedes orders claims on one name: the older definition first, then
// by name.
func (a crdClaim) precedes(b crdClaim) bool {
	if a.created != b.created {
		return a.created < b.created
	}
	return a.name < b.name
}

// servedCRD is what a definition serves now.
type servedCRD struct {
	// spec is the definition's spec and accepted names it serves, to tell
	// a change.
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
	c.claims = map[string]crdClaim{}
	c.q = newQueue[string](ctx, "crd")
	store := c.Registry.Store(c.crds)
	if list, err := store.GetList(ctx, "", storage.ListOptions{}); err == nil {
		c.replaceClaims(list.Items)
		for _, o := range list.Items {
			if _, err := c.sync(ctx, o.Name()); err != nil {
				c.Log.Warn("serving a custom resource definition", "name", o.Name(), "err", err)
			}
		}
	}
	go informer.Run(ctx, store, informer.Handler{
		Replace: func(items []*object.Object, _ uint64) {
			c.replaceClaims(items)
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
				c.noteClaim(ev.Object, ev.Type == storage.EventDeleted, false)
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
	// It is served under the names it is about to accept, or, if another
	// holds some of them, under those it accepted before, if those are
	// still its own; else not at all. Every server decides alike.
	conflict := c.nameConflict(&def, def.Spec.Names)
	if conflict == "" {
		def.Status.AcceptedNames = def.Spec.Names
	} else if def.Status.AcceptedNames.Plural == "" || c.nameConflict(&def, def.Status.AcceptedNames) != "" {
		c.unserve(def.Name)
		return result{}, c.setStatus(ctx, obj, func(status map[string]any) {
			setCondition(status, "NamesAccepted", "False", "NameConflict", conflict)
		})
	}
	if err := c.serve(&def); err != nil {
		return result{}, c.setStatus(ctx, obj, func(status map[string]any) {
			setCondition(status, "Established", "False", "Invalid", err.Error())
		})
	}
	if conflict != "" {
		return result{}, c.setStatus(ctx, obj, func(status map[string]any) {
			setCondition(status, "NamesAccepted", "False", "NameConflict", conflict)
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

// nameConflict says which of names (their plural, then their kind) def
// may not have ("" if none): one a built-in resource of its group has, or
// one another definition of its group accepted in its stored status, as
// kube-apiserver's naming controller decides, unless def accepted it too
// and is the older (two servers may accept one name for two definitions
// at once; every server then settles it alike). The answer depends on
// stored state only, never on what this server registered first, so that
// servers sharing an etcd agree (else each would write its own answer into
// the status, over and over).
func (c *CRDs) nameConflict(def *apiextensionsv1.CustomResourceDefinition, names apiextensionsv1.CustomResourceDefinitionNames) string {
	for _, r := range c.Registry.All() {
		if r.Group != def.Spec.Group || r.Definition != "" {
			continue
		}
		switch {
		case r.Plural == names.Plural:
			return fmt.Sprintf("%q is already in use", names.Plural)
		case r.Kind == names.Kind:
			return fmt.Sprintf("%q is already in use", names.Kind)
		}
	}
	own := crdClaim{group: def.Spec.Group, name: def.Name, plural: def.Status.AcceptedNames.Plural, kind: def.Status.AcceptedNames.Kind}
	if !def.CreationTimestamp.IsZero() {
		own.created = formatCreated(def.CreationTimestamp.Time)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	taken := func(name string, claimed func(crdClaim) string) bool {
		if name == "" {
			return false
		}
		for _, other := range c.claims {
			if other.name == def.Name || other.group != def.Spec.Group || claimed(other) != name {
				continue
			}
			if claimed(own) != name || !own.precedes(other) {
				return true
			}
		}
		return false
	}
	switch {
	case taken(names.Plural, func(c crdClaim) string { return c.plural }):
		return fmt.Sprintf("%q is already in use", names.Plural)
	case taken(names.Kind, func(c crdClaim) string { return c.kind }):
		return fmt.Sprintf("%q is already in use", names.Kind)
	}
	return ""
}

// replaceClaims takes in the claims of a whole list of definitions.
func (c *CRDs) replaceClaims(items []*object.Object) {
	claims := make(map[string]crdClaim, len(items))
	for _, o := range items {
		claims[o.Name()] = readClaim(o)
	}
	c.mu.Lock()
	c.claims = claims
	c.mu.Unlock()
}

// noteClaim takes in a definition's state newer than the one known (gone:
// deleted; written: this controller's own write, which only updates a
// definition known) and, when its claim changed, queues the other
// definitions of its group, whose names may now be free or taken (two
// servers that accepted one name for two definitions at once then settle
// it). A definition that goes does not queue them: the names it frees are
// taken by the definitions created or changed next, not by one refused
// before (as kube-apiserver would), which gets them when next synced.
func (c *CRDs) noteClaim(o *object.Object, gone, written bool) {
	claim := readClaim(o)
	c.mu.Lock()
	old, known := c.claims[claim.name]
	if known && old.rv > claim.rv || written && !known {
		c.mu.Unlock()
		return
	}
	if gone {
		delete(c.claims, claim.name)
	} else {
		c.claims[claim.name] = claim
	}
	var others []string
	if !gone && (old.plural != claim.plural || old.kind != claim.kind) {
		for name, other := range c.claims {
			if other.group == claim.group && name != claim.name {
				others = append(others, name)
			}
		}
	}
	c.mu.Unlock()
	for _, name := range others {
		c.q.Add(name)
	}
}

// serve registers def's resources under its status's accepted names, anew
// if its spec or those names changed since it was served, keeping the
// store if group, plural and scope are the same.
func (c *CRDs) serve(def *apiextensionsv1.CustomResourceDefinition) error {
	spec, _ := json.Marshal([]any{def.Spec, def.Status.AcceptedNames})
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
	if s == nil && established(def) {
		// Its objects must go even if this server does not serve it (it
		// may have started after the definition was deleted, while another
		// server served it): serve it to delete them. One never
		// established has none.
		if err := c.serve(def); err != nil {
			return result{}, err
		}
		c.mu.Lock()
		s = c.served[def.Name]
		c.mu.Unlock()
	}
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
		return result{}, nil // another server removed it, and it went
	}
	if err != nil {
		return result{}, err
	}
	_, err = lifecycle.FinishUpdate(ctx, c.crds, store, updated)
	return result{}, err
}

// established says whether def's stored status is Established.
func established(def *apiextensionsv1.CustomResourceDefinition) bool {
	for _, cond := range def.Status.Conditions {
		if cond.Type == apiextensionsv1.Established {
			return cond.Status == apiextensionsv1.ConditionTrue
		}
	}
	return false
}

// setStatus changes a definition's status with change, writing only if
// something changed. change must give the same result whichever server
// runs it on the same stored state (times of conditions whose status does
// not change are kept), so that servers writing at once converge.
func (c *CRDs) setStatus(ctx context.Context, obj *object.Object, change func(status map[string]any)) error {
	uid := obj.UID()
	updated, err := c.Registry.Store(c.crds).GuaranteedUpdate(ctx, obj.Key(), &storage.Preconditions{UID: &uid}, func(cur *object.Object) ([]byte, error) {
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
	if errors.Is(err, errUnchanged) || storage.CodeOf(err) == storage.ErrNotFound {
		return nil
	}
	if err == nil {
		c.noteClaim(updated, false, true)
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
