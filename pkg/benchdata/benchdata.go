// Package benchdata builds the objects the benchmarks store: pods like small
// real ones, and config maps of a chosen size.
package benchdata

import (
	"fmt"
	"strings"
)

// Namespace returns the name of pod i's namespace, one of n.
func Namespace(i, n int) string { return fmt.Sprintf("ns-%03d", i%n) }

// Node returns the name of pod i's node, one of n.
func Node(i, n int) string { return fmt.Sprintf("node-%04d", i%n) }

// Owner names pod i's owner, the ReplicaSet Pod names (in the pod's
// namespace), and the uid Pod gives it.
func Owner(i int) (name, uid string) {
	return fmt.Sprintf("app-%d-5d8f7c9b6", i%50), fmt.Sprintf("1a2b3c4d-0000-4000-8000-%012d", i%50)
}

// ReplicaSet returns the ReplicaSet name in namespace as JSON, scaled to
// zero, whose pods Pod makes (with the uid the server gave it: PodOwnedBy).
func ReplicaSet(namespace, name string) []byte {
	app := strings.TrimSuffix(name, "-5d8f7c9b6")
	return []byte(fmt.Sprintf(`{"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{"name":%q,"namespace":%q},"spec":{"replicas":0,`+
		`"selector":{"matchLabels":{"app":%q,"pod-template-hash":"5d8f7c9b6"}},"template":{"metadata":{"labels":{"app":%q,"tier":"backend","pod-template-hash":"5d8f7c9b6"}},`+
		`"spec":{"containers":[{"name":"main","image":"registry.example.com/team/app:v1.2.3"}]}}}}`, name, namespace, app, app))
}

// Pod returns pod i as JSON, about 2.2 KB: a pod of a ReplicaSet (Owner,
// which does not exist), running, in Namespace(i, namespaces) on
// Node(i, nodes).
func Pod(i, namespaces, nodes int) []byte {
	_, uid := Owner(i)
	return PodOwnedBy(i, namespaces, nodes, uid)
}

// PodOwnedBy is Pod with its owner's uid ownerUID: that of the ReplicaSet
// the server made, so that its garbage collector leaves the pod alone.
func PodOwnedBy(i, namespaces, nodes int, ownerUID string) []byte {
	ns, name, node := Namespace(i, namespaces), fmt.Sprintf("pod-%06d", i), Node(i, nodes)
	owner, _ := Owner(i)
	env := make([]string, 4)
	for j := range env {
		env[j] = fmt.Sprintf(`{"name":"ENV_VARIABLE_%02d","value":"some-configuration-value-%02d"}`, j, j)
	}
	return []byte(fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":%q,"namespace":%q,"uid":"6f0c4a8e-%08d-4d1e-9f0e-2b7c5d3a1e%02d","creationTimestamp":"2026-11-01T10:00:00Z","labels":{"app":"app-%d","tier":"backend","pod-template-hash":"5d8f7c9b6"},"annotations":{"kubernetes.io/config.seen":"2026-11-01T10:00:00.000000000Z","kubernetes.io/config.source":"api"},"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":%q,"uid":%q,"controller":true,"blockOwnerDeletion":true}]},`+
		`"spec":{"nodeName":%q,"restartPolicy":"Always","schedulerName":"default-scheduler","serviceAccountName":"default","terminationGracePeriodSeconds":30,"dnsPolicy":"ClusterFirst","containers":[{"name":"main","image":"registry.example.com/team/app:v1.2.3","ports":[{"containerPort":8080,"protocol":"TCP"}],"env":[%s],"resources":{"requests":{"cpu":"100m","memory":"128Mi"},"limits":{"cpu":"500m","memory":"256Mi"}},"volumeMounts":[{"name":"kube-api-access","mountPath":"/var/run/secrets/kubernetes.io/serviceaccount","readOnly":true}],"terminationMessagePath":"/dev/termination-log","imagePullPolicy":"IfNotPresent"}],"volumes":[{"name":"kube-api-access","projected":{"defaultMode":420,"sources":[{"serviceAccountToken":{"expirationSeconds":3607,"path":"token"}}]}}]},`+
		`"status":{"phase":"Running","podIP":"10.%d.%d.%d","hostIP":"192.168.%d.%d","startTime":"2026-11-01T10:00:01Z","qosClass":"Burstable","conditions":[{"type":"Ready","status":"True","lastTransitionTime":"2026-11-01T10:00:05Z"},{"type":"ContainersReady","status":"True","lastTransitionTime":"2026-11-01T10:00:05Z"}],"containerStatuses":[{"name":"main","ready":true,"restartCount":0,"image":"registry.example.com/team/app:v1.2.3","imageID":"registry.example.com/team/app@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef","containerID":"containerd://%064d","started":true,"state":{"running":{"startedAt":"2026-11-01T10:00:04Z"}}}]}}`,
		name, ns, i, i%100, i%50, owner, ownerUID, node, strings.Join(env, ","), i%256, (i/256)%256, i%200+1, (i/1000)%256, i%1000%250+1, i))
}

// configMapOverhead is about how many bytes of a config map's JSON are not
// its payload (metadata as the server stores it).
const configMapOverhead = 250

// ConfigMap returns a config map of about size bytes of JSON: one data
// entry "payload" fills it.
func ConfigMap(namespace, name string, size int) []byte {
	return []byte(fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q,"namespace":%q},"data":{"payload":%q}}`,
		name, namespace, strings.Repeat("x", max(size-configMapOverhead, 1))))
}
