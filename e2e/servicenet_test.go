package e2e

import (
	"context"
	"encoding/json"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// recorded is e2e/testdata/servicenet.json: kube-apiserver 1.37's answers.
type recorded struct {
	KubernetesService struct {
		Labels map[string]string  `json:"labels"`
		Spec   corev1.ServiceSpec `json:"spec"`
	} `json:"kubernetesService"`
	ServiceCIDR struct {
		Name      string           `json:"name"`
		CIDRs     []string         `json:"cidrs"`
		Condition metav1.Condition `json:"condition"`
	} `json:"serviceCIDR"`
	IPAddressLabels map[string]string `json:"ipAddressLabels"`
	Invalid         map[string]string `json:"invalid"`
}

func readRecorded(t *testing.T) recorded {
	data, err := os.ReadFile("testdata/servicenet.json")
	if err != nil {
		t.Fatal(err)
	}
	var r recorded
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

func TestKubernetesService(t *testing.T) {
	ctx := context.Background()
	want := readRecorded(t)
	cs := kubernetes.NewForConfigOrDie(testServerREST)
	svc, err := cs.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	u, _ := strings.CutPrefix(testServer.URL, "https://")
	_, port, _ := strings.Cut(u, ":")
	p, _ := strconv.Atoi(port)
	spec := want.KubernetesService.Spec
	spec.Ports[0].TargetPort.IntVal = int32(p) // the recording's --secure-port was 19443
	if got, _ := json.Marshal(svc.Spec); string(got) != mustJSON(spec) {
		t.Errorf("kubernetes Service spec:\n got %s\nwant %s", got, mustJSON(spec))
	}
	if mustJSON(svc.Labels) != mustJSON(want.KubernetesService.Labels) {
		t.Errorf("labels %v, want %v", svc.Labels, want.KubernetesService.Labels)
	}
	cidr, err := cs.NetworkingV1().ServiceCIDRs().Get(ctx, want.ServiceCIDR.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if mustJSON(cidr.Spec.CIDRs) != mustJSON(want.ServiceCIDR.CIDRs) || len(cidr.Status.Conditions) != 1 {
		t.Fatalf("ServiceCIDR %+v", cidr)
	}
	c := cidr.Status.Conditions[0]
	c.LastTransitionTime = metav1.Time{}
	if mustJSON(c) != mustJSON(want.ServiceCIDR.Condition) {
		t.Errorf("condition %s, want %s", mustJSON(c), mustJSON(want.ServiceCIDR.Condition))
	}
	ipa, err := cs.NetworkingV1().IPAddresses().Get(ctx, "10.0.0.1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ref := ipa.Spec.ParentRef; ref == nil || ref.Resource != "services" || ref.Namespace != "default" || ref.Name != "kubernetes" ||
		mustJSON(ipa.Labels) != mustJSON(want.IPAddressLabels) {
		t.Errorf("IPAddress 10.0.0.1: %+v", ipa)
	}
	// The test server is bound to loopback: as kube-apiserver advertising
	// 127.0.0.1, it has no Endpoints.
	if _, err := cs.CoreV1().Endpoints("default").Get(ctx, "kubernetes", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Endpoints kubernetes: %v, want NotFound", err)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestClusterIPAllocation(t *testing.T) {
	ctx := context.Background()
	want := readRecorded(t)
	cs := kubernetes.NewForConfigOrDie(testServerREST)
	ns := "clusterip-alloc"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
	svc := func(name, ip string) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.ServiceSpec{ClusterIP: ip, Ports: []corev1.ServicePort{{Port: 80}}}}
	}
	rng := netip.MustParsePrefix("10.0.0.0/24")
	seen := map[string]bool{}
	for i := range 20 {
		s, err := cs.CoreV1().Services(ns).Create(ctx, svc("s"+strconv.Itoa(i), ""), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ip := s.Spec.ClusterIP
		a, err := netip.ParseAddr(ip)
		if err != nil || !rng.Contains(a) || ip == "10.0.0.0" || ip == "10.0.0.255" || ip == "10.0.0.1" || seen[ip] {
			t.Fatalf("service %d got %q (seen %v)", i, ip, seen[ip])
		}
		seen[ip] = true
		if mustJSON(s.Spec.ClusterIPs) != mustJSON([]string{ip}) || *s.Spec.IPFamilyPolicy != corev1.IPFamilyPolicySingleStack ||
			mustJSON(s.Spec.IPFamilies) != `["IPv4"]` {
			t.Errorf("service %d: %+v", i, s.Spec)
		}
		ipa, err := cs.NetworkingV1().IPAddresses().Get(ctx, ip, metav1.GetOptions{})
		if err != nil || ipa.Spec.ParentRef.Name != s.Name || ipa.Spec.ParentRef.Namespace != ns || mustJSON(ipa.Labels) != mustJSON(want.IPAddressLabels) {
			t.Fatalf("IPAddress %s: %+v, %v", ip, ipa, err)
		}
	}
	// A requested IP is honoured, then refused as taken; out of range,
	// network and broadcast are refused.
	if s, err := cs.CoreV1().Services(ns).Create(ctx, svc("req", "10.0.0.7"), metav1.CreateOptions{}); err != nil || s.Spec.ClusterIP != "10.0.0.7" {
		t.Fatalf("requested 10.0.0.7: %v", err)
	}
	for key, ip := range map[string]string{"outOfRange": "10.1.0.5", "network": "10.0.0.0", "broadcast": "10.0.0.255", "allocated": "10.0.0.7"} {
		_, err := cs.CoreV1().Services(ns).Create(ctx, svc("b", ip), metav1.CreateOptions{})
		msg := strings.ReplaceAll(want.Invalid[key], "10.0.0.215", "10.0.0.7")
		if !apierrors.IsInvalid(err) || err.Error() != msg {
			t.Errorf("%s: %v\nwant %s", ip, err, msg)
		}
	}
	_, err := cs.CoreV1().Services(ns).Patch(ctx, "req", types.MergePatchType,
		[]byte(`{"spec":{"clusterIP":"10.0.0.90","clusterIPs":["10.0.0.90"]}}`), metav1.PatchOptions{})
	if wantMsg := strings.ReplaceAll(want.Invalid["changed"], `"c"`, `"req"`); err == nil || err.Error() != wantMsg {
		t.Errorf("changed IP: %v\nwant %s", err, wantMsg)
	}
	// Headless and ExternalName get none.
	h, err := cs.CoreV1().Services(ns).Create(ctx, svc("headless", "None"), metav1.CreateOptions{})
	if err != nil || h.Spec.ClusterIP != "None" {
		t.Fatalf("headless: %v %+v", err, h)
	}
	e, err := cs.CoreV1().Services(ns).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "ext"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "x.example.com"}}, metav1.CreateOptions{})
	if err != nil || e.Spec.ClusterIP != "" {
		t.Fatalf("ExternalName: %v %+v", err, e)
	}
	// Delete releases: the IP can be requested again at once.
	if err := cs.CoreV1().Services(ns).Delete(ctx, "req", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.NetworkingV1().IPAddresses().Get(ctx, "10.0.0.7", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("IPAddress 10.0.0.7 after delete: %v", err)
	}
	if _, err := cs.CoreV1().Services(ns).Create(ctx, svc("req2", "10.0.0.7"), metav1.CreateOptions{}); err != nil {
		t.Errorf("10.0.0.7 after release: %v", err)
	}
}
