// Registry: the served resources and their stores, custom resources added
// and removed, subscribers to changes, lookups by group, version, plural and
// kind, and the resource whose store holds another's objects.

package resource

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"

	"github.com/watchcache/watchcache/pkg/storage"
	"k8s.io/apimachinery/pkg/version"
)

// Registry is the set of served resources, each with its store. Built-in
// resources are registered once at start; custom resources come and go
// while the server runs (Add, Remove), so every method is safe for
// concurrent use, and a resource found by a lookup keeps its store until
// the request that found it is done with it.
type Registry struct {
	mu     sync.RWMutex
	all    []*Resource
	byGV   map[string]map[string]*Resource // group/version → plural → resource
	byKind map[string]*Resource            // group/kind → resource
	stores map[*Resource]storage.Interface
	// changed are told of each Add and Remove, in order, outside mu.
	changed  []func(added, removed []*Resource)
	notifyMu sync.Mutex
}

// NewRegistry checks the resources and indexes them. Two resources may not
// share a group, version and plural, or a group and kind. Their stores are
// set with SetStore before the registry is used.
func NewRegistry(resources ...*Resource) (*Registry, error) {
	reg := &Registry{byGV: map[string]map[string]*Resource{}, byKind: map[string]*Resource{}, stores: map[*Resource]storage.Interface{}}
	if err := reg.addLocked(resources); err != nil {
		return nil, err
	}
	return reg, nil
}

// addLocked checks and indexes resources, all or none.
func (reg *Registry) addLocked(resources []*Resource) error {
	byGV := map[string]map[string]bool{}
	byKind := map[string]bool{}
	for _, r := range resources {
		if err := r.Complete(); err != nil {
			return fmt.Errorf("resource %s: %w", r, err)
		}
		gv := r.GroupVersion()
		if reg.byGV[gv][r.Plural] != nil || byGV[gv][r.Plural] {
			return fmt.Errorf("resource %s is defined twice in %s", r.Plural, gv)
		}
		if other := reg.byKind[r.Group+"/"+r.Kind]; other != nil && other.Plural != r.Plural || byKind[r.Group+"/"+r.Kind+"/"+r.Version] {
			return fmt.Errorf("kind %s is defined twice in group %q", r.Kind, r.Group)
		}
		if byGV[gv] == nil {
			byGV[gv] = map[string]bool{}
		}
		byGV[gv][r.Plural] = true
		byKind[r.Group+"/"+r.Kind+"/"+r.Version] = true
	}
	for _, r := range resources {
		gv := r.GroupVersion()
		if reg.byGV[gv] == nil {
			reg.byGV[gv] = map[string]*Resource{}
		}
		if reg.byKind[r.Group+"/"+r.Kind] == nil {
			reg.byKind[r.Group+"/"+r.Kind] = r
		}
		reg.byGV[gv][r.Plural] = r
		reg.all = append(reg.all, r)
	}
	return nil
}

// SetStore sets the store of a registered resource.
func (reg *Registry) SetStore(res *Resource, store storage.Interface) {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	reg.stores[res] = store
}

// Store is a resource's store; nil for a resource never stored (or no
// longer registered).
func (reg *Registry) Store(res *Resource) storage.Interface {
	reg.mu.RLock()
	defer reg.mu.RUnlock()
	return reg.stores[res]
}

// Add registers resources (the served versions of one custom resource)
// with their stores, all or none, and tells the subscribers.
func (reg *Registry) Add(stores map[*Resource]storage.Interface) error {
	resources := make([]*Resource, 0, len(stores))
	for r := range stores {
		resources = append(resources, r)
	}
	sort.Slice(resources, func(i, j int) bool { return resources[i].Version < resources[j].Version })
	reg.mu.Lock()
	err := reg.addLocked(resources)
	if err == nil {
		maps.Copy(reg.stores, stores)
	}
	reg.mu.Unlock()
	if err == nil {
		reg.notify(resources, nil)
	}
	return err
}

// Remove unregisters resources and tells the subscribers. Requests that
// found them before keep using their stores.
func (reg *Registry) Remove(resources ...*Resource) {
	reg.mu.Lock()
	for _, r := range resources {
		gv := r.GroupVersion()
		if reg.byGV[gv][r.Plural] != r {
			continue
		}
		delete(reg.byGV[gv], r.Plural)
		if len(reg.byGV[gv]) == 0 {
			delete(reg.byGV, gv)
		}
		if reg.byKind[r.Group+"/"+r.Kind] == r {
			delete(reg.byKind, r.Group+"/"+r.Kind)
			for _, other := range reg.all {
				if other != r && other.Group == r.Group && other.Kind == r.Kind && !slices.Contains(resources, other) {
					reg.byKind[r.Group+"/"+r.Kind] = other
					break
				}
			}
		}
		delete(reg.stores, r)
		reg.all = slices.DeleteFunc(reg.all, func(x *Resource) bool { return x == r })
	}
	reg.mu.Unlock()
	reg.notify(nil, resources)
}

// OnChange subscribes fn to the resources added and removed from now on.
func (reg *Registry) OnChange(fn func(added, removed []*Resource)) {
	reg.notifyMu.Lock()
	defer reg.notifyMu.Unlock()
	reg.changed = append(reg.changed, fn)
}

// notify tells the subscribers of a change, one change at a time.
func (reg *Registry) notify(added, removed []*Resource) {
	reg.notifyMu.Lock()
	defer reg.notifyMu.Unlock()
	for _, fn := range reg.changed {
		fn(added, removed)
	}
}

// Lookup finds a served resource by group, version and plural; nil if
// unknown (or NotServed).
func (reg *Registry) Lookup(group, version, plural string) *Resource {
	gv := version
	if group != "" {
		gv = group + "/" + version
	}
	reg.mu.RLock()
	defer reg.mu.RUnlock()
	if r := reg.byGV[gv][plural]; r != nil && !r.NotServed {
		return r
	}
	return nil
}

// ByKind finds the resource of a group's kind (of whatever version: an
// ownerReference may name any version of its owner's kind); nil if
// unknown.
func (reg *Registry) ByKind(group, kind string) *Resource {
	reg.mu.RLock()
	defer reg.mu.RUnlock()
	return reg.byKind[group+"/"+kind]
}

// StorageOf is the resource whose store holds res's objects: res itself,
// or the resource it is StoredWith; nil if that is not registered.
func (reg *Registry) StorageOf(res *Resource) *Resource {
	if res.StoredWith == nil {
		return res
	}
	for _, r := range reg.All() {
		if r.OwnStorage() && r.Group == res.StoredWith.Group && r.Plural == res.StoredWith.Plural {
			return r
		}
	}
	return nil
}

// All lists the resources in registration order (a copy).
func (reg *Registry) All() []*Resource {
	reg.mu.RLock()
	defer reg.mu.RUnlock()
	return slices.Clone(reg.all)
}

// InGroupVersion lists the resources of one group/version, by plural.
func (reg *Registry) InGroupVersion(groupVersion string) []*Resource {
	reg.mu.RLock()
	var out []*Resource
	for _, r := range reg.byGV[groupVersion] {
		if !r.NotServed {
			out = append(out, r)
		}
	}
	reg.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Plural < out[j].Plural })
	return out
}

// Groups lists the non-core groups with their versions, by Kubernetes
// version priority (v1 before v1beta1 before v1alpha1): the first is the
// group's preferred version.
func (reg *Registry) Groups() map[string][]string {
	out := map[string][]string{}
	seen := map[string]bool{}
	for _, r := range reg.All() {
		if r.Group == "" || r.NotServed || seen[r.GroupVersion()] {
			continue
		}
		seen[r.GroupVersion()] = true
		out[r.Group] = append(out[r.Group], r.Version)
	}
	for _, vs := range out {
		sort.Slice(vs, func(i, j int) bool { return version.CompareKubeAwareVersionStrings(vs[i], vs[j]) > 0 })
	}
	return out
}
