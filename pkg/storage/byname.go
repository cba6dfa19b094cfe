// Lists and watches by name: the name a field selector on metadata.name
// requires, and where in the key space the objects it can select are.

package storage

import "strings"

// SelectedName returns the name the options' field selector requires
// metadata.name to equal (metadata.name=N, alone or with other
// requirements), when it requires one that an object can have: not empty,
// without "/". Lists and watches that select a name are point lookups:
// every object they select is named N, whatever else they require.
func (o *ListOptions) SelectedName() (string, bool) {
	if o.Fields == nil {
		return "", false
	}
	name, ok := o.Fields.RequiresExactMatch("metadata.name")
	if !ok || name == "" || strings.Contains(name, "/") {
		return "", false
	}
	return name, true
}

// NameLookup is where the objects a list or watch by name can select are:
// see LookupByName.
type NameLookup struct {
	// Name is the name the field selector requires.
	Name string
	// Key is the one key under the scope that an object named Name can
	// have; "" when there is one such key per namespace (a scope of all
	// namespaces of a namespaced resource).
	Key string
}

// LookupByName says whether a list or watch over scope with these options
// selects objects by name (SelectedName), and where such objects can be:
// under scope "namespace/", at key "namespace/Name" alone; under scope ""
// of a cluster-scoped resource, at key "Name" alone; under scope "" of a
// namespaced resource, at "namespace/Name" for every namespace (Key "").
//
// This rests on what keys are: an object's key is "namespace/name", or
// "name" when it has no namespace (DecodeWrite checks every write), names
// and namespaces contain no "/" (the server checks them as kube-apiserver
// does), and the objects of a cluster-scoped resource have no namespace.
// The other selectors still apply to the object found; the stores also
// test metadata.name on it, so a lookup never returns another object.
func (o *ListOptions) LookupByName(scope string, clusterScoped bool) (NameLookup, bool) {
	name, ok := o.SelectedName()
	if !ok {
		return NameLookup{}, false
	}
	switch {
	case scope == "" && clusterScoped:
		return NameLookup{Name: name, Key: name}, true
	case scope == "":
		return NameLookup{Name: name}, true
	case strings.IndexByte(scope, '/') == len(scope)-1: // "namespace/"
		return NameLookup{Name: name, Key: scope + name}, true
	}
	return NameLookup{}, false
}
