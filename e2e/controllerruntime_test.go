package e2e

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// crFinalizer is the finalizer of the test's reconciler.
const crFinalizer = "example.com/cleanup"

// crReconciler is a small controller as controller authors write them,
// on Deployments labeled for it: it puts its finalizer on them, keeps a
// ConfigMap owned by each (named after it, holding its replica count),
// reports the generation it saw through /status, and, when one is
// deleted, records its cleanup and lets it go.
type crReconciler struct {
	client.Client
	cleanedUp chan string
}

func (r *crReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var d appsv1.Deployment
	if err := r.Get(ctx, req.NamespacedName, &d); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !d.DeletionTimestamp.IsZero() {
		if controllerutil.RemoveFinalizer(&d, crFinalizer) {
			if err := r.Update(ctx, &d); err != nil {
				return ctrl.Result{}, err
			}
			r.cleanedUp <- d.Name
		}
		return ctrl.Result{}, nil
	}
	if controllerutil.AddFinalizer(&d, crFinalizer) {
		return ctrl.Result{}, r.Update(ctx, &d)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: d.Name + "-config", Namespace: d.Namespace}}
	if _, err := controllerutil.CreateOrUpdate(ctx, r.Client, cm, func() error {
		cm.Data = map[string]string{"replicas": strconv.Itoa(int(*d.Spec.Replicas))}
		return controllerutil.SetControllerReference(&d, cm, r.Scheme())
	}); err != nil {
		return ctrl.Result{}, err
	}
	if d.Status.ObservedGeneration != d.Generation {
		d.Status.ObservedGeneration = d.Generation
		return ctrl.Result{}, r.Status().Update(ctx, &d)
	}
	return ctrl.Result{}, nil
}

// TestControllerRuntime runs a controller-runtime manager with
// crReconciler against the server: its cache (list and watch), writes,
// status updates through /status, owner references and finalizers work as
// against kube-apiserver, and the server's garbage collector deletes the
// ConfigMap when its Deployment goes.
func TestControllerRuntime(t *testing.T) {
	ns := cgNamespace(t, cgDynamic(t), "controller-runtime")
	mgr, err := ctrl.NewManager(cgConfig(nil), ctrl.Options{
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		t.Fatal(err)
	}
	r := &crReconciler{Client: mgr.GetClient(), cleanedUp: make(chan string, 1)}
	if err := ctrl.NewControllerManagedBy(mgr).For(&appsv1.Deployment{}).Owns(&corev1.ConfigMap{}).Complete(r); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})

	cs := clientset(t, cgConfig(nil))
	deployments := cs.AppsV1().Deployments(ns)
	labels := map[string]string{"app": "web"}
	d, err := deployments.Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx"}}}}}},
		metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	configured := func(replicas string, generation int64) func() bool {
		return func() bool {
			cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "web-config", metav1.GetOptions{})
			got, err2 := deployments.Get(ctx, "web", metav1.GetOptions{})
			return err == nil && err2 == nil && cm.Data["replicas"] == replicas && len(cm.OwnerReferences) == 1 &&
				cm.OwnerReferences[0].UID == d.UID && got.Status.ObservedGeneration == generation &&
				controllerutil.ContainsFinalizer(got, crFinalizer)
		}
	}
	waitFor(t, "the reconciler to configure the deployment", configured("1", 1))
	if _, err := deployments.Patch(ctx, "web", types.MergePatchType, []byte(`{"spec":{"replicas":2}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the reconciler to follow a change of spec", configured("2", 2))

	if err := deployments.Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if name := <-r.cleanedUp; name != "web" {
		t.Errorf("cleaned up %q", name)
	}
	waitFor(t, "the deployment and its ConfigMap to go", func() bool {
		_, err := deployments.Get(ctx, "web", metav1.GetOptions{})
		_, err2 := cs.CoreV1().ConfigMaps(ns).Get(ctx, "web-config", metav1.GetOptions{})
		return apierrors.IsNotFound(err) && apierrors.IsNotFound(err2)
	})
}

// TestControllerRuntimeClusterScopedWithNamespace creates, updates, patches
// and applies a Namespace whose metadata.namespace is set, through
// controller-runtime's client, as the kubebuilder CronJob tutorial does:
// kube-apiserver 1.37 clears the field of a cluster-scoped object and
// takes each write (recorded against it), and server-side apply records no
// ownership of metadata.namespace.
func TestControllerRuntimeClusterScopedWithNamespace(t *testing.T) {
	ctx := cgContext(t)
	c, err := client.New(cgConfig(nil), client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	name := "cr-scoped-" + strconv.FormatInt(time.Now().UnixNano()%1e9, 10)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: name}}
	if err := c.Create(ctx, ns); err != nil {
		t.Fatalf("create a Namespace with metadata.namespace set: %v", err)
	}
	t.Cleanup(func() { c.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}) })
	if ns.Namespace != "" {
		t.Errorf("created Namespace has metadata.namespace %q, want it cleared", ns.Namespace)
	}
	ns.Namespace = "elsewhere"
	ns.Labels = map[string]string{"updated": "yes"}
	if err := c.Update(ctx, ns); err != nil {
		t.Fatalf("update with metadata.namespace set: %v", err)
	}
	if ns.Namespace != "" || ns.Labels["updated"] != "yes" {
		t.Errorf("updated Namespace: namespace %q, labels %v", ns.Namespace, ns.Labels)
	}
	patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"namespace":"other","labels":{"patched":"yes"}}}`))
	if err := c.Patch(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, patch); err != nil {
		t.Fatalf("merge patch setting metadata.namespace: %v", err)
	}
	applied := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace",
		"metadata": map[string]any{"name": name, "namespace": "third", "labels": map[string]any{"applied": "yes"}}}}
	if err := c.Patch(ctx, applied, client.Apply, client.FieldOwner("cr-test")); err != nil {
		t.Fatalf("apply with metadata.namespace set: %v", err)
	}
	var got corev1.Namespace
	if err := c.Get(ctx, client.ObjectKey{Name: name}, &got); err != nil {
		t.Fatal(err)
	}
	if got.Namespace != "" {
		t.Errorf("metadata.namespace = %q, want empty", got.Namespace)
	}
	for _, l := range []string{"updated", "patched", "applied"} {
		if got.Labels[l] != "yes" {
			t.Errorf("label %s missing: %v", l, got.Labels)
		}
	}
	for _, mf := range got.ManagedFields {
		if mf.Manager == "cr-test" && mf.FieldsV1 != nil && strings.Contains(string(mf.FieldsV1.Raw), "f:namespace") {
			t.Errorf("the apply owns metadata.namespace: %s", mf.FieldsV1.Raw)
		}
	}
}
