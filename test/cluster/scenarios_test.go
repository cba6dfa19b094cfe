package cluster

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
)

// sharedNodes is the size of the node pool the scenarios share; scenarios
// that kill or delete nodes make their own, tainted so that only their pods
// go there.
const sharedNodes = 10

// scenarios run in parallel, each in its own namespace, on one cluster per
// API server.
var scenarios = []struct {
	name string
	run  func(t *testing.T, c *cluster)
}{
	{"CronJob", testCronJob}, // first: it waits for the next minute
	{"Nodes", testNodes},
	{"Deployment", testDeployment},
	{"DaemonSet", testDaemonSet},
	{"StatefulSet", testStatefulSet},
	{"Job", testJob},
	{"Service", testService},
	{"ResourceQuota", testResourceQuota},
	{"NodeDeleted", testNodeDeleted},
	{"NamespaceDeleted", testNamespaceDeleted},
	{"NodeNotReady", testNodeNotReady},
}

func TestCluster(t *testing.T) {
	for _, server := range servers {
		t.Run(server.name, func(t *testing.T) {
			// Leases of 10s, a lost node NotReady after 12s
			// (kubelets' Leases last 40s, kube-controller-manager's
			// grace is 50s).
			c := startCluster(t, server, 10*time.Second, 12*time.Second)
			start := time.Now()
			c.createNodes(t, "node", sharedNodes, "kwok", "shared", nil)
			c.waitFor(t, time.Minute, "shared nodes Ready", func() (bool, string, error) {
				ready, err := c.readyNodes("pool=shared")
				return len(ready) == sharedNodes, fmt.Sprintf("Ready: %v", ready), err
			})
			t.Logf("%d kwok nodes Ready in %.1fs", sharedNodes, time.Since(start).Seconds())
			t.Run("scenario", func(t *testing.T) {
				for _, s := range scenarios {
					t.Run(s.name, func(t *testing.T) {
						t.Parallel()
						s.run(t, c)
					})
				}
			})
		})
	}
}

var ctx = context.Background()

// waitFor polls cond every half second until it is done or timeout
// passes; then it fails with cond's last description of what it saw.
func (c *cluster) waitFor(t testing.TB, timeout time.Duration, what string, cond func() (done bool, state string, err error)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		done, state, err := cond()
		if done && err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %v: %s (error: %v)", what, timeout, state, err)
		}
		select {
		case <-c.server.exited:
			t.Fatalf("%s: %s exited:\n%s", what, c.server.name, c.server.tail())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// readyNodes are the names of the nodes matching selector whose Ready
// condition is True.
func (c *cluster) readyNodes(selector string) ([]string, error) {
	nodes, err := c.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, err
	}
	var ready []string
	for _, n := range nodes.Items {
		if nodeCondition(&n, corev1.NodeReady) == corev1.ConditionTrue {
			ready = append(ready, n.Name)
		}
	}
	return ready, nil
}

func nodeCondition(n *corev1.Node, typ corev1.NodeConditionType) corev1.ConditionStatus {
	for _, cond := range n.Status.Conditions {
		if cond.Type == typ {
			return cond.Status
		}
	}
	return ""
}

// namespace creates a namespace and waits for its default ServiceAccount
// (kube-controller-manager's), which the ServiceAccount admission requires
// of pods.
func (c *cluster) namespace(t testing.TB, name string) string {
	t.Helper()
	_, err := c.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	check(t, err)
	c.waitFor(t, 30*time.Second, "default ServiceAccount of "+name, func() (bool, string, error) {
		_, err := c.client.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, "not found", nil
		}
		return err == nil, "", err
	})
	return name
}

// podTemplate is a pod of one container labeled app=name, for the shared
// nodes.
func podTemplate(name, image string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{"pool": "shared"},
			Containers:   []corev1.Container{{Name: "c", Image: image}},
		},
	}
}

// pods lists the pods of namespace ns matching selector, and counts those
// Running and Ready.
func (c *cluster) pods(ns, selector string) ([]corev1.Pod, int, error) {
	list, err := c.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, 0, err
	}
	running := 0
	for _, p := range list.Items {
		if p.Status.Phase == corev1.PodRunning && podReady(&p) && p.DeletionTimestamp == nil {
			running++
		}
	}
	return list.Items, running, nil
}

func podReady(p *corev1.Pod) bool {
	for _, cond := range p.Status.Conditions {
		if cond.Type == corev1.PodReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

// testNodes: the shared nodes keep renewing their Leases, and kubectl
// shows them Ready.
func testNodes(t *testing.T, c *cluster) {
	leases := c.client.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	first := map[string]time.Time{}
	for i := range sharedNodes {
		name := fmt.Sprintf("node-%d", i)
		l, err := leases.Get(ctx, name, metav1.GetOptions{})
		check(t, err)
		// The holder is kwok's identity, not the node's name as a kubelet's.
		if ptr.Deref(l.Spec.HolderIdentity, "") == "" || l.Spec.RenewTime == nil {
			t.Fatalf("Lease %s: holder %q, renewTime %v", name, ptr.Deref(l.Spec.HolderIdentity, ""), l.Spec.RenewTime)
		}
		first[name] = l.Spec.RenewTime.Time
	}
	c.waitFor(t, 30*time.Second, "every shared node's Lease renewed", func() (bool, string, error) {
		var stale []string
		for name, renewed := range first {
			l, err := leases.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, "", err
			}
			if !l.Spec.RenewTime.Time.After(renewed) {
				stale = append(stale, name)
			}
		}
		return len(stale) == 0, fmt.Sprintf("not renewed: %v", stale), nil
	})
	if out, ok := c.kubectl(t, "get", "nodes", "-l", "pool=shared", "--no-headers"); ok {
		lines := strings.Split(strings.TrimSpace(out), "\n")
		for _, l := range lines {
			if f := strings.Fields(l); len(f) < 2 || f[1] != "Ready" {
				t.Errorf("kubectl get nodes: %q is not Ready", l)
			}
		}
		if len(lines) != sharedNodes {
			t.Errorf("kubectl get nodes shows %d nodes, want %d:\n%s", len(lines), sharedNodes, out)
		}
	}
}

// testDeployment: 50 replicas all Running within 60s, a rolling update to a
// new image completes, scaling to 5 leaves 5 pods.
func testDeployment(t *testing.T, c *cluster) {
	ns := c.namespace(t, "deployment")
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](50),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: podTemplate("web", "fake-image:1"),
		},
	}
	start := time.Now()
	_, err := c.client.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{})
	check(t, err)
	c.waitFor(t, 60*time.Second, "50 pods Running", func() (bool, string, error) {
		_, running, err := c.pods(ns, "app=web")
		return running == 50, fmt.Sprintf("%d Running", running), err
	})
	t.Logf("50 pods Running in %.1fs", time.Since(start).Seconds())
	c.waitDeployment(t, ns, "web", 50)

	start = time.Now()
	c.updateDeployment(t, ns, "web", func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "fake-image:2" })
	c.waitDeployment(t, ns, "web", 50)
	c.waitFor(t, 60*time.Second, "every pod of the new image", func() (bool, string, error) {
		pods, _, err := c.pods(ns, "app=web")
		old := 0
		for _, p := range pods {
			if p.Spec.Containers[0].Image != "fake-image:2" {
				old++
			}
		}
		return old == 0 && len(pods) == 50, fmt.Sprintf("%d pods, %d of the old image", len(pods), old), err
	})
	t.Logf("rolling update done in %.1fs", time.Since(start).Seconds())

	c.updateDeployment(t, ns, "web", func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To[int32](5) })
	c.waitDeployment(t, ns, "web", 5)
	c.waitFor(t, 60*time.Second, "5 pods left", func() (bool, string, error) {
		pods, running, err := c.pods(ns, "app=web")
		return len(pods) == 5 && running == 5, fmt.Sprintf("%d pods, %d Running", len(pods), running), err
	})
}

func (c *cluster) updateDeployment(t *testing.T, ns, name string, change func(*appsv1.Deployment)) {
	t.Helper()
	for {
		d, err := c.client.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		check(t, err)
		change(d)
		_, err = c.client.AppsV1().Deployments(ns).Update(ctx, d, metav1.UpdateOptions{})
		if !apierrors.IsConflict(err) {
			check(t, err)
			return
		}
	}
}

// waitDeployment waits until the Deployment's status reports its current
// generation complete with replicas pods.
func (c *cluster) waitDeployment(t *testing.T, ns, name string, replicas int32) {
	t.Helper()
	c.waitFor(t, 90*time.Second, "Deployment "+name+" complete", func() (bool, string, error) {
		d, err := c.client.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		s := d.Status
		done := s.ObservedGeneration == d.Generation && s.Replicas == replicas &&
			s.UpdatedReplicas == replicas && s.AvailableReplicas == replicas && s.ReadyReplicas == replicas
		return done, fmt.Sprintf("generation %d, status %+v", d.Generation, s), nil
	})
}

// testDaemonSet: one pod on each shared node.
func testDaemonSet(t *testing.T, c *cluster) {
	ns := c.namespace(t, "daemonset")
	_, err := c.client.AppsV1().DaemonSets(ns).Create(ctx, &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent"},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}},
			Template: podTemplate("agent", "fake-agent:1"),
		},
	}, metav1.CreateOptions{})
	check(t, err)
	c.waitFor(t, 60*time.Second, "one Running pod per node", func() (bool, string, error) {
		pods, running, err := c.pods(ns, "app=agent")
		perNode := map[string]int{}
		for _, p := range pods {
			perNode[p.Spec.NodeName]++
		}
		done := running == sharedNodes && len(pods) == sharedNodes && len(perNode) == sharedNodes
		return done, fmt.Sprintf("%d pods, %d Running, per node %v", len(pods), running, perNode), err
	})
	c.waitFor(t, 30*time.Second, "DaemonSet status", func() (bool, string, error) {
		ds, err := c.client.AppsV1().DaemonSets(ns).Get(ctx, "agent", metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		s := ds.Status
		return s.DesiredNumberScheduled == sharedNodes && s.NumberReady == sharedNodes && s.NumberAvailable == sharedNodes,
			fmt.Sprintf("%+v", s), nil
	})
}

// testStatefulSet: 3 replicas come up in order, each created only once the
// one before it is Ready.
func testStatefulSet(t *testing.T, c *cluster) {
	ns := c.namespace(t, "statefulset")
	_, err := c.client.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "db"},
		Spec: corev1.ServiceSpec{
			ClusterIP: corev1.ClusterIPNone, Selector: map[string]string{"app": "db"},
			Ports: []corev1.ServicePort{{Port: 5432}},
		},
	}, metav1.CreateOptions{})
	check(t, err)
	w, err := c.client.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{})
	check(t, err)
	defer w.Stop()
	_, err = c.client.AppsV1().StatefulSets(ns).Create(ctx, &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "db"},
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To[int32](3), ServiceName: "db",
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
			Template: podTemplate("db", "fake-db:1"),
		},
	}, metav1.CreateOptions{})
	check(t, err)
	var created []string
	ready := map[string]bool{}
	timeout := time.After(60 * time.Second)
	for len(ready) < 3 {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("watch of pods ended; created %v, ready %v", created, ready)
			}
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				t.Fatalf("watch event %s: %v", ev.Type, ev.Object)
			}
			if ev.Type == watch.Added {
				created = append(created, p.Name)
				if i := len(created) - 1; i > 0 && !ready[fmt.Sprintf("db-%d", i-1)] {
					t.Fatalf("%s created before db-%d was Ready (created %v)", p.Name, i-1, created)
				}
			}
			if podReady(p) && p.Status.Phase == corev1.PodRunning {
				ready[p.Name] = true
			}
		case <-timeout:
			t.Fatalf("StatefulSet not up after 60s: created %v, ready %v", created, ready)
		}
	}
	if want := []string{"db-0", "db-1", "db-2"}; !slices.Equal(created, want) {
		t.Errorf("pods created in the order %v, want %v", created, want)
	}
}

// testJob: a Job of 5 completions (kwok completes its pods) completes.
func testJob(t *testing.T, c *cluster) {
	ns := c.namespace(t, "job")
	_, err := c.client.BatchV1().Jobs(ns).Create(ctx, &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "work"},
		Spec: batchv1.JobSpec{
			Completions: ptr.To[int32](5), Parallelism: ptr.To[int32](2),
			Template: jobPodTemplate(),
		},
	}, metav1.CreateOptions{})
	check(t, err)
	c.waitFor(t, 60*time.Second, "Job complete", func() (bool, string, error) {
		j, err := c.client.BatchV1().Jobs(ns).Get(ctx, "work", metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		complete := false
		for _, cond := range j.Status.Conditions {
			complete = complete || cond.Type == batchv1.JobComplete && cond.Status == corev1.ConditionTrue
		}
		return complete && j.Status.Succeeded == 5, fmt.Sprintf("%+v", j.Status), nil
	})
}

func jobPodTemplate() corev1.PodTemplateSpec {
	tmpl := podTemplate("work", "fake-work:1")
	tmpl.Spec.RestartPolicy = corev1.RestartPolicyNever
	return tmpl
}

// testCronJob: a CronJob every minute creates a Job (within 70s: the next
// minute, plus the CronJob controller's delay).
func testCronJob(t *testing.T, c *cluster) {
	ns := c.namespace(t, "cronjob")
	_, err := c.client.BatchV1().CronJobs(ns).Create(ctx, &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: "tick"},
		Spec: batchv1.CronJobSpec{
			Schedule: "* * * * *",
			JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
				Template: jobPodTemplate(),
			}},
		},
	}, metav1.CreateOptions{})
	check(t, err)
	c.waitFor(t, 75*time.Second, "a Job of the CronJob", func() (bool, string, error) {
		jobs, err := c.client.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, "", err
		}
		for _, j := range jobs.Items {
			if ref := metav1.GetControllerOf(&j); ref != nil && ref.Kind == "CronJob" && ref.Name == "tick" {
				return true, "", nil
			}
		}
		return false, fmt.Sprintf("%d Jobs, none of the CronJob", len(jobs.Items)), nil
	})
	c.waitFor(t, 10*time.Second, "CronJob status", func() (bool, string, error) {
		cj, err := c.client.BatchV1().CronJobs(ns).Get(ctx, "tick", metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		return cj.Status.LastScheduleTime != nil, fmt.Sprintf("%+v", cj.Status), nil
	})
}

// testService: a Service selecting a Deployment's pods gets an
// EndpointSlice with their IPs, ready.
func testService(t *testing.T, c *cluster) {
	ns := c.namespace(t, "service")
	_, err := c.client.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "api"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](3),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "api"}},
			Template: podTemplate("api", "fake-api:1"),
		},
	}, metav1.CreateOptions{})
	check(t, err)
	_, err = c.client.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "api"},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "api"},
			Ports:    []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}},
		},
	}, metav1.CreateOptions{})
	check(t, err)
	c.waitFor(t, 60*time.Second, "EndpointSlice with the pods' IPs", func() (bool, string, error) {
		pods, running, err := c.pods(ns, "app=api")
		if err != nil || running != 3 {
			return false, fmt.Sprintf("%d pods Running", running), err
		}
		var want, got []string
		for _, p := range pods {
			want = append(want, p.Status.PodIP)
		}
		slices, err := c.client.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=api"})
		if err != nil {
			return false, "", err
		}
		for _, s := range slices.Items {
			for _, e := range s.Endpoints {
				if e.Conditions.Ready != nil && *e.Conditions.Ready {
					got = append(got, e.Addresses...)
				}
			}
		}
		sort.Strings(want)
		sort.Strings(got)
		return strings.Join(want, ",") == strings.Join(got, ","), fmt.Sprintf("ready endpoints %v, pod IPs %v", got, want), nil
	})
}

// testResourceQuota: kube-controller-manager keeps a quota's status (hard,
// and used recounted when a pod goes); the server charges and enforces it
// at admission. watchcache's ResourceQuota admission is being built: where
// a server neither charges nor enforces, that is logged, not failed.
func testResourceQuota(t *testing.T, c *cluster) {
	ns := c.namespace(t, "quota")
	quotas := c.client.CoreV1().ResourceQuotas(ns)
	_, err := quotas.Create(ctx, &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "q"},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("3"), "count/configmaps": resource.MustParse("10")}},
	}, metav1.CreateOptions{})
	check(t, err)
	used := func(want int64) func() (bool, string, error) {
		return func() (bool, string, error) {
			q, err := quotas.Get(ctx, "q", metav1.GetOptions{})
			if err != nil {
				return false, "", err
			}
			hard, pods, cms := q.Status.Hard[corev1.ResourcePods], q.Status.Used[corev1.ResourcePods], q.Status.Used["count/configmaps"]
			// kube-root-ca.crt is the namespace's one ConfigMap.
			done := hard.Value() == 3 && pods.Value() == want && cms.Value() == 1
			return done, fmt.Sprintf("hard %v, used %v", q.Status.Hard, q.Status.Used), nil
		}
	}
	// The status first: kube-apiserver's admission refuses pods while a
	// quota has none.
	c.waitFor(t, 30*time.Second, "quota status", used(0))
	createPod := func(name string) error {
		tmpl := podTemplate("quota", "fake:1")
		_, err := c.client.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: tmpl.Labels}, Spec: tmpl.Spec}, metav1.CreateOptions{})
		return err
	}
	check(t, createPod("a"))
	check(t, createPod("b"))
	if done, state, _ := used(2)(); !done {
		t.Logf("%s: pods not charged at admission: %s", c.server.name, state)
	}
	check(t, c.client.CoreV1().Pods(ns).Delete(ctx, "a", metav1.DeleteOptions{}))
	c.waitFor(t, 30*time.Second, "used recounted by kube-controller-manager after a pod went", used(1))

	check(t, createPod("c"))
	check(t, createPod("d"))
	err = createPod("e")
	switch {
	case apierrors.IsForbidden(err) && strings.Contains(err.Error(), "exceeded quota"):
	case err == nil && c.server.name == "watchcache":
		t.Log("watchcache does not enforce ResourceQuota yet: a fourth pod was created under a quota of 3")
	default:
		t.Errorf("a fourth pod under a quota of 3: %v, want 403 exceeded quota", err)
	}
}

// testNodeDeleted: the pods of a deleted node are deleted (kube-controller-
// manager's pod GC, after its 40s quarantine).
func testNodeDeleted(t *testing.T, c *cluster) {
	ns := c.namespace(t, "nodedeleted")
	node := c.createNodes(t, "deleted", 1, "kwok", "deleted", []corev1.Taint{{Key: "scenario", Value: "deleted", Effect: corev1.TaintEffectNoSchedule}})[0]
	c.podsOn(t, ns, node, 3, nil)
	check(t, c.client.CoreV1().Nodes().Delete(ctx, node, metav1.DeleteOptions{}))
	c.waitFor(t, 2*time.Minute, "pods of the deleted node deleted", func() (bool, string, error) {
		pods, _, err := c.pods(ns, "")
		return len(pods) == 0, fmt.Sprintf("%d pods", len(pods)), err
	})
}

// podsOn creates n pods bound to node (as a controller with a nodeName
// would) with tolerations, and waits for them to be Running.
func (c *cluster) podsOn(t *testing.T, ns, node string, n int, tolerations []corev1.Toleration) {
	t.Helper()
	for i := range n {
		_, err := c.client.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d", i), Labels: map[string]string{"app": "bound"}},
			Spec: corev1.PodSpec{
				NodeName: node, Tolerations: tolerations,
				Containers: []corev1.Container{{Name: "c", Image: "fake:1"}},
			},
		}, metav1.CreateOptions{})
		check(t, err)
	}
	c.waitFor(t, 60*time.Second, "pods Running on "+node, func() (bool, string, error) {
		_, running, err := c.pods(ns, "app=bound")
		return running == n, fmt.Sprintf("%d Running", running), err
	})
}

// testNamespaceDeleted: a deleted namespace is emptied (its pods, a
// Deployment, ConfigMaps) and then gone.
func testNamespaceDeleted(t *testing.T, c *cluster) {
	ns := c.namespace(t, "deleted")
	_, err := c.client.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "app"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](3),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "app"}},
			Template: podTemplate("app", "fake:1"),
		},
	}, metav1.CreateOptions{})
	check(t, err)
	_, err = c.client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}}, metav1.CreateOptions{})
	check(t, err)
	c.waitFor(t, 60*time.Second, "3 pods Running", func() (bool, string, error) {
		_, running, err := c.pods(ns, "app=app")
		return running == 3, fmt.Sprintf("%d Running", running), err
	})
	check(t, c.client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}))
	c.waitFor(t, 90*time.Second, "namespace gone", func() (bool, string, error) {
		n, err := c.client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, "", nil
		}
		if err != nil {
			return false, "", err
		}
		pods, _, _ := c.pods(ns, "")
		return false, fmt.Sprintf("finalizers %v and %v, phase %s, conditions %+v, %d pods left", n.Spec.Finalizers, n.Finalizers, n.Status.Phase, n.Status.Conditions, len(pods)), nil
	})
}

// testNodeNotReady: a node whose kubelet (its own kwok) dies turns NotReady
// (Unknown), is tainted unreachable, and its pods are evicted by the
// taint manager.
func testNodeNotReady(t *testing.T, c *cluster) {
	ns := c.namespace(t, "nodelost")
	kubelet := c.startKwok(t, "kwok-lost", "10.244.0.1/16")
	node := c.createNodes(t, "lost", 1, "kwok-lost", "lost", []corev1.Taint{{Key: "scenario", Value: "lost", Effect: corev1.TaintEffectNoSchedule}})[0]
	c.waitFor(t, 60*time.Second, node+" Ready", func() (bool, string, error) {
		ready, err := c.readyNodes("pool=lost")
		return len(ready) == 1, "", err
	})
	// Evicted 1s after the taint, not after the 300s kube-apiserver's
	// DefaultTolerationSeconds gives pods without these tolerations.
	var tolerations []corev1.Toleration
	for _, key := range []string{corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable} {
		tolerations = append(tolerations, corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](1)})
	}
	c.podsOn(t, ns, node, 2, tolerations)
	kubelet.stop()
	start := time.Now()
	c.waitFor(t, 60*time.Second, node+" NotReady and tainted", func() (bool, string, error) {
		n, err := c.client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		tainted := slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool {
			return t.Key == corev1.TaintNodeUnreachable && t.Effect == corev1.TaintEffectNoExecute
		})
		ready := nodeCondition(n, corev1.NodeReady)
		return ready == corev1.ConditionUnknown && tainted, fmt.Sprintf("Ready %s, taints %+v", ready, n.Spec.Taints), nil
	})
	t.Logf("NotReady and tainted %.1fs after its kubelet stopped", time.Since(start).Seconds())
	// Nobody finishes the pods' deletion (their kubelet is gone): evicted
	// is deleted with the DisruptionTarget condition of the taint manager.
	c.waitFor(t, 30*time.Second, "pods evicted", func() (bool, string, error) {
		pods, _, err := c.pods(ns, "app=bound")
		evicted := 0
		for _, p := range pods {
			for _, cond := range p.Status.Conditions {
				if p.DeletionTimestamp != nil && cond.Type == corev1.DisruptionTarget && cond.Status == corev1.ConditionTrue && cond.Reason == "DeletionByTaintManager" {
					evicted++
				}
			}
		}
		return evicted == len(pods), fmt.Sprintf("%d of %d pods evicted", evicted, len(pods)), err
	})
}
