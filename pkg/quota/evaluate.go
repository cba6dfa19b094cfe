// Package quota is ResourceQuota's arithmetic as kube-apiserver's quota
// admission and kube-controller-manager's resourcequota-controller do it:
// what an object of a resource uses (its evaluator: object counts, a pod's
// compute resources, a Service's node ports and load balancers, a claim's
// storage), which quotas it falls under (hard resources and scopes), the
// check of one write against a namespace's quotas with kube-apiserver's
// refusals, and the usage the controller recomputes. It holds no state and
// reads no store: package admission reserves usage with it, package
// controller recomputes it.
package quota

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/watchcache/watchcache/pkg/object"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Evaluator measures the usage of one resource's objects, as
// kube-apiserver's evaluator of that resource.
type Evaluator struct {
	resource schema.GroupResource
	// names are the resource names of an object count evaluator: its
	// count/<resource>.<group> and its legacy alias, if any.
	names []corev1.ResourceName
	// kind is the evaluator of a resource with logic of its own (pods,
	// services, claims); nil for an object count.
	kind *kind
}

// kind is what an evaluator with logic of its own does; obj and old are
// the typed objects newObj makes.
type kind struct {
	newObj func() any
	// matching returns the names among input that objects of the kind use.
	matching func(input []corev1.ResourceName) []corev1.ResourceName
	// scope reports whether obj is in a quota's scope; nil: no scope
	// matches (a quota with scopes does not count the kind).
	scope func(sel corev1.ScopedResourceSelectorRequirement, obj any) (bool, error)
	usage func(obj any, now time.Time) corev1.ResourceList
	// constraints refuses an object lacking what a quota requires of it.
	constraints func(required []corev1.ResourceName, obj any) error
	// handles says whether a write may change usage: op is "CREATE" or
	// "UPDATE", old nil for a create.
	handles func(op, subresource string, obj, old any) bool
}

// ignored are the resources quota never counts (kube-apiserver's
// DefaultIgnoredResources): those never stored, and events.
var ignored = map[schema.GroupResource]bool{
	{Resource: "bindings"}:                                                 true,
	{Resource: "componentstatuses"}:                                        true,
	{Group: "authentication.k8s.io", Resource: "tokenreviews"}:             true,
	{Group: "authentication.k8s.io", Resource: "selfsubjectreviews"}:       true,
	{Group: "authorization.k8s.io", Resource: "subjectaccessreviews"}:      true,
	{Group: "authorization.k8s.io", Resource: "selfsubjectaccessreviews"}:  true,
	{Group: "authorization.k8s.io", Resource: "localsubjectaccessreviews"}: true,
	{Group: "authorization.k8s.io", Resource: "selfsubjectrulesreviews"}:   true,
	{Resource: "events"}:                         true,
	{Group: "events.k8s.io", Resource: "events"}: true,
}

// legacyAliases are the old names of some object counts.
var legacyAliases = map[schema.GroupResource]corev1.ResourceName{
	{Resource: "configmaps"}:             corev1.ResourceConfigMaps,
	{Resource: "resourcequotas"}:         corev1.ResourceQuotas,
	{Resource: "replicationcontrollers"}: corev1.ResourceReplicationControllers,
	{Resource: "secrets"}:                corev1.ResourceSecrets,
}

// kinds are the evaluators with logic of their own.
var kinds = map[schema.GroupResource]*kind{
	{Resource: "pods"}:                   podKind,
	{Resource: "services"}:               serviceKind,
	{Resource: "persistentvolumeclaims"}: claimKind,
}

// Evaluated are the resources whose evaluators the quota controller always
// has (kube-controller-manager's static ones); object counts of other
// resources are evaluated when a quota names them (CountedResource).
var Evaluated = []schema.GroupResource{
	{Resource: "pods"}, {Resource: "services"}, {Resource: "persistentvolumeclaims"},
	{Resource: "configmaps"}, {Resource: "resourcequotas"}, {Resource: "replicationcontrollers"}, {Resource: "secrets"},
}

// For is the evaluator of resource gr; nil for an ignored resource.
func For(gr schema.GroupResource) *Evaluator {
	if ignored[gr] {
		return nil
	}
	if k := kinds[gr]; k != nil {
		return &Evaluator{resource: gr, kind: k}
	}
	names := []corev1.ResourceName{CountName(gr)}
	if alias, ok := legacyAliases[gr]; ok {
		names = append(names, alias)
	}
	return &Evaluator{resource: gr, names: names}
}

// CountName is the object count of resource gr: count/<resource>.<group>,
// count/<resource> for the core group.
func CountName(gr schema.GroupResource) corev1.ResourceName {
	if gr.Group == "" {
		return corev1.ResourceName("count/" + gr.Resource)
	}
	return corev1.ResourceName("count/" + gr.Resource + "." + gr.Group)
}

// CountedResource is the resource an object count names
// (count/<resource>.<group>); false if name is not one.
func CountedResource(name corev1.ResourceName) (schema.GroupResource, bool) {
	rest, ok := strings.CutPrefix(string(name), "count/")
	if !ok || rest == "" {
		return schema.GroupResource{}, false
	}
	resource, group, _ := strings.Cut(rest, ".")
	return schema.GroupResource{Group: group, Resource: resource}, true
}

// Resource is the resource e evaluates.
func (e *Evaluator) Resource() schema.GroupResource { return e.resource }

// Object is an object as its evaluator reads it.
type Object struct{ v any }

// Decode reads a stored object.
func (e *Evaluator) Decode(data []byte) (Object, error) {
	if e.kind == nil {
		return Object{}, nil
	}
	v := e.kind.newObj()
	return Object{v}, json.Unmarshal(data, v)
}

// FromTree reads an object decoded as a JSON tree.
func (e *Evaluator) FromTree(obj map[string]any) (Object, error) {
	if e.kind == nil || obj == nil {
		return Object{}, nil
	}
	v := e.kind.newObj()
	return Object{v}, runtime.DefaultUnstructuredConverter.FromUnstructured(obj, v)
}

// Handles says whether a write (op "CREATE" or "UPDATE", on subresource
// or the object itself; old is the stored object of an update) may change
// usage: an object count only on create.
func (e *Evaluator) Handles(op, subresource string, obj, old Object) bool {
	if e.kind == nil {
		return subresource == "" && op == "CREATE"
	}
	return e.kind.handles(op, subresource, obj.v, old.v)
}

// Matching returns the names among input that e's objects use.
func (e *Evaluator) Matching(input []corev1.ResourceName) []corev1.ResourceName {
	if e.kind == nil {
		return intersection(input, e.names)
	}
	return e.kind.matching(input)
}

// Usage is what obj uses at time now (a pod past its deletion grace
// period uses no compute resources).
func (e *Evaluator) Usage(obj Object, now time.Time) corev1.ResourceList {
	if e.kind == nil {
		out := corev1.ResourceList{}
		for _, n := range e.names {
			out[n] = one()
		}
		return out
	}
	return e.kind.usage(obj.v, now)
}

// inScope reports whether obj is in every scope of q.
func (e *Evaluator) inScope(q *corev1.ResourceQuota, obj Object) (bool, error) {
	in := true
	for _, sel := range scopeSelectors(q) {
		if e.kind == nil || e.kind.scope == nil {
			return false, nil
		}
		ok, err := e.kind.scope(sel, obj.v)
		if err != nil {
			return false, err
		}
		in = in && ok
	}
	return in, nil
}

// matches reports whether q counts obj: q's status.hard has a resource e
// measures (a quota whose status the controller has not set yet counts
// nothing) and obj is in q's scopes.
func (e *Evaluator) matches(q *corev1.ResourceQuota, obj Object) (bool, error) {
	if len(e.Matching(Names(q.Status.Hard))) == 0 {
		return false, nil
	}
	return e.inScope(q, obj)
}

// scopeSelectors are q's scopes and scope selector, as one list.
func scopeSelectors(q *corev1.ResourceQuota) []corev1.ScopedResourceSelectorRequirement {
	var out []corev1.ScopedResourceSelectorRequirement
	for _, s := range q.Spec.Scopes {
		out = append(out, corev1.ScopedResourceSelectorRequirement{ScopeName: s, Operator: corev1.ScopeSelectorOpExists})
	}
	if q.Spec.ScopeSelector != nil {
		out = append(out, q.Spec.ScopeSelector.MatchExpressions...)
	}
	return out
}

// Used is the usage of q the quota controller computes (kube's
// CalculateUsage): for each of q's hard resources that an evaluator
// measures, the sum over the objects in q's namespace and scopes that list
// gives for the evaluator's resource; a resource whose objects cannot be
// listed is left out (with the error). evaluators are those the
// controller has (For of Evaluated and of the counted resources served).
func Used(q *corev1.ResourceQuota, evaluators []*Evaluator, list func(schema.GroupResource) ([]*object.Object, error), now time.Time) (corev1.ResourceList, error) {
	hard := Names(q.Spec.Hard)
	var potential []corev1.ResourceName
	for _, e := range evaluators {
		potential = append(potential, e.Matching(hard)...)
	}
	matched := intersection(hard, potential)
	used := corev1.ResourceList{}
	var errs []string
	for _, e := range evaluators {
		tracked := e.Matching(matched)
		if len(tracked) == 0 {
			continue
		}
		stats := corev1.ResourceList{}
		for _, n := range tracked {
			stats[n] = zero()
		}
		objs, err := list(e.resource)
		if err == nil {
			stats, err = e.sum(q, objs, stats, now)
		}
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", e.resource, err))
			matched = difference(matched, tracked)
			continue
		}
		used = Add(used, stats)
	}
	used = Mask(used, matched)
	if len(errs) > 0 {
		return used, fmt.Errorf("failed to list content: %s", strings.Join(errs, "; "))
	}
	return used, nil
}

// State is what of obj quota counts, as a string: its usage at now and,
// for a pod, the scopes it is in. The controller recomputes the quotas of
// an object's namespace when its State changes (kube-controller-manager's
// update filter: a pod that ended, a Service's type, a claim's size).
func (e *Evaluator) State(obj Object, now time.Time) string {
	s := prettyPrint(e.Usage(obj, now))
	if pod, ok := obj.v.(*corev1.Pod); ok {
		s += fmt.Sprint(terminating(pod), bestEffort(pod), pod.Spec.PriorityClassName, crossNamespaceAffinity(pod))
	}
	if pvc, ok := obj.v.(*corev1.PersistentVolumeClaim); ok {
		s += fmt.Sprint(attributesClasses(pvc))
	}
	return s
}

// UsageChangesOnUpdate says whether an update of an object may change its
// usage or scopes (pods, Services, claims); an object count changes only
// by creates and deletes.
func (e *Evaluator) UsageChangesOnUpdate() bool { return e.kind != nil }

// sum adds to stats the usage of the objects of objs in q's scopes. As
// kube's, a scope that cannot be evaluated ends the sum there, without
// error.
func (e *Evaluator) sum(q *corev1.ResourceQuota, objs []*object.Object, stats corev1.ResourceList, now time.Time) (corev1.ResourceList, error) {
	for _, o := range objs {
		obj, err := e.Decode(o.JSON())
		if err != nil {
			return stats, err
		}
		in, err := e.inScope(q, obj)
		if err != nil {
			return stats, nil
		}
		if in {
			stats = Add(stats, e.Usage(obj, now))
		}
	}
	return stats, nil
}
