// The checks of each kind, by group/Kind: pod specs and containers,
// workloads, Jobs, volumes and claims, network policies and the others.

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

// podSpec is the spec of a pod, also in a template.
var podSpec = slices.Concat([]Check{
	required("containers"),
	uniqueContainerNames(),
	oneOf("dnsPolicy", "ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"),
	oneOf("restartPolicy", "Always", "OnFailure", "Never"),
}, under("containers[]", container), under("initContainers[]", container))

// alwaysRestarts: the pods of a Deployment, ReplicaSet, StatefulSet,
// DaemonSet or ReplicationController restart always (placed under their
// template's spec).
var alwaysRestarts = oneOf("restartPolicy", "Always")

// workload is the spec of a Deployment, ReplicaSet, StatefulSet or
// DaemonSet: it selects its template's pods.
var workload = slices.Concat([]Check{
	atLeast("replicas", 0),
	selectsTemplate(false),
}, under("template.spec", podSpec, []Check{alwaysRestarts}))

// selectorImmutable: a workload's selector may not change.
var selectorImmutable = immutable("spec.selector")

// jobSpec is a Job's spec, also in a CronJob's template.
var jobSpec = slices.Concat([]Check{
	atLeast("parallelism", 0),
	atLeast("completions", 0),
	atLeast("backoffLimit", 0),
	// kube-apiserver sees the pod spec's default, Always, for an unset one.
	unsetAs(requiredOneOf("template.spec.restartPolicy", "OnFailure", "Never"), "Always"),
}, under("template.spec", podSpec))

// accessModes are the access modes of volumes.
var accessModes = []string{"ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"}

// volumeSources are the fields of a PersistentVolume's volume source, in
// the order kube-apiserver looks at them.
var volumeSources = []string{"gcePersistentDisk", "awsElasticBlockStore", "hostPath", "glusterfs", "nfs", "rbd", "quobyte",
	"cephfs", "iscsi", "cinder", "fc", "flexVolume", "azureFile", "vsphereVolume", "photonPersistentDisk", "portworxVolume",
	"azureDisk", "scaleIO", "local", "storageos", "csi"}

// networkPolicyRule is a NetworkPolicy's ingress or egress rule.
var networkPolicyRule = []Check{
	oneOf("ports[].protocol", "TCP", "UDP", "SCTP"),
	ifSet(portNumber("ports[].port", false)),
}

// kinds are the checks of each kind, by "group/Kind".
var kinds = map[string][]Check{
	"/Pod":         slices.Concat(under("spec", podSpec), []Check{podSpecUpdate()}),
	"/PodTemplate": under("template.spec", podSpec),
	"/ReplicationController": slices.Concat([]Check{atLeast("spec.replicas", 0)},
		under("spec", []Check{selectsTemplate(true)}), under("spec.template.spec", podSpec, []Check{alwaysRestarts})),
	"/PersistentVolumeClaim": slices.Concat(under("spec", []Check{
		requiredWith("accessModes", "at least 1 access mode is required"),
		eachOneOf("accessModes", accessModes...),
		storageRequest(),
		oneOf("volumeMode", "Block", "Filesystem"),
	}), []Check{claimSpecUpdate()}),
	"/PersistentVolume": slices.Concat(under("spec", []Check{
		required("accessModes"),
		eachOneOf("accessModes", accessModes...),
		capacity(),
		oneVolumeSource(volumeSources),
		oneOf("persistentVolumeReclaimPolicy", "Delete", "Recycle", "Retain"),
	}), []Check{volumeSourceUpdate(volumeSources)}),
	"/Endpoints": {
		portNumber("subsets[].ports[].port", false),
		oneOf("subsets[].ports[].protocol", "SCTP", "TCP", "UDP"),
	},
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
		atLeast("spec.leaseTransitions", 0),
	},
	"apps/Deployment": slices.Concat(under("spec", workload), []Check{
		oneOf("spec.strategy.type", "Recreate", "RollingUpdate"),
		selectorImmutable,
	}),
	"apps/ReplicaSet": slices.Concat(under("spec", workload), []Check{selectorImmutable}),
	"apps/StatefulSet": slices.Concat(under("spec", workload), []Check{
		oneOf("spec.podManagementPolicy", "OrderedReady", "Parallel"),
		strategyType("spec.updateStrategy", invalid("must be 'RollingUpdate' or 'OnDelete'"), "RollingUpdate", "OnDelete"),
		selectorImmutable,
		immutable("spec.serviceName"),
		immutable("spec.podManagementPolicy"),
	}),
	"apps/DaemonSet": slices.Concat(under("spec", workload), []Check{
		strategyType("spec.updateStrategy", notSupported("RollingUpdate", "OnDelete"), "RollingUpdate", "OnDelete"),
		selectorImmutable,
	}),
	"apps/ControllerRevision": {
		atLeast("revision", 0),
		requiredWith("data", "data is mandatory"),
		immutable("data"),
	},
	"batch/Job": slices.Concat(under("spec", jobSpec), []Check{
		immutable("spec.selector"),
		immutable("spec.completions"),
		immutable("spec.template"),
	}),
	"storage.k8s.io/StorageClass": {
		required("provisioner"),
		oneOf("reclaimPolicy", "Delete", "Retain"),
		oneOf("volumeBindingMode", "Immediate", "WaitForFirstConsumer"),
		unchanged("provisioner", invalidUnshown(errImmutable)),
		unchanged("parameters", invalidUnshown(errImmutable)),
		unchanged("reclaimPolicy", invalidUnshown(errImmutable)),
		unchanged("volumeBindingMode", invalidUnshown(errImmutable)),
	},
	"policy/PodDisruptionBudget": under("spec", []Check{
		notBoth("minAvailable", "maxUnavailable", "minAvailable and maxUnavailable cannot be both set",
			"MinAvailable", "Selector", "MaxUnavailable", "UnhealthyPodEvictionPolicy"),
		nonNegativeIntOrPercent("minAvailable"),
		nonNegativeIntOrPercent("maxUnavailable"),
		oneOf("unhealthyPodEvictionPolicy", "AlwaysAllow", "IfHealthyBudget"),
	}),
	"scheduling.k8s.io/PriorityClass": {
		forbiddenAbove("value", 1000000000, "maximum allowed value of a user defined priority is 1000000000"),
		oneOf("preemptionPolicy", "PreemptLowerPriority", "Never"),
		unchanged("value", forbidden("may not be changed in an update.")),
		immutable("preemptionPolicy"),
	},
	"discovery.k8s.io/EndpointSlice": {
		required("addressType"),
		ifSet(oneOf("addressType", "FQDN", "IPv4", "IPv6")),
		required("endpoints[].addresses"),
		oneOf("ports[].protocol", "SCTP", "TCP", "UDP"),
		unchanged("addressType", invalidUnshown(errImmutable)),
	},
	"networking.k8s.io/Ingress": under("spec", []Check{
		requiredAny(invalid("either `defaultBackend` or `rules` must be specified"), "defaultBackend", "rules"),
		ingressHost("rules[].host"),
		oneOf("rules[].http.paths[].pathType", "Exact", "ImplementationSpecific", "Prefix"),
	}),
	"networking.k8s.io/IngressClass": {
		required("spec.controller"),
		domainPrefixedPath("spec.controller"),
		immutable("spec.controller"),
	},
	"networking.k8s.io/NetworkPolicy": slices.Concat([]Check{
		oneOf("spec.policyTypes[]", "Ingress", "Egress"),
	}, under("spec.ingress[]", networkPolicyRule), under("spec.egress[]", networkPolicyRule)),
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
