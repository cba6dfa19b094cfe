// autoscaling/v1 HorizontalPodAutoscalers stored as autoscaling/v2: the
// conversion between the two shapes on write and read.

package conversion

import (
	"encoding/json"
	"maps"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The annotations in which an autoscaling/v1 HPA carries what v1 cannot
// express, as kube-apiserver writes them: its metrics other than a CPU
// utilization target and its current metrics (as autoscaling/v1's
// MetricSpec and MetricStatus), its conditions, and its behavior (as
// kube-apiserver's internal type: field names without JSON tags).
const (
	hpaMetricsAnnotation        = "autoscaling.alpha.kubernetes.io/metrics"
	hpaCurrentMetricsAnnotation = "autoscaling.alpha.kubernetes.io/current-metrics"
	hpaConditionsAnnotation     = "autoscaling.alpha.kubernetes.io/conditions"
	hpaBehaviorAnnotation       = "autoscaling.alpha.kubernetes.io/behavior"
)

// hpaRoundTripAnnotations are the annotations no stored HPA keeps (the
// conversion to autoscaling/v2 drops them).
var hpaRoundTripAnnotations = []string{hpaMetricsAnnotation, hpaCurrentMetricsAnnotation, hpaConditionsAnnotation, hpaBehaviorAnnotation}

// hpaDefaultCPUUtilization is the CPU utilization target of an HPA
// written without metrics.
const hpaDefaultCPUUtilization = 80

// hpaBehavior is the behavior annotation's shape: kube-apiserver's
// internal HorizontalPodAutoscalerBehavior, whose fields have no JSON
// tags.
type hpaBehavior struct {
	ScaleUp   *hpaScalingRules
	ScaleDown *hpaScalingRules
}

type hpaScalingRules struct {
	StabilizationWindowSeconds *int32
	SelectPolicy               *autoscalingv2.ScalingPolicySelect
	Policies                   []hpaScalingPolicy
	Tolerance                  *resource.Quantity
}

type hpaScalingPolicy struct {
	Type          autoscalingv2.HPAScalingPolicyType
	Value         int32
	PeriodSeconds int32
}

// hpas converts autoscaling/v1 HorizontalPodAutoscalers, stored as
// autoscaling/v2, as kube-apiserver's conversion does: a CPU utilization
// target is targetCPUUtilizationPercentage (the v2 CPU metric last on the
// way back), the other metrics, the current metrics, the conditions and
// the behavior are annotations, and a v1 HPA without metrics targets 80%
// CPU utilization.
type hpas struct{}

func (hpas) FromStorage(stored []byte) ([]byte, error) {
	var in autoscalingv2.HorizontalPodAutoscaler
	if err := json.Unmarshal(stored, &in); err != nil {
		return nil, err
	}
	out := autoscalingv1.HorizontalPodAutoscaler{
		TypeMeta:   metav1.TypeMeta{APIVersion: "autoscaling/v1", Kind: "HorizontalPodAutoscaler"},
		ObjectMeta: in.ObjectMeta,
		Spec: autoscalingv1.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv1.CrossVersionObjectReference(in.Spec.ScaleTargetRef),
			MinReplicas:    in.Spec.MinReplicas,
			MaxReplicas:    in.Spec.MaxReplicas,
		},
		Status: autoscalingv1.HorizontalPodAutoscalerStatus{
			ObservedGeneration: in.Status.ObservedGeneration,
			LastScaleTime:      in.Status.LastScaleTime,
			CurrentReplicas:    in.Status.CurrentReplicas,
			DesiredReplicas:    in.Status.DesiredReplicas,
		},
	}
	for _, m := range in.Spec.Metrics {
		if isCPU(m.Type, m.Resource) {
			out.Spec.TargetCPUUtilizationPercentage = m.Resource.Target.AverageUtilization
			break
		}
	}
	for _, m := range in.Status.CurrentMetrics {
		if m.Type == autoscalingv2.ResourceMetricSourceType && m.Resource != nil && m.Resource.Name == corev1.ResourceCPU &&
			m.Resource.Current.AverageUtilization != nil {
			out.Status.CurrentCPUUtilizationPercentage = m.Resource.Current.AverageUtilization
		}
	}

	annotations := map[string]string{}
	var others []autoscalingv1.MetricSpec
	for _, m := range in.Spec.Metrics {
		if !isCPU(m.Type, m.Resource) || m.Resource.Target.AverageUtilization == nil {
			others = append(others, metricSpecToV1(m))
		}
	}
	if err := annotate(annotations, hpaMetricsAnnotation, others); err != nil {
		return nil, err
	}
	current := make([]autoscalingv1.MetricStatus, len(in.Status.CurrentMetrics))
	for i, m := range in.Status.CurrentMetrics {
		current[i] = metricStatusToV1(m)
	}
	if err := annotate(annotations, hpaCurrentMetricsAnnotation, current); err != nil {
		return nil, err
	}
	conditions := make([]autoscalingv1.HorizontalPodAutoscalerCondition, len(in.Status.Conditions))
	for i, c := range in.Status.Conditions {
		conditions[i] = autoscalingv1.HorizontalPodAutoscalerCondition{Type: autoscalingv1.HorizontalPodAutoscalerConditionType(c.Type),
			Status: c.Status, LastTransitionTime: c.LastTransitionTime, Reason: c.Reason, Message: c.Message}
	}
	if err := annotate(annotations, hpaConditionsAnnotation, conditions); err != nil {
		return nil, err
	}
	if b := in.Spec.Behavior; b != nil {
		data, err := json.Marshal(hpaBehavior{ScaleUp: rulesToAnnotation(b.ScaleUp), ScaleDown: rulesToAnnotation(b.ScaleDown)})
		if err != nil {
			return nil, err
		}
		annotations[hpaBehaviorAnnotation] = string(data)
	}
	if len(annotations) > 0 || hasRoundTripAnnotation(in.Annotations) {
		kept := maps.Clone(in.Annotations)
		for _, k := range hpaRoundTripAnnotations {
			delete(kept, k)
		}
		if kept == nil {
			kept = map[string]string{}
		}
		maps.Copy(kept, annotations)
		out.Annotations = kept
	}
	return json.Marshal(&out)
}

func (hpas) ToStorage(served []byte) ([]byte, error) {
	var in autoscalingv1.HorizontalPodAutoscaler
	if err := json.Unmarshal(served, &in); err != nil {
		return nil, err
	}
	out := autoscalingv2.HorizontalPodAutoscaler{
		TypeMeta:   metav1.TypeMeta{APIVersion: "autoscaling/v2", Kind: "HorizontalPodAutoscaler"},
		ObjectMeta: in.ObjectMeta,
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference(in.Spec.ScaleTargetRef),
			MinReplicas:    in.Spec.MinReplicas,
			MaxReplicas:    in.Spec.MaxReplicas,
		},
		Status: autoscalingv2.HorizontalPodAutoscalerStatus{
			ObservedGeneration: in.Status.ObservedGeneration,
			LastScaleTime:      in.Status.LastScaleTime,
			CurrentReplicas:    in.Status.CurrentReplicas,
			DesiredReplicas:    in.Status.DesiredReplicas,
		},
	}
	ann := in.Annotations
	if raw, ok := ann[hpaMetricsAnnotation]; ok {
		var others []autoscalingv1.MetricSpec
		if json.Unmarshal([]byte(raw), &others) != nil {
			others = nil
		}
		for _, m := range others {
			out.Spec.Metrics = append(out.Spec.Metrics, metricSpecFromV1(m))
		}
	}
	if p := in.Spec.TargetCPUUtilizationPercentage; p != nil {
		out.Spec.Metrics = append(out.Spec.Metrics, cpuUtilization(*p))
	}
	if len(out.Spec.Metrics) == 0 {
		out.Spec.Metrics = []autoscalingv2.MetricSpec{cpuUtilization(hpaDefaultCPUUtilization)}
	}
	if raw, ok := ann[hpaCurrentMetricsAnnotation]; ok {
		var current []autoscalingv1.MetricStatus
		if json.Unmarshal([]byte(raw), &current) != nil {
			current = nil
		}
		out.Status.CurrentMetrics = make([]autoscalingv2.MetricStatus, len(current))
		for i, m := range current {
			out.Status.CurrentMetrics[i] = metricStatusFromV1(m)
		}
	} else if p := in.Status.CurrentCPUUtilizationPercentage; p != nil {
		out.Status.CurrentMetrics = []autoscalingv2.MetricStatus{{Type: autoscalingv2.ResourceMetricSourceType,
			Resource: &autoscalingv2.ResourceMetricStatus{Name: corev1.ResourceCPU, Current: autoscalingv2.MetricValueStatus{AverageUtilization: p}}}}
	}
	if raw, ok := ann[hpaConditionsAnnotation]; ok {
		var conditions []autoscalingv1.HorizontalPodAutoscalerCondition
		if json.Unmarshal([]byte(raw), &conditions) != nil {
			conditions = nil
		}
		out.Status.Conditions = make([]autoscalingv2.HorizontalPodAutoscalerCondition, len(conditions))
		for i, c := range conditions {
			out.Status.Conditions[i] = autoscalingv2.HorizontalPodAutoscalerCondition{Type: autoscalingv2.HorizontalPodAutoscalerConditionType(c.Type),
				Status: c.Status, LastTransitionTime: c.LastTransitionTime, Reason: c.Reason, Message: c.Message}
		}
	}
	// The annotations' values are taken as far as they are well-formed:
	// kube-apiserver accepts a malformed one and drops it.
	if raw, ok := ann[hpaBehaviorAnnotation]; ok {
		var b hpaBehavior
		if err := json.Unmarshal([]byte(raw), &b); err == nil && (b.ScaleUp != nil || b.ScaleDown != nil) {
			out.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: rulesFromAnnotation(b.ScaleUp), ScaleDown: rulesFromAnnotation(b.ScaleDown)}
		}
	}
	if hasRoundTripAnnotation(ann) {
		out.Annotations = maps.Clone(ann)
		for _, k := range hpaRoundTripAnnotations {
			delete(out.Annotations, k)
		}
	}
	if b := out.Spec.Behavior; b != nil {
		// A behavior from the annotation gets autoscaling/v2's defaults,
		// as kube-apiserver's read of the stored object gives it.
		b.ScaleUp = defaultScalingRules(b.ScaleUp, ptr(int32(0)),
			[]autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PodsScalingPolicy, Value: 4, PeriodSeconds: 15},
				{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15}})
		b.ScaleDown = defaultScalingRules(b.ScaleDown, nil,
			[]autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15}})
	}
	return json.Marshal(&out)
}

// defaultScalingRules gives scaling rules autoscaling/v2's defaults: the
// stabilization window (if given), the Max policy and the policies.
func defaultScalingRules(r *autoscalingv2.HPAScalingRules, window *int32, policies []autoscalingv2.HPAScalingPolicy) *autoscalingv2.HPAScalingRules {
	if r == nil {
		r = &autoscalingv2.HPAScalingRules{}
	}
	if r.StabilizationWindowSeconds == nil {
		r.StabilizationWindowSeconds = window
	}
	if r.SelectPolicy == nil {
		r.SelectPolicy = ptr(autoscalingv2.MaxChangePolicySelect)
	}
	if r.Policies == nil {
		r.Policies = policies
	}
	return r
}

func ptr[T any](v T) *T { return &v }

// isCPU says whether a metric is of the resource cpu.
func isCPU(t autoscalingv2.MetricSourceType, r *autoscalingv2.ResourceMetricSource) bool {
	return t == autoscalingv2.ResourceMetricSourceType && r != nil && r.Name == corev1.ResourceCPU
}

func cpuUtilization(p int32) autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
		Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: &p}}}
}

func hasRoundTripAnnotation(ann map[string]string) bool {
	for _, k := range hpaRoundTripAnnotations {
		if _, ok := ann[k]; ok {
			return true
		}
	}
	return false
}

// annotate sets annotation key to the JSON of list, if it is not empty.
func annotate[T any](annotations map[string]string, key string, list []T) error {
	if len(list) == 0 {
		return nil
	}
	data, err := json.Marshal(list)
	if err != nil {
		return err
	}
	annotations[key] = string(data)
	return nil
}

// deref is *q, or zero.
func deref(q *resource.Quantity) resource.Quantity {
	if q == nil {
		return resource.Quantity{}
	}
	return *q
}

func ref(q resource.Quantity) *resource.Quantity { return &q }

// targetType is the type of a target with a utilization or else an
// average value.
func targetType(utilization *int32) autoscalingv2.MetricTargetType {
	if utilization != nil {
		return autoscalingv2.UtilizationMetricType
	}
	return autoscalingv2.AverageValueMetricType
}

func metricSpecToV1(m autoscalingv2.MetricSpec) autoscalingv1.MetricSpec {
	out := autoscalingv1.MetricSpec{Type: autoscalingv1.MetricSourceType(m.Type)}
	if s := m.Object; s != nil {
		out.Object = &autoscalingv1.ObjectMetricSource{Target: autoscalingv1.CrossVersionObjectReference(s.DescribedObject),
			MetricName: s.Metric.Name, TargetValue: deref(s.Target.Value), Selector: s.Metric.Selector, AverageValue: s.Target.AverageValue}
	}
	if s := m.Pods; s != nil {
		out.Pods = &autoscalingv1.PodsMetricSource{MetricName: s.Metric.Name, TargetAverageValue: deref(s.Target.AverageValue), Selector: s.Metric.Selector}
	}
	if s := m.Resource; s != nil {
		out.Resource = &autoscalingv1.ResourceMetricSource{Name: s.Name, TargetAverageUtilization: s.Target.AverageUtilization,
			TargetAverageValue: s.Target.AverageValue}
	}
	if s := m.ContainerResource; s != nil {
		out.ContainerResource = &autoscalingv1.ContainerResourceMetricSource{Name: s.Name, TargetAverageUtilization: s.Target.AverageUtilization,
			TargetAverageValue: s.Target.AverageValue, Container: s.Container}
	}
	if s := m.External; s != nil {
		out.External = &autoscalingv1.ExternalMetricSource{MetricName: s.Metric.Name, MetricSelector: s.Metric.Selector,
			TargetValue: s.Target.Value, TargetAverageValue: s.Target.AverageValue}
	}
	return out
}

func metricSpecFromV1(m autoscalingv1.MetricSpec) autoscalingv2.MetricSpec {
	out := autoscalingv2.MetricSpec{Type: autoscalingv2.MetricSourceType(m.Type)}
	if s := m.Object; s != nil {
		t := autoscalingv2.ValueMetricType
		if s.AverageValue != nil {
			t = autoscalingv2.AverageValueMetricType
		}
		out.Object = &autoscalingv2.ObjectMetricSource{DescribedObject: autoscalingv2.CrossVersionObjectReference(s.Target),
			Target: autoscalingv2.MetricTarget{Type: t, Value: ref(s.TargetValue), AverageValue: s.AverageValue},
			Metric: autoscalingv2.MetricIdentifier{Name: s.MetricName, Selector: s.Selector}}
	}
	if s := m.Pods; s != nil {
		out.Pods = &autoscalingv2.PodsMetricSource{Metric: autoscalingv2.MetricIdentifier{Name: s.MetricName, Selector: s.Selector},
			Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: ref(s.TargetAverageValue)}}
	}
	if s := m.Resource; s != nil {
		out.Resource = &autoscalingv2.ResourceMetricSource{Name: s.Name, Target: autoscalingv2.MetricTarget{
			Type: targetType(s.TargetAverageUtilization), AverageUtilization: s.TargetAverageUtilization, AverageValue: s.TargetAverageValue}}
	}
	if s := m.ContainerResource; s != nil {
		out.ContainerResource = &autoscalingv2.ContainerResourceMetricSource{Name: s.Name, Container: s.Container, Target: autoscalingv2.MetricTarget{
			Type: targetType(s.TargetAverageUtilization), AverageUtilization: s.TargetAverageUtilization, AverageValue: s.TargetAverageValue}}
	}
	if s := m.External; s != nil {
		t := autoscalingv2.AverageValueMetricType
		if s.TargetValue != nil {
			t = autoscalingv2.ValueMetricType
		}
		out.External = &autoscalingv2.ExternalMetricSource{Metric: autoscalingv2.MetricIdentifier{Name: s.MetricName, Selector: s.MetricSelector},
			Target: autoscalingv2.MetricTarget{Type: t, Value: s.TargetValue, AverageValue: s.TargetAverageValue}}
	}
	return out
}

func metricStatusToV1(m autoscalingv2.MetricStatus) autoscalingv1.MetricStatus {
	out := autoscalingv1.MetricStatus{Type: autoscalingv1.MetricSourceType(m.Type)}
	if s := m.Object; s != nil {
		out.Object = &autoscalingv1.ObjectMetricStatus{Target: autoscalingv1.CrossVersionObjectReference(s.DescribedObject),
			MetricName: s.Metric.Name, CurrentValue: deref(s.Current.Value), Selector: s.Metric.Selector, AverageValue: s.Current.AverageValue}
	}
	if s := m.Pods; s != nil {
		out.Pods = &autoscalingv1.PodsMetricStatus{MetricName: s.Metric.Name, CurrentAverageValue: deref(s.Current.AverageValue), Selector: s.Metric.Selector}
	}
	if s := m.Resource; s != nil {
		out.Resource = &autoscalingv1.ResourceMetricStatus{Name: s.Name, CurrentAverageUtilization: s.Current.AverageUtilization,
			CurrentAverageValue: deref(s.Current.AverageValue)}
	}
	if s := m.ContainerResource; s != nil {
		out.ContainerResource = &autoscalingv1.ContainerResourceMetricStatus{Name: s.Name, CurrentAverageUtilization: s.Current.AverageUtilization,
			CurrentAverageValue: deref(s.Current.AverageValue), Container: s.Container}
	}
	if s := m.External; s != nil {
		out.External = &autoscalingv1.ExternalMetricStatus{MetricName: s.Metric.Name, MetricSelector: s.Metric.Selector,
			CurrentValue: deref(s.Current.Value), CurrentAverageValue: s.Current.AverageValue}
	}
	return out
}

func metricStatusFromV1(m autoscalingv1.MetricStatus) autoscalingv2.MetricStatus {
	out := autoscalingv2.MetricStatus{Type: autoscalingv2.MetricSourceType(m.Type)}
	if s := m.Object; s != nil {
		out.Object = &autoscalingv2.ObjectMetricStatus{DescribedObject: autoscalingv2.CrossVersionObjectReference(s.Target),
			Metric:  autoscalingv2.MetricIdentifier{Name: s.MetricName, Selector: s.Selector},
			Current: autoscalingv2.MetricValueStatus{Value: ref(s.CurrentValue), AverageValue: s.AverageValue}}
	}
	if s := m.Pods; s != nil {
		out.Pods = &autoscalingv2.PodsMetricStatus{Metric: autoscalingv2.MetricIdentifier{Name: s.MetricName, Selector: s.Selector},
			Current: autoscalingv2.MetricValueStatus{AverageValue: ref(s.CurrentAverageValue)}}
	}
	if s := m.Resource; s != nil {
		out.Resource = &autoscalingv2.ResourceMetricStatus{Name: s.Name,
			Current: autoscalingv2.MetricValueStatus{AverageUtilization: s.CurrentAverageUtilization, AverageValue: ref(s.CurrentAverageValue)}}
	}
	if s := m.ContainerResource; s != nil {
		out.ContainerResource = &autoscalingv2.ContainerResourceMetricStatus{Name: s.Name, Container: s.Container,
			Current: autoscalingv2.MetricValueStatus{AverageUtilization: s.CurrentAverageUtilization, AverageValue: ref(s.CurrentAverageValue)}}
	}
	if s := m.External; s != nil {
		out.External = &autoscalingv2.ExternalMetricStatus{Metric: autoscalingv2.MetricIdentifier{Name: s.MetricName, Selector: s.MetricSelector},
			Current: autoscalingv2.MetricValueStatus{Value: ref(s.CurrentValue), AverageValue: s.CurrentAverageValue}}
	}
	return out
}

func rulesToAnnotation(r *autoscalingv2.HPAScalingRules) *hpaScalingRules {
	if r == nil {
		return nil
	}
	out := &hpaScalingRules{StabilizationWindowSeconds: r.StabilizationWindowSeconds, SelectPolicy: r.SelectPolicy, Tolerance: r.Tolerance}
	if r.Policies != nil {
		out.Policies = make([]hpaScalingPolicy, len(r.Policies))
		for i, p := range r.Policies {
			out.Policies[i] = hpaScalingPolicy(p)
		}
	}
	return out
}

func rulesFromAnnotation(r *hpaScalingRules) *autoscalingv2.HPAScalingRules {
	if r == nil {
		return nil
	}
	out := &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: r.StabilizationWindowSeconds, SelectPolicy: r.SelectPolicy, Tolerance: r.Tolerance}
	if r.Policies != nil {
		out.Policies = make([]autoscalingv2.HPAScalingPolicy, len(r.Policies))
		for i, p := range r.Policies {
			out.Policies[i] = autoscalingv2.HPAScalingPolicy(p)
		}
	}
	return out
}
