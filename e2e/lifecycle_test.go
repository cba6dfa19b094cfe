package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestNamespaceLifecycle, through kubectl: a new namespace gets its
// default ServiceAccount and kube-root-ca.crt; a deleted one turns
// Terminating, takes no new content (403), loses its content, says in its
// conditions what a finalizer holds, and goes once that finalizer goes;
// system namespaces may not be deleted.
func TestNamespaceLifecycle(t *testing.T) {
	k := newKubectl(t, "nslife")
	waitFor(t, "the default ServiceAccount", func() bool { _, _, err := k.run("get", "serviceaccount", "default"); return err == nil })
	waitFor(t, "kube-root-ca.crt", func() bool { _, _, err := k.run("get", "configmap", "kube-root-ca.crt"); return err == nil })
	if ca := k.must("get", "configmap", "kube-root-ca.crt", "-o", "jsonpath={.data.ca\\.crt}"); !strings.HasPrefix(ca, "-----BEGIN CERTIFICATE-----") {
		t.Errorf("kube-root-ca.crt holds %q", ca)
	}
	ns := corev1.Namespace{}
	if err := json.Unmarshal([]byte(k.must("get", "namespace", k.ns, "-o", "json")), &ns); err != nil {
		t.Fatal(err)
	}
	if ns.Status.Phase != corev1.NamespaceActive || len(ns.Spec.Finalizers) != 1 || ns.Spec.Finalizers[0] != "kubernetes" ||
		ns.Labels["kubernetes.io/metadata.name"] != k.ns {
		t.Errorf("new namespace: phase %q, finalizers %v, labels %v", ns.Status.Phase, ns.Spec.Finalizers, ns.Labels)
	}

	k.must("create", "configmap", "plain")
	k.must("apply", "-f", k.file("held.yaml", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"held","finalizers":["example.com/hold"]}}`))
	k.must("apply", "-f", k.file("pod.yaml", kcPod("bound", "node-1", "")))
	k.must("delete", "namespace", k.ns, "--wait=false")
	if phase := k.must("get", "namespace", k.ns, "-o", "jsonpath={.status.phase}"); phase != "Terminating" {
		t.Errorf("deleted namespace is %q, want Terminating", phase)
	}
	if msg := k.fail("create", "configmap", "late"); !strings.Contains(msg, `configmaps "late" is forbidden: unable to create new content in namespace `+k.ns+` because it is being terminated`) {
		t.Errorf("create in a terminating namespace: %s", msg)
	}
	waitFor(t, "the namespace's content to go", func() bool {
		out, _, err := k.run("get", "configmaps,pods", "-o", "name")
		return err == nil && strings.TrimSpace(out) == "configmap/held"
	})
	waitFor(t, "the finalizer condition", func() bool {
		out, _, _ := k.run("get", "namespace", k.ns, "-o", `jsonpath={.status.conditions[?(@.type=="NamespaceFinalizersRemaining")].message}`)
		return out == "Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances"
	})
	if ts := k.must("get", "configmap", "held", "-o", "jsonpath={.metadata.deletionTimestamp}"); ts == "" {
		t.Error("the held config map has no deletionTimestamp")
	}
	k.must("patch", "configmap", "held", "--type=merge", "-p", `{"metadata":{"finalizers":null}}`)
	k.must("wait", "--for=delete", "namespace/"+k.ns, "--timeout=20s")

	if msg := k.fail("delete", "namespace", "kube-system"); !strings.Contains(msg, `namespaces "kube-system" is forbidden: this namespace may not be deleted`) {
		t.Errorf("delete kube-system: %s", msg)
	}
}

// TestFinalizersAndGracefulDeletion, through client-go: an object with
// finalizers is marked and goes with its last finalizer; a pod bound to a
// node is deleted gracefully (its terminationGracePeriodSeconds) until a
// delete with grace period 0; an unbound pod goes at once.
func TestFinalizersAndGracefulDeletion(t *testing.T) {
	ctx := cgContext(t)
	ns := cgNamespace(t, cgDynamic(t), "lifecycle")
	cs := clientset(t, cgConfig(nil))

	cms := cs.CoreV1().ConfigMaps(ns)
	cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "held", Finalizers: []string{"example.com/a", "example.com/b"}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := cms.Delete(ctx, "held", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	cm, err = cms.Get(ctx, "held", metav1.GetOptions{})
	if err != nil || cm.DeletionTimestamp == nil || cm.DeletionGracePeriodSeconds == nil || *cm.DeletionGracePeriodSeconds != 0 {
		t.Fatalf("deleted object with finalizers: %+v, %v", cm, err)
	}
	marked := *cm.DeletionTimestamp
	cm.Finalizers = []string{"example.com/b"}
	cm.DeletionTimestamp = nil // a client cannot clear it
	if cm, err = cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil || cm.DeletionTimestamp == nil || !cm.DeletionTimestamp.Equal(&marked) {
		t.Fatalf("update removing one finalizer: %+v, %v", cm, err)
	}
	if _, err := cms.Patch(ctx, "held", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Get(ctx, "held", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("object after its last finalizer went: %v, want NotFound", err)
	}

	pods := cs.CoreV1().Pods(ns)
	grace := int64(45)
	for _, p := range []*corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Name: "bound"}, Spec: corev1.PodSpec{NodeName: "node-1", TerminationGracePeriodSeconds: &grace,
			Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "unbound"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}},
	} {
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := pods.Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pods.Get(ctx, "unbound", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("unbound pod after delete: %v, want NotFound", err)
	}
	before := time.Now()
	pod, err := pods.Get(ctx, "bound", metav1.GetOptions{})
	if err != nil || pod.DeletionGracePeriodSeconds == nil || *pod.DeletionGracePeriodSeconds != grace ||
		pod.DeletionTimestamp.Time.Before(before.Add(40*time.Second)) {
		t.Fatalf("bound pod after delete: %+v, %v", pod, err)
	}
	zero := int64(0)
	if err := pods.Delete(ctx, "bound", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Get(ctx, "bound", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("bound pod after delete with grace 0: %v, want NotFound", err)
	}
}

// waitFor polls cond until it holds, failing the test after cgTimeout.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(cgTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
