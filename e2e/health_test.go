package e2e

import (
	"slices"
	"strings"
	"testing"
)

// kubeHealthChecks are the checks kube-apiserver 1.37 lists at
// /healthz?verbose and /readyz?verbose (/livez's are /healthz's), in order.
var kubeHealthChecks = map[string]string{
	"healthz": "ping log loopback-serving-certificate etcd poststarthook/start-apiserver-admission-initializer poststarthook/generic-apiserver-start-informers poststarthook/priority-and-fairness-config-consumer poststarthook/priority-and-fairness-filter poststarthook/storage-object-count-tracker-hook poststarthook/start-apiextensions-informers poststarthook/start-apiextensions-controllers poststarthook/crd-informer-synced poststarthook/start-system-namespaces-controller poststarthook/peer-endpoint-reconciler-controller poststarthook/start-cluster-authentication-info-controller poststarthook/start-kube-apiserver-identity-lease-controller poststarthook/start-kube-apiserver-identity-lease-garbage-collector poststarthook/storage-readiness poststarthook/start-legacy-token-tracking-controller poststarthook/start-service-ip-repair-controllers poststarthook/rbac/bootstrap-roles poststarthook/scheduling/bootstrap-system-priority-classes poststarthook/priority-and-fairness-config-producer poststarthook/bootstrap-controller poststarthook/start-kubernetes-service-cidr-controller poststarthook/start-kube-aggregator-informers poststarthook/apiservice-status-local-available-controller poststarthook/apiservice-status-remote-available-controller poststarthook/apiservice-registration-controller poststarthook/apiservice-discovery-controller poststarthook/kube-apiserver-autoregistration autoregister-completion poststarthook/apiservice-openapi-controller poststarthook/apiservice-openapiv3-controller",
	"readyz":  "ping log etcd etcd-readiness informer-sync poststarthook/start-apiserver-admission-initializer poststarthook/generic-apiserver-start-informers poststarthook/priority-and-fairness-config-consumer poststarthook/priority-and-fairness-filter poststarthook/storage-object-count-tracker-hook poststarthook/start-apiextensions-informers poststarthook/start-apiextensions-controllers poststarthook/crd-informer-synced poststarthook/start-system-namespaces-controller poststarthook/peer-endpoint-reconciler-controller poststarthook/start-cluster-authentication-info-controller poststarthook/start-kube-apiserver-identity-lease-controller poststarthook/start-kube-apiserver-identity-lease-garbage-collector poststarthook/storage-readiness poststarthook/start-legacy-token-tracking-controller poststarthook/start-service-ip-repair-controllers poststarthook/rbac/bootstrap-roles poststarthook/scheduling/bootstrap-system-priority-classes poststarthook/priority-and-fairness-config-producer poststarthook/bootstrap-controller poststarthook/start-kubernetes-service-cidr-controller poststarthook/start-kube-aggregator-informers poststarthook/apiservice-status-local-available-controller poststarthook/apiservice-status-remote-available-controller poststarthook/apiservice-registration-controller poststarthook/apiservice-discovery-controller poststarthook/kube-apiserver-autoregistration autoregister-completion poststarthook/apiservice-openapi-controller poststarthook/apiservice-openapiv3-controller shutdown",
}

// TestHealthCheckNames: the checks that have a counterpart in
// kube-apiserver's (ping, log, etcd, etcd-readiness, the post-start hooks
// of the start-up steps done here, shutdown) are named as its and listed
// in its order.
func TestHealthCheckNames(t *testing.T) {
	for _, endpoint := range []string{"healthz", "livez", "readyz"} {
		resp, data := htDo(t, "GET", "/"+endpoint+"?verbose", "", nil)
		if resp.StatusCode != 200 {
			t.Fatalf("/%s?verbose: %d %s", endpoint, resp.StatusCode, data)
		}
		var ours []string
		for _, line := range strings.Split(string(data), "\n") {
			if name, ok := strings.CutPrefix(line, "[+]"); ok {
				ours = append(ours, strings.TrimSuffix(name, " ok"))
			}
		}
		kube := strings.Fields(kubeHealthChecks[strings.Replace(endpoint, "livez", "healthz", 1)])
		var common []string
		for _, name := range kube {
			if slices.Contains(ours, name) {
				common = append(common, name)
			}
		}
		inOrder := slices.DeleteFunc(slices.Clone(ours), func(name string) bool { return !slices.Contains(kube, name) })
		if !slices.Equal(inOrder, common) {
			t.Errorf("/%s?verbose: the common checks in our order %q, in kube-apiserver's %q", endpoint, inOrder, common)
		}
		for _, want := range []string{"ping", "log", "etcd", "poststarthook/start-apiextensions-controllers", "poststarthook/crd-informer-synced",
			"poststarthook/start-system-namespaces-controller", "poststarthook/rbac/bootstrap-roles", "poststarthook/scheduling/bootstrap-system-priority-classes"} {
			if !slices.Contains(ours, want) {
				t.Errorf("/%s?verbose has no %s: %q", endpoint, want, ours)
			}
		}
	}
}
