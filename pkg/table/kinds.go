// The columns of each built-in kind (pkg/printers/internalversion in
// kubernetes), their descriptions and priorities (-o wide), and the Name and
// Age table of custom resources.

package table

import (
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1beta1 "k8s.io/api/rbac/v1beta1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The columns' descriptions, as kube-apiserver takes them from the API
// types' documentation.
var (
	objectMeta    = metav1.ObjectMeta{}.SwaggerDoc()
	podSpec       = corev1.PodSpec{}.SwaggerDoc()
	podStatus     = corev1.PodStatus{}.SwaggerDoc()
	serviceSpec   = corev1.ServiceSpec{}.SwaggerDoc()
	nodeStatus    = corev1.NodeStatus{}.SwaggerDoc()
	nodeInfo      = corev1.NodeSystemInfo{}.SwaggerDoc()
	event         = corev1.Event{}.SwaggerDoc()
	pvSpec        = corev1.PersistentVolumeSpec{}.SwaggerDoc()
	pvStatus      = corev1.PersistentVolumeStatus{}.SwaggerDoc()
	pvcSpec       = corev1.PersistentVolumeClaimSpec{}.SwaggerDoc()
	pvcStatus     = corev1.PersistentVolumeClaimStatus{}.SwaggerDoc()
	rcSpec        = corev1.ReplicationControllerSpec{}.SwaggerDoc()
	rcStatus      = corev1.ReplicationControllerStatus{}.SwaggerDoc()
	rsSpec        = appsv1.ReplicaSetSpec{}.SwaggerDoc()
	rsStatus      = appsv1.ReplicaSetStatus{}.SwaggerDoc()
	dsSpec        = appsv1.DaemonSetSpec{}.SwaggerDoc()
	dsStatus      = appsv1.DaemonSetStatus{}.SwaggerDoc()
	jobSpec       = batchv1.JobSpec{}.SwaggerDoc()
	cronJobSpec   = batchv1.CronJobSpec{}.SwaggerDoc()
	cronJobStatus = batchv1.CronJobStatus{}.SwaggerDoc()
	endpointSlice = discoveryv1.EndpointSlice{}.SwaggerDoc()
	priorityClass = schedulingv1.PriorityClass{}.SwaggerDoc()
	storageClass  = storagev1.StorageClass{}.SwaggerDoc()
)

const (
	containersDoc = "Names of each container in the template."
	imagesDoc     = "Images referenced by each container in the template."
	readyPodsDoc  = "Number of the pod with ready state"
)

// The columns many kinds have.
var (
	nameColumn = column{name: "Name", typ: "string", format: "name", description: objectMeta["name"], cell: text("metadata.name")}
	ageColumn  = col("Age", objectMeta["creationTimestamp"], age("metadata.creationTimestamp"))
	// createdAt is the second column of kube-apiserver's default table.
	createdAt = column{name: "Created At", typ: "date", description: objectMeta["creationTimestamp"], cell: date("metadata.creationTimestamp")}
)

// custom is the table of custom resources: Name and Age, as kube-apiserver
// prints custom resources without additional printer columns.
var custom = newTable([]column{nameColumn, ageColumn.ofType("date")})

// builtins are the tables of the built-in kinds by group/resource, with
// kube-apiserver's columns (pkg/printers/internalversion); kinds it has no
// printer for (roles, cluster roles, limit ranges) get its default table:
// Name and Created At.
var builtins = tables(map[string][]column{
	"/namespaces": {nameColumn, col("Status", "The status of the namespace", text("status.phase")), ageColumn},
	"/nodes": {
		nameColumn,
		col("Status", "The status of the node", computed(nodeConditions, "status.conditions", "spec.unschedulable")),
		col("Roles", "The roles of the node", computed(nodeRoles, "metadata.labels")),
		ageColumn,
		col("Version", nodeInfo["kubeletVersion"], text("status.nodeInfo.kubeletVersion")),
		col("Internal-IP", nodeStatus["addresses"], nodeAddress("InternalIP")).wide(),
		col("External-IP", nodeStatus["addresses"], nodeAddress("ExternalIP")).wide(),
		col("OS-Image", nodeInfo["osImage"], textOr("status.nodeInfo.osImage", "<unknown>")).wide(),
		col("Kernel-Version", nodeInfo["kernelVersion"], computed(kernelVersion, "status.nodeInfo.kernelVersion", "status.nodeInfo.architecture")).wide(),
		col("Container-Runtime", nodeInfo["containerRuntimeVersion"], textOr("status.nodeInfo.containerRuntimeVersion", "<unknown>")).wide(),
	},
	"/pods": {
		nameColumn,
		col("Ready", "The aggregate readiness state of this pod for accepting traffic.", podCell(func(p podRow) string { return p.ready })),
		col("Status", "The aggregate status of the containers in this pod.", podCell(func(p podRow) string { return p.status })),
		col("Restarts", "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.", podCell(func(p podRow) string { return p.restarts })),
		ageColumn,
		col("IP", podStatus["podIP"], computed(podIP, "status.podIPs", "status.podIP")).wide(),
		col("Node", podSpec["nodeName"], textOr("spec.nodeName", "<none>")).wide(),
		col("Nominated Node", podStatus["nominatedNodeName"], textOr("status.nominatedNodeName", "<none>")).wide(),
		col("Readiness Gates", podSpec["readinessGates"], computed(readinessGates, "spec.readinessGates", "status.conditions")).wide(),
	},
	"/services": {
		nameColumn,
		col("Type", serviceSpec["type"], text("spec.type")),
		col("Cluster-IP", serviceSpec["clusterIP"], computed(clusterIP, "spec.clusterIPs", "spec.clusterIP")),
		col("External-IP", serviceSpec["externalIPs"], computed(externalIP, "spec.type", "spec.externalIPs", "status.loadBalancer.ingress", "spec.externalName")),
		col("Port(s)", serviceSpec["ports"], computed(servicePorts, "spec.ports")),
		ageColumn,
		col("Selector", serviceSpec["selector"], labelMap("spec.selector")).wide(),
	},
	"/configmaps": {nameColumn, col("Data", corev1.ConfigMap{}.SwaggerDoc()["data"], count("data", "binaryData")), ageColumn},
	"/secrets": {
		nameColumn,
		col("Type", corev1.Secret{}.SwaggerDoc()["type"], text("type")),
		col("Data", corev1.Secret{}.SwaggerDoc()["data"], count("data")),
		ageColumn,
	},
	"/events": {
		col("Last Seen", event["lastTimestamp"], computed(eventLastSeen, eventTimes...)),
		col("Type", event["type"], text("type")),
		col("Reason", event["reason"], text("reason")),
		col("Object", event["involvedObject"], computed(involvedObject, "involvedObject.kind", "involvedObject.name")),
		col("Subobject", corev1.ObjectReference{}.SwaggerDoc()["fieldPath"], text("involvedObject.fieldPath")).wide(),
		col("Source", event["source"], computed(eventSource, "source.component", "reportingComponent", "source.host", "reportingInstance")).wide(),
		col("Message", event["message"], computed(eventMessage, "message")),
		col("First Seen", event["firstTimestamp"], computed(eventFirstSeen, eventTimes...)).wide(),
		col("Count", event["count"], computed(eventCount, "count", "series", "series.count")).wide(),
		nameColumn.wide(),
	},
	"/serviceaccounts": {nameColumn, ageColumn},
	"/resourcequotas": {
		nameColumn,
		col("Request", "Request represents a minimum amount of cpu/memory that a container may consume.", computed(quotaRequests, "status.hard", "status.used")),
		col("Limit", "Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node.", computed(quotaLimits, "status.hard", "status.used")),
		ageColumn,
	},
	"/limitranges": {nameColumn, createdAt},
	"/endpoints":   {nameColumn, col("Endpoints", corev1.Endpoints{}.SwaggerDoc()["subsets"], computed(endpoints, "subsets")), ageColumn},
	"/persistentvolumeclaims": {
		nameColumn,
		col("Status", pvcStatus["phase"], computed(volumePhase, "status.phase", "metadata.deletionTimestamp")),
		col("Volume", pvcSpec["volumeName"], text("spec.volumeName")),
		col("Capacity", pvcStatus["capacity"], computed(claimCapacity, "spec.volumeName", "status.capacity.storage")),
		col("Access Modes", pvcStatus["accessModes"], computed(claimAccessModes, "spec.volumeName", "status.accessModes")),
		col("StorageClass", "StorageClass of the pvc", computed(storageClassOf, "metadata.annotations", "spec.storageClassName")),
		col("VolumeAttributesClass", "VolumeAttributesClass of the pvc", optional("spec.volumeAttributesClassName", "<unset>")),
		ageColumn,
		col("VolumeMode", pvcSpec["volumeMode"], optional("spec.volumeMode", "<unset>")).wide(),
	},
	"/persistentvolumes": {
		nameColumn,
		col("Capacity", pvSpec["capacity"], quantity("spec.capacity.storage")),
		col("Access Modes", pvSpec["accessModes"], computed(accessModes, "spec.accessModes")),
		col("Reclaim Policy", pvSpec["persistentVolumeReclaimPolicy"], text("spec.persistentVolumeReclaimPolicy")),
		col("Status", pvStatus["phase"], computed(volumePhase, "status.phase", "metadata.deletionTimestamp")),
		col("Claim", pvSpec["claimRef"], computed(claim, "spec.claimRef", "spec.claimRef.namespace", "spec.claimRef.name")),
		col("StorageClass", "StorageClass of the pv", computed(storageClassOf, "metadata.annotations", "spec.storageClassName")),
		col("VolumeAttributesClass", "VolumeAttributesClass of the pv", optional("spec.volumeAttributesClassName", "<unset>")),
		col("Reason", pvStatus["reason"], text("status.reason")),
		ageColumn,
		col("VolumeMode", pvSpec["volumeMode"], optional("spec.volumeMode", "<unset>")).wide(),
	},
	"/replicationcontrollers": {
		nameColumn,
		col("Desired", rcSpec["replicas"], integer("spec.replicas")).ofType("integer"),
		col("Current", rcStatus["replicas"], integer("status.replicas")).ofType("integer"),
		col("Ready", rcStatus["readyReplicas"], integer("status.readyReplicas")).ofType("integer"),
		ageColumn,
		containersColumn("spec.template.spec.containers").wide(),
		imagesColumn("spec.template.spec.containers").wide(),
		col("Selector", rcSpec["selector"], labelMap("spec.selector")).wide(),
	},
	"/podtemplates": {
		nameColumn,
		containersColumn("template.spec.containers"),
		imagesColumn("template.spec.containers"),
		col("Pod Labels", "The labels for the pod template.", labelMap("template.metadata.labels")),
	},
	"coordination.k8s.io/leases": {
		nameColumn,
		col("Holder", coordinationv1.LeaseSpec{}.SwaggerDoc()["holderIdentity"], text("spec.holderIdentity")),
		ageColumn,
	},
	"apps/deployments": {
		nameColumn,
		col("Ready", readyPodsDoc, ratio("status.readyReplicas", "spec.replicas")),
		col("Up-to-date", appsv1.DeploymentStatus{}.SwaggerDoc()["updatedReplicas"], integer("status.updatedReplicas")),
		col("Available", appsv1.DeploymentStatus{}.SwaggerDoc()["availableReplicas"], integer("status.availableReplicas")),
		ageColumn,
		containersColumn("spec.template.spec.containers").wide(),
		imagesColumn("spec.template.spec.containers").wide(),
		col("Selector", appsv1.DeploymentSpec{}.SwaggerDoc()["selector"], computed(deploymentSelector, "spec.selector")).wide(),
	},
	"apps/replicasets": {
		nameColumn,
		col("Desired", rsSpec["replicas"], integer("spec.replicas")).ofType("integer"),
		col("Current", rsStatus["replicas"], integer("status.replicas")).ofType("integer"),
		col("Ready", rsStatus["readyReplicas"], integer("status.readyReplicas")).ofType("integer"),
		ageColumn,
		containersColumn("spec.template.spec.containers").wide(),
		imagesColumn("spec.template.spec.containers").wide(),
		col("Selector", rsSpec["selector"], labelSelector("spec.selector")).wide(),
	},
	"apps/statefulsets": {
		nameColumn,
		col("Ready", readyPodsDoc, ratio("status.readyReplicas", "spec.replicas")),
		ageColumn,
		containersColumn("spec.template.spec.containers").wide(),
		imagesColumn("spec.template.spec.containers").wide(),
	},
	"apps/daemonsets": {
		nameColumn,
		col("Desired", dsStatus["desiredNumberScheduled"], integer("status.desiredNumberScheduled")).ofType("integer"),
		col("Current", dsStatus["currentNumberScheduled"], integer("status.currentNumberScheduled")).ofType("integer"),
		col("Ready", dsStatus["numberReady"], integer("status.numberReady")).ofType("integer"),
		col("Up-to-date", dsStatus["updatedNumberScheduled"], integer("status.updatedNumberScheduled")).ofType("integer"),
		col("Available", dsStatus["numberAvailable"], integer("status.numberAvailable")).ofType("integer"),
		col("Node Selector", podSpec["nodeSelector"], labelMap("spec.template.spec.nodeSelector")),
		ageColumn,
		containersColumn("spec.template.spec.containers").wide(),
		imagesColumn("spec.template.spec.containers").wide(),
		col("Selector", dsSpec["selector"], labelSelector("spec.selector")).wide(),
	},
	"apps/controllerrevisions": {
		nameColumn,
		col("Controller", "Controller of the object", computed(controller, "metadata.ownerReferences")),
		col("Revision", appsv1.ControllerRevision{}.SwaggerDoc()["revision"], integer("revision")),
		ageColumn,
	},
	"batch/jobs": {
		nameColumn,
		col("Status", "Status of the job.", computed(jobStatus, "status.conditions", "metadata.deletionTimestamp")),
		col("Completions", batchv1.JobStatus{}.SwaggerDoc()["succeeded"], computed(completions, "status.succeeded", "spec.completions", "spec.parallelism")),
		col("Duration", "Time required to complete the job.", computed(jobDuration, "status.startTime", "status.completionTime")),
		ageColumn,
		containersColumn("spec.template.spec.containers").wide(),
		imagesColumn("spec.template.spec.containers").wide(),
		col("Selector", jobSpec["selector"], labelSelector("spec.selector")).wide(),
	},
	"batch/cronjobs": {
		nameColumn,
		col("Schedule", cronJobSpec["schedule"], text("spec.schedule")),
		col("Timezone", cronJobSpec["timeZone"], optional("spec.timeZone", "<none>")),
		col("Suspend", cronJobSpec["suspend"], computed(suspend, "spec.suspend")).ofType("boolean"),
		col("Active", cronJobStatus["active"], count("status.active")).ofType("integer"),
		col("Last Schedule", cronJobStatus["lastScheduleTime"], computed(lastSchedule, "status.lastScheduleTime")),
		ageColumn,
		containersColumn("spec.jobTemplate.spec.template.spec.containers").wide(),
		imagesColumn("spec.jobTemplate.spec.template.spec.containers").wide(),
		col("Selector", jobSpec["selector"], labelSelector("spec.jobTemplate.spec.selector")).wide(),
	},
	"discovery.k8s.io/endpointslices": {
		nameColumn,
		col("AddressType", endpointSlice["addressType"], text("addressType")),
		col("Ports", endpointSlice["ports"], computed(slicePorts, "ports")),
		col("Endpoints", endpointSlice["endpoints"], computed(sliceEndpoints, "endpoints")),
		ageColumn,
	},
	"policy/poddisruptionbudgets": {
		nameColumn,
		col("Min Available", "The minimum number of pods that must be available.", optional("spec.minAvailable", "N/A")),
		col("Max Unavailable", "The maximum number of pods that may be unavailable.", optional("spec.maxUnavailable", "N/A")),
		col("Allowed Disruptions", "Calculated number of pods that may be disrupted at this time.", integer("status.disruptionsAllowed")).ofType("integer"),
		ageColumn,
	},
	"networking.k8s.io/ingresses": {
		nameColumn,
		col("Class", "The name of the IngressClass resource that should be used for additional configuration", optional("spec.ingressClassName", "<none>")),
		col("Hosts", "Hosts that incoming requests are matched against before the ingress rule", computed(ingressHosts, "spec.rules")),
		col("Address", "Address is a list containing ingress points for the load-balancer", computed(loadBalancerAddress, "status.loadBalancer.ingress")),
		col("Ports", "Ports of TLS configurations that open", computed(ingressPorts, "spec.tls")),
		ageColumn,
	},
	"networking.k8s.io/ingressclasses": {
		{name: "Name", typ: "string", format: "name", description: objectMeta["name"], cell: computed(defaultName(networkingv1.AnnotationIsDefaultIngressClass), "metadata.name", "metadata.annotations")},
		col("Controller", "Controller that is responsible for handling this class", text("spec.controller")),
		col("Parameters", "A reference to a resource with additional parameters", computed(ingressClassParameters, "spec.parameters", "spec.parameters.kind", "spec.parameters.apiGroup", "spec.parameters.name")),
		ageColumn,
	},
	"networking.k8s.io/networkpolicies": {
		nameColumn,
		col("Pod-Selector", networkingv1.NetworkPolicySpec{}.SwaggerDoc()["podSelector"], labelSelector("spec.podSelector")),
		ageColumn,
	},
	"scheduling.k8s.io/priorityclasses": {
		nameColumn,
		col("Value", priorityClass["value"], integer("value")).ofType("integer"),
		col("Global-Default", priorityClass["globalDefault"], boolean("globalDefault")).ofType("boolean"),
		ageColumn,
		col("PreemptionPolicy", priorityClass["preemptionPolicy"], text("preemptionPolicy")),
	},
	"storage.k8s.io/storageclasses": {
		{name: "Name", typ: "string", format: "name", description: objectMeta["name"], cell: computed(defaultName(defaultStorageClass, betaDefaultStorageClass), "metadata.name", "metadata.annotations")},
		col("Provisioner", storageClass["provisioner"], text("provisioner")),
		col("ReclaimPolicy", storageClass["reclaimPolicy"], optional("reclaimPolicy", "Delete")),
		col("VolumeBindingMode", storageClass["volumeBindingMode"], optional("volumeBindingMode", "Immediate")),
		col("AllowVolumeExpansion", storageClass["allowVolumeExpansion"], boolean("allowVolumeExpansion")),
		ageColumn,
	},
	"rbac.authorization.k8s.io/roles":               {nameColumn, createdAt},
	"rbac.authorization.k8s.io/clusterroles":        {nameColumn, createdAt},
	"rbac.authorization.k8s.io/rolebindings":        bindingColumns(rbacv1beta1.RoleBinding{}.SwaggerDoc()["roleRef"], "roleBinding"),
	"rbac.authorization.k8s.io/clusterrolebindings": bindingColumns(rbacv1beta1.ClusterRoleBinding{}.SwaggerDoc()["roleRef"], "clusterRoleBinding"),
})

// bindingColumns are the columns of role bindings and cluster role
// bindings (kind names the kind in the descriptions).
func bindingColumns(roleRef, kind string) []column {
	return []column{
		nameColumn,
		col("Role", roleRef, computed(roleRefName, "roleRef.kind", "roleRef.name")),
		ageColumn,
		col("Users", "Users in the "+kind, subjects("User")).wide(),
		col("Groups", "Groups in the "+kind, subjects("Group")).wide(),
		col("ServiceAccounts", "ServiceAccounts in the "+kind, subjects("ServiceAccount")).wide(),
	}
}

// tables builds the table of each kind.
func tables(kinds map[string][]column) map[string]*Table {
	t := make(map[string]*Table, len(kinds))
	for key, columns := range kinds {
		t[key] = newTable(columns)
	}
	return t
}

// col is a column of type string and priority 0.
func col(name, description string, c cell) column {
	return column{name: name, typ: "string", description: description, cell: c}
}

// ofType is the column with another type.
func (c column) ofType(typ string) column {
	c.typ = typ
	return c
}

// wide is the column with priority 1: kubectl shows it with -o wide.
func (c column) wide() column {
	c.priority = 1
	return c
}

// containersColumn is the column of the names of the containers at path.
func containersColumn(path string) column {
	return col("Containers", containersDoc, containers(path, "name"))
}

// imagesColumn is the column of the images of the containers at path.
func imagesColumn(path string) column {
	return col("Images", imagesDoc, containers(path, "image"))
}
