// Package crdcontroller is apiextensions-apiserver's work on
// CustomResourceDefinitions, run inside the server (kube-apiserver runs it
// in its apiextensions-apiserver: the naming, establishing and
// finalizing controllers and the custom resource handler's serving of
// each definition): a definition whose names are free is served and
// marked NamesAccepted and Established; a deleted one has its objects
// deleted, then goes.
//
// CRDs runs on every server sharing an etcd, as apiextensions' controllers
// run in every kube-apiserver, unlike package controller's Manager (run on
// one server at a time): each server must serve every definition, and its
// status writes are conflict-checked read-modify-writes that every server
// computes alike from the stored state, so that two servers writing at
// once agree.
package crdcontroller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/watchcache/watchcache/pkg/controller"
	"github.com/watchcache/watchcache/pkg/conversion"
	"github.com/watchcache/watchcache/pkg/crd"
	"github.com/watchcache/watchcache/pkg/deletion"
	"github.com/watchcache/watchcache/pkg/informer"
	"github.com/watchcache/watchcache/pkg/jsontree"
	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/resource"
	"github.com/watchcache/watchcache/pkg/storage"
	"github.com/watchcache/watchcache/pkg/strategy"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
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
	q    controller.Queue[string]

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
	names                crd.Names
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
			AcceptedNames crd.Names `json:"acceptedNames"`
		} `json:"status"`
	}
	json.Unmarshal(o.JSON(), &d)
	created := d.Metadata.CreationTimestamp
	if t, err := time.Parse(time.RFC3339, created); err == nil {
		created = formatCreated(t)
	}
	return crdClaim{rv: o.ResourceVersion(), group: d.Spec.Group, created: created, name: o.Name(),
		names: d.Status.AcceptedNames}
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
	// spec is the definition's spec, accepted names and whether it is
	// being deleted, as served, to tell a change.
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
	c.q = controller.NewQueue[string](ctx, "crd")
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
	go controller.Work(ctx, c.q, c.sync, c.Log)
}

// sync serves definition name as it is now.
func (c *CRDs) sync(ctx context.Context, name string) (controller.Result, error) {
	// The cache holds at least the state whose event queued name.
	obj, err := c.Registry.Store(c.crds).Get(ctx, name, storage.GetOptions{ResourceVersion: "0"})
	if storage.CodeOf(err) == storage.ErrNotFound {
		c.unserve(name)
		return controller.Result{}, nil
	}
	if err != nil {
		return controller.Result{}, err
	}
	var def apiextensionsv1.CustomResourceDefinition
	if err := json.Unmarshal(obj.JSON(), &def); err != nil {
		return controller.Result{}, err
	}
	if def.DeletionTimestamp != nil {
		return c.terminate(ctx, obj, &def)
	}
	// Its names are decided, and it is served under those it accepts, as
	// by kube-apiserver's naming and establishing controllers; every
	// server decides alike.
	names, namesAccepted := crd.AcceptNames(def.Spec.Names, c.ownNames(&def), c.takenNames(&def))
	est := crd.EstablishedCondition(names, namesAccepted, findCondition(&def, apiextensionsv1.Established))
	def.Status.AcceptedNames = names
	if est.Status != apiextensionsv1.ConditionTrue {
		c.unserve(def.Name)
	} else if err := c.serve(&def); err != nil {
		est = apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.Established,
			Status: apiextensionsv1.ConditionFalse, Reason: "Invalid", Message: err.Error()}
	}
	return controller.Result{}, c.setStatus(ctx, obj, func(status map[string]any) {
		accepted, _ := json.Marshal(names)
		var m map[string]any
		json.Unmarshal(accepted, &m)
		status["acceptedNames"] = m
		setCondition(status, namesAccepted)
		setCondition(status, est)
		stored, _ := status["storedVersions"].([]any)
		if v := crd.StorageVersion(&def); !slices.Contains(stored, any(v)) {
			status["storedVersions"] = append(stored, v)
		}
	})
}

// findCondition is def's condition of a type; nil if it has none.
func findCondition(def *apiextensionsv1.CustomResourceDefinition, kind apiextensionsv1.CustomResourceDefinitionConditionType) *apiextensionsv1.CustomResourceDefinitionCondition {
	for i := range def.Status.Conditions {
		if def.Status.Conditions[i].Type == kind {
			return &def.Status.Conditions[i]
		}
	}
	return nil
}

// takenNames are the names taken in def's group, as kube-apiserver's
// naming controller gathers them (from every definition's accepted names
// in its stored status, def's own included), and those of the group's
// built-in resources. They depend on stored state only, never on what
// this server registered first, so that servers sharing an etcd agree
// (else each would write its own answer into the status, over and over).
func (c *CRDs) takenNames(def *apiextensionsv1.CustomResourceDefinition) crd.TakenNames {
	taken := crd.NewTakenNames()
	for _, r := range c.Registry.All() {
		if r.Group == def.Spec.Group && r.Definition == "" {
			taken.Add(crd.Names{Plural: r.Plural, Singular: r.Singular, ShortNames: r.ShortNames, Kind: r.Kind, ListKind: r.Kind + "List"})
		}
	}
	taken.Add(def.Status.AcceptedNames)
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, other := range c.claims {
		if other.group == def.Spec.Group && other.name != def.Name {
			taken.Add(other.names)
		}
	}
	return taken
}

// ownNames are the names def accepted in its stored status, less those an
// older definition of its group accepted too: two servers may accept one
// name for two definitions at once, and every server then settles it
// alike, for the older.
func (c *CRDs) ownNames(def *apiextensionsv1.CustomResourceDefinition) crd.Names {
	own := crdClaim{name: def.Name}
	if !def.CreationTimestamp.IsZero() {
		own.created = formatCreated(def.CreationTimestamp.Time)
	}
	older := crd.NewTakenNames()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, other := range c.claims {
		if other.group == def.Spec.Group && other.name != def.Name && other.precedes(own) {
			older.Add(other.names)
		}
	}
	return older.Without(def.Status.AcceptedNames)
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
// definition known) and, when it went or its claim changed, queues the
// other definitions of its group, as kube-apiserver's naming controller
// does: names it freed may be taken by one refused before, and two
// servers that accepted one name for two definitions at once settle it.
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
	if gone || !equality.Semantic.DeepEqual(old.names, claim.names) {
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
// if its spec or those names changed since it was served, or it is now
// being deleted, keeping the store if group, plural and scope are the
// same.
func (c *CRDs) serve(def *apiextensionsv1.CustomResourceDefinition) error {
	spec, _ := json.Marshal([]any{def.Spec, def.Status.AcceptedNames, def.DeletionTimestamp != nil})
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
	if old != nil {
		c.Registry.Remove(old.resources...)
	}
	if err := c.Registry.Add(next.stores()); err != nil {
		if old != nil {
			c.Registry.Add(old.stores()) // serve what was served
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

// stores maps a served definition's resources to their stores: the
// storage version's store, through a conversion to each one's version
// (objects stored in an earlier storage version are converted too, as
// kube-apiserver converts every object it reads to the version asked for).
func (s *servedCRD) stores() map[*resource.Resource]storage.Interface {
	out := map[*resource.Resource]storage.Interface{}
	stored := s.resources[0].GroupVersion()
	for _, r := range s.resources {
		out[r] = conversion.Store(s.store, crd.NopConverter(stored, r.GroupVersion()))
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
func (c *CRDs) terminate(ctx context.Context, obj *object.Object, def *apiextensionsv1.CustomResourceDefinition) (controller.Result, error) {
	if !slices.Contains(def.Finalizers, FinalizerCRDCleanup) {
		return controller.Result{}, nil
	}
	c.mu.Lock()
	_, served := c.served[def.Name]
	c.mu.Unlock()
	if served || established(def) {
		// It is served anew, refusing creates. Its objects must go even if
		// this server did not serve it (it may have started after the
		// definition was deleted, while another server served it): it is
		// served to delete them. One never established has none.
		if err := c.serve(def); err != nil {
			return controller.Result{}, err
		}
	}
	if err := c.setStatus(ctx, obj, func(status map[string]any) {
		setCondition(status, apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.Terminating,
			Status: apiextensionsv1.ConditionTrue, Reason: "InstanceDeletionInProgress", Message: "CustomResource deletion is in progress"})
	}); err != nil {
		return controller.Result{}, err
	}
	c.mu.Lock()
	s := c.served[def.Name]
	c.mu.Unlock()
	if s != nil {
		zero := int64(0)
		left, err := deletion.DeleteAll(ctx, s.resources[0], s.store, "", storage.ListOptions{},
			strategy.Deletion{GracePeriodSeconds: &zero, Now: time.Now()})
		if err != nil {
			return controller.Result{}, err
		}
		if len(left.Items) > 0 {
			return controller.Result{RequeueAfter: crdCleanupWait}, nil
		}
	}
	uid := obj.UID()
	store := c.Registry.Store(c.crds)
	updated, err := store.GuaranteedUpdate(ctx, obj.Key(), &storage.Preconditions{UID: &uid}, func(cur *object.Object) ([]byte, error) {
		o, err := controller.Decode(cur)
		if err != nil {
			return nil, err
		}
		meta := jsontree.Child(o, "metadata")
		controller.RemoveFromList(meta, "finalizers", func(f any) bool { return f == FinalizerCRDCleanup })
		delete(meta, "resourceVersion")
		return json.Marshal(o)
	}, obj)
	if storage.CodeOf(err) == storage.ErrNotFound {
		return controller.Result{}, nil // another server removed it, and it went
	}
	if err != nil {
		return controller.Result{}, err
	}
	_, err = deletion.FinishUpdate(ctx, c.crds, store, updated)
	return controller.Result{}, err
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
		o, err := controller.Decode(cur)
		if err != nil {
			return nil, err
		}
		before, _ := json.Marshal(o["status"])
		change(jsontree.Child(o, "status"))
		if after, _ := json.Marshal(o["status"]); string(after) == string(before) {
			return nil, controller.ErrUnchanged
		}
		delete(jsontree.Child(o, "metadata"), "resourceVersion")
		return json.Marshal(o)
	}, obj)
	if errors.Is(err, controller.ErrUnchanged) || storage.CodeOf(err) == storage.ErrNotFound {
		return nil
	}
	if err == nil {
		c.noteClaim(updated, false, true)
	}
	return err
}

// setCondition sets a condition of a status's conditions, keeping its
// lastTransitionTime when its status does not change.
func setCondition(status map[string]any, c apiextensionsv1.CustomResourceDefinitionCondition) {
	conditions, _ := status["conditions"].([]any)
	cond := map[string]any{"type": string(c.Type), "status": string(c.Status), "reason": c.Reason, "message": c.Message,
		"lastTransitionTime": metav1.Now().UTC().Format(time.RFC3339)}
	for i, existing := range conditions {
		m, _ := existing.(map[string]any)
		if m["type"] != cond["type"] {
			continue
		}
		if m["status"] == cond["status"] {
			cond["lastTransitionTime"] = m["lastTransitionTime"]
		}
		conditions[i] = cond
		return
	}
	status["conditions"] = append(conditions, cond)
}
