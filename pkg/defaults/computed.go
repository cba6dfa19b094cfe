// The defaults that are computed rather than constant, as kube-apiserver's
// defaulters and strategies compute them: image pull policy, tolerations,
// service IPs and ports, requests from limits, a new pod's QoS class, a Job's
// selector, a CRD's names and stored versions, and others.

package defaults

import (
	"encoding/base64"
	"maps"
	"strings"
	"time"

	"github.com/watchcache/watchcache/pkg/jsontree"
)

// The defaults kube-apiserver computes from other fields. Each is the Fn
// of a rule in kinds.go, run on the object its rule's path names.

// defaultImagePullPolicy (a container): Always for an image without a tag
// or digest or tagged latest, IfNotPresent otherwise.
func defaultImagePullPolicy(c map[string]any) {
	if _, ok := c["imagePullPolicy"]; ok {
		return
	}
	image, _ := c["image"].(string)
	policy := "IfNotPresent"
	if tag, digest := imageTag(image); tag == "latest" || tag == "" && !digest {
		policy = "Always"
	}
	c["imagePullPolicy"] = policy
}

// imageTag splits an image reference's tag off (none: "") and says whether
// it names a digest.
func imageTag(image string) (tag string, digest bool) {
	image, _, digest = strings.Cut(image, "@")
	last := image[strings.LastIndex(image, "/")+1:] // a registry's port is before the last slash
	if i := strings.LastIndex(last, ":"); i >= 0 {
		tag = last[i+1:]
	}
	return tag, digest
}

// defaultServiceAccount (a pod spec) keeps serviceAccountName and its
// deprecated alias serviceAccount the same, as kube-apiserver's conversion
// does.
func defaultServiceAccount(spec map[string]any) {
	name, _ := spec["serviceAccountName"].(string)
	if name == "" {
		name, _ = spec["serviceAccount"].(string)
	}
	if name != "" {
		spec["serviceAccountName"], spec["serviceAccount"] = name, name
	}
}

// defaultRequestsFromLimits (a pod's container): a resource with a limit
// and no request is requested at its limit.
func defaultRequestsFromLimits(c map[string]any) {
	resources, _ := c["resources"].(map[string]any)
	limits, _ := resources["limits"].(map[string]any)
	if len(limits) == 0 {
		return
	}
	requests := jsontree.Child(resources, "requests")
	for name, limit := range limits {
		if _, ok := requests[name]; !ok {
			requests[name] = limit
		}
	}
}

// defaultTolerationSeconds is how long a pod stays on a node that is not
// ready or unreachable, as kube-apiserver's DefaultTolerationSeconds
// admission plugin sets it.
const defaultTolerationSeconds = int64(300)

// defaultTolerations (a pod spec) adds tolerations of the not-ready and
// unreachable taints for defaultTolerationSeconds, unless the pod has
// tolerations of them, as the DefaultTolerationSeconds plugin does.
func defaultTolerations(spec map[string]any) {
	tolerations, _ := spec["tolerations"].([]any)
	for _, key := range []string{"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"} {
		if !tolerates(tolerations, key) {
			tolerations = append(tolerations, map[string]any{"key": key, "operator": "Exists", "effect": "NoExecute",
				"tolerationSeconds": defaultTolerationSeconds})
		}
	}
	spec["tolerations"] = tolerations
}

// tolerates reports whether one of tolerations tolerates taint key with
// effect NoExecute.
func tolerates(tolerations []any, key string) bool {
	for _, t := range tolerations {
		m, _ := t.(map[string]any)
		k, _ := m["key"].(string)
		effect, _ := m["effect"].(string)
		if (k == key || k == "") && (effect == "NoExecute" || effect == "") {
			return true
		}
	}
	return false
}

// defaultFromTemplateLabels (a ReplicationController): the selector and
// the labels default to the pod template's labels.
func defaultFromTemplateLabels(rc map[string]any) {
	spec, _ := rc["spec"].(map[string]any)
	template, _ := spec["template"].(map[string]any)
	meta, _ := template["metadata"].(map[string]any)
	labels, _ := meta["labels"].(map[string]any)
	if len(labels) == 0 {
		return
	}
	if selector, _ := spec["selector"].(map[string]any); len(selector) == 0 {
		spec["selector"] = maps.Clone(labels)
	}
	if own, ok := rc["metadata"].(map[string]any); ok {
		if existing, _ := own["labels"].(map[string]any); len(existing) == 0 {
			own["labels"] = maps.Clone(labels)
		}
	}
}

// defaultTargetPort (a service port): the target port is the port.
func defaultTargetPort(port map[string]any) {
	if target, ok := port["targetPort"]; !ok || target == int64(0) || target == "" {
		port["targetPort"] = port["port"]
	}
}

// defaultServiceTraffic (a service spec): traffic policies and the IP
// family policy.
func defaultServiceTraffic(spec map[string]any) {
	kind := spec["type"]
	if kind == "ExternalName" {
		return
	}
	setIfAbsent(spec, "internalTrafficPolicy", "Cluster")
	if kind == "NodePort" || kind == "LoadBalancer" {
		setIfAbsent(spec, "externalTrafficPolicy", "Cluster")
	}
	setIfAbsent(spec, "ipFamilyPolicy", "SingleStack")
	// ipFamilies: package servicenet's allocation, which knows the
	// cluster's families.
}

// defaultClusterIPs (a service spec): the cluster IPs are the cluster IP
// given (kube-apiserver's service strategy; "None" for a headless
// service).
func defaultClusterIPs(spec map[string]any) {
	if ip, _ := spec["clusterIP"].(string); ip != "" {
		setIfAbsent(spec, "clusterIPs", []any{ip})
	}
}

// defaultLoadBalancer (a service spec): a load balancer gets node ports.
func defaultLoadBalancer(spec map[string]any) {
	if spec["type"] == "LoadBalancer" {
		setIfAbsent(spec, "allocateLoadBalancerNodePorts", true)
	}
}

// defaultHostNetworkPorts (a pod spec): on the host's network, a
// container's port is also its host port.
func defaultHostNetworkPorts(spec map[string]any) {
	if spec["hostNetwork"] != true {
		return
	}
	for _, list := range []string{"containers", "initContainers"} {
		containers, _ := spec[list].([]any)
		for _, c := range containers {
			container, _ := c.(map[string]any)
			ports, _ := container["ports"].([]any)
			for _, p := range ports {
				port, _ := p.(map[string]any)
				if hostPort, _ := port["hostPort"].(int64); hostPort == 0 && port["containerPort"] != nil {
					port["hostPort"] = port["containerPort"]
				}
			}
		}
	}
}

// normalizeDataSources (a claim's spec): dataSource and dataSourceRef name
// the same object; either given alone is copied to the other (but a
// dataSourceRef in another namespace), as kube-apiserver's claim strategy
// does.
func normalizeDataSources(spec map[string]any) {
	source, hasSource := spec["dataSource"].(map[string]any)
	ref, hasRef := spec["dataSourceRef"].(map[string]any)
	switch {
	case hasSource && !hasRef:
		spec["dataSourceRef"] = objectReference(source)
	case hasRef && !hasSource && (ref["namespace"] == nil || ref["namespace"] == ""):
		spec["dataSource"] = objectReference(ref)
	}
}

// objectReference copies the group, kind and name of a reference.
func objectReference(ref map[string]any) map[string]any {
	out := map[string]any{}
	for _, k := range []string{"apiGroup", "kind", "name"} {
		if v, ok := ref[k]; ok {
			out[k] = v
		}
	}
	return out
}

// mergeStringData (a secret) moves stringData into data, base64-encoded,
// over data's values, as kube-apiserver's conversion does.
func mergeStringData(secret map[string]any) {
	stringData, ok := secret["stringData"].(map[string]any)
	if !ok {
		return
	}
	delete(secret, "stringData")
	data := jsontree.Child(secret, "data")
	for k, v := range stringData {
		s, _ := v.(string)
		data[k] = base64.StdEncoding.EncodeToString([]byte(s))
	}
}

// defaultLimitRangeItem (a LimitRange's item): a container's default limit
// is its max, its default request its default limit, or else its min.
func defaultLimitRangeItem(item map[string]any) {
	if item["type"] != "Container" {
		return
	}
	fill := func(field string, from ...string) {
		dst, _ := item[field].(map[string]any)
		if dst == nil {
			dst = map[string]any{}
		}
		for _, f := range from {
			src, _ := item[f].(map[string]any)
			for k, v := range src {
				setIfAbsent(dst, k, v)
			}
		}
		if len(dst) > 0 {
			item[field] = dst
		}
	}
	fill("default", "max")
	fill("defaultRequest", "default", "min")
}

// defaultJobCounts (a job spec): one completion by one pod unless told.
func defaultJobCounts(spec map[string]any) {
	_, hasCompletions := spec["completions"]
	_, hasParallelism := spec["parallelism"]
	if !hasCompletions && !hasParallelism {
		spec["completions"] = int64(1)
	}
	if !hasParallelism {
		spec["parallelism"] = int64(1)
	}
}

// defaultPodReplacementPolicy (a job spec): Failed with a pod failure
// policy, TerminatingOrFailed without.
func defaultPodReplacementPolicy(spec map[string]any) {
	policy := "TerminatingOrFailed"
	if _, ok := spec["podFailurePolicy"]; ok {
		policy = "Failed"
	}
	setIfAbsent(spec, "podReplacementPolicy", policy)
}

// defaultPolicyTypes (a network policy spec): Ingress, and Egress if it
// has egress rules.
func defaultPolicyTypes(spec map[string]any) {
	if _, ok := spec["policyTypes"]; ok {
		return
	}
	types := []any{"Ingress"}
	if egress, _ := spec["egress"].([]any); len(egress) > 0 {
		types = append(types, "Egress")
	}
	spec["policyTypes"] = types
}

// setQOSClass (a new pod) sets status.qosClass from its containers'
// requests and limits of cpu and memory: Guaranteed when every container
// has both limits and requests equal to them, BestEffort when none has
// any, Burstable otherwise.
func setQOSClass(pod map[string]any) {
	spec, _ := pod["spec"].(map[string]any)
	status, _ := pod["status"].(map[string]any)
	if status == nil {
		return
	}
	hasAny, guaranteed := false, true
	for _, field := range []string{"initContainers", "containers"} {
		list, _ := spec[field].([]any)
		for _, c := range list {
			m, _ := c.(map[string]any)
			resources, _ := m["resources"].(map[string]any)
			requests, _ := resources["requests"].(map[string]any)
			limits, _ := resources["limits"].(map[string]any)
			for _, name := range []string{"cpu", "memory"} {
				request, hasRequest := requests[name]
				limit, hasLimit := limits[name]
				hasAny = hasAny || hasRequest || hasLimit
				if !hasLimit || hasRequest && request != limit {
					guaranteed = false
				}
			}
		}
	}
	switch {
	case !hasAny:
		status["qosClass"] = "BestEffort"
	case guaranteed:
		status["qosClass"] = "Guaranteed"
	default:
		status["qosClass"] = "Burstable"
	}
}

// setPhaseTransitionTime (a new volume's status) records when it took its
// phase.
func setPhaseTransitionTime(status map[string]any) {
	status["lastPhaseTransitionTime"] = time.Now().UTC().Format(time.RFC3339)
}

// daemonSetTemplateGeneration is the annotation in which a DaemonSet
// records its template's generation, for old clients.
const daemonSetTemplateGeneration = "deprecated.daemonset.template.generation"

// setDaemonSetTemplateGeneration (a new DaemonSet): its template is of
// generation 1.
func setDaemonSetTemplateGeneration(ds map[string]any) {
	meta, ok := ds["metadata"].(map[string]any)
	if !ok {
		return
	}
	jsontree.Child(meta, "annotations")[daemonSetTemplateGeneration] = "1"
}

// generateJobSelector (a new job without manualSelector): the job's pods
// are labeled with its uid and name, and it selects them by uid; its own
// labels default to its pods'.
func generateJobSelector(job map[string]any) {
	spec, _ := job["spec"].(map[string]any)
	meta, _ := job["metadata"].(map[string]any)
	if spec == nil || meta == nil || spec["manualSelector"] == true {
		return
	}
	uid, _ := meta["uid"].(string)
	name, _ := meta["name"].(string)
	spec["manualSelector"] = false
	template, _ := spec["template"].(map[string]any)
	if template == nil {
		return
	}
	labels := jsontree.Child(jsontree.Child(template, "metadata"), "labels")
	maps.Copy(labels, map[string]any{"batch.kubernetes.io/controller-uid": uid, "batch.kubernetes.io/job-name": name,
		"controller-uid": uid, "job-name": name})
	spec["selector"] = map[string]any{"matchLabels": map[string]any{"batch.kubernetes.io/controller-uid": uid}}
	if own, _ := meta["labels"].(map[string]any); len(own) == 0 {
		meta["labels"] = maps.Clone(labels)
	}
}

func setIfAbsent(m map[string]any, key string, value any) {
	if _, ok := m[key]; !ok {
		m[key] = value
	}
}

// defaultCRDNames (a CustomResourceDefinition's names): the singular is
// the lowercase kind, the list kind the kind with List.
func defaultCRDNames(names map[string]any) {
	kind, _ := names["kind"].(string)
	if kind == "" {
		return
	}
	setIfAbsent(names, "singular", strings.ToLower(kind))
	setIfAbsent(names, "listKind", kind+"List")
}

// setStoredVersions (a new CustomResourceDefinition): its objects are
// stored in its storage version.
func setStoredVersions(def map[string]any) {
	spec, _ := def["spec"].(map[string]any)
	versions, _ := spec["versions"].([]any)
	for _, v := range versions {
		if m, _ := v.(map[string]any); m["storage"] == true {
			jsontree.Child(def, "status")["storedVersions"] = []any{m["name"]}
		}
	}
}
