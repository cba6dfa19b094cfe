package validation

import "slices"

// The checks of kube-apiserver 1.37 for the kinds served here, with its
// messages (recorded from a real kube-apiserver in
// e2e/testdata/invalid.json). Fragments shared by several kinds (a pod spec, a
// workload's spec) are check lists placed under a path.

// container is any container of a pod spec.
var container = []Check{
	required("name"),
	required("image"),
	oneOf("imagePullPolicy", "Always", "IfNotPresent", "Never"),
	portNumber("ports[].containerPort", true),
	oneOf("ports[].protocol", "SCTP", "TCP", "UDP"),
}

// jobPodSpec is a pod spec but its restartPolicy.
var jobPodSpec = slices.Concat([]Check{
	required("containers"),
	uniqueContainerNames(),
	oneOf("dnsPolicy", "ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"),
}, under("containers[]", container), under("initContainers[]", container))

// podSpec is the spec of a pod, and of the pods of workloads other than
// Jobs.
var podSpec = slices.Concat(jobPodSpec, []Check{oneOf("restartPolicy", "Always", "OnFailure", "Never")})

// workload is the spec of a Deployment, ReplicaSet, StatefulSet or
// DaemonSet: it selects its template's pods.
var workload = slices.Concat([]Check{
	atLeast("replicas", 0),
	selectsTemplate(false),
}, under("template.spec", podSpec))

// selectorImmutable: a workload's selector may not change.
var selectorImmutable = immutable("spec.selector")

// jobSpec is a Job's spec, also in a CronJob's template.
var jobSpec = slices.Concat([]Check{
	atLeast("parallelism", 0),
	atLeast("completions", 0),
	atLeast("backoffLimit", 0),
	requiredOneOf("template.spec.restartPolicy", "OnFailure", "Never"),
}, under("template.spec", jobPodSpec))

// kinds are the checks of each kind, by "group/Kind".
var kinds = map[string][]Check{
	"/Pod":         slices.Concat(under("spec", podSpec), []Check{podSpecUpdate()}),
	"/PodTemplate": under("template.spec", podSpec),
	"/ReplicationController": slices.Concat([]Check{atLeast("spec.replicas", 0)},
		under("spec", []Check{selectsTemplate(true)}), under("spec.template.spec", podSpec)),
	"/Service": {
		oneOf("spec.type", "ClusterIP", "ExternalName", "LoadBalancer", "NodePort"),
		{Path: "spec", Object: requireServicePorts},
		portNumber("spec.ports[].port", false),
		portNumber("spec.ports[].targetPort", false),
		oneOf("spec.ports[].protocol", "SCTP", "TCP", "UDP"),
		oneOf("spec.sessionAffinity", "ClientIP", "None"),
	},
	"/ConfigMap": {configKeys(), immutableData()},
	"/Secret":    {configKeys(), immutableData()},
	"coordination.k8s.io/Lease": {
		atLeast("spec.leaseDurationSeconds", 1),
	},
	"apps/Deployment": slices.Concat(under("spec", workload), []Check{
		oneOf("spec.strategy.type", "Recreate", "RollingUpdate"),
		selectorImmutable,
	}),
	"apps/ReplicaSet":  slices.Concat(under("spec", workload), []Check{selectorImmutable}),
	"apps/StatefulSet": slices.Concat(under("spec", workload), []Check{oneOf("spec.podManagementPolicy", "OrderedReady", "Parallel"), selectorImmutable}),
	"apps/DaemonSet":   slices.Concat(under("spec", workload), []Check{selectorImmutable}),
	"batch/Job": slices.Concat(under("spec", jobSpec), []Check{
		immutable("spec.selector"),
		immutable("spec.completions"),
		immutable("spec.template"),
	}),
	"apiextensions.k8s.io/CustomResourceDefinition": {
		required("spec.group"),
		required("spec.names.plural"),
		required("spec.names.kind"),
		requiredOneOf("spec.scope", "Cluster", "Namespaced"),
		required("spec.versions"),
		definition(),
	},
	"admissionregistration.k8s.io/MutatingAdmissionPolicy": {
		requiredOneOf("spec.reinvocationPolicy", "Never", "IfNeeded"),
	},
	"batch/CronJob": slices.Concat([]Check{
		cronSchedule("spec.schedule"),
		oneOf("spec.concurrencyPolicy", "Allow", "Forbid", "Replace"),
	}, under("spec.jobTemplate.spec", jobSpec)),
}
