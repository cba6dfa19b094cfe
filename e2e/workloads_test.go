package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// TestLeaderElection: three client-go leader-election candidates on one
// Lease: one leader at a time, and when it stops (releasing the Lease)
// another takes over.
func TestLeaderElection(t *testing.T) {
	ctx := cgContext(t)
	ns := cgNamespace(t, cgDynamic(t), "election")
	cs := clientset(t, cgConfig(nil))
	var leading atomic.Int32 // candidates leading right now
	var overlap atomic.Bool
	elected := make(chan int, 3)
	stops := make([]context.CancelFunc, 3)
	var wg sync.WaitGroup
	for i := range stops {
		cctx, stop := context.WithCancel(ctx)
		stops[i] = stop
		lock := &resourcelock.LeaseLock{LeaseMeta: metav1.ObjectMeta{Namespace: ns, Name: "controller"}, Client: cs.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: fmt.Sprintf("candidate-%d", i)}}
		le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock: lock, LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 200 * time.Millisecond,
			ReleaseOnCancel: true,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(context.Context) {
					if leading.Add(1) > 1 {
						overlap.Store(true)
					}
					elected <- i
				},
				OnStoppedLeading: func() { leading.Add(-1) },
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() { le.Run(cctx) })
	}
	defer func() {
		for _, stop := range stops {
			stop()
		}
		wg.Wait()
	}()
	first := waitElected(t, elected)
	lease, err := cs.CoordinationV1().Leases(ns).Get(ctx, "controller", metav1.GetOptions{})
	if err != nil || lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity != fmt.Sprintf("candidate-%d", first) {
		t.Fatalf("lease after the first election: %+v %v", lease, err)
	}
	stops[first]()
	second := waitElected(t, elected)
	if second == first {
		t.Errorf("candidate %d was elected again after it stopped", first)
	}
	if overlap.Load() {
		t.Error("two candidates led at once")
	}
}

func waitElected(t *testing.T, elected <-chan int) int {
	t.Helper()
	select {
	case i := <-elected:
		return i
	case <-time.After(cgTimeout):
		t.Fatal("no candidate was elected")
		return -1
	}
}

// TestWorkloadKinds: kubectl creates a deployment and finds it, with the
// other workload kinds, by short name and in `kubectl get all`.
func TestWorkloadKinds(t *testing.T) {
	k := newKubectl(t, "workloads")
	k.must("create", "deployment", "web", "--image=nginx")
	k.must("create", "job", "once", "--image=busybox")
	k.must("create", "cronjob", "nightly", "--image=busybox", "--schedule=0 0 * * *")
	out := k.must("get", "all")
	for _, want := range []string{"deployment.apps/web", "job.batch/once", "cronjob.batch/nightly"} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl get all lacks %s:\n%s", want, out)
		}
	}
	if out := k.must("get", "deploy", "-o", "name"); strings.TrimSpace(out) != "deployment.apps/web" {
		t.Errorf("kubectl get deploy: %q", out)
	}
	for _, res := range []string{"leases", "endpointslices", "pdb", "ingresses", "netpol", "rs", "sts", "ds", "controllerrevisions",
		"quota", "limits", "ep", "pvc", "rc", "podtemplates"} {
		k.must("get", res)
	}
	for _, res := range []string{"pv", "ingressclasses", "priorityclasses", "storageclasses"} {
		k.must("get", res)
	}
}

// TestStatusAndScale: the status subresource splits spec from status as
// kube-apiserver's strategies do, generation counts spec changes (and a
// Deployment's annotations), and kubectl scale goes through /scale.
func TestStatusAndScale(t *testing.T) {
	k := newKubectl(t, "scale")
	k.must("create", "deployment", "web", "--image=nginx", "--replicas=2")
	ctx := cgContext(t)
	deployments := clientset(t, cgConfig(nil)).AppsV1().Deployments(k.ns)
	d, err := deployments.Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Generation != 1 || d.Status.Replicas != 0 {
		t.Errorf("created: generation %d, status %+v", d.Generation, d.Status)
	}

	// /status changes only status.
	d.Status.Replicas, d.Status.ObservedGeneration = 2, 1
	d.Spec.Paused = true
	d.Labels = map[string]string{"changed": "by-status"}
	if d, err = deployments.UpdateStatus(ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if d.Status.Replicas != 2 || d.Spec.Paused || d.Labels["changed"] != "" || d.Generation != 1 {
		t.Errorf("after UpdateStatus: paused %v, labels %v, status %+v, generation %d", d.Spec.Paused, d.Labels, d.Status, d.Generation)
	}
	// An update of the object keeps status; a label change is not a spec change.
	d.Status.Replicas = 99
	d.Labels = map[string]string{"tier": "front"}
	if d, err = deployments.Update(ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if d.Status.Replicas != 2 || d.Generation != 1 || d.Labels["tier"] != "front" {
		t.Errorf("after Update: status %+v, generation %d, labels %v", d.Status, d.Generation, d.Labels)
	}

	k.must("scale", "deployment", "web", "--replicas=5")
	if d, err = deployments.Get(ctx, "web", metav1.GetOptions{}); err != nil || *d.Spec.Replicas != 5 || d.Generation != 2 || d.Status.Replicas != 2 {
		t.Errorf("after kubectl scale: %v replicas %d, generation %d, status %+v", err, *d.Spec.Replicas, d.Generation, d.Status)
	}
	// A Deployment's annotations count as its spec does (kube-apiserver's
	// strategy: they are copied to its ReplicaSets).
	k.must("annotate", "deployment", "web", "a=1")
	k.must("annotate", "deployment", "web", "b=2")
	if d, err = deployments.Get(ctx, "web", metav1.GetOptions{}); err != nil || d.Generation != 4 {
		t.Errorf("after two kubectl annotate: %v generation %d, want 4", err, d.Generation)
	}
	scale, err := deployments.GetScale(ctx, "web", metav1.GetOptions{})
	if err != nil || scale.Spec.Replicas != 5 || scale.Status.Replicas != 2 || scale.Status.Selector != "app=web" {
		t.Errorf("GetScale: %+v %v", scale, err)
	}
	scale.ResourceVersion = "1"
	if _, err := deployments.UpdateScale(ctx, "web", scale, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Errorf("UpdateScale with a stale resourceVersion: %v", err)
	}
	if out := k.fail("scale", "configmap", "x", "--replicas=1"); !strings.Contains(out, "not found") && !strings.Contains(out, "cannot") {
		t.Errorf("kubectl scale configmap: %s", out)
	}
}

// TestPodBinding: a scheduler binds a pod through pods/binding (client-go's
// Bind): the pod gets its node and the PodScheduled condition; binding it
// again is a conflict, and a binding without a target is invalid.
func TestPodBinding(t *testing.T) {
	ctx := cgContext(t)
	ns := cgNamespace(t, cgDynamic(t), "binding")
	pods := clientset(t, cgConfig(nil)).CoreV1().Pods(ns)
	if _, err := pods.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "p", Annotations: map[string]string{"scheduled-by": "test"}},
		Target: corev1.ObjectReference{Kind: "Node", Name: "node-1"}}
	if err := pods.Bind(ctx, binding, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Fatalf("dry-run bind: %v", err)
	}
	if pod, err := pods.Get(ctx, "p", metav1.GetOptions{}); err != nil || pod.Spec.NodeName != "" {
		t.Fatalf("after a dry-run bind: %+v, %v", pod.Spec, err)
	}
	if err := pods.Bind(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatalf("bind: %v", err)
	}
	pod, err := pods.Get(ctx, "p", metav1.GetOptions{})
	if err != nil || pod.Spec.NodeName != "node-1" || pod.Annotations["scheduled-by"] != "test" ||
		len(pod.Status.Conditions) != 1 || pod.Status.Conditions[0].Type != corev1.PodScheduled || pod.Status.Conditions[0].Status != corev1.ConditionTrue {
		t.Fatalf("bound pod: %+v, %v", pod, err)
	}
	if err := pods.Bind(ctx, binding, metav1.CreateOptions{}); !apierrors.IsConflict(err) ||
		err.Error() != `Operation cannot be fulfilled on pods/binding "p": pod p is already assigned to node "node-1"` {
		t.Errorf("second bind: %v, want Conflict", err)
	}
	// As kube-apiserver, which returns the validation errors as they are:
	// a 500 without a reason.
	err = pods.Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Target: corev1.ObjectReference{Kind: "Pod"}}, metav1.CreateOptions{})
	if st := (apierrors.APIStatus)(nil); !errors.As(err, &st) || st.Status().Code != 500 || st.Status().Reason != "" ||
		st.Status().Message != `[target.kind: Unsupported value: "Pod": supported values: "Node", "<empty>", target.name: Required value]` {
		t.Errorf("bind without a target: %v, want 500", err)
	}
}

// TestBindings: the bindings resource binds the pod its Binding names, as
// pods/binding does, with kube-apiserver's errors.
func TestBindings(t *testing.T) {
	t.Parallel()
	ns := htNamespace(t, "bindings")
	htJSON(t, "POST", "/api/v1/namespaces/"+ns+"/pods", map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "p"},
		"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "busybox"}}}}, http.StatusCreated, nil)
	bindings := "/api/v1/namespaces/" + ns + "/bindings"
	binding := func(name, node string) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "Binding", "metadata": map[string]any{"name": name}, "target": map[string]any{"name": node}}
	}
	var st metav1.Status
	htJSON(t, "POST", bindings, binding("p", "node-1"), http.StatusCreated, &st)
	if st.Status != metav1.StatusSuccess || st.Code != http.StatusCreated {
		t.Errorf("bind: %+v", st)
	}
	var pod corev1.Pod
	htJSON(t, "GET", "/api/v1/namespaces/"+ns+"/pods/p", nil, http.StatusOK, &pod)
	if pod.Spec.NodeName != "node-1" {
		t.Errorf("bound pod's node: %q", pod.Spec.NodeName)
	}
	for _, tc := range []struct {
		body    map[string]any
		code    int
		message string
	}{
		{binding("p", "node-2"), http.StatusConflict, `Operation cannot be fulfilled on pods/binding "p": pod p is already assigned to node "node-1"`},
		{binding("nope", "node-1"), http.StatusNotFound, `pods "nope" not found`},
		{binding("", "node-1"), http.StatusBadRequest, "Name parameter required."},
	} {
		var st metav1.Status
		htJSON(t, "POST", bindings, tc.body, tc.code, &st)
		if st.Message != tc.message {
			t.Errorf("%v: %q, want %q", tc.body, st.Message, tc.message)
		}
	}
	// The body is checked as fieldValidation says, as a created object's.
	strict := binding("p", "node-1")
	strict["bogus"] = 1
	htJSON(t, "POST", "/api/v1/namespaces/"+ns+"/pods/p/binding?fieldValidation=Strict", strict, http.StatusBadRequest, &st)
	if want := `Binding in version "v1" cannot be handled as a Binding: strict decoding error: unknown field "bogus"`; st.Message != want {
		t.Errorf("strict binding: %q, want %q", st.Message, want)
	}
	resp, data := htDo(t, "GET", bindings, "", nil)
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET %s: %d %s, want 405", bindings, resp.StatusCode, data)
	}
}
