package admission

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestDefaultClassIsNewest: of the classes annotated as the default, the
// newest; on a tie, the first by name; "True" is not "true".
func TestDefaultClassIsNewest(t *testing.T) {
	at := func(name string, sec int64, value string) metav1.PartialObjectMetadata {
		return metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.Unix(sec, 0),
			Annotations: map[string]string{"storageclass.beta.kubernetes.io/is-default-class": value}}}
	}
	for _, c := range []struct {
		classes []metav1.PartialObjectMetadata
		want    string
	}{
		{nil, ""},
		{[]metav1.PartialObjectMetadata{at("a", 1, "True")}, ""},
		{[]metav1.PartialObjectMetadata{at("a", 1, "true"), at("b", 2, "true"), at("c", 3, "false")}, "b"},
		{[]metav1.PartialObjectMetadata{at("b", 2, "true"), at("a", 2, "true")}, "a"},
	} {
		if got := storageClassDefaulting.defaultClass(c.classes); got != c.want {
			t.Errorf("%v: %q, want %q", c.classes, got, c.want)
		}
	}
}

// TestGlobalDefault: the global default class of the lowest value.
func TestGlobalDefault(t *testing.T) {
	classes := []schedulingv1.PriorityClass{{Value: 1}, {ObjectMeta: metav1.ObjectMeta{Name: "high"}, Value: 9, GlobalDefault: true},
		{ObjectMeta: metav1.ObjectMeta{Name: "low"}, Value: 5, GlobalDefault: true}}
	if def := globalDefault(classes); def == nil || def.Name != "low" {
		t.Errorf("default %v, want low", def)
	}
	if def := globalDefault(classes[:1]); def != nil {
		t.Errorf("default %v, want none", def)
	}
	if p, policy := classPriority(nil); p != 0 || policy != "PreemptLowerPriority" {
		t.Errorf("no class: %d %q", p, policy)
	}
}

// TestPodTotal: containers and sidecars add up; an init container counts
// with the sidecars before it, and only if it asks more.
func TestPodTotal(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	cpu := func(q string) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(q)}}
	}
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Resources: cpu("1")}, {Resources: cpu("500m")}},
		InitContainers: []corev1.Container{{Resources: cpu("250m"), RestartPolicy: &always}, {Resources: cpu("2")},
			{Resources: cpu("1")}},
	}}
	total := podTotal(pod, func(r corev1.ResourceRequirements) corev1.ResourceList { return r.Limits })
	if q := total[corev1.ResourceCPU]; q.String() != "2250m" {
		t.Errorf("cpu %s, want 2250m (an init container of 2 after a sidecar of 250m)", q.String())
	}
	pod.Spec.InitContainers = pod.Spec.InitContainers[:1]
	total = podTotal(pod, func(r corev1.ResourceRequirements) corev1.ResourceList { return r.Limits })
	if q := total[corev1.ResourceCPU]; q.String() != "1750m" {
		t.Errorf("cpu %s, want 1750m", q.String())
	}
}

// TestLimitRangeDefaults: a container gets the defaults it lacks, an init
// container too, and the annotation says which, in kube-apiserver's words;
// a pod given nothing gets no annotation.
func TestLimitRangeDefaults(t *testing.T) {
	lr := &corev1.LimitRange{Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer,
		Default:        corev1.ResourceList{"cpu": resource.MustParse("0.5"), "memory": resource.MustParse("128Mi")},
		DefaultRequest: corev1.ResourceList{"cpu": resource.MustParse("100m")}}}}}
	pod := map[string]any{"spec": map[string]any{
		"containers":     []any{map[string]any{"name": "c", "resources": map[string]any{"limits": map[string]any{"cpu": int64(1)}}}},
		"initContainers": []any{map[string]any{"name": "i"}},
	}}
	setDefaultResources(pod, lr)
	want := "LimitRanger plugin set: cpu request for container c; memory limit for container c; cpu request for init container i; cpu, memory limit for init container i"
	if got := fieldAt(pod, "metadata", "annotations", limitRangerAnnotation); got != want {
		t.Errorf("annotation %v, want %q", got, want)
	}
	if got := fieldAt(pod, "spec", "initContainers", "resources", "limits", "cpu"); got != "500m" {
		t.Errorf("init container's cpu limit %v, want 500m", got)
	}
	bare := map[string]any{"spec": map[string]any{}}
	setDefaultResources(bare, lr)
	if _, ok := bare["metadata"]; ok {
		t.Errorf("a pod without containers annotated: %v", bare)
	}
}

// fieldAt follows keys (the first element of a list) through a decoded
// object.
func fieldAt(v any, keys ...string) any {
	for _, k := range keys {
		if list, ok := v.([]any); ok && len(list) > 0 {
			v = list[0]
		}
		m, _ := v.(map[string]any)
		v = m[k]
	}
	return v
}

// TestLimitErrors: kube-apiserver's messages for each bound, one message
// for repeated errors, brackets for several.
func TestLimitErrors(t *testing.T) {
	item := corev1.LimitRangeItem{Type: corev1.LimitTypeContainer,
		Min:                  corev1.ResourceList{"cpu": resource.MustParse("50m")},
		Max:                  corev1.ResourceList{"memory": resource.MustParse("1Gi")},
		MaxLimitRequestRatio: corev1.ResourceList{"cpu": resource.MustParse("4")}}
	lr := &corev1.LimitRange{Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{item}}}
	container := func(requests, limits corev1.ResourceList) corev1.Container {
		return corev1.Container{Resources: corev1.ResourceRequirements{Requests: requests, Limits: limits}}
	}
	for _, c := range []struct {
		containers []corev1.Container
		want       string
	}{
		{[]corev1.Container{container(corev1.ResourceList{"cpu": resource.MustParse("100m")},
			corev1.ResourceList{"cpu": resource.MustParse("400m"), "memory": resource.MustParse("1Gi")})}, ""},
		{[]corev1.Container{container(nil, corev1.ResourceList{"memory": resource.MustParse("1Gi")})},
			"[minimum cpu usage per Container is 50m.  No request is specified, cpu max limit to request ratio per Container is 4, but no request is specified or request is 0]"},
		{[]corev1.Container{container(corev1.ResourceList{"cpu": resource.MustParse("100m")}, corev1.ResourceList{"cpu": resource.MustParse("500m")})},
			"[maximum memory usage per Container is 1Gi.  No limit is specified, cpu max limit to request ratio per Container is 4, but provided ratio is 5.000000]"},
		{[]corev1.Container{
			container(corev1.ResourceList{"cpu": resource.MustParse("100m")}, corev1.ResourceList{"cpu": resource.MustParse("100m"), "memory": resource.MustParse("2Gi")}),
			container(corev1.ResourceList{"cpu": resource.MustParse("100m")}, corev1.ResourceList{"cpu": resource.MustParse("100m"), "memory": resource.MustParse("2Gi")})},
			"maximum memory usage per Container is 1Gi, but limit is 2Gi"},
	} {
		err := podLimitErrors(&corev1.Pod{Spec: corev1.PodSpec{Containers: c.containers}}, lr)
		if got := errorText(err); got != c.want {
			t.Errorf("got  %q\nwant %q", got, c.want)
		}
	}
}

func errorText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
