// The evaluators with logic of their own, as kube's: pods (compute
// resources, scopes, the containers' required requests and limits),
// Services (node ports, load balancers) and PersistentVolumeClaims
// (storage, per storage class).

package quota

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/validation"
	resourcehelper "k8s.io/component-helpers/resource"
	volumehelper "k8s.io/component-helpers/storage/volume"
)

// podResources are the names a pod's usage may have besides the prefixed
// ones (hugepages, extended resources).
var podResources = []corev1.ResourceName{
	"count/pods", corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage,
	corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory, corev1.ResourceRequestsEphemeralStorage,
	corev1.ResourceLimitsCPU, corev1.ResourceLimitsMemory, corev1.ResourceLimitsEphemeralStorage, corev1.ResourcePods,
}

// mustSpecify are the resources that, when a quota limits them, every
// container must request or limit (a mistake kube keeps for
// compatibility, never to be extended).
var mustSpecify = []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceRequestsCPU,
	corev1.ResourceRequestsMemory, corev1.ResourceLimitsCPU, corev1.ResourceLimitsMemory}

// deviceClassPrefix is the prefix of DRA's implicit extended resources.
const deviceClassPrefix = "deviceclass.resource.kubernetes.io/"

var podKind = &kind{
	newObj: func() any { return &corev1.Pod{} },
	matching: func(input []corev1.ResourceName) []corev1.ResourceName {
		out := intersection(input, podResources)
		for _, n := range input {
			if strings.HasPrefix(string(n), corev1.ResourceHugePagesPrefix) || strings.HasPrefix(string(n), corev1.ResourceRequestsHugePagesPrefix) ||
				quotaExtendedResource(n) {
				out = append(out, n)
			}
		}
		return out
	},
	scope: func(sel corev1.ScopedResourceSelectorRequirement, obj any) (bool, error) {
		pod := obj.(*corev1.Pod)
		switch sel.ScopeName {
		case corev1.ResourceQuotaScopeTerminating:
			return terminating(pod), nil
		case corev1.ResourceQuotaScopeNotTerminating:
			return !terminating(pod), nil
		case corev1.ResourceQuotaScopeBestEffort:
			return bestEffort(pod), nil
		case corev1.ResourceQuotaScopeNotBestEffort:
			return !bestEffort(pod), nil
		case corev1.ResourceQuotaScopePriorityClass:
			if sel.Operator == corev1.ScopeSelectorOpExists {
				return pod.Spec.PriorityClassName != "", nil
			}
			var set labels.Set
			if pod.Spec.PriorityClassName != "" {
				set = labels.Set{string(corev1.ResourceQuotaScopePriorityClass): pod.Spec.PriorityClassName}
			}
			return selectorMatches(sel, set)
		case corev1.ResourceQuotaScopeCrossNamespacePodAffinity:
			return crossNamespaceAffinity(pod), nil
		}
		return false, nil
	},
	usage: func(obj any, now time.Time) corev1.ResourceList {
		pod := obj.(*corev1.Pod)
		// count/pods counts every pod stored; the rest (pods included)
		// only pods not at their end.
		out := corev1.ResourceList{"count/pods": one()}
		if !charged(pod, now) {
			return out
		}
		// kube-apiserver 1.37's gates: InPlacePodVerticalScaling (GA) and
		// PodLevelResources (beta, on).
		opts := resourcehelper.PodResourcesOptions{UseStatusResources: true}
		return Add(out, computeUsage(resourcehelper.PodRequests(pod, opts), resourcehelper.PodLimits(pod, opts)))
	},
	constraints: func(required []corev1.ResourceName, obj any) error {
		pod := obj.(*corev1.Pod)
		if resourcehelper.IsPodLevelResourcesSet(pod) {
			return nil
		}
		req := intersection(required, mustSpecify)
		missing := map[corev1.ResourceName][]string{}
		for _, c := range slices.Concat(pod.Spec.Containers, pod.Spec.InitContainers) {
			has := computeUsage(c.Resources.Requests, c.Resources.Limits)
			for _, n := range req {
				if _, ok := has[n]; !ok && !slices.Contains(missing[n], c.Name) {
					missing[n] = append(missing[n], c.Name)
				}
			}
		}
		if len(missing) == 0 {
			return nil
		}
		var msgs []string
		for _, n := range slices.Sorted(maps.Keys(missing)) {
			slices.Sort(missing[n])
			msgs = append(msgs, fmt.Sprintf("%s for: %s", n, strings.Join(missing[n], ",")))
		}
		return fmt.Errorf("must specify %s", strings.Join(msgs, "; "))
	},
	handles: func(op, subresource string, obj, old any) bool {
		switch subresource {
		case "":
			if op == "UPDATE" {
				// a change of activeDeadlineSeconds moves the pod between
				// the Terminating and NotTerminating scopes
				return terminating(obj.(*corev1.Pod)) != terminating(old.(*corev1.Pod))
			}
			return op == "CREATE"
		case "resize":
			return op == "UPDATE"
		}
		return false
	},
}

// quotaExtendedResource says whether a quota's name is an extended
// resource's request (requests.<name>, where name is not native, or a DRA
// device class).
func quotaExtendedResource(n corev1.ResourceName) bool {
	return strings.HasPrefix(string(n), corev1.DefaultResourceRequestsPrefix) &&
		(!native(n) || strings.HasPrefix(string(n), corev1.DefaultResourceRequestsPrefix+deviceClassPrefix))
}

// native says whether a resource name is in the kubernetes.io domain (or
// has none).
func native(n corev1.ResourceName) bool {
	return !strings.Contains(string(n), "/") || strings.Contains(string(n), corev1.ResourceDefaultNamespacePrefix)
}

// extended says whether a container's resource name is an extended
// resource (kube's IsExtendedResourceName, or a DRA device class).
func extended(n corev1.ResourceName) bool {
	if strings.HasPrefix(string(n), deviceClassPrefix) {
		return true
	}
	if native(n) || strings.HasPrefix(string(n), corev1.DefaultResourceRequestsPrefix) {
		return false
	}
	return len(validation.IsQualifiedName(corev1.DefaultResourceRequestsPrefix+string(n))) == 0
}

// computeUsage is what requests and limits (of a pod or one container)
// use: pods 1, cpu and memory as requests.* (and their bare names),
// limits.*, ephemeral storage, hugepages and extended resources.
func computeUsage(requests, limits corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{corev1.ResourcePods: resource.MustParse("1")}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage} {
		if q, ok := requests[r]; ok {
			out[r] = q
			out[corev1.DefaultResourceRequestsPrefix+r] = q
		}
		if q, ok := limits[r]; ok {
			out["limits."+r] = q
		}
	}
	for r, q := range requests {
		if strings.HasPrefix(string(r), corev1.ResourceHugePagesPrefix) {
			out[r] = q
			out[corev1.DefaultResourceRequestsPrefix+r] = q
		}
		if extended(r) {
			out[corev1.DefaultResourceRequestsPrefix+r] = q
		}
	}
	return out
}

// charged says whether a pod uses compute resources: not when it has
// ended (Succeeded, Failed) or is past its deletion's grace period (a lost
// node's pod must not hold the quota).
func charged(pod *corev1.Pod, now time.Time) bool {
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return false
	}
	if pod.DeletionTimestamp != nil && pod.DeletionGracePeriodSeconds != nil {
		end := pod.DeletionTimestamp.Add(time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second)
		return !now.After(end)
	}
	return true
}

func terminating(pod *corev1.Pod) bool {
	return pod.Spec.ActiveDeadlineSeconds != nil && *pod.Spec.ActiveDeadlineSeconds >= 0
}

// bestEffort says whether a pod's QoS class is BestEffort: its status says
// (set on create), or, without one, no container requests or limits cpu
// or memory.
func bestEffort(pod *corev1.Pod) bool {
	if pod.Status.QOSClass != "" {
		return pod.Status.QOSClass == corev1.PodQOSBestEffort
	}
	for _, c := range slices.Concat(pod.Spec.InitContainers, pod.Spec.Containers) {
		for _, list := range []corev1.ResourceList{c.Resources.Requests, c.Resources.Limits} {
			for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
				if q, ok := list[r]; ok && !q.IsZero() {
					return false
				}
			}
		}
	}
	return true
}

// crossNamespaceAffinity says whether a pod's (anti-)affinity terms name
// other namespaces.
func crossNamespaceAffinity(pod *corev1.Pod) bool {
	a := pod.Spec.Affinity
	if a == nil {
		return false
	}
	var terms []corev1.PodAffinityTerm
	if a.PodAffinity != nil {
		terms = append(terms, a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution...)
		for _, w := range a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
			terms = append(terms, w.PodAffinityTerm)
		}
	}
	if a.PodAntiAffinity != nil {
		terms = append(terms, a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution...)
		for _, w := range a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
			terms = append(terms, w.PodAffinityTerm)
		}
	}
	return slices.ContainsFunc(terms, func(t corev1.PodAffinityTerm) bool { return len(t.Namespaces) > 0 || t.NamespaceSelector != nil })
}

// selectorMatches evaluates a scope selector (In, NotIn, Exists,
// DoesNotExist) as a label selector on set.
func selectorMatches(sel corev1.ScopedResourceSelectorRequirement, set labels.Set) (bool, error) {
	ops := map[corev1.ScopeSelectorOperator]selection.Operator{corev1.ScopeSelectorOpIn: selection.In, corev1.ScopeSelectorOpNotIn: selection.NotIn,
		corev1.ScopeSelectorOpExists: selection.Exists, corev1.ScopeSelectorOpDoesNotExist: selection.DoesNotExist}
	op, ok := ops[sel.Operator]
	if !ok {
		return false, fmt.Errorf("failed to parse and convert selector: %q is not a valid scope selector operator", sel.Operator)
	}
	r, err := labels.NewRequirement(string(sel.ScopeName), op, sel.Values)
	if err != nil {
		return false, fmt.Errorf("failed to parse and convert selector: %v", err)
	}
	return labels.NewSelector().Add(*r).Matches(set), nil
}

var serviceKind = &kind{
	newObj: func() any { return &corev1.Service{} },
	matching: func(input []corev1.ResourceName) []corev1.ResourceName {
		return intersection(input, []corev1.ResourceName{"count/services", corev1.ResourceServices,
			corev1.ResourceServicesNodePorts, corev1.ResourceServicesLoadBalancers})
	},
	usage: func(obj any, _ time.Time) corev1.ResourceList {
		svc := obj.(*corev1.Service)
		out := corev1.ResourceList{"count/services": one(), corev1.ResourceServices: one(),
			corev1.ResourceServicesLoadBalancers: zero(), corev1.ResourceServicesNodePorts: zero()}
		ports := int64(len(svc.Spec.Ports))
		switch svc.Spec.Type {
		case corev1.ServiceTypeNodePort:
			out[corev1.ResourceServicesNodePorts] = *resource.NewQuantity(ports, resource.DecimalSI)
		case corev1.ServiceTypeLoadBalancer:
			if a := svc.Spec.AllocateLoadBalancerNodePorts; a != nil && !*a {
				// node ports not allocated: those asked for
				ports = 0
				for _, p := range svc.Spec.Ports {
					if p.NodePort != 0 {
						ports++
					}
				}
			}
			out[corev1.ResourceServicesNodePorts] = *resource.NewQuantity(ports, resource.DecimalSI)
			out[corev1.ResourceServicesLoadBalancers] = one()
		}
		return out
	},
	constraints: func([]corev1.ResourceName, any) error { return nil },
	handles: func(op, subresource string, _, _ any) bool {
		return subresource == "" && (op == "CREATE" || op == "UPDATE") // a type change changes usage
	},
}

// storageClassSuffix names a claim resource per storage class:
// <class>.storageclass.storage.k8s.io/<resource>.
const storageClassSuffix = ".storageclass.storage.k8s.io/"

var claimResources = []corev1.ResourceName{corev1.ResourcePersistentVolumeClaims, corev1.ResourceRequestsStorage}

var claimKind = &kind{
	newObj: func() any { return &corev1.PersistentVolumeClaim{} },
	matching: func(input []corev1.ResourceName) []corev1.ResourceName {
		var out []corev1.ResourceName
		for _, n := range input {
			if n == "count/persistentvolumeclaims" || slices.Contains(claimResources, n) ||
				slices.ContainsFunc(claimResources, func(r corev1.ResourceName) bool { return strings.HasSuffix(string(n), storageClassSuffix+string(r)) }) {
				out = append(out, n)
			}
		}
		return out
	},
	scope: func(sel corev1.ScopedResourceSelectorRequirement, obj any) (bool, error) {
		if sel.ScopeName != corev1.ResourceQuotaScopeVolumeAttributesClass {
			return false, nil
		}
		classes := attributesClasses(obj.(*corev1.PersistentVolumeClaim))
		if sel.Operator == corev1.ScopeSelectorOpExists {
			return len(classes) > 0, nil
		}
		if len(classes) == 0 {
			return selectorMatches(sel, labels.Set{})
		}
		for _, c := range classes {
			if ok, err := selectorMatches(sel, labels.Set{string(corev1.ResourceQuotaScopeVolumeAttributesClass): c}); ok || err != nil {
				return ok, err
			}
		}
		return false, nil
	},
	usage: func(obj any, _ time.Time) corev1.ResourceList {
		pvc := obj.(*corev1.PersistentVolumeClaim)
		out := corev1.ResourceList{corev1.ResourcePersistentVolumeClaims: one(), "count/persistentvolumeclaims": one()}
		class := volumehelper.GetPersistentVolumeClaimClass(pvc)
		if class != "" {
			out[corev1.ResourceName(class+storageClassSuffix+string(corev1.ResourcePersistentVolumeClaims))] = one()
		}
		if storage := claimStorage(pvc); storage != nil {
			out[corev1.ResourceRequestsStorage] = *storage
			if class != "" {
				out[corev1.ResourceName(class+storageClassSuffix+string(corev1.ResourceRequestsStorage))] = *storage
			}
		}
		return out
	},
	constraints: func([]corev1.ResourceName, any) error { return nil },
	handles: func(op, subresource string, obj, old any) bool {
		switch subresource {
		case "":
			return op == "CREATE" || op == "UPDATE" // a resize changes usage
		case "status":
			return claimReplenish(obj.(*corev1.PersistentVolumeClaim), old.(*corev1.PersistentVolumeClaim))
		}
		return false
	},
}

// claimStorage is the storage a claim uses, in whole bytes: its request,
// or what is allocated to it if more.
func claimStorage(pvc *corev1.PersistentVolumeClaim) *resource.Quantity {
	round := func(q resource.Quantity) *resource.Quantity {
		r := q.DeepCopy()
		if r.RoundUp(0) {
			return &q // whole already: as it was given
		}
		return &r
	}
	req, ok := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	if !ok {
		return nil
	}
	out := round(req)
	if alloc, ok := pvc.Status.AllocatedResources[corev1.ResourceStorage]; ok && alloc.Cmp(*out) > 0 {
		out = round(alloc)
	}
	return out
}

// claimReplenish says whether a claim's status change changes its usage
// (allocated storage, attributes classes).
func claimReplenish(pvc, old *corev1.PersistentVolumeClaim) bool {
	a, b := old.Status.AllocatedResources[corev1.ResourceStorage], pvc.Status.AllocatedResources[corev1.ResourceStorage]
	return a.Cmp(b) != 0 || !slices.Equal(attributesClasses(old), attributesClasses(pvc))
}

// attributesClasses are the VolumeAttributesClasses a claim names (spec,
// current, target of a modification), sorted, once each.
func attributesClasses(pvc *corev1.PersistentVolumeClaim) []string {
	var out []string
	for _, p := range []*string{pvc.Spec.VolumeAttributesClassName, pvc.Status.CurrentVolumeAttributesClassName} {
		if p != nil && *p != "" {
			out = append(out, *p)
		}
	}
	if m := pvc.Status.ModifyVolumeStatus; m != nil && m.TargetVolumeAttributesClassName != "" {
		out = append(out, m.TargetVolumeAttributesClassName)
	}
	slices.Sort(out)
	return slices.Compact(out)
}
