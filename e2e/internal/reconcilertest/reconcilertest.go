// Package reconcilertest is a controller-runtime suite as controller
// authors write them, run by tests against a control plane: a reconciler
// on a custom resource (Backup) that keeps a ConfigMap and a Job owned by
// each Backup, reports through /status, and holds a finalizer; and a
// defaulting and a validating webhook for Backups, built with
// controller-runtime's admission package and served by the test. It is
// run both on package testenv and through controller-runtime's envtest
// with USE_EXISTING_CLUSTER. Tests only.
package reconcilertest

import (
	"context"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// CRD is the Backup custom resource's definition.
const CRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: backups.example.io}
spec:
  group: example.io
  scope: Namespaced
  names: {plural: backups, kind: Backup}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              schedule: {type: string, default: "@daily"}
              retention: {type: string}
          status:
            type: object
            properties:
              phase: {type: string}
              observedGeneration: {type: integer}
`

// backupKind is the Backup kind.
var backupKind = schema.GroupVersionKind{Group: "example.io", Version: "v1", Kind: "Backup"}

// finalizer is the reconciler's finalizer.
const finalizer = "example.io/cleanup"

// reconciler keeps each Backup's ConfigMap and Job.
type reconciler struct{ client.Client }

func newBackup() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(backupKind)
	return u
}

func (r *reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	b := newBackup()
	if err := r.Get(ctx, req.NamespacedName, b); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if b.GetDeletionTimestamp() != nil {
		if controllerutil.RemoveFinalizer(b, finalizer) {
			return ctrl.Result{}, r.Update(ctx, b)
		}
		return ctrl.Result{}, nil
	}
	if controllerutil.AddFinalizer(b, finalizer) {
		return ctrl.Result{}, r.Update(ctx, b)
	}
	schedule, _, _ := unstructured.NestedString(b.Object, "spec", "schedule")
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: b.GetName() + "-config", Namespace: b.GetNamespace()}}
	if _, err := controllerutil.CreateOrUpdate(ctx, r.Client, cm, func() error {
		cm.Data = map[string]string{"schedule": schedule}
		return controllerutil.SetControllerReference(b, cm, r.Scheme())
	}); err != nil {
		return ctrl.Result{}, err
	}
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: b.GetName() + "-job", Namespace: b.GetNamespace()}}
	if _, err := controllerutil.CreateOrUpdate(ctx, r.Client, job, func() error {
		if job.CreationTimestamp.IsZero() {
			job.Spec.Template.Spec = corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{Name: "backup", Image: "busybox", Args: []string{"backup"}}}}
		}
		return controllerutil.SetControllerReference(b, job, r.Scheme())
	}); err != nil {
		return ctrl.Result{}, err
	}
	if observed, _, _ := unstructured.NestedInt64(b.Object, "status", "observedGeneration"); observed != b.GetGeneration() {
		unstructured.SetNestedField(b.Object, b.GetGeneration(), "status", "observedGeneration")
		unstructured.SetNestedField(b.Object, "Ready", "status", "phase")
		return ctrl.Result{}, r.Status().Update(ctx, b)
	}
	return ctrl.Result{}, nil
}

// Run runs the suite against cfg, where CRD is installed, in namespace ns.
func Run(t *testing.T, cfg *rest.Config, ns string) {
	// Without a logger controller-runtime prints a stack trace to say so.
	ctrl.SetLogger(logr.Discard())
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0"})
	if err != nil {
		t.Fatal(err)
	}
	r := &reconciler{Client: mgr.GetClient()}
	// Named per test: controller-runtime refuses two controllers of one
	// name in a process.
	if err := ctrl.NewControllerManagedBy(mgr).Named(strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))).
		For(newBackup()).Owns(&corev1.ConfigMap{}).Owns(&batchv1.Job{}).Complete(r); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	}()
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	serveWebhooks(t, ctx, c, ns)
	never := newBackup()
	never.SetNamespace(ns)
	never.SetName("never")
	never.Object["spec"] = map[string]any{"schedule": "never"}
	if err := c.Create(ctx, never); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `"never" is not a schedule`) {
		t.Errorf("a backup the validating webhook refuses: %v", err)
	}
	b := newBackup()
	b.SetNamespace(ns)
	b.SetName("nightly")
	b.Object["spec"] = map[string]any{} // its schedule defaulted by the schema
	if err := c.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKey{Namespace: ns, Name: "nightly"}
	eventually(t, "the backup to be ready with its ConfigMap and Job", func() bool {
		got := newBackup()
		cm, job := &corev1.ConfigMap{}, &batchv1.Job{}
		if c.Get(ctx, key, got) != nil || c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "nightly-config"}, cm) != nil ||
			c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "nightly-job"}, job) != nil {
			return false
		}
		phase, _, _ := unstructured.NestedString(got.Object, "status", "phase")
		retention, _, _ := unstructured.NestedString(got.Object, "spec", "retention")
		return phase == "Ready" && retention == "7d" && cm.Data["schedule"] == "@daily" && metav1.IsControlledBy(cm, got) && metav1.IsControlledBy(job, got) &&
			controllerutil.ContainsFinalizer(got, finalizer)
	})
	if err := c.Delete(ctx, b); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the backup and what it owns to go", func() bool {
		return apierrors.IsNotFound(c.Get(ctx, key, newBackup())) &&
			apierrors.IsNotFound(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "nightly-config"}, &corev1.ConfigMap{})) &&
			apierrors.IsNotFound(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "nightly-job"}, &batchv1.Job{}))
	})
}

// eventually polls cond for up to 20 seconds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// backupWebhook defaults a Backup's retention and refuses the schedule
// "never", as the webhooks kubebuilder scaffolds.
type backupWebhook struct{}

func (backupWebhook) Default(_ context.Context, obj runtime.Object) error {
	u := obj.(*unstructured.Unstructured)
	if _, ok, _ := unstructured.NestedString(u.Object, "spec", "retention"); !ok {
		return unstructured.SetNestedField(u.Object, "7d", "spec", "retention")
	}
	return nil
}

func (backupWebhook) ValidateCreate(_ context.Context, obj runtime.Object) (admission.Warnings, error) {
	if schedule, _, _ := unstructured.NestedString(obj.(*unstructured.Unstructured).Object, "spec", "schedule"); schedule == "never" {
		return nil, fmt.Errorf("%q is not a schedule", schedule)
	}
	return nil, nil
}

func (w backupWebhook) ValidateUpdate(ctx context.Context, _, obj runtime.Object) (admission.Warnings, error) {
	return w.ValidateCreate(ctx, obj)
}

func (backupWebhook) ValidateDelete(context.Context, runtime.Object) (admission.Warnings, error) {
	return nil, nil
}

// serveWebhooks serves backupWebhook over HTTPS and installs its webhook
// configurations for the Backups of namespace ns; both go when the test
// ends.
func serveWebhooks(t *testing.T, ctx context.Context, c client.Client, ns string) {
	scheme := runtime.NewScheme()
	mux := http.NewServeMux()
	mux.Handle("/default", admission.WithCustomDefaulter(scheme, newBackup(), backupWebhook{}))
	mux.Handle("/validate", admission.WithCustomValidator(scheme, newBackup(), backupWebhook{}))
	srv := httptest.NewTLSServer(mux)
	t.Cleanup(srv.Close)
	caBundle := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	clientConfig := func(path string) admissionregistrationv1.WebhookClientConfig {
		url := srv.URL + path
		return admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: caBundle}
	}
	rules := []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{"CREATE", "UPDATE"},
		Rule: admissionregistrationv1.Rule{APIGroups: []string{"example.io"}, APIVersions: []string{"v1"}, Resources: []string{"backups"}}}}
	inNamespace := &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}}
	none := admissionregistrationv1.SideEffectClassNone
	mutating := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{GenerateName: "backup-"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: "default.backups.example.io", ClientConfig: clientConfig("/default"),
			Rules: rules, NamespaceSelector: inNamespace, SideEffects: &none, AdmissionReviewVersions: []string{"v1"}}}}
	validating := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{GenerateName: "backup-"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "validate.backups.example.io", ClientConfig: clientConfig("/validate"),
			Rules: rules, NamespaceSelector: inNamespace, SideEffects: &none, AdmissionReviewVersions: []string{"v1"}}}}
	for _, obj := range []client.Object{mutating, validating} {
		if err := c.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Delete(context.Background(), obj) })
	}
}
