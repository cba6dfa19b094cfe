package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// recordedNodePorts is e2e/testdata/nodeport.json: kube-apiserver 1.37's
// answers.
type recordedNodePorts struct {
	Invalid                  map[string]string `json:"invalid"`
	HealthCheckInternalError map[string]string `json:"healthCheckInternalError"`
}

func TestNodePortAllocation(t *testing.T) {
	ctx := context.Background()
	var want recordedNodePorts
	data, err := os.ReadFile("testdata/nodeport.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &want); err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(testServerREST)
	ns := "nodeport-alloc"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
	svcs := cs.CoreV1().Services(ns)
	nodePort := func(name string, ports ...int32) *corev1.Service {
		s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort}}
		for i, np := range ports {
			s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: fmt.Sprint("p", i), Port: int32(80 + i), NodePort: np})
		}
		return s
	}
	create := func(s *corev1.Service) *corev1.Service {
		t.Helper()
		got, err := svcs.Create(ctx, s, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create %s: %v", s.Name, err)
		}
		return got
	}
	// Free ports, distinct, in the range.
	seen := map[int32]string{}
	for i := range 10 {
		s := create(nodePort(fmt.Sprint("s", i), 0, 0))
		for _, p := range s.Spec.Ports {
			if p.NodePort < 30000 || p.NodePort > 32767 || seen[p.NodePort] != "" {
				t.Fatalf("%s got %d (seen %q)", s.Name, p.NodePort, seen[p.NodePort])
			}
			seen[p.NodePort] = s.Name
		}
	}
	// Requested: honoured, then refused as kube-apiserver does.
	if s := create(nodePort("a", 30080)); s.Spec.Ports[0].NodePort != 30080 {
		t.Fatalf("requested 30080, got %d", s.Spec.Ports[0].NodePort)
	}
	refuse := func(s *corev1.Service, msg string) {
		t.Helper()
		_, err := svcs.Create(ctx, s, metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) || err.Error() != msg {
			t.Errorf("%s: %v\nwant %s", s.Name, err, msg)
		}
	}
	refuse(nodePort("b", 30080), want.Invalid["allocated"])
	refuse(nodePort("b", 40000), want.Invalid["outOfRange"])
	refuse(nodePort("c", 30100, 30100), want.Invalid["sameServiceTwice"])
	// A dry run takes nothing.
	if _, err := svcs.Create(ctx, nodePort("d", 30140), metav1.CreateOptions{DryRun: []string{"All"}}); err != nil {
		t.Fatal(err)
	}
	// TCP and UDP of one port share a node port.
	tu := nodePort("tu", 0)
	tu.Spec.Ports = append(tu.Spec.Ports, corev1.ServicePort{Name: "u", Port: 80, Protocol: corev1.ProtocolUDP})
	if s := create(tu); s.Spec.Ports[0].NodePort == 0 || s.Spec.Ports[1].NodePort != s.Spec.Ports[0].NodePort {
		t.Errorf("TCP and UDP: %+v", s.Spec.Ports)
	}
	// Delete releases at once.
	if err := svcs.Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	create(nodePort("a2", 30080))
	create(nodePort("d", 30140))
	// An update keeps the port a patch leaves out, frees the one it changes.
	s, err := svcs.Patch(ctx, "d", types.MergePatchType, []byte(`{"spec":{"ports":[{"name":"p0","port":80}]}}`), metav1.PatchOptions{})
	if err != nil || s.Spec.Ports[0].NodePort != 30140 {
		t.Fatalf("patch without nodePort: %v %+v", err, s)
	}
	if _, err := svcs.Patch(ctx, "d", types.MergePatchType, []byte(`{"spec":{"ports":[{"name":"p0","port":80,"nodePort":30141}]}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	create(nodePort("e", 30140))
	// LoadBalancer with externalTrafficPolicy Local: a health-check port.
	lb := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "lb"}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer,
		ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal, Ports: []corev1.ServicePort{{Port: 80}}}}
	s = create(lb)
	hc, np := s.Spec.HealthCheckNodePort, s.Spec.Ports[0].NodePort
	if hc < 30000 || hc > 32767 || np == 0 || hc == np {
		t.Fatalf("lb: healthCheckNodePort %d, nodePort %d", hc, np)
	}
	lb2 := lb.DeepCopy()
	lb2.Name, lb2.Spec.HealthCheckNodePort = "lb2", 30080
	if _, err := svcs.Create(ctx, lb2, metav1.CreateOptions{}); !apierrors.IsInternalError(err) || err.Error() != want.HealthCheckInternalError["allocated"] {
		t.Errorf("health check port taken: %v\nwant %s", err, want.HealthCheckInternalError["allocated"])
	}
	lb2.Spec.HealthCheckNodePort = 40001
	if _, err := svcs.Create(ctx, lb2, metav1.CreateOptions{}); !apierrors.IsInternalError(err) || err.Error() != want.HealthCheckInternalError["outOfRange"] {
		t.Errorf("health check port out of range: %v\nwant %s", err, want.HealthCheckInternalError["outOfRange"])
	}
	// Type change to ClusterIP drops and frees the ports.
	s, err = svcs.Patch(ctx, "lb", types.MergePatchType, []byte(`{"spec":{"type":"ClusterIP"}}`), metav1.PatchOptions{})
	if err != nil || s.Spec.Ports[0].NodePort != 0 || s.Spec.HealthCheckNodePort != 0 || s.Spec.ExternalTrafficPolicy != "" {
		t.Fatalf("lb to ClusterIP: %v %+v", err, s)
	}
	create(nodePort("f", np))
	create(nodePort("g", hc))
	// allocateLoadBalancerNodePorts false: none.
	lb3 := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "lb3"}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer,
		AllocateLoadBalancerNodePorts: new(false), Ports: []corev1.ServicePort{{Port: 80}}}}
	if s := create(lb3); s.Spec.Ports[0].NodePort != 0 {
		t.Errorf("allocateLoadBalancerNodePorts false: %+v", s.Spec.Ports)
	}
}
