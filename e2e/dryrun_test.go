package e2e

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestDryRun, through client-go: dryRun=All creates, updates, patches and
// deletes are checked and answered as if persisted, and write nothing.
func TestDryRun(t *testing.T) {
	ctx := cgContext(t)
	ns := cgNamespace(t, cgDynamic(t), "dryrun")
	cs := clientset(t, cgConfig(nil))
	cms := cs.CoreV1().ConfigMaps(ns)
	all := []string{metav1.DryRunAll}

	dry, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "dry"}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{DryRun: all})
	if err != nil || dry.Name != "dry" || dry.UID == "" || dry.CreationTimestamp.IsZero() || dry.ResourceVersion != "" || dry.Data["k"] != "v" {
		t.Fatalf("dry-run create: %+v, %v", dry, err)
	}
	if _, err := cms.Get(ctx, "dry", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("after a dry-run create: %v, want NotFound", err)
	}
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "gen-"}}, metav1.CreateOptions{DryRun: all}); err != nil {
		t.Errorf("dry-run create with generateName: %v", err)
	}

	real, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "real"}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Create(ctx, real, metav1.CreateOptions{DryRun: all}); !apierrors.IsAlreadyExists(err) {
		t.Errorf("dry-run create of an existing name: %v, want AlreadyExists", err)
	}
	changed := real.DeepCopy()
	changed.Data["k"] = "changed"
	if got, err := cms.Update(ctx, changed, metav1.UpdateOptions{DryRun: all}); err != nil || got.Data["k"] != "changed" {
		t.Errorf("dry-run update: %+v, %v", got, err)
	}
	stale := real.DeepCopy()
	stale.ResourceVersion = "1"
	if _, err := cms.Update(ctx, stale, metav1.UpdateOptions{DryRun: all}); !apierrors.IsConflict(err) {
		t.Errorf("dry-run update at a stale resourceVersion: %v, want Conflict", err)
	}
	if got, err := cms.Patch(ctx, "real", types.MergePatchType, []byte(`{"data":{"p":"q"}}`), metav1.PatchOptions{DryRun: all}); err != nil || got.Data["p"] != "q" {
		t.Errorf("dry-run patch: %+v, %v", got, err)
	}
	if err := cms.Delete(ctx, "real", metav1.DeleteOptions{DryRun: all}); err != nil {
		t.Errorf("dry-run delete: %v", err)
	}
	if err := cms.DeleteCollection(ctx, metav1.DeleteOptions{DryRun: all}, metav1.ListOptions{}); err != nil {
		t.Errorf("dry-run delete collection: %v", err)
	}
	if got, err := cms.Get(ctx, "real", metav1.GetOptions{}); err != nil || got.ResourceVersion != real.ResourceVersion || len(got.Data) != 1 {
		t.Errorf("after dry-run writes: %+v, %v; want it unchanged at %s", got, err, real.ResourceVersion)
	}

	// Validation and defaulting happen as usual.
	bad := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "Not_A_Name"}}
	if _, err := cms.Create(ctx, bad, metav1.CreateOptions{DryRun: all}); !apierrors.IsInvalid(err) {
		t.Errorf("dry-run create of an invalid object: %v, want Invalid", err)
	}
	pod, err := cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}, metav1.CreateOptions{DryRun: all})
	if err != nil || pod.Generation != 1 || pod.Status.Phase != "" && pod.Status.Phase != corev1.PodPending {
		t.Errorf("dry-run pod create: %+v, %v", pod, err)
	}
}

// TestKubectlDryRunServer: kubectl create --dry-run=server prints the
// object as the server would store it, and nothing is created.
func TestKubectlDryRunServer(t *testing.T) {
	k := newKubectl(t, "dryrun")
	out := k.must("create", "deployment", "web", "--image=nginx:1.27", "--dry-run=server", "-o", "yaml")
	if !strings.Contains(out, "name: web") || !strings.Contains(out, "uid:") || !strings.Contains(out, "image: nginx:1.27") {
		t.Errorf("create --dry-run=server printed:\n%s", out)
	}
	if errOut := k.fail("get", "deployment", "web"); !strings.Contains(errOut, "not found") {
		t.Errorf("get after a dry run: %s", errOut)
	}
}
