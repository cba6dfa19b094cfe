package app

import (
	"context"
	"encoding/json"
	"net/netip"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestServiceIPFamilies: Services' ipFamilyPolicy, ipFamilies and cluster
// IPs on a dual-stack cluster (--service-cluster-ip-range=10.0.0.0/24,fd00::/108)
// and a single-stack one, as kube-apiserver 1.37 gives them (recorded
// from it with those flags): the families settled, one IP of each, or its
// 422.
func TestServiceIPFamilies(t *testing.T) {
	cases := []struct{ name, spec, dual, single string }{
		{"none", ``, `SingleStack ["IPv4"]`, `SingleStack ["IPv4"]`},
		{"single", `"ipFamilyPolicy":"SingleStack",`, `SingleStack ["IPv4"]`, ``},
		{"prefer", `"ipFamilyPolicy":"PreferDualStack",`, `PreferDualStack ["IPv4","IPv6"]`, `PreferDualStack ["IPv4"]`},
		{"require", `"ipFamilyPolicy":"RequireDualStack",`, `RequireDualStack ["IPv4","IPv6"]`,
			`spec.ipFamilyPolicy: Invalid value: "RequireDualStack": this cluster is not configured for dual-stack services`},
		{"v6", `"ipFamilies":["IPv6"],`, `SingleStack ["IPv6"]`, `spec.ipFamilies[0]: Invalid value: "IPv6": not configured on this cluster`},
		{"preferv6", `"ipFamilyPolicy":"PreferDualStack","ipFamilies":["IPv6"],`, `PreferDualStack ["IPv6","IPv4"]`, ``},
		{"twofam", `"ipFamilies":["IPv6","IPv4"],`,
			`spec.ipFamilyPolicy: Invalid value: "SingleStack": must be 'RequireDualStack' or 'PreferDualStack' when multiple IP families are specified`, ``},
		{"badfam", `"ipFamilies":["IPv5"],`, `spec.ipFamilies[0]: Unsupported value: "IPv5": supported values: "IPv4", "IPv6"`, ``},
		{"dupfam", `"ipFamilyPolicy":"RequireDualStack","ipFamilies":["IPv4","IPv4"],`, `spec.ipFamilies[1]: Duplicate value: "IPv4"`, ``},
		{"badpolicy", `"ipFamilyPolicy":"Maybe",`,
			`spec.ipFamilyPolicy: Unsupported value: "Maybe": supported values: "PreferDualStack", "RequireDualStack", "SingleStack"`, ``},
		{"ipv6given", `"clusterIP":"fd00::10",`, `SingleStack ["IPv6"]`, ``},
		{"twoips", `"clusterIPs":["10.0.0.77","fd00::77"],"clusterIP":"10.0.0.77",`,
			`spec.ipFamilyPolicy: Invalid value: "SingleStack": must be 'RequireDualStack' or 'PreferDualStack' when multiple cluster IPs are specified`, ``},
		{"twoipsprefer", `"ipFamilyPolicy":"PreferDualStack","clusterIPs":["10.0.0.78","fd00::78"],"clusterIP":"10.0.0.78",`, `PreferDualStack ["IPv4","IPv6"]`, ``},
		{"headless", `"clusterIP":"None",`, `RequireDualStack ["IPv4","IPv6"]`, `RequireDualStack ["IPv4","IPv6"]`},
		{"famip", `"ipFamilies":["IPv4"],"clusterIP":"fd00::11",`,
			"spec.clusterIPs[0]: Invalid value: \"fd00::11\": expected an IPv4 value as indicated by `ipFamilies[0]`", ``},
	}
	for _, stack := range []string{"dual", "single"} {
		t.Run(stack, func(t *testing.T) {
			ipRange := "10.0.0.0/24,fd00::/108"
			if stack == "single" {
				ipRange = "10.0.0.0/24"
			}
			dir := t.TempDir()
			_, cs := serviceReplica(t, sharedEtcd(t, dir), dir, dir, ipRange, "30000-30099", nil)
			for _, c := range cases {
				want := c.dual
				if stack == "single" {
					want = c.single
				}
				if want == "" {
					continue
				}
				var svc corev1.Service
				if err := json.Unmarshal([]byte(`{"metadata":{"name":"`+c.name+`"},"spec":{`+c.spec+`"ports":[{"port":80}]}}`), &svc); err != nil {
					t.Fatal(err)
				}
				got, err := cs.CoreV1().Services("default").Create(context.Background(), &svc, metav1.CreateOptions{})
				if !strings.HasPrefix(want, "spec.") {
					if err != nil {
						t.Errorf("%s: %v, want %s", c.name, err, want)
						continue
					}
					fams, _ := json.Marshal(got.Spec.IPFamilies)
					if s := string(*got.Spec.IPFamilyPolicy) + " " + string(fams); s != want {
						t.Errorf("%s: %s, want %s", c.name, s, want)
					}
					if got.Spec.ClusterIP == "None" {
						continue
					}
					if len(got.Spec.ClusterIPs) != len(got.Spec.IPFamilies) {
						t.Errorf("%s: cluster IPs %v for families %v", c.name, got.Spec.ClusterIPs, got.Spec.IPFamilies)
					}
					for i, ip := range got.Spec.ClusterIPs {
						if a, err := netip.ParseAddr(ip); err != nil || (a.Is4() != (got.Spec.IPFamilies[i] == corev1.IPv4Protocol)) {
							t.Errorf("%s: cluster IP %s for %s", c.name, ip, got.Spec.IPFamilies[i])
						}
					}
					continue
				}
				if msg := `Service "` + c.name + `" is invalid: ` + want; err == nil || err.Error() != msg {
					t.Errorf("%s: %v, want %s", c.name, err, msg)
				}
			}
		})
	}
}
