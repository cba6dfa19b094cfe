// The LimitRanger plugin: a new pod's containers get the default requests and
// limits of the namespace's LimitRanges, and a pod beyond their min, max or
// ratio is refused.

package admission

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/watchcache/watchcache/pkg/jsontree"
	"github.com/watchcache/watchcache/pkg/pipeline"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
)

// The LimitRanger plugin, for pods: a new pod's containers get the
// default requests and limits of the namespace's LimitRanges of type
// Container (and the pod an annotation saying which), then the pod must
// keep within their min, max and maxLimitRequestRatio, per container (type
// Container) and in total (type Pod). Deliberate difference: the limits a
// pod breaks are listed by resource name, where kube-apiserver lists them
// in Go's map order, which varies.

// limitRangerAnnotation records what the plugin set on a pod.
const limitRangerAnnotation = "kubernetes.io/limit-ranger"

// defaultContainerResources gives a new pod's containers the defaults of
// the namespace's LimitRanges.
func defaultContainerResources(ctx context.Context, b *Builtin, req *pipeline.Request) error {
	var ranges []corev1.LimitRange
	if err := b.list(ctx, "", "limitranges", req.Namespace, &ranges); err != nil {
		return err
	}
	for _, lr := range ranges {
		setDefaultResources(req.Object, &lr)
	}
	return nil
}

// enforceLimitRanges refuses a new pod beyond the limits of one of the
// namespace's LimitRanges.
func enforceLimitRanges(ctx context.Context, b *Builtin, req *pipeline.Request) error {
	if req.Operation != admissionv1.Create {
		return nil // a pod's resources do not change
	}
	var ranges []corev1.LimitRange
	if err := b.list(ctx, "", "limitranges", req.Namespace, &ranges); err != nil || len(ranges) == 0 {
		return err
	}
	// Typed from the decoded object, not re-encoded to JSON text.
	var pod corev1.Pod
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(req.Object, &pod); err != nil {
		return err
	}
	for _, lr := range ranges {
		if err := podLimitErrors(&pod, &lr); err != nil {
			return forbidden(req, err)
		}
	}
	return nil
}

// setDefaultResources gives each container of pod the default requests
// and limits of lr's items of type Container that it lacks, and records
// them in the pod's limitRangerAnnotation.
func setDefaultResources(pod map[string]any, lr *corev1.LimitRange) {
	requests, limits := corev1.ResourceList{}, corev1.ResourceList{}
	for _, item := range lr.Spec.Limits {
		if item.Type == corev1.LimitTypeContainer {
			maps.Copy(requests, item.DefaultRequest)
			maps.Copy(limits, item.Default)
		}
	}
	if len(requests) == 0 && len(limits) == 0 {
		return
	}
	spec, _ := pod["spec"].(map[string]any)
	var set []string
	for _, list := range [][2]string{{"containers", "container"}, {"initContainers", "init container"}} {
		containers, _ := spec[list[0]].([]any)
		for _, c := range containers {
			container, ok := c.(map[string]any)
			if !ok {
				continue
			}
			name, _ := container["name"].(string)
			if names := setMissing(container, "requests", requests); len(names) > 0 {
				set = append(set, fmt.Sprintf("%s request for %s %s", strings.Join(names, ", "), list[1], name))
			}
			if names := setMissing(container, "limits", limits); len(names) > 0 {
				set = append(set, fmt.Sprintf("%s limit for %s %s", strings.Join(names, ", "), list[1], name))
			}
		}
	}
	if len(set) > 0 {
		annotations := jsontree.Child(jsontree.Child(pod, "metadata"), "annotations")
		annotations[limitRangerAnnotation] = "LimitRanger plugin set: " + strings.Join(set, "; ")
	}
}

// setMissing gives a container's resources.<field> the values it lacks,
// and returns their names, sorted.
func setMissing(container map[string]any, field string, values corev1.ResourceList) []string {
	resources, _ := container["resources"].(map[string]any)
	have, _ := resources[field].(map[string]any)
	var names []string
	for _, name := range slices.Sorted(maps.Keys(values)) {
		if _, ok := have[string(name)]; ok {
			continue
		}
		q := values[name]
		jsontree.Child(jsontree.Child(container, "resources"), field)[string(name)] = q.String()
		names = append(names, string(name))
	}
	return names
}

// podLimitErrors is what pod breaks of lr's limits (nil if nothing):
// kube-apiserver's messages, one if all are the same, else a list in
// brackets.
func podLimitErrors(pod *corev1.Pod, lr *corev1.LimitRange) error {
	var errs []error
	for _, item := range lr.Spec.Limits {
		switch item.Type {
		case corev1.LimitTypeContainer:
			for _, c := range slices.Concat(pod.Spec.Containers, pod.Spec.InitContainers) {
				errs = append(errs, itemErrors(&item, c.Resources.Requests, c.Resources.Limits)...)
			}
		case corev1.LimitTypePod:
			requests := podTotal(pod, func(r corev1.ResourceRequirements) corev1.ResourceList { return r.Requests })
			limits := podTotal(pod, func(r corev1.ResourceRequirements) corev1.ResourceList { return r.Limits })
			errs = append(errs, itemErrors(&item, requests, limits)...)
		}
	}
	return utilerrors.NewAggregate(errs)
}

// itemErrors checks requests and limits (of a container or a pod) against
// an item's min, max and maxLimitRequestRatio.
func itemErrors(item *corev1.LimitRangeItem, requests, limits corev1.ResourceList) []error {
	kind := string(item.Type)
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(item.Min)) {
		least := item.Min[name]
		request, hasRequest := requests[name]
		limit, hasLimit := limits[name]
		r, l, m := milliValues(request, limit, least)
		switch {
		case !hasRequest:
			errs = append(errs, fmt.Errorf("minimum %s usage per %s is %s.  No request is specified", name, kind, least.String()))
		case r < m:
			errs = append(errs, fmt.Errorf("minimum %s usage per %s is %s, but request is %s", name, kind, least.String(), request.String()))
		case hasLimit && l < m:
			errs = append(errs, fmt.Errorf("minimum %s usage per %s is %s, but limit is %s", name, kind, least.String(), limit.String()))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(item.Max)) {
		most := item.Max[name]
		request, hasRequest := requests[name]
		limit, hasLimit := limits[name]
		r, l, m := milliValues(request, limit, most)
		switch {
		case !hasLimit:
			errs = append(errs, fmt.Errorf("maximum %s usage per %s is %s.  No limit is specified", name, kind, most.String()))
		case l > m:
			errs = append(errs, fmt.Errorf("maximum %s usage per %s is %s, but limit is %s", name, kind, most.String(), limit.String()))
		case hasRequest && r > m:
			errs = append(errs, fmt.Errorf("maximum %s usage per %s is %s, but request is %s", name, kind, most.String(), request.String()))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(item.MaxLimitRequestRatio)) {
		ratio := item.MaxLimitRequestRatio[name]
		request, hasRequest := requests[name]
		limit, hasLimit := limits[name]
		r, l, _ := milliValues(request, limit, ratio)
		switch {
		case !hasRequest || r == 0:
			errs = append(errs, fmt.Errorf("%s max limit to request ratio per %s is %s, but no request is specified or request is 0", name, kind, ratio.String()))
		case !hasLimit || l == 0:
			errs = append(errs, fmt.Errorf("%s max limit to request ratio per %s is %s, but no limit is specified or limit is 0", name, kind, ratio.String()))
		default:
			observed := float64(l) / float64(r)
			allowed, compared := float64(ratio.Value()), observed
			if ratio.Value() <= resource.MaxMilliValue {
				allowed, compared = float64(ratio.MilliValue()), observed*1000
			}
			if compared > allowed {
				errs = append(errs, fmt.Errorf("%s max limit to request ratio per %s is %s, but provided ratio is %f", name, kind, ratio.String(), observed))
			}
		}
	}
	return errs
}

// milliValues are a request, a limit and a bound to compare, in thousandths
// if none overflows so, else in units.
func milliValues(request, limit, bound resource.Quantity) (r, l, b int64) {
	r, l, b = request.Value(), limit.Value(), bound.Value()
	if r <= resource.MaxMilliValue && l <= resource.MaxMilliValue && b <= resource.MaxMilliValue {
		r, l, b = request.MilliValue(), limit.MilliValue(), bound.MilliValue()
	}
	return r, l, b
}

// podTotal is what a pod's containers ask together, of the requests or the
// limits that of gives: its containers' and sidecars' sum, or more if an
// init container (with the sidecars started before it) asks more.
func podTotal(pod *corev1.Pod, of func(corev1.ResourceRequirements) corev1.ResourceList) corev1.ResourceList {
	total := corev1.ResourceList{}
	for _, c := range pod.Spec.Containers {
		addResources(total, of(c.Resources))
	}
	sidecars, init := corev1.ResourceList{}, corev1.ResourceList{}
	for _, c := range pod.Spec.InitContainers {
		asks := corev1.ResourceList{}
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			addResources(total, of(c.Resources))
			addResources(sidecars, of(c.Resources))
			addResources(asks, sidecars)
		} else {
			addResources(asks, of(c.Resources))
			addResources(asks, sidecars)
		}
		maxResources(init, asks)
	}
	maxResources(total, init)
	return total
}

// addResources adds add to total.
func addResources(total, add corev1.ResourceList) {
	for name, q := range add {
		if sum, ok := total[name]; ok {
			sum.Add(q)
			total[name] = sum
		} else {
			total[name] = q.DeepCopy()
		}
	}
}

// maxResources raises each of total to other's, if that is more.
func maxResources(total, other corev1.ResourceList) {
	for name, q := range other {
		if cur, ok := total[name]; !ok || q.Cmp(cur) > 0 {
			total[name] = q.DeepCopy()
		}
	}
}
