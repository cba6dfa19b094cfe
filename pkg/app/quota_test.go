package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/watchcache/watchcache/pkg/pki"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// recordedQuota is testdata/quota.json: kube-apiserver 1.37's answers.
type recordedQuota struct {
	StatusUnknown map[string]string `json:"statusUnknown"`
	Exceeded      map[string]string `json:"exceeded"`
	GenerateName  metav1.Status     `json:"generateName"`
	MustSpecify   string            `json:"mustSpecify"`
	Reserved      struct {
		Used map[string]string `json:"used"`
	} `json:"reserved"`
	PVCReserved map[string]string `json:"pvcReserved"`
}

func readRecordedQuota(t *testing.T) recordedQuota {
	t.Helper()
	var want recordedQuota
	data, err := os.ReadFile("testdata/quota.json")
	if err == nil {
		err = json.Unmarshal(data, &want)
	}
	if err != nil {
		t.Fatal(err)
	}
	return want
}

// quotaServer starts a server with the given --controllers and
// --resource-quota-sync-period.
// --resource-quota-sync-period, serving e2e's custom resources
// (widgets.example.com).
func quotaServer(t *testing.T, controllers []string, resync time.Duration) (*rest.Config, *kubernetes.Clientset) {
	t.Helper()
	a, err := Start(Config{DataDir: t.TempDir(), EtcdPrefix: "/registry", EtcdUnsafeNoFsync: true, WatchCache: true,
		ConsistentListFromCache: true, ConsistentGetFromCache: true, Controllers: controllers, ResourceQuotaSyncPeriod: resync,
		ResourcesFile: "../../e2e/testdata/resources.yaml", Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return adminClient(t, a)
}

// quotaClient is the quota calls of the tests in one namespace.
type quotaClient struct {
	t  *testing.T
	cs *kubernetes.Clientset
	ns string
}

func newQuotaClient(t *testing.T, cs *kubernetes.Clientset, ns string) *quotaClient {
	t.Helper()
	if _, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return &quotaClient{t, cs, ns}
}

func (c *quotaClient) quota(name string, hard map[string]string, scopes []corev1.ResourceQuotaScope, sel *corev1.ScopeSelector) {
	c.t.Helper()
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.ResourceQuotaSpec{Hard: list(hard), Scopes: scopes, ScopeSelector: sel}}
	if _, err := c.cs.CoreV1().ResourceQuotas(c.ns).Create(context.Background(), q, metav1.CreateOptions{}); err != nil {
		c.t.Fatal(err)
	}
}

// used waits until quota name's status.used is want (each quantity as
// printed), and returns it.
func (c *quotaClient) used(name string, want map[string]string) {
	c.t.Helper()
	var got map[string]string
	for deadline := time.Now().Add(45 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		q, err := c.cs.CoreV1().ResourceQuotas(c.ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			c.t.Fatal(err)
		}
		got = printed(q.Status.Used)
		if q.Status.Used != nil && fmt.Sprint(got) == fmt.Sprint(want) {
			return
		}
	}
	c.t.Fatalf("quota %s/%s: used %v, want %v", c.ns, name, got, want)
}

// create creates obj (a pod, Service, claim) and checks the error's text
// against want ("": none; then a 403 Forbidden).
func (c *quotaClient) create(obj any, want string, dryRun ...string) {
	c.t.Helper()
	ctx, opts := context.Background(), metav1.CreateOptions{DryRun: dryRun}
	var err error
	switch o := obj.(type) {
	case *corev1.Pod:
		_, err = c.cs.CoreV1().Pods(c.ns).Create(ctx, o, opts)
	case *corev1.Service:
		_, err = c.cs.CoreV1().Services(c.ns).Create(ctx, o, opts)
	case *corev1.PersistentVolumeClaim:
		_, err = c.cs.CoreV1().PersistentVolumeClaims(c.ns).Create(ctx, o, opts)
	case *corev1.ConfigMap:
		_, err = c.cs.CoreV1().ConfigMaps(c.ns).Create(ctx, o, opts)
	}
	switch {
	case want == "" && err != nil:
		c.t.Errorf("create: %v", err)
	case want != "" && (!apierrors.IsForbidden(err) || err.Error() != want):
		c.t.Errorf("create: %v\nwant 403 %s", err, want)
	}
}

func list(m map[string]string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for k, v := range m {
		out[corev1.ResourceName(k)] = resource.MustParse(v)
	}
	return out
}

func printed(l corev1.ResourceList) map[string]string {
	out := map[string]string{}
	for k, v := range l {
		out[string(k)] = v.String()
	}
	return out
}

// pod is a pod with containers "name:cpu request/memory limit" (empty
// parts: none) and init containers likewise.
func pod(name string, containers, init []string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}}
	mk := func(spec string) corev1.Container {
		n, res, _ := strings.Cut(spec, ":")
		c := corev1.Container{Name: n, Image: "x"}
		cpu, mem, _ := strings.Cut(res, "/")
		if cpu != "" {
			c.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
		}
		if mem != "" {
			c.Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(mem)}
		}
		return c
	}
	for _, s := range containers {
		p.Spec.Containers = append(p.Spec.Containers, mk(s))
	}
	for _, s := range init {
		p.Spec.InitContainers = append(p.Spec.InitContainers, mk(s))
	}
	return p
}

// TestResourceQuota: the quota controller sets a quota's status; creates
// are checked against it and reserve their usage, refused with
// kube-apiserver's messages (object counts, compute resources, scopes,
// Services, claims per storage class, must-specify, dry runs); deletes
// give usage back.
func TestResourceQuota(t *testing.T) {
	want := readRecordedQuota(t)
	rc, cs := quotaServer(t, nil, 0)
	ctx := context.Background()

	t.Run("pods", func(t *testing.T) {
		c := newQuotaClient(t, cs, "quota")
		c.quota("q", map[string]string{"pods": "2"}, nil, nil)
		c.used("q", map[string]string{"pods": "0"})
		c.create(pod("p1", []string{"c"}, nil), "")
		c.create(pod("p2", []string{"c"}, nil), "")
		c.used("q", map[string]string{"pods": "2"})
		c.create(pod("p3", []string{"c"}, nil), want.Exceeded["pod"])
		// generateName: refused under the generated name.
		gen := pod("", []string{"c"}, nil)
		gen.GenerateName = "gen-"
		_, err := cs.CoreV1().Pods("quota").Create(ctx, gen, metav1.CreateOptions{})
		var status *apierrors.StatusError
		if !errors.As(err, &status) {
			t.Fatalf("generateName: %v", err)
		}
		got, w := status.ErrStatus, want.GenerateName
		name := got.Details.Name
		if !strings.HasPrefix(name, "gen-") || got.Code != w.Code || got.Reason != w.Reason || got.Details.Kind != w.Details.Kind ||
			got.Message != strings.ReplaceAll(w.Message, w.Details.Name, name) {
			t.Errorf("generateName: %+v\nwant %+v", got, w)
		}
		// A delete gives the pod back: the controller recomputes.
		if err := cs.CoreV1().Pods("quota").Delete(ctx, "p1", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		c.used("q", map[string]string{"pods": "1"})
		c.create(pod("p3", []string{"c"}, nil), "")
		c.used("q", map[string]string{"pods": "2"})
		// A pod that ended uses no pods (count/pods still counts it).
		p2, err := cs.CoreV1().Pods("quota").Get(ctx, "p2", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p2.Status.Phase = corev1.PodSucceeded
		if _, err := cs.CoreV1().Pods("quota").UpdateStatus(ctx, p2, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		c.used("q", map[string]string{"pods": "1"})
		// A new hard limit: the controller sets status.hard and the usage
		// of what it now limits.
		if _, err := cs.CoreV1().ResourceQuotas("quota").Patch(ctx, "q", types.MergePatchType,
			[]byte(`{"spec":{"hard":{"pods":"5","count/pods":"5"}}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		c.used("q", map[string]string{"pods": "1", "count/pods": "2"})
		if q, err := cs.CoreV1().ResourceQuotas("quota").Get(ctx, "q", metav1.GetOptions{}); err != nil || fmt.Sprint(printed(q.Status.Hard)) != "map[count/pods:5 pods:5]" {
			t.Errorf("status.hard %v, %v", q.Status.Hard, err)
		}
	})

	// The controller keeps pods' quota States only in namespaces with a
	// quota: a pod created before its namespace's quota is still seen to end.
	t.Run("quota created after its pods", func(t *testing.T) {
		c := newQuotaClient(t, cs, "quota-later")
		c.create(pod("p1", []string{"c"}, nil), "")
		c.create(pod("p2", []string{"c"}, nil), "")
		c.quota("q", map[string]string{"pods": "5"}, nil, nil)
		c.used("q", map[string]string{"pods": "2"})
		p1, err := cs.CoreV1().Pods(c.ns).Get(ctx, "p1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p1.Status.Phase = corev1.PodFailed
		if _, err := cs.CoreV1().Pods(c.ns).UpdateStatus(ctx, p1, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		c.used("q", map[string]string{"pods": "1"})
	})

	t.Run("custom resources", func(t *testing.T) {
		c := newQuotaClient(t, cs, "quota-cr")
		c.quota("cr", map[string]string{"count/widgets.example.com": "1"}, nil, nil)
		c.used("cr", map[string]string{"count/widgets.example.com": "0"})
		widgets := dynamic.NewForConfigOrDie(rc).Resource(schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}).Namespace(c.ns)
		widget := func(name string) *unstructured.Unstructured {
			return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": map[string]any{"name": name}}}
		}
		if _, err := widgets.Create(ctx, widget("w1"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		_, err := widgets.Create(ctx, widget("w2"), metav1.CreateOptions{})
		// Recorded with a definition of quotathings.quota.example.com.
		if msg := strings.ReplaceAll(want.Exceeded["customResource"], "quotathings.quota.example.com", "widgets.example.com"); !apierrors.IsForbidden(err) || err.Error() != msg {
			t.Errorf("w2: %v\nwant %s", err, msg)
		}
		if err := widgets.Delete(ctx, "w1", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		c.used("cr", map[string]string{"count/widgets.example.com": "0"})
		if _, err := widgets.Create(ctx, widget("w2"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("compute", func(t *testing.T) {
		c := newQuotaClient(t, cs, "quota-c")
		c.quota("cq", map[string]string{"requests.cpu": "1", "limits.memory": "1Gi", "pods": "5"}, nil, nil)
		c.used("cq", map[string]string{"requests.cpu": "0", "limits.memory": "0", "pods": "0"})
		c.create(pod("nolimits", []string{"c", "d:100m"}, []string{"i"}), want.MustSpecify)
		big := func(name string, cpu ...string) *corev1.Pod {
			return pod(name, []string{"c:" + cpu[0] + "/" + cpu[3], "d:" + cpu[1] + "/" + cpu[4]}, []string{"i:" + cpu[2] + "/" + cpu[5]})
		}
		c.create(big("big", "600m", "300m", "950m", "512Mi", "256Mi", "100Mi"), "")
		c.used("cq", want.Reserved.Used)
		c.create(big("big2", "600m", "300m", "950m", "512Mi", "256Mi", "100Mi"), want.Exceeded["compute"])
		c.create(big("dry2", "10m", "10m", "10m", "10Mi", "10Mi", "10Mi"), "", metav1.DryRunAll)
		c.create(big("dry", "10m", "10m", "50m", "512Mi", "256Mi", "100Mi"), want.Exceeded["dryRun"], metav1.DryRunAll)
		time.Sleep(500 * time.Millisecond)
		c.used("cq", want.Reserved.Used) // the dry runs reserved nothing
	})

	t.Run("scopes", func(t *testing.T) {
		c := newQuotaClient(t, cs, "quota-s")
		if _, err := cs.SchedulingV1().PriorityClasses().Create(ctx, &schedulingPriorityClass, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		c.quota("be", map[string]string{"pods": "1"}, []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeBestEffort}, nil)
		c.quota("prio", map[string]string{"pods": "1"}, nil, &corev1.ScopeSelector{MatchExpressions: []corev1.ScopedResourceSelectorRequirement{
			{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: corev1.ScopeSelectorOpIn, Values: []string{"high"}}}})
		c.quota("term", map[string]string{"pods": "0"}, []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeTerminating}, nil)
		for _, q := range []string{"be", "prio", "term"} {
			c.used(q, map[string]string{"pods": "0"})
		}
		c.create(pod("be0", []string{"be0"}, nil), "")
		hi := func(name string) *corev1.Pod {
			p := pod(name, []string{"hi:1m"}, nil)
			p.Spec.PriorityClassName = "high"
			return p
		}
		c.create(hi("hi0"), "")
		c.used("be", map[string]string{"pods": "1"})
		c.used("prio", map[string]string{"pods": "1"})
		c.create(pod("be", []string{"be"}, nil), want.Exceeded["bestEffort"])
		c.create(pod("nbe", []string{"nbe:1m"}, nil), "")
		c.create(hi("hi"), want.Exceeded["priorityClass"])
		deadline := pod("dl", []string{"dl:1m"}, nil)
		deadline.Spec.ActiveDeadlineSeconds = new(int64(60))
		c.create(deadline, `pods "dl" is forbidden: exceeded quota: term, requested: pods=1, used: pods=0, limited: pods=0`)
		c.used("be", map[string]string{"pods": "1"})
		c.used("term", map[string]string{"pods": "0"})
	})

	t.Run("services and claims", func(t *testing.T) {
		c := newQuotaClient(t, cs, "quota-svc")
		hard := map[string]string{"services.nodeports": "1", "services.loadbalancers": "0", "count/deployments.apps": "0",
			"gold.storageclass.storage.k8s.io/requests.storage": "1Gi", "requests.storage": "5Gi"}
		c.quota("svc", hard, nil, nil)
		c.used("svc", map[string]string{"services.nodeports": "0", "services.loadbalancers": "0", "count/deployments.apps": "0",
			"gold.storageclass.storage.k8s.io/requests.storage": "0", "requests.storage": "0"})
		svc := func(name string, typ corev1.ServiceType, ports ...int32) *corev1.Service {
			s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.ServiceSpec{Type: typ}}
			for _, p := range ports {
				s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: fmt.Sprint("p", p), Port: p})
			}
			return s
		}
		c.create(svc("web", corev1.ServiceTypeClusterIP, 80), "")
		c.create(svc("np2", corev1.ServiceTypeNodePort, 80, 81), want.Exceeded["nodePorts"])
		if _, err := cs.CoreV1().Services(c.ns).Patch(ctx, "web", types.MergePatchType, []byte(`{"spec":{"type":"NodePort"}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		c.create(svc("lb", corev1.ServiceTypeLoadBalancer, 80), want.Exceeded["loadBalancer"])
		_, err := cs.AppsV1().Deployments(c.ns).Create(ctx, deployment("d"), metav1.CreateOptions{})
		if !apierrors.IsForbidden(err) || err.Error() != want.Exceeded["deployment"] {
			t.Errorf("deployment: %v\nwant %s", err, want.Exceeded["deployment"])
		}
		claim := func(name string) *corev1.PersistentVolumeClaim {
			return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PersistentVolumeClaimSpec{
				StorageClassName: new("gold"), AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{Requests: list(map[string]string{"storage": "600Mi"})}}}
		}
		c.create(claim("c1"), "")
		c.create(claim("c2"), want.Exceeded["storageClass"])
		used := map[string]string{"services.nodeports": "1", "services.loadbalancers": "0", "count/deployments.apps": "0"}
		for k, v := range want.PVCReserved {
			used[k] = v
		}
		c.used("svc", used)
		// The type back to ClusterIP: the controller gives the node port back.
		if _, err := cs.CoreV1().Services(c.ns).Patch(ctx, "web", types.MergePatchType, []byte(`{"spec":{"type":"ClusterIP"}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		used["services.nodeports"] = "0"
		c.used("svc", used)
	})
}

var schedulingPriorityClass = schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "high"}, Value: 1000}

func deployment(name string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: appsv1.DeploymentSpec{
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}}}}
}

// TestResourceQuotaKubectl: kubectl sees kube-apiserver's refusal of a
// create beyond a quota, and the quota's usage.
func TestResourceQuotaKubectl(t *testing.T) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("no kubectl")
	}
	want := readRecordedQuota(t)
	a, err := Start(Config{DataDir: t.TempDir(), EtcdPrefix: "/registry", EtcdUnsafeNoFsync: true, WatchCache: true,
		ConsistentListFromCache: true, ConsistentGetFromCache: true, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	run := func(args ...string) (string, error) {
		out, err := exec.Command(kubectl, append([]string{"--kubeconfig", a.Kubeconfig, "--cache-dir", t.TempDir(), "-n", "quota"}, args...)...).CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	for _, args := range [][]string{{"create", "namespace", "quota"}, {"create", "quota", "q", "--hard=pods=2,count/configmaps=1"}} {
		if out, err := run(args...); err != nil {
			t.Fatal(out)
		}
	}
	var out string
	for deadline := time.Now().Add(20 * time.Second); out != "0"; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("status.used.pods %q", out)
		}
		out, _ = run("get", "quota", "q", "-o", "jsonpath={.status.used.pods}")
	}
	for _, p := range []string{"p1", "p2"} {
		if out, err := run("run", p, "--image=x"); err != nil {
			t.Fatal(out)
		}
	}
	if out, err := run("run", "p3", "--image=x"); err == nil || out != "Error from server (Forbidden): "+want.Exceeded["pod"] {
		t.Errorf("kubectl run p3: %s\nwant Error from server (Forbidden): %s", out, want.Exceeded["pod"])
	}
	// kube-root-ca.crt is the namespace's one ConfigMap.
	if out, err := run("create", "configmap", "c3"); err == nil || out != "error: failed to create configmap: "+want.Exceeded["configmap"] {
		t.Errorf("kubectl create configmap c3: %s\nwant %s", out, want.Exceeded["configmap"])
	}
	if out, _ := run("get", "quota", "q", "-o", "jsonpath={.status.used}"); out != `{"count/configmaps":"1","pods":"2"}` {
		t.Errorf("used %s", out)
	}
}

// TestResourceQuotaWithoutController: with
// --controllers=*,-resourcequota-controller a quota's status is left
// alone: a quota without status lets everything through, one with hard
// and no usage refuses as kube-apiserver's ("status unknown"), and usage
// set by hand is enforced and never recomputed.
func TestResourceQuotaWithoutController(t *testing.T) {
	want := readRecordedQuota(t)
	_, cs := quotaServer(t, []string{"*", "-resourcequota-controller"}, time.Second)
	ctx := context.Background()
	c := newQuotaClient(t, cs, "quota")
	c.quota("q", map[string]string{"pods": "2", "count/configmaps": "1"}, nil, nil)
	c.create(pod("p1", []string{"c"}, nil), "")
	c.create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c1"}}, "")
	c.create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c2"}}, "")
	setStatus := func(patch string) {
		t.Helper()
		if _, err := cs.CoreV1().ResourceQuotas("quota").Patch(ctx, "q", types.MergePatchType, []byte(patch), metav1.PatchOptions{}, "status"); err != nil {
			t.Fatal(err)
		}
	}
	setStatus(`{"status":{"hard":{"pods":"2","count/configmaps":"1"}}}`)
	c.create(pod("p2", []string{"c"}, nil), want.StatusUnknown["pod"])
	c.create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c3"}}, want.StatusUnknown["configmap"])
	setStatus(`{"status":{"used":{"pods":"2","count/configmaps":"1"}}}`)
	c.create(pod("p3", []string{"c"}, nil), want.Exceeded["pod"])
	c.create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c3"}}, want.Exceeded["configmap"])
	// A delete and two resync periods later, the usage set by hand stays.
	if err := cs.CoreV1().Pods("quota").Delete(ctx, "p1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2500 * time.Millisecond)
	q, err := cs.CoreV1().ResourceQuotas("quota").Get(ctx, "q", metav1.GetOptions{})
	if err != nil || fmt.Sprint(printed(q.Status.Used)) != "map[count/configmaps:1 pods:2]" {
		t.Errorf("without the controller: used %v, %v", q.Status.Used, err)
	}
}

// TestResourceQuotaTwoReplicas: two replicas on one etcd, 20 clients on
// each creating pods at once against one quota of pods=10, never exceed
// it: exactly 10 pods exist afterwards and the quota says so. A client
// retries its create on a 409 Conflict, as the reservation's conflict
// asks.
func TestResourceQuotaTwoReplicas(t *testing.T) {
	dirs := []string{t.TempDir(), t.TempDir()}
	etcd := sharedEtcd(t, dirs[0])
	if err := os.CopyFS(filepath.Join(dirs[1], "pki"), os.DirFS(filepath.Join(dirs[0], "pki"))); err != nil {
		t.Fatal(err)
	}
	var clients []*kubernetes.Clientset
	for _, dir := range dirs {
		own := pki.FilesIn(filepath.Join(dir, "pki"))
		a, err := Start(Config{DataDir: dir, EtcdServers: []string{etcd.Endpoint},
			EtcdCAFile: own.CACert, EtcdCertFile: own.EtcdClientCert, EtcdKeyFile: own.EtcdClientKey,
			EtcdPrefix: "/registry", WatchCache: true, ConsistentListFromCache: true, ConsistentGetFromCache: true,
			LeaderElect: true, Log: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { a.Close() })
		rc, _ := adminClient(t, a)
		rc.QPS = -1
		clients = append(clients, kubernetes.NewForConfigOrDie(rc))
	}
	c := newQuotaClient(t, clients[0], "burst")
	c.quota("q", map[string]string{"pods": "10"}, nil, nil)
	// A first pod through each replica, so that both are warm when the
	// burst comes.
	for r, cs := range clients {
		(&quotaClient{t, cs, "burst"}).create(pod(fmt.Sprint("warm-", r), []string{"c"}, nil), "")
	}
	for _, cs := range clients {
		(&quotaClient{t, cs, "burst"}).used("q", map[string]string{"pods": "2"})
	}
	ctx := context.Background()
	var mu sync.Mutex
	created, refused, conflicts := 0, 0, 0
	var wg sync.WaitGroup
	for r, cs := range clients {
		for i := range 20 {
			wg.Go(func() {
				p := pod(fmt.Sprintf("p-%d-%d", r, i), []string{"c"}, nil)
				for {
					_, err := cs.CoreV1().Pods("burst").Create(ctx, p, metav1.CreateOptions{})
					mu.Lock()
					switch {
					case err == nil:
						created++
					case apierrors.IsForbidden(err) && strings.Contains(err.Error(), "exceeded quota: q, requested: pods=1, used: pods=10, limited: pods=10"):
						refused++
					case apierrors.IsConflict(err):
						conflicts++
						mu.Unlock()
						continue
					default:
						t.Errorf("%s: %v", p.Name, err)
					}
					mu.Unlock()
					return
				}
			})
		}
	}
	wg.Wait()
	pods, err := clients[1].CoreV1().Pods("burst").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("created %d, refused %d, conflicts retried %d", created, refused, conflicts)
	if len(pods.Items) != 10 || created != 8 || refused != 32 {
		t.Errorf("%d pods exist, %d created, %d refused; want 10, 8, 32", len(pods.Items), created, refused)
	}
	c.used("q", map[string]string{"pods": "10"})
}

// BenchmarkResourceQuotaCreate: pod creates (8 clients at once) in a
// namespace without a quota, and in one whose quota counts them (each
// create checked and reserved).
func BenchmarkResourceQuotaCreate(b *testing.B) {
	a, err := Start(Config{DataDir: b.TempDir(), EtcdPrefix: "/registry", EtcdUnsafeNoFsync: true, WatchCache: true,
		ConsistentListFromCache: true, ConsistentGetFromCache: true, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { a.Close() })
	rc, err := clientcmd.BuildConfigFromFlags("", a.Kubeconfig)
	if err != nil {
		b.Fatal(err)
	}
	rc.QPS = -1
	cs := kubernetes.NewForConfigOrDie(rc)
	ctx := context.Background()
	var n atomic.Int64 // names pods across runs
	for _, withQuota := range []bool{false, true} {
		ns := fmt.Sprint("bench-quota-", withQuota)
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		if withQuota {
			q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "q"}, Spec: corev1.ResourceQuotaSpec{Hard: list(map[string]string{"pods": "1000000"})}}
			if _, err := cs.CoreV1().ResourceQuotas(ns).Create(ctx, q, metav1.CreateOptions{}); err != nil {
				b.Fatal(err)
			}
			for {
				q, err := cs.CoreV1().ResourceQuotas(ns).Get(ctx, "q", metav1.GetOptions{})
				if err != nil {
					b.Fatal(err)
				}
				if q.Status.Used != nil {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
		b.Run(fmt.Sprint("quota=", withQuota), func(b *testing.B) {
			b.SetParallelism(4) // 8 clients on 2 cores
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					name := fmt.Sprint("p-", n.Add(1))
					if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod(name, []string{"c"}, nil), metav1.CreateOptions{}); err != nil {
						b.Error(err)
					}
				}
			})
		})
	}
}
