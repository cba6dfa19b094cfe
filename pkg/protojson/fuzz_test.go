package protojson

import (
	"reflect"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// fuzzKinds are the types FuzzTranscode reads its input as (its first
// byte picks one): between them, every type with a hand-written encoding.
var fuzzKinds = []struct {
	gvk schema.GroupVersionKind
	obj goMessage
}{
	{corev1.SchemeGroupVersion.WithKind("Pod"), &corev1.Pod{}},
	{corev1.SchemeGroupVersion.WithKind("ConfigMap"), &corev1.ConfigMap{}},
	{corev1.SchemeGroupVersion.WithKind("Secret"), &corev1.Secret{}},
	{coordinationv1.SchemeGroupVersion.WithKind("Lease"), &coordinationv1.Lease{}},
	{appsv1.SchemeGroupVersion.WithKind("ControllerRevision"), &appsv1.ControllerRevision{}},
	{eventsv1.SchemeGroupVersion.WithKind("Event"), &eventsv1.Event{}},
	{policyv1.SchemeGroupVersion.WithKind("PodDisruptionBudget"), &policyv1.PodDisruptionBudget{}},
	{corev1.SchemeGroupVersion.WithKind("Service"), &corev1.Service{}},
	{certificatesv1.SchemeGroupVersion.WithKind("CertificateSigningRequest"), &certificatesv1.CertificateSigningRequest{}},
}

// fuzzSeeds are objects of fuzzKinds (by index) with every special type set.
func fuzzSeeds() map[int][]goMessage {
	now := metav1.Unix(1764300000, 0)
	micro := metav1.NewMicroTime(time.Unix(1764300000, 123456789))
	meta := metav1.ObjectMeta{Name: "web-<1>", Namespace: "d", UID: "u", Generation: 3, CreationTimestamp: now, DeletionTimestamp: &now,
		Labels: map[string]string{"b": "2", "a": "1"}, Annotations: map[string]string{"x": "\u2028\xff"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m", Operation: "Apply", Time: &now, FieldsType: "FieldsV1",
			FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata": {"f:labels": {".": {}, "f:a": {}}}}`)}}}}
	port := intstr.FromString("http")
	seconds := int32(15)
	return map[int][]goMessage{
		0: {&corev1.Pod{ObjectMeta: meta, Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "c", Image: "i", Args: []string{"a", ""},
				Resources:     corev1.ResourceRequirements{Requests: corev1.ResourceList{"cpu": resource.MustParse("1000m"), "memory": resource.MustParse("128Mi")}},
				LivenessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(8080)}}},
				Ports:         []corev1.ContainerPort{{ContainerPort: 80}}}},
			SecurityContext: &corev1.PodSecurityContext{}, TerminationGracePeriodSeconds: new(int64)},
			Status: corev1.PodStatus{Phase: "Running", StartTime: &now, Conditions: []corev1.PodCondition{{Type: "Ready", Status: "True", LastTransitionTime: now}}}}},
		1: {&corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"k": "v<&>", "": ""}, BinaryData: map[string][]byte{"b": {0, 1}, "e": {}}}},
		2: {&corev1.Secret{ObjectMeta: meta, Data: map[string][]byte{"p": []byte("secret")}, Type: "Opaque"}},
		3: {&coordinationv1.Lease{ObjectMeta: meta, Spec: coordinationv1.LeaseSpec{HolderIdentity: new(string), LeaseDurationSeconds: &seconds, RenewTime: &micro, AcquireTime: &micro}}},
		4: {&appsv1.ControllerRevision{ObjectMeta: meta, Data: runtime.RawExtension{Raw: []byte(` {"spec" : [1, 2.50, "<x>"]} `)}, Revision: 7}},
		5: {&eventsv1.Event{ObjectMeta: meta, EventTime: micro, Series: &eventsv1.EventSeries{Count: 2, LastObservedTime: micro}, Reason: "r", DeprecatedFirstTimestamp: now}},
		6: {&policyv1.PodDisruptionBudget{ObjectMeta: meta, Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &port},
			Status: policyv1.PodDisruptionBudgetStatus{DisruptedPods: map[string]metav1.Time{"p": now, "q": {}}}}},
		7: {&corev1.Service{ObjectMeta: meta, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80, TargetPort: port}}, ClusterIPs: []string{"10.0.0.1"}}}},
		8: {&certificatesv1.CertificateSigningRequest{ObjectMeta: meta, Spec: certificatesv1.CertificateSigningRequestSpec{Request: []byte("csr"),
			SignerName: "s", Extra: map[string]certificatesv1.ExtraValue{"a": {"x", "<y>"}, "b": nil}, Usages: []certificatesv1.KeyUsage{"digital signature"}}}},
	}
}

// FuzzTranscode: whatever bytes it reads, the transcoder writes what the
// Go path writes or declines, and declines where the Go path fails.
func FuzzTranscode(f *testing.F) {
	for i, objs := range fuzzSeeds() {
		for _, obj := range objs {
			msg, err := obj.(interface{ Marshal() ([]byte, error) }).Marshal()
			if err != nil {
				f.Fatal(err)
			}
			f.Add(append([]byte{byte(i)}, msg...))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		k := fuzzKinds[int(data[0])%len(fuzzKinds)]
		check(t, reflect.TypeOf(k.obj).Elem(), k.gvk, data[1:], true)
	})
}

// The seeds transcode (not declined): the fuzz target starts from inputs
// the transcoder writes.
func TestFuzzSeedsTranscode(t *testing.T) {
	for i, objs := range fuzzSeeds() {
		for _, obj := range objs {
			msg, err := obj.(interface{ Marshal() ([]byte, error) }).Marshal()
			if err != nil {
				t.Fatal(err)
			}
			if !check(t, reflect.TypeOf(obj).Elem(), fuzzKinds[i].gvk, msg, false) {
				t.Errorf("%T declined", obj)
			}
		}
	}
}
