package app

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// startNodeApp starts a server with --authorization-mode Node,RBAC and
// the given admission plugins, and returns the administrator's client
// and configuration.
func startNodeApp(t *testing.T, enable, disable []string) (*rest.Config, *kubernetes.Clientset) {
	t.Helper()
	a, err := Start(Config{DataDir: t.TempDir(), EtcdPrefix: "/registry", EtcdUnsafeNoFsync: true, WatchCache: true,
		ConsistentListFromCache: true, ConsistentGetFromCache: true, AuthorizationModes: []string{ModeNode, ModeRBAC},
		EnableAdmissionPlugins: enable, DisableAdmissionPlugins: disable, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return adminClient(t, a)
}

// asNode is rc impersonating node name (group system:nodes).
func asNode(rc *rest.Config, name string) *kubernetes.Clientset {
	c := rest.CopyConfig(rc)
	c.Impersonate = rest.ImpersonationConfig{UserName: "system:node:" + name, Groups: []string{"system:nodes"}}
	return kubernetes.NewForConfigOrDie(c)
}

// createFromYAML creates the objects of the YAML stream file.
func createFromYAML(t *testing.T, rc *rest.Config, file string) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	dyn := dynamic.NewForConfigOrDie(rc)
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var u unstructured.Unstructured
		if err := dec.Decode(&u.Object); err == io.EOF {
			return
		} else if err != nil {
			t.Fatal(err)
		}
		gvr := schema.GroupVersionResource{Version: "v1", Resource: strings.ToLower(u.GetKind()) + "s"}
		if _, err := dyn.Resource(gvr).Namespace(u.GetNamespace()).Create(context.Background(), &u, metav1.CreateOptions{}); err != nil {
			t.Fatalf("%s %s: %v", u.GetKind(), u.GetName(), err)
		}
	}
}

// TestNodeAuthorizer: with --authorization-mode Node,RBAC, node n1's
// SubjectAccessReviews are decided as kube-apiserver 1.37's (recorded in
// testdata/node_authorizer_decisions.jsonl over the objects of
// node_authorizer_objects.yaml: verb, group, resource, subresource,
// namespace, name, field selector, allowed, denied, reason), and its
// requests (impersonated) are refused with kube-apiserver's message.
func TestNodeAuthorizer(t *testing.T) {
	rc, cs := startNodeApp(t, nil, nil)
	ctx := context.Background()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "node1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, sa := range []string{"sa1", "sa2"} {
		if _, err := cs.CoreV1().ServiceAccounts("node1").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	createFromYAML(t, rc, "testdata/node_authorizer_objects.yaml")
	// The decisions read the watch cache: wait for it to have p2.
	n2 := asNode(rc, "n2")
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, err := n2.CoreV1().Pods("node1").Get(ctx, "p2", metav1.GetOptions{ResourceVersion: "0"}); err == nil {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("node n2 cannot get its pod: %v", err)
		}
	}

	f, err := os.Open("testdata/node_authorizer_decisions.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lines := bufio.NewScanner(f)
	n := 0
	for lines.Scan() {
		var row []any
		if err := json.Unmarshal(lines.Bytes(), &row); err != nil {
			t.Fatal(err)
		}
		s := func(i int) string { return row[i].(string) }
		ra := &authorizationv1.ResourceAttributes{Verb: s(0), Group: s(1), Resource: s(2), Subresource: s(3), Namespace: s(4), Name: s(5)}
		if s(6) != "" {
			ra.FieldSelector = &authorizationv1.FieldSelectorAttributes{RawSelector: s(6)}
		}
		review, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: "system:node:n1", Groups: []string{"system:nodes", "system:authenticated"}, ResourceAttributes: ra}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if st := review.Status; st.Allowed != row[7].(bool) || st.Denied != row[8].(bool) || st.Reason != s(9) {
			t.Errorf("%s: allowed %v, denied %v, reason %q; kube-apiserver: %v", lines.Text(), st.Allowed, st.Denied, st.Reason, row[7:])
		}
		n++
	}
	if n < 50 {
		t.Fatalf("only %d decisions recorded", n)
	}

	if _, err := cs.CoreV1().Secrets("node1").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	n1 := asNode(rc, "n1")
	if _, err := n1.CoreV1().Secrets("node1").Get(ctx, "s1", metav1.GetOptions{}); err != nil {
		t.Errorf("n1 reads its pod's secret: %v", err)
	}
	for what, c := range map[string]struct {
		err  func() error
		want string
	}{
		"another pod's secret": {func() error {
			_, err := n1.CoreV1().Secrets("node1").Get(ctx, "s2", metav1.GetOptions{})
			return err
		}, `secrets "s2" is forbidden: User "system:node:n1" cannot get resource "secrets" in API group "" in the namespace "node1": node: no relationship found between node 'n1' and this object`},
		"all pods": {func() error {
			_, err := n1.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
			return err
		}, `pods is forbidden: User "system:node:n1" cannot list resource "pods" in API group "" at the cluster scope: node: can only list/watch pods with spec.nodeName field selector`},
		"all nodes": {func() error {
			_, err := n1.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
			return err
		}, `nodes is forbidden: User "system:node:n1" cannot list resource "nodes" in API group "" at the cluster scope: node: node 'n1' cannot read all nodes, only its own Node object`},
	} {
		if err := c.err(); err == nil || err.Error() != c.want {
			t.Errorf("%s: %v\nwant %s", what, err, c.want)
		}
	}
	if pods, err := n1.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=n1"}); err != nil || len(pods.Items) != 1 {
		t.Errorf("n1 lists its pods: %v", err)
	}
}

// TestNodeRestriction: with --enable-admission-plugins NodeRestriction,
// node n1's writes are refused with kube-apiserver 1.37's messages
// (recorded from one with Node,RBAC and the plugin), and its own Node,
// mirror pod and Lease are accepted.
func TestNodeRestriction(t *testing.T) {
	rc, cs := startNodeApp(t, []string{"NodeRestriction"}, nil)
	ctx := context.Background()
	n1 := asNode(rc, "n1")
	yes := true
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "node1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p2, err := cs.CoreV1().Pods("node1").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p2"},
		Spec: corev1.PodSpec{NodeName: "n2", AutomountServiceAccountToken: new(bool), Containers: []corev1.Container{{Name: "c", Image: "x"}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	nodeObj := func(name string, labels map[string]string, taints ...corev1.Taint) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: corev1.NodeSpec{Taints: taints}}
	}
	mirror := func(name, node string, owners []metav1.OwnerReference, volumes ...corev1.Volume) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{"kubernetes.io/config.mirror": "x"}, OwnerReferences: owners},
			Spec: corev1.PodSpec{NodeName: node, Volumes: volumes, Containers: []corev1.Container{{Name: "c", Image: "x"}}}}
	}
	refuse := func(what, want string, err error) {
		t.Helper()
		if err == nil || err.Error() != want {
			t.Errorf("%s: %v\nwant %s", what, err, want)
		}
	}
	_, err = n1.CoreV1().Nodes().Create(ctx, nodeObj("n2", nil), metav1.CreateOptions{})
	refuse("another Node", `nodes "n2" is forbidden: node "n1" is not allowed to modify node "n2"`, err)
	_, err = n1.CoreV1().Nodes().Create(ctx, nodeObj("n1", map[string]string{"example.kubernetes.io/x": "y", "kubernetes.io/hostname": "n1"}), metav1.CreateOptions{})
	refuse("a kubernetes.io label", `nodes "n1" is forbidden: node "n1" is not allowed to set the following labels: example.kubernetes.io/x`, err)
	self, err := n1.CoreV1().Nodes().Create(ctx, nodeObj("n1", map[string]string{"kubernetes.io/hostname": "n1", "topology.kubernetes.io/zone": "z",
		"a.example.com/x": "y"}, corev1.Taint{Key: "t", Effect: corev1.TaintEffectNoSchedule}), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("its own Node: %v", err)
	}
	_, err = n1.CoreV1().Nodes().Patch(ctx, "n1", "application/merge-patch+json", []byte(`{"spec":{"taints":[]}}`), metav1.PatchOptions{})
	refuse("taints", `nodes "n1" is forbidden: node "n1" is not allowed to modify taints`, err)
	_, err = n1.CoreV1().Nodes().Patch(ctx, "n1", "application/merge-patch+json", []byte(`{"metadata":{"labels":{"node-restriction.kubernetes.io/a":"b"}}}`), metav1.PatchOptions{})
	refuse("a node-restriction label", `nodes "n1" is forbidden: is not allowed to modify labels: node-restriction.kubernetes.io/a`, err)
	if _, err := n1.CoreV1().Nodes().Patch(ctx, "n1", "application/merge-patch+json", []byte(`{"metadata":{"labels":{"foo":"bar"}}}`), metav1.PatchOptions{}); err != nil {
		t.Errorf("another label: %v", err)
	}

	pods := n1.CoreV1().Pods("node1")
	owner := []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "n1", UID: self.UID, Controller: &yes}}
	_, err = pods.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "r1"}, Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "c", Image: "x"}}}}, metav1.CreateOptions{})
	refuse("a pod", `pods "r1" is forbidden: pod does not have "kubernetes.io/config.mirror" annotation, node "n1" can only create mirror pods`, err)
	_, err = pods.Create(ctx, mirror("r2", "n2", owner), metav1.CreateOptions{})
	refuse("another node's mirror pod", `pods "r2" is forbidden: node "n1" can only create pods with spec.nodeName set to itself`, err)
	_, err = pods.Create(ctx, mirror("r3", "n1", nil), metav1.CreateOptions{})
	refuse("no owner", `pods "r3" is forbidden: node "n1" can only create pods with an owner reference set to itself`, err)
	_, err = pods.Create(ctx, mirror("r6", "n1", []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "n1", UID: self.UID}}), metav1.CreateOptions{})
	refuse("no controller", `pods "r6" is forbidden: node "n1" can only create pods with a controller owner reference set to itself`, err)
	_, err = pods.Create(ctx, mirror("r7", "n1", owner, corev1.Volume{Name: "v", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "claim1"}}}), metav1.CreateOptions{})
	refuse("a claim", `pods "r7" is forbidden: node "n1" can not create pods that reference persistentvolumeclaims`, err)
	if _, err := pods.Create(ctx, mirror("r4", "n1", owner), metav1.CreateOptions{}); err != nil {
		t.Errorf("its mirror pod: %v", err)
	}
	p2.Status.Message = "x"
	_, err = pods.UpdateStatus(ctx, p2, metav1.UpdateOptions{})
	refuse("another node's pod status", `pods "p2" is forbidden: node "n1" can only update pod status for pods with spec.nodeName set to itself`, err)
	err = pods.Delete(ctx, "p2", metav1.DeleteOptions{})
	refuse("another node's pod", `pods "p2" is forbidden: node "n1" can only delete pods with spec.nodeName set to itself`, err)
	leases := n1.CoordinationV1().Leases("kube-node-lease")
	_, err = leases.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "n2"}}, metav1.CreateOptions{})
	refuse("another node's Lease", `leases.coordination.k8s.io "n2" is forbidden: can only access node lease with the same name as the requesting node`, err)
	if _, err := leases.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}, metav1.CreateOptions{}); err != nil {
		t.Errorf("its Lease: %v", err)
	}
}

// TestAdmissionPluginFlags: --disable-admission-plugins ServiceAccount
// lets a pod name a ServiceAccount that does not exist and gives it no
// token volume (as envtest's kube-apiserver, which disables it); a plugin
// kube-apiserver has and watchcache does not run is accepted with a
// warning.
func TestAdmissionPluginFlags(t *testing.T) {
	var log lockedBuffer
	a, err := Start(Config{DataDir: t.TempDir(), EtcdPrefix: "/registry", EtcdUnsafeNoFsync: true, WatchCache: true,
		EnableAdmissionPlugins: []string{"AlwaysPullImages"}, DisableAdmissionPlugins: []string{"ServiceAccount"},
		Log: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	if !strings.Contains(log.String(), "enable-admission-plugins: admission plugin AlwaysPullImages is not implemented by watchcache; ignored") {
		t.Errorf("no warning of AlwaysPullImages in the log:\n%s", log.String())
	}
	_, cs := adminClient(t, a)
	pod, err := cs.CoreV1().Pods("default").Create(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Spec: corev1.PodSpec{ServiceAccountName: "missing", Containers: []corev1.Container{{Name: "c", Image: "x"}}}}, metav1.CreateOptions{})
	if err != nil || len(pod.Spec.Volumes) != 0 || len(pod.Spec.Containers[0].VolumeMounts) != 0 {
		t.Fatalf("a pod without the ServiceAccount plugin: %v, %+v", err, pod)
	}
}
