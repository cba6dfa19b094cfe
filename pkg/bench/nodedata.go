// The objects of the nodes scenario's kubelets: a Node, its status and
// heartbeat patches, its Lease in kube-node-lease, pods without owners.

package bench

import (
	"bytes"
	"fmt"
	"strings"
	"time"
)

// leaseNamespace holds the kubelets' Leases, as in Kubernetes.
const leaseNamespace = "kube-node-lease"

// nodeObject returns the Node a kubelet registers for node number i (its
// status comes after, see nodeStatus), as kubelets on a cloud write them.
func nodeObject(name string, i int) []byte {
	zone := "us-east-1" + string(rune('a'+i%3))
	return fmt.Appendf(nil, `{"apiVersion":"v1","kind":"Node","metadata":{"name":%q,"labels":{"beta.kubernetes.io/arch":"amd64","beta.kubernetes.io/instance-type":"m5.xlarge",`+
		`"beta.kubernetes.io/os":"linux","kubernetes.io/arch":"amd64","kubernetes.io/hostname":%q,"kubernetes.io/os":"linux","node.kubernetes.io/instance-type":"m5.xlarge",`+
		`"topology.kubernetes.io/region":"us-east-1","topology.kubernetes.io/zone":%q},"annotations":{"node.alpha.kubernetes.io/ttl":"0",`+
		`"volumes.kubernetes.io/controller-managed-attach-detach":"true"}},"spec":{"podCIDR":"10.%d.%d.0/24","podCIDRs":["10.%d.%d.0/24"],`+
		`"providerID":"aws:///%s/i-%017x"}}`, name, name, zone, i/256%256, i%256, i/256%256, i%256, zone, i)
}

// nodeConditions are the conditions a kubelet reports, in its order.
var nodeConditions = []struct{ kind, status, reason, message string }{
	{"MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"},
	{"DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"},
	{"PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"},
	{"Ready", "True", "KubeletReady", "kubelet is posting ready status"},
}

// kubeletTime formats a time as Kubernetes' Time fields are written.
func kubeletTime(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// nodeStatus returns a merge patch of node number i's status as its kubelet
// first writes it: capacity, conditions, addresses, node info and the
// images it holds.
func nodeStatus(name string, i int, now time.Time) []byte {
	var conditions []string
	for _, c := range nodeConditions {
		conditions = append(conditions, fmt.Sprintf(`{"type":%q,"status":%q,"lastHeartbeatTime":%q,"lastTransitionTime":%q,"reason":%q,"message":%q}`,
			c.kind, c.status, kubeletTime(now), kubeletTime(now), c.reason, c.message))
	}
	var images []string
	for j, image := range []string{"registry.example.com/team/app:v1.2.3", "registry.k8s.io/kube-proxy:v1.37.2", "registry.k8s.io/pause:3.10",
		"docker.io/library/nginx:1.27", "quay.io/prometheus/node-exporter:v1.8.2"} {
		repo, _, _ := strings.Cut(image, ":")
		images = append(images, fmt.Sprintf(`{"names":["%s@sha256:%064x",%q],"sizeBytes":%d}`, repo, j+1, image, 20_000_000*(j+1)+i))
	}
	resources := `"cpu":"4","ephemeral-storage":"104845292Ki","hugepages-1Gi":"0","hugepages-2Mi":"0","memory":"16069956Ki","pods":"110"`
	return fmt.Appendf(nil, `{"status":{"capacity":{%s},"allocatable":{%s},"conditions":[%s],"addresses":[{"type":"InternalIP","address":"192.168.%d.%d"},`+
		`{"type":"Hostname","address":%q},{"type":"InternalDNS","address":"%s.ec2.internal"}],"daemonEndpoints":{"kubeletEndpoint":{"Port":10250}},`+
		`"nodeInfo":{"machineID":"%032x","systemUUID":"ec2%029x","bootID":"%08x-0000-4000-8000-000000000000","kernelVersion":"6.1.0-18-amd64",`+
		`"osImage":"Debian GNU/Linux 12 (bookworm)","containerRuntimeVersion":"containerd://2.0.2","kubeletVersion":"v1.37.2","kubeProxyVersion":"v1.37.2",`+
		`"operatingSystem":"linux","architecture":"amd64"},"images":[%s]}}`,
		resources, resources, strings.Join(conditions, ","), i/250%256, i%250+1, name, name, i, i, i, strings.Join(images, ","))
}

// heartbeatPatch is the strategic merge patch of a node's status a kubelet
// sends when nothing but the time changed: every condition's heartbeat.
func heartbeatPatch(now time.Time) []byte {
	var order, conditions []string
	for _, c := range nodeConditions {
		order = append(order, fmt.Sprintf(`{"type":%q}`, c.kind))
		conditions = append(conditions, fmt.Sprintf(`{"lastHeartbeatTime":%q,"type":%q}`, kubeletTime(now), c.kind))
	}
	return fmt.Appendf(nil, `{"status":{"$setElementOrder/conditions":[%s],"conditions":[%s]}}`, strings.Join(order, ","), strings.Join(conditions, ","))
}

// leaseObject is node's Lease in leaseNamespace renewed at renew, as its
// kubelet writes it; resourceVersion is the one it last read ("" to create
// it).
func leaseObject(node, resourceVersion string, renew time.Time) []byte {
	rv := ""
	if resourceVersion != "" {
		rv = fmt.Sprintf(`,"resourceVersion":%q`, resourceVersion)
	}
	return fmt.Appendf(nil, `{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":%q,"namespace":%q%s},`+
		`"spec":{"holderIdentity":%q,"leaseDurationSeconds":40,"renewTime":%q}}`,
		node, leaseNamespace, rv, node, renew.UTC().Format("2006-01-02T15:04:05.000000Z07:00"))
}

// withoutOwners removes a pod's ownerReferences. benchdata's pods name
// ReplicaSets that do not exist, which the server's garbage collector would
// delete them for (gracefully: each would be marked for deletion) in the
// middle of the scenarios.
func withoutOwners(pod []byte) []byte {
	start := bytes.Index(pod, []byte(`,"ownerReferences":[`))
	if start < 0 {
		return pod
	}
	end := bytes.IndexByte(pod[start:], ']')
	return append(pod[:start:start], pod[start+end+1:]...)
}
