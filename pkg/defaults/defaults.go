// Package defaults gives objects of the built-in kinds the defaults
// kube-apiserver gives them (its generated defaulters, and, on create, the
// defaults of its DefaultTolerationSeconds admission plugin: a pod's
// not-ready/unreachable tolerations), as data: per kind, a list of rules,
// each a path and the value a missing field there gets.
//
// Objects are JSON objects decoded as map[string]any with integers as
// int64 (sigs.k8s.io/json's PreserveInts); defaults change them in place.
package defaults

import (
	"slices"
	"strings"

	"github.com/watchcache/watchcache/pkg/jsontree"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Rule defaults one field, or runs code on one object. Path is dotted
// from the object (or from the fragment a rule list is placed under, see
// under); a segment "name[]" goes into every element of list "name"; ""
// is the object itself. A Value rule gives the field at Path a copy of
// Value if it is absent; every segment before it must exist: a rule never
// creates the object it defaults in, so that "readinessProbe.periodSeconds"
// applies only to containers with a readiness probe (rules that create an
// object come first, on their own). An Fn rule runs Fn on each object at
// Path, for defaults that are computed.
type Rule struct {
	Path  string
	Value any
	Fn    func(obj map[string]any)
}

// Apply applies the rules of kind group/kind (none for kinds without
// defaults, such as custom resources) to obj.
func Apply(group, kind string, obj map[string]any) {
	rules, ok := versionKinds[apiVersion(obj)+"/"+kind]
	if !ok {
		rules = kinds[group+"/"+kind]
	}
	apply(obj, rules)
}

// versionKinds are the rules of the versions of a kind, by
// "group/version/Kind" (the object's apiVersion), that default otherwise
// than the version it is stored in and replace its rules: an
// autoscaling/v1 HPA only gets its minReplicas (its CPU target is the
// conversion's; it has no behavior).
var versionKinds = map[string][]Rule{
	"autoscaling/v1/HorizontalPodAutoscaler": {{Path: "spec.minReplicas", Value: int64(1)}},
}

// apiVersion is an object's apiVersion, "" if it has none.
func apiVersion(obj map[string]any) string {
	v, _ := obj["apiVersion"].(string)
	return v
}

// ApplyOnCreate applies what kind group/kind's strategy sets on a new
// object after its status was reset (a pod's phase and QoS class, a
// claim's phase): the rules apply to the object as created.
func ApplyOnCreate(group, kind string, obj map[string]any) {
	apply(obj, onCreate[group+"/"+kind])
}

// KeepOnUpdate gives obj, the new state of an update of old, the fields of
// kind group/kind that the object got on create and an update lacking them
// keeps (see keptOnUpdate).
func KeepOnUpdate(group, kind string, obj, old map[string]any) {
	for _, path := range keptOnUpdate[group+"/"+kind] {
		fields := strings.Split(path, ".")
		v, kept, _ := unstructured.NestedFieldNoCopy(old, fields...)
		if _, present, _ := unstructured.NestedFieldNoCopy(obj, fields...); kept && !present {
			_ = unstructured.SetNestedField(obj, v, fields...) // v is a JSON value
		}
	}
}

func apply(obj map[string]any, rules []Rule) {
	for _, r := range rules {
		var path []string
		if r.Path != "" {
			path = strings.Split(r.Path, ".")
		}
		applyRule(obj, path, r)
	}
}

// applyRule applies r to m, the object reached so far, with path the
// segments left.
func applyRule(m map[string]any, path []string, r Rule) {
	if len(path) == 0 {
		if r.Fn != nil {
			r.Fn(m)
		}
		return
	}
	seg := path[0]
	if name, isList := strings.CutSuffix(seg, "[]"); isList {
		list, _ := m[name].([]any)
		for _, item := range list {
			if elem, ok := item.(map[string]any); ok {
				applyRule(elem, path[1:], r)
			}
		}
		return
	}
	if len(path) == 1 && r.Fn == nil {
		if _, present := m[seg]; !present {
			m[seg] = jsontree.DeepCopy(r.Value)
		}
		return
	}
	if child, ok := m[seg].(map[string]any); ok {
		applyRule(child, path[1:], r)
	}
}

// under places rules under a path prefix.
func under(prefix string, lists ...[]Rule) []Rule {
	out := slices.Concat(lists...)
	for i := range out {
		out[i].Path = jsontree.JoinPath(prefix, out[i].Path)
	}
	return out
}
