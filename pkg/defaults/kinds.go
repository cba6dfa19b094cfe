// The constant defaults by kind: rule lists for pods, containers, probes,
// claims, webhooks and the other kinds, the fields set on create, and the
// fields an update keeps when it lacks them.

package defaults

import "slices"

// The defaults of kube-apiserver 1.37 for the kinds served here, read off
// its defaulters and checked against a real kube-apiserver's answers
// (e2e/testdata/defaults). Fragments shared by several kinds (a pod
// spec, a container, a probe) are rule lists placed under a path.

// probe is a liveness, readiness or startup probe.
var probe = []Rule{
	{Path: "timeoutSeconds", Value: int64(1)},
	{Path: "periodSeconds", Value: int64(10)},
	{Path: "successThreshold", Value: int64(1)},
	{Path: "failureThreshold", Value: int64(3)},
	{Path: "httpGet.scheme", Value: "HTTP"},
	{Path: "httpGet.path", Value: "/"},
}

// container is any container of a pod spec.
var container = slices.Concat([]Rule{
	{Path: "terminationMessagePath", Value: "/dev/termination-log"},
	{Path: "terminationMessagePolicy", Value: "File"},
	{Path: "", Fn: defaultImagePullPolicy},
	{Path: "ports[].protocol", Value: "TCP"},
	{Path: "env[].valueFrom.fieldRef.apiVersion", Value: "v1"},
	{Path: "lifecycle.postStart.httpGet.scheme", Value: "HTTP"},
	{Path: "lifecycle.preStop.httpGet.scheme", Value: "HTTP"},
	{Path: "lifecycle.postStart.httpGet.path", Value: "/"},
	{Path: "lifecycle.preStop.httpGet.path", Value: "/"},
}, under("livenessProbe", probe), under("readinessProbe", probe), under("startupProbe", probe))

// fileMode is 0644, the default mode of files projected into volumes.
const fileMode = int64(0o644)

// jobPodSpec is the spec of a Job's pods: a pod spec without a default
// restartPolicy (a Job's pods must say OnFailure or Never).
var jobPodSpec = slices.Concat([]Rule{
	{Path: "dnsPolicy", Value: "ClusterFirst"},
	{Path: "terminationGracePeriodSeconds", Value: int64(30)},
	{Path: "securityContext", Value: map[string]any{}},
	{Path: "schedulerName", Value: "default-scheduler"},
	{Path: "", Fn: defaultServiceAccount},
	{Path: "volumes[].configMap.defaultMode", Value: fileMode},
	{Path: "volumes[].secret.defaultMode", Value: fileMode},
	{Path: "volumes[].downwardAPI.defaultMode", Value: fileMode},
	{Path: "volumes[].downwardAPI.items[].fieldRef.apiVersion", Value: "v1"},
	{Path: "volumes[].projected.defaultMode", Value: fileMode},
	{Path: "volumes[].projected.sources[].serviceAccountToken.expirationSeconds", Value: int64(3600)},
	{Path: "volumes[].projected.sources[].downwardAPI.items[].fieldRef.apiVersion", Value: "v1"},
	{Path: "volumes[].hostPath.type", Value: ""},
	{Path: "", Fn: defaultHostNetworkPorts},
}, under("containers[]", container), under("initContainers[]", container))

// podSpec is a pod's spec, also in templates other than a Job's.
var podSpec = slices.Concat([]Rule{{Path: "restartPolicy", Value: "Always"}}, jobPodSpec)

// pod is a pod's own spec: its spec's defaults and those only pods get.
var pod = slices.Concat(under("spec", podSpec), []Rule{
	{Path: "spec.enableServiceLinks", Value: true},
	{Path: "spec.containers[]", Fn: defaultRequestsFromLimits},
	{Path: "spec.initContainers[]", Fn: defaultRequestsFromLimits},
})

// claimSpec is a PersistentVolumeClaim's spec, also in templates.
var claimSpec = []Rule{{Path: "volumeMode", Value: "Filesystem"}}

// rollingUpdate creates strategy.rollingUpdate when the strategy is
// RollingUpdate.
func rollingUpdate(strategy map[string]any) {
	if _, ok := strategy["rollingUpdate"]; !ok && strategy["type"] == "RollingUpdate" {
		strategy["rollingUpdate"] = map[string]any{}
	}
}

// webhook is an admission webhook of a webhook configuration.
var webhook = []Rule{
	{Path: "failurePolicy", Value: "Fail"},
	{Path: "matchPolicy", Value: "Equivalent"},
	{Path: "namespaceSelector", Value: map[string]any{}},
	{Path: "objectSelector", Value: map[string]any{}},
	{Path: "timeoutSeconds", Value: int64(10)},
	{Path: "rules[].scope", Value: "*"},
	{Path: "clientConfig.service.port", Value: int64(443)},
}

// matchResources is what an admission policy or its binding matches.
var matchResources = []Rule{
	{Path: "matchPolicy", Value: "Equivalent"},
	{Path: "namespaceSelector", Value: map[string]any{}},
	{Path: "objectSelector", Value: map[string]any{}},
	{Path: "resourceRules[].scope", Value: "*"},
	{Path: "excludeResourceRules[].scope", Value: "*"},
}

// kinds are the defaults applied on every write, by "group/Kind".
var kinds = map[string][]Rule{
	"/Pod":         pod,
	"/PodTemplate": under("template.spec", podSpec),
	"/ReplicationController": slices.Concat([]Rule{
		{Path: "spec.replicas", Value: int64(1)},
		{Path: "", Fn: defaultFromTemplateLabels},
	}, under("spec.template.spec", podSpec)),
	"/Service": {
		{Path: "spec.type", Value: "ClusterIP"},
		{Path: "spec.sessionAffinity", Value: "None"},
		{Path: "spec.ports[].protocol", Value: "TCP"},
		{Path: "spec.ports[]", Fn: defaultTargetPort},
		{Path: "spec", Fn: defaultServiceTraffic},
		{Path: "spec", Fn: defaultClusterIPs},
		{Path: "spec", Fn: defaultLoadBalancer},
	},
	"/Secret": {
		{Path: "type", Value: "Opaque"},
		{Path: "", Fn: mergeStringData},
	},
	"/Endpoints":             {{Path: "subsets[].ports[].protocol", Value: "TCP"}},
	"/PersistentVolumeClaim": slices.Concat(under("spec", claimSpec), []Rule{{Path: "spec", Fn: normalizeDataSources}}),
	"/PersistentVolume": {
		{Path: "spec.persistentVolumeReclaimPolicy", Value: "Retain"},
		{Path: "spec.volumeMode", Value: "Filesystem"},
		{Path: "spec.hostPath.type", Value: ""},
	},
	"/LimitRange": {{Path: "spec.limits[]", Fn: defaultLimitRangeItem}},
	"apps/Deployment": slices.Concat([]Rule{
		{Path: "spec.replicas", Value: int64(1)},
		{Path: "spec.strategy", Value: map[string]any{}},
		{Path: "spec.strategy.type", Value: "RollingUpdate"},
		{Path: "spec.strategy", Fn: rollingUpdate},
		{Path: "spec.strategy.rollingUpdate.maxUnavailable", Value: "25%"},
		{Path: "spec.strategy.rollingUpdate.maxSurge", Value: "25%"},
		{Path: "spec.revisionHistoryLimit", Value: int64(10)},
		{Path: "spec.progressDeadlineSeconds", Value: int64(600)},
	}, under("spec.template.spec", podSpec)),
	"apps/ReplicaSet": slices.Concat([]Rule{{Path: "spec.replicas", Value: int64(1)}}, under("spec.template.spec", podSpec)),
	"apps/StatefulSet": slices.Concat([]Rule{
		{Path: "spec.replicas", Value: int64(1)},
		{Path: "spec.podManagementPolicy", Value: "OrderedReady"},
		{Path: "spec.updateStrategy", Value: map[string]any{}},
		{Path: "spec.updateStrategy.type", Value: "RollingUpdate"},
		{Path: "spec.updateStrategy", Fn: rollingUpdate},
		{Path: "spec.updateStrategy.rollingUpdate.partition", Value: int64(0)},
		{Path: "spec.updateStrategy.rollingUpdate.maxUnavailable", Value: int64(1)},
		{Path: "spec.revisionHistoryLimit", Value: int64(10)},
		{Path: "spec.persistentVolumeClaimRetentionPolicy", Value: map[string]any{}},
		{Path: "spec.persistentVolumeClaimRetentionPolicy.whenDeleted", Value: "Retain"},
		{Path: "spec.persistentVolumeClaimRetentionPolicy.whenScaled", Value: "Retain"},
		{Path: "spec.volumeClaimTemplates[].apiVersion", Value: "v1"},
		{Path: "spec.volumeClaimTemplates[].kind", Value: "PersistentVolumeClaim"},
		{Path: "spec.volumeClaimTemplates[].status", Value: map[string]any{}},
		{Path: "spec.volumeClaimTemplates[].status.phase", Value: "Pending"},
	}, under("spec.volumeClaimTemplates[].spec", claimSpec), under("spec.template.spec", podSpec)),
	"apps/DaemonSet": slices.Concat([]Rule{
		{Path: "spec.updateStrategy", Value: map[string]any{}},
		{Path: "spec.updateStrategy.type", Value: "RollingUpdate"},
		{Path: "spec.updateStrategy", Fn: rollingUpdate},
		{Path: "spec.updateStrategy.rollingUpdate.maxUnavailable", Value: int64(1)},
		{Path: "spec.updateStrategy.rollingUpdate.maxSurge", Value: int64(0)},
		{Path: "spec.revisionHistoryLimit", Value: int64(10)},
	}, under("spec.template.spec", podSpec)),
	"batch/Job": slices.Concat([]Rule{
		{Path: "spec", Fn: defaultJobCounts},
		{Path: "spec.backoffLimit", Value: int64(6)},
		{Path: "spec.completionMode", Value: "NonIndexed"},
		{Path: "spec.suspend", Value: false},
		{Path: "spec", Fn: defaultPodReplacementPolicy},
		{Path: "spec.podFailurePolicy.rules[].onPodConditions[].status", Value: "True"},
	}, under("spec.template.spec", jobPodSpec)),
	"batch/CronJob": slices.Concat([]Rule{
		{Path: "spec.concurrencyPolicy", Value: "Allow"},
		{Path: "spec.suspend", Value: false},
		{Path: "spec.successfulJobsHistoryLimit", Value: int64(3)},
		{Path: "spec.failedJobsHistoryLimit", Value: int64(1)},
	}, under("spec.jobTemplate.spec.template.spec", jobPodSpec)),
	"discovery.k8s.io/EndpointSlice": {
		{Path: "ports[].protocol", Value: "TCP"},
		{Path: "ports[].name", Value: ""},
	},
	"networking.k8s.io/NetworkPolicy": {
		{Path: "spec.ingress[].ports[].protocol", Value: "TCP"},
		{Path: "spec.egress[].ports[].protocol", Value: "TCP"},
		{Path: "spec", Fn: defaultPolicyTypes},
	},
	"scheduling.k8s.io/PriorityClass": {{Path: "preemptionPolicy", Value: "PreemptLowerPriority"}},
	"apiextensions.k8s.io/CustomResourceDefinition": {
		{Path: "spec.conversion", Value: map[string]any{}},
		{Path: "spec.conversion.strategy", Value: "None"},
		{Path: "spec.names", Fn: defaultCRDNames},
	},
	"admissionregistration.k8s.io/MutatingWebhookConfiguration": slices.Concat(under("webhooks[]", webhook),
		[]Rule{{Path: "webhooks[].reinvocationPolicy", Value: "Never"}}),
	"admissionregistration.k8s.io/ValidatingWebhookConfiguration": under("webhooks[]", webhook),
	"admissionregistration.k8s.io/ValidatingAdmissionPolicy": slices.Concat([]Rule{{Path: "spec.failurePolicy", Value: "Fail"}},
		under("spec.matchConstraints", matchResources)),
	"admissionregistration.k8s.io/ValidatingAdmissionPolicyBinding": under("spec.matchResources", matchResources),
	"admissionregistration.k8s.io/MutatingAdmissionPolicy": slices.Concat([]Rule{{Path: "spec.failurePolicy", Value: "Fail"}},
		under("spec.matchConstraints", matchResources)),
	"admissionregistration.k8s.io/MutatingAdmissionPolicyBinding": under("spec.matchResources", matchResources),
	"storage.k8s.io/StorageClass": {
		{Path: "reclaimPolicy", Value: "Delete"},
		{Path: "volumeBindingMode", Value: "Immediate"},
	},
}

// onCreate are what the kinds' strategies set on a new object after its
// status was reset, and what kube-apiserver's DefaultTolerationSeconds
// admission plugin sets on it (a pod's not-ready/unreachable
// tolerations), by "group/Kind". kube-apiserver sets them after recording
// managedFields, so no manager owns them. (The plugins that read other
// objects, such as Priority, are in package admission.)
var onCreate = map[string][]Rule{
	"/Pod": {
		{Path: "status", Value: map[string]any{}},
		{Path: "status.phase", Value: "Pending"},
		{Path: "", Fn: setQOSClass},
		{Path: "spec", Fn: defaultTolerations},
	},
	"/PersistentVolumeClaim": {
		{Path: "status", Value: map[string]any{}},
		{Path: "status.phase", Value: "Pending"},
	},
	"/PersistentVolume": {
		{Path: "status", Value: map[string]any{}},
		{Path: "status.phase", Value: "Pending"},
		{Path: "status", Fn: setPhaseTransitionTime},
	},
	"apps/DaemonSet": {{Path: "", Fn: setDaemonSetTemplateGeneration}},
	"apiextensions.k8s.io/CustomResourceDefinition": {{Path: "", Fn: setStoredVersions}},
	"batch/Job": {{Path: "", Fn: generateJobSelector}},
}

// keptOnUpdate are the fields an update that lacks them keeps from the
// stored object, by "group/Kind": a pod's priority and preemption policy,
// which the Priority admission plugin set on create and keeps (they are
// immutable).
var keptOnUpdate = map[string][]string{
	"/Pod": {"spec.priority", "spec.preemptionPolicy"},
}
