// The Priority plugin: a new pod's priority and preemption policy from its
// PriorityClass (or the global default), and one global-default
// PriorityClass at most.

package admission

import (
	"context"
	"fmt"

	"github.com/watchcache/watchcache/pkg/jsontree"
	"github.com/watchcache/watchcache/pkg/pipeline"
	admissionv1 "k8s.io/api/admission/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
)

// The Priority plugin: a new pod's priority and preemption policy are
// those of its PriorityClass (priorityClassName), or of the global default
// class (which it is then given), or 0 and PreemptLowerPriority; a pod
// that gives other values is refused. Only one PriorityClass may be the
// global default. (A pod update keeps them: defaults.KeepOnUpdate.)

// preemptLowerPriority is the preemption policy of pods without a class.
const preemptLowerPriority = "PreemptLowerPriority"

// resolvePriority sets a new pod's priority and preemption policy.
func resolvePriority(ctx context.Context, b *Builtin, req *pipeline.Request) error {
	spec := jsontree.Child(req.Object, "spec")
	name, _ := spec["priorityClassName"].(string)
	var class *schedulingv1.PriorityClass
	if name == "" {
		var classes []schedulingv1.PriorityClass
		if err := b.list(ctx, "scheduling.k8s.io", "priorityclasses", "", &classes); err != nil {
			return err
		}
		if class = globalDefault(classes); class != nil {
			spec["priorityClassName"] = class.Name
		}
	} else {
		class = &schedulingv1.PriorityClass{}
		found, err := b.get(ctx, "scheduling.k8s.io", "priorityclasses", name, class)
		if err != nil {
			return err
		}
		if !found {
			return forbidden(req, fmt.Errorf("no PriorityClass with name %v was found", name))
		}
	}
	priority, policy := classPriority(class)
	if given := spec["priority"]; given != nil && given != any(priority) {
		return forbidden(req, fmt.Errorf("the integer value of priority (%v) must not be provided in pod spec; priority admission controller computed %d from the given PriorityClass name", given, priority))
	}
	spec["priority"] = priority
	if policy == "" {
		return nil
	}
	if given := spec["preemptionPolicy"]; given != nil && given != any(policy) {
		return forbidden(req, fmt.Errorf("the string value of PreemptionPolicy (%v) must not be provided in pod spec; priority admission controller computed %s from the given PriorityClass name", given, policy))
	}
	spec["preemptionPolicy"] = policy
	return nil
}

// classPriority is the priority and preemption policy (none: "") of the
// pods of class (nil: no class).
func classPriority(class *schedulingv1.PriorityClass) (int64, string) {
	if class == nil {
		return 0, preemptLowerPriority
	}
	if class.PreemptionPolicy == nil {
		return int64(class.Value), ""
	}
	return int64(class.Value), string(*class.PreemptionPolicy)
}

// globalDefault is the global default among classes: of those marked so
// (more than one after concurrent writes), the one of the lowest value;
// nil if none is.
func globalDefault(classes []schedulingv1.PriorityClass) *schedulingv1.PriorityClass {
	var def *schedulingv1.PriorityClass
	for i, c := range classes {
		if c.GlobalDefault && (def == nil || c.Value < def.Value) {
			def = &classes[i]
		}
	}
	return def
}

// oneGlobalDefault refuses a PriorityClass marked as the global default
// while another one is.
func oneGlobalDefault(ctx context.Context, b *Builtin, req *pipeline.Request) error {
	if req.Object["globalDefault"] != true {
		return nil
	}
	var classes []schedulingv1.PriorityClass
	if err := b.list(ctx, "scheduling.k8s.io", "priorityclasses", "", &classes); err != nil {
		return err
	}
	if def := globalDefault(classes); def != nil && (req.Operation == admissionv1.Create || def.Name != req.Name) {
		return forbidden(req, fmt.Errorf("PriorityClass %v is already marked as default. Only one default can exist", def.Name))
	}
	return nil
}
