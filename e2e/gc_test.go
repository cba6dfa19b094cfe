package e2e

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// gcOwned creates config map name owned by the given config maps (with
// blockOwnerDeletion, as controllers set it).
func gcOwned(t *testing.T, cs kubernetes.Interface, ns, name string, finalizers []string, owners ...*corev1.ConfigMap) *corev1.ConfigMap {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: finalizers}}
	for _, o := range owners {
		cm.OwnerReferences = append(cm.OwnerReferences, metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap",
			Name: o.Name, UID: o.UID, BlockOwnerDeletion: cgPtr(true)})
	}
	created, err := cs.CoreV1().ConfigMaps(ns).Create(context.Background(), cm, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
	return created
}

// gcGone waits until config map name is gone.
func gcGone(t *testing.T, cs kubernetes.Interface, ns, name string) {
	t.Helper()
	waitFor(t, name+" to go", func() bool {
		_, err := cs.CoreV1().ConfigMaps(ns).Get(context.Background(), name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
}

// TestGarbageCollector, through client-go: the server's garbage collector
// deletes dependents by ownerReferences as kube-controller-manager's does,
// for each propagation policy.
func TestGarbageCollector(t *testing.T) {
	ctx := cgContext(t)
	ns := cgNamespace(t, cgDynamic(t), "gc")
	cs := clientset(t, cgConfig(nil))
	cms := cs.CoreV1().ConfigMaps(ns)

	t.Run("background", func(t *testing.T) {
		owner := gcOwned(t, cs, ns, "bg-owner", nil)
		gcOwned(t, cs, ns, "bg-child", nil, owner)
		grandchild := gcOwned(t, cs, ns, "bg-grandchild", nil, gcOwned(t, cs, ns, "bg-middle", nil, owner))
		if err := cms.Delete(ctx, owner.Name, metav1.DeleteOptions{}); err != nil { // Background is the default
			t.Fatal(err)
		}
		gcGone(t, cs, ns, "bg-child")
		gcGone(t, cs, ns, grandchild.Name)
	})

	t.Run("orphan", func(t *testing.T) {
		owner := gcOwned(t, cs, ns, "or-owner", nil)
		gcOwned(t, cs, ns, "or-child", nil, owner)
		if err := cms.Delete(ctx, owner.Name, metav1.DeleteOptions{PropagationPolicy: cgPtr(metav1.DeletePropagationOrphan)}); err != nil {
			t.Fatal(err)
		}
		gcGone(t, cs, ns, owner.Name)
		child, err := cms.Get(ctx, "or-child", metav1.GetOptions{})
		if err != nil || len(child.OwnerReferences) != 0 {
			t.Errorf("orphaned dependent: %+v, %v", child, err)
		}
	})

	t.Run("foreground", func(t *testing.T) {
		owner := gcOwned(t, cs, ns, "fg-owner", nil)
		gcOwned(t, cs, ns, "fg-blocking", []string{"example.com/hold"}, owner)
		if err := cms.Delete(ctx, owner.Name, metav1.DeleteOptions{PropagationPolicy: cgPtr(metav1.DeletePropagationForeground)}); err != nil {
			t.Fatal(err)
		}
		// The dependent is deleted (held by its finalizer); the owner
		// waits for it, with the foregroundDeletion finalizer.
		waitFor(t, "the dependent to be marked", func() bool {
			dep, err := cms.Get(ctx, "fg-blocking", metav1.GetOptions{})
			return err == nil && dep.DeletionTimestamp != nil
		})
		got, err := cms.Get(ctx, owner.Name, metav1.GetOptions{})
		if err != nil || got.DeletionTimestamp == nil || !strings.Contains(strings.Join(got.Finalizers, ","), metav1.FinalizerDeleteDependents) {
			t.Fatalf("owner in foreground deletion: %+v, %v", got, err)
		}
		if _, err := cms.Patch(ctx, "fg-blocking", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		gcGone(t, cs, ns, "fg-blocking")
		gcGone(t, cs, ns, owner.Name)
	})

	t.Run("two owners", func(t *testing.T) {
		gone, staying := gcOwned(t, cs, ns, "two-gone", nil), gcOwned(t, cs, ns, "two-staying", nil)
		gcOwned(t, cs, ns, "two-child", nil, gone, staying)
		if err := cms.Delete(ctx, gone.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the reference to the deleted owner to go", func() bool {
			child, err := cms.Get(ctx, "two-child", metav1.GetOptions{})
			return err == nil && len(child.OwnerReferences) == 1 && child.OwnerReferences[0].UID == staying.UID
		})
	})

	t.Run("owner never existed", func(t *testing.T) {
		ghost := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "ghost", UID: "00000000-0000-0000-0000-000000000001"}}
		gcOwned(t, cs, ns, "ghost-child", nil, ghost)
		gcGone(t, cs, ns, "ghost-child")
	})

	t.Run("invalid policy", func(t *testing.T) {
		gcOwned(t, cs, ns, "invalid", nil)
		err := cms.Delete(ctx, "invalid", metav1.DeleteOptions{PropagationPolicy: cgPtr(metav1.DeletionPropagation("Sideways"))})
		if !apierrors.IsInvalid(err) {
			t.Fatalf("delete with propagationPolicy Sideways: %v, want 422 Invalid", err)
		}
		orphan := false
		err = cms.Delete(ctx, "invalid", metav1.DeleteOptions{PropagationPolicy: cgPtr(metav1.DeletePropagationOrphan), OrphanDependents: &orphan})
		if !apierrors.IsInvalid(err) {
			t.Fatalf("delete with both orphanDependents and propagationPolicy: %v, want 422 Invalid", err)
		}
		if _, err := cms.Get(ctx, "invalid", metav1.GetOptions{}); err != nil {
			t.Errorf("after invalid deletes: %v", err)
		}
	})
}

// TestKubectlDeleteDeploymentCascades: kubectl deletes a deployment with
// its default cascade (background); the garbage collector deletes the
// replica set and pods it owns.
func TestKubectlDeleteDeploymentCascades(t *testing.T) {
	k := newKubectl(t, "cascade")
	k.must("create", "deployment", "web", "--image=nginx:1.27")
	dep := k.must("get", "deployment", "web", "-o", "jsonpath={.metadata.uid}")
	rs := `{"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{"name":"web-1","labels":{"app":"web"},
"ownerReferences":[{"apiVersion":"apps/v1","kind":"Deployment","name":"web","uid":"` + dep + `","controller":true,"blockOwnerDeletion":true}]},
"spec":{"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"nginx","image":"nginx:1.27"}]}}}}`
	k.must("create", "-f", k.file("rs.yaml", rs))
	rsUID := k.must("get", "replicaset", "web-1", "-o", "jsonpath={.metadata.uid}")
	pod := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web-1-a","labels":{"app":"web"},
"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"web-1","uid":"` + rsUID + `","controller":true,"blockOwnerDeletion":true}]},
"spec":{"containers":[{"name":"nginx","image":"nginx:1.27"}]}}`
	k.must("create", "-f", k.file("pod.yaml", pod))
	k.must("delete", "deployment", "web")
	k.must("wait", "--for=delete", "replicaset/web-1", "pod/web-1-a", "--timeout=20s")
}
