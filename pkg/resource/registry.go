package resource

import (
	"fmt"
	"os"
	"sort"

	"sigs.k8s.io/yaml"
)

// Registry is the set of served resources.
type Registry struct {
	all    []*Resource
	byGV   map[string]map[string]*Resource // group/version → plural → resource
	byKind map[string]*Resource            // group/kind → resource
}

// NewRegistry checks the resources and indexes them. Two resources may not
// share a group, version and plural, or a group and kind.
func NewRegistry(resources ...*Resource) (*Registry, error) {
	reg := &Registry{byGV: map[string]map[string]*Resource{}, byKind: map[string]*Resource{}}
	for _, r := range resources {
		if err := r.complete(); err != nil {
			return nil, fmt.Errorf("resource %s: %w", r, err)
		}
		gv := r.GroupVersion()
		if reg.byGV[gv] == nil {
			reg.byGV[gv] = map[string]*Resource{}
		}
		if reg.byGV[gv][r.Plural] != nil {
			return nil, fmt.Errorf("resource %s is defined twice in %s", r.Plural, gv)
		}
		if reg.byKind[r.Group+"/"+r.Kind] != nil {
			return nil, fmt.Errorf("kind %s is defined twice in group %q", r.Kind, r.Group)
		}
		reg.byKind[r.Group+"/"+r.Kind] = r
		reg.byGV[gv][r.Plural] = r
		reg.all = append(reg.all, r)
	}
	return reg, nil
}

// Lookup finds a resource by group, version and plural; nil if unknown.
func (reg *Registry) Lookup(group, version, plural string) *Resource {
	gv := version
	if group != "" {
		gv = group + "/" + version
	}
	return reg.byGV[gv][plural]
}

// ByKind finds the resource of a group's kind (of whatever version: an
// ownerReference may name any version of its owner's kind); nil if
// unknown.
func (reg *Registry) ByKind(group, kind string) *Resource { return reg.byKind[group+"/"+kind] }

// StorageOf is the resource whose store holds res's objects: res itself,
// or the resource it is StoredWith; nil if that is not registered.
func (reg *Registry) StorageOf(res *Resource) *Resource {
	if res.StoredWith == nil {
		return res
	}
	for _, r := range reg.all {
		if r.OwnStorage() && r.Group == res.StoredWith.Group && r.Plural == res.StoredWith.Plural {
			return r
		}
	}
	return nil
}

// All lists the resources in registration order.
func (reg *Registry) All() []*Resource { return reg.all }

// InGroupVersion lists the resources of one group/version, by plural.
func (reg *Registry) InGroupVersion(groupVersion string) []*Resource {
	var out []*Resource
	for _, r := range reg.byGV[groupVersion] {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Plural < out[j].Plural })
	return out
}

// Groups lists the non-core groups with their versions, sorted.
func (reg *Registry) Groups() map[string][]string {
	out := map[string][]string{}
	seen := map[string]bool{}
	for _, r := range reg.all {
		if r.Group == "" || seen[r.GroupVersion()] {
			continue
		}
		seen[r.GroupVersion()] = true
		out[r.Group] = append(out[r.Group], r.Version)
	}
	for _, vs := range out {
		sort.Strings(vs)
	}
	return out
}

// file is the layout of a --resources file.
type file struct {
	Resources []*Resource `json:"resources"`
}

// LoadFile reads custom resources from a YAML file:
//
//	resources:
//	- group: example.com
//	  version: v1
//	  kind: Widget
//	  plural: widgets
//	  singular: widget
//	  shortNames: [wd]
//	  namespaced: true
//	  selectableFields: [spec.color]
//	  indexedFields: [spec.color]
//
// Unknown fields are errors.
func LoadFile(path string) ([]*Resource, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f file
	if err := yaml.UnmarshalStrict(data, &f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for _, r := range f.Resources {
		if r.Group == "" {
			return nil, fmt.Errorf("%s: resource %s: custom resources need a group", path, r.Plural)
		}
	}
	return f.Resources, nil
}
