// What a delete does to a stored object, as kube-apiserver's
// BeforeDelete/graceful deletion: finalizers, the garbage collector's
// orphan and foregroundDeletion finalizers, grace periods of pods on a node,
// and removal of an updated object whose finalizers are gone.

package strategy

import (
	"encoding/json"
	"slices"
	"time"

	"github.com/watchcache/watchcache/pkg/jsontree"
	"github.com/watchcache/watchcache/pkg/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Deletion is what a delete request asks, of its DeleteOptions.
type Deletion struct {
	// GracePeriodSeconds, if not nil, is the client's grace period (0:
	// now, kubectl's --force).
	GracePeriodSeconds *int64
	// Now is the time of the request.
	Now time.Time
	// Propagation is the request's propagationPolicy; nil for the kind's
	// default (resource.Resource.OrphanByDefault).
	Propagation *metav1.DeletionPropagation
	// OrphanDependents is the deprecated orphanDependents option; it
	// overrides Propagation (requests may not set both).
	OrphanDependents *bool
}

// DeleteAction is what a delete does to a stored object.
type DeleteAction int

const (
	// Remove deletes the object from storage now.
	Remove DeleteAction = iota
	// Mark writes the object back with deletionTimestamp set: finalizers
	// or a grace period must pass before it goes.
	Mark
	// Unchanged leaves an object already being deleted as it is.
	Unchanged
)

// BeginDelete decides what a delete does to obj, as kube-apiserver's
// generic store with its strategies does, and marks obj when it is not
// removed at once:
//   - an object with finalizers (a namespace's spec.finalizers count) gets
//     deletionTimestamp and deletionGracePeriodSeconds 0 and stays until
//     the last finalizer goes (a namespace also turns Terminating);
//   - a pod bound to a node is deleted gracefully: deletionTimestamp is now
//     plus the grace period (the request's, else its
//     terminationGracePeriodSeconds, default 30) and it stays until its
//     kubelet deletes it with grace 0; a grace period of 0 removes it;
//   - the garbage collector's finalizers (orphan, foregroundDeletion) are
//     set as the propagation policy asks, before anything else;
//   - a kind's DeleteFinalizer is added first;
//   - an object already being deleted is left as it is, except that a
//     shorter grace period shortens a pod's, grace 0 removes a pod
//     without finalizers, and a new policy changes the GC finalizers;
//   - anything else is removed.
func BeginDelete(res *resource.Resource, obj map[string]any, d Deletion) DeleteAction {
	meta := metadata(obj)
	if _, deleting := meta["deletionTimestamp"]; !deleting && res.DeleteFinalizer != "" {
		list, _ := meta["finalizers"].([]any)
		if !slices.Contains(list, any(res.DeleteFinalizer)) {
			meta["finalizers"] = append(list, res.DeleteFinalizer)
		}
	}
	gcChanged := setGCFinalizers(res, meta, d)
	finalizers := hasFinalizers(res, obj)
	grace := int64(0)
	if isPod(res) && nodeName(obj) != "" {
		grace = terminationGracePeriod(obj)
		if d.GracePeriodSeconds != nil {
			grace = max(*d.GracePeriodSeconds, 0)
		}
	}
	if _, deleting := meta["deletionTimestamp"]; deleting {
		current := int64Field(meta, "deletionGracePeriodSeconds")
		switch {
		case grace == 0 && !finalizers && isPod(res) && d.GracePeriodSeconds != nil:
			return Remove
		case isPod(res) && d.GracePeriodSeconds != nil && grace < current:
			setDeletion(meta, d.Now, grace)
			return Mark
		case gcChanged:
			return Mark
		}
		return Unchanged
	}
	if !finalizers && grace == 0 {
		return Remove
	}
	setDeletion(meta, d.Now, grace)
	if isNamespace(res) {
		status, _ := obj["status"].(map[string]any)
		if status == nil {
			status = map[string]any{}
			obj["status"] = status
		}
		status["phase"] = "Terminating"
	}
	return Mark
}

// The garbage collector's finalizers: dependents are orphaned (their
// ownerReferences to the object removed), or deleted first, before the
// object goes.
const (
	FinalizerOrphan     = metav1.FinalizerOrphanDependents
	FinalizerForeground = metav1.FinalizerDeleteDependents
)

// setGCFinalizers sets the garbage collector's finalizers in meta as
// kube-apiserver does on a delete: the request's orphanDependents, else
// its propagationPolicy, else a GC finalizer the object already has, else
// the kind's default decides between orphan, foregroundDeletion and
// neither (background). It reports whether the finalizers changed.
func setGCFinalizers(res *resource.Resource, meta map[string]any, d Deletion) bool {
	old, _ := meta["finalizers"].([]any)
	orphan, foreground := res.OrphanByDefault, false
	for _, f := range old {
		switch f {
		case FinalizerOrphan:
			orphan, foreground = true, false
		case FinalizerForeground:
			orphan, foreground = false, true
		}
	}
	switch {
	case d.OrphanDependents != nil:
		orphan, foreground = *d.OrphanDependents, false
	case d.Propagation != nil:
		orphan = *d.Propagation == metav1.DeletePropagationOrphan
		foreground = *d.Propagation == metav1.DeletePropagationForeground
	}
	var kept []any
	for _, f := range old {
		if f != FinalizerOrphan && f != FinalizerForeground {
			kept = append(kept, f)
		}
	}
	if orphan {
		kept = append(kept, FinalizerOrphan)
	}
	if foreground {
		kept = append(kept, FinalizerForeground)
	}
	if sameSet(old, kept) {
		return false
	}
	jsontree.SetList(meta, "finalizers", kept)
	return true
}

// sameSet reports whether two lists hold the same values.
func sameSet(a, b []any) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

// DeleteAfterUpdate reports whether an updated object is to be removed: it
// is being deleted, its last finalizer is gone and no grace period runs.
func DeleteAfterUpdate(res *resource.Resource, obj map[string]any) bool {
	meta := metadata(obj)
	_, deleting := meta["deletionTimestamp"]
	return deleting && !hasFinalizers(res, obj) && int64Field(meta, "deletionGracePeriodSeconds") == 0
}

// KeepDeletion carries deletionTimestamp and deletionGracePeriodSeconds
// over from old into an update: clients can neither set nor clear them.
func KeepDeletion(obj, old map[string]any) {
	meta, oldMeta := metadata(obj), metadata(old)
	for _, k := range []string{"deletionTimestamp", "deletionGracePeriodSeconds"} {
		if v, ok := oldMeta[k]; ok {
			meta[k] = v
		} else {
			delete(meta, k)
		}
	}
}

func setDeletion(meta map[string]any, now time.Time, grace int64) {
	meta["deletionTimestamp"] = now.Add(time.Duration(grace) * time.Second).UTC().Format(time.RFC3339)
	meta["deletionGracePeriodSeconds"] = grace
}

// hasFinalizers reports metadata.finalizers, and a namespace's
// spec.finalizers.
func hasFinalizers(res *resource.Resource, obj map[string]any) bool {
	if f, _ := metadata(obj)["finalizers"].([]any); len(f) > 0 {
		return true
	}
	if isNamespace(res) {
		spec, _ := obj["spec"].(map[string]any)
		f, _ := spec["finalizers"].([]any)
		return len(f) > 0
	}
	return false
}

func isPod(res *resource.Resource) bool { return res.Group == "" && res.Plural == "pods" }

func nodeName(obj map[string]any) string {
	spec, _ := obj["spec"].(map[string]any)
	name, _ := spec["nodeName"].(string)
	return name
}

// defaultTerminationGracePeriod is a pod's when its spec has none.
const defaultTerminationGracePeriod = 30

func terminationGracePeriod(obj map[string]any) int64 {
	spec, _ := obj["spec"].(map[string]any)
	if _, ok := spec["terminationGracePeriodSeconds"]; !ok {
		return defaultTerminationGracePeriod
	}
	return max(int64Field(spec, "terminationGracePeriodSeconds"), 0)
}

func int64Field(m map[string]any, k string) int64 {
	switch v := m[k].(type) {
	case int64:
		return v
	case float64:
		return int64(v)
	case json.Number:
		n, _ := v.Int64()
		return n
	}
	return 0
}
