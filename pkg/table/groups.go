// The columns of the kinds of the other default groups (autoscaling,
// certificates, node, the CSI and IP address kinds, apiregistration,
// flowcontrol, resource, storagemigration) and their computed cells, as
// kube-apiserver 1.37 prints them (pkg/printers/internalversion; the
// APIService table is kube-aggregator's).

package table

import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	certificatesv1 "k8s.io/api/certificates/v1"
	certificatesv1beta1 "k8s.io/api/certificates/v1beta1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	networkingv1 "k8s.io/api/networking/v1"
	resourcev1 "k8s.io/api/resource/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/duration"
)

func init() { maps.Copy(builtins, tables(groupColumns)) }

var (
	hpaSpec   = autoscalingv2.HorizontalPodAutoscalerSpec{}.SwaggerDoc()
	csrSpec   = certificatesv1beta1.CertificateSigningRequestSpec{}.SwaggerDoc()
	pcrSpec   = certificatesv1.PodCertificateRequestSpec{}.SwaggerDoc()
	csiDriver = storagev1.CSIDriverSpec{}.SwaggerDoc()
	queuing   = flowcontrolv1.QueuingConfiguration{}.SwaggerDoc()
	taint     = resourcev1.DeviceTaint{}.SwaggerDoc()
	sliceSpec = resourcev1.ResourceSliceSpec{}.SwaggerDoc()
)

// groupColumns are the tables of the other default groups' kinds by
// group/resource. kube-apiserver has no printer for CSIStorageCapacities
// wired (its default table) and prints an IPAddress's age in a cell it
// defines no column for.
var groupColumns = map[string][]column{
	"autoscaling/horizontalpodautoscalers": {
		nameColumn,
		col("Reference", hpaSpec["scaleTargetRef"], computed(func(v []raw, _ *row) any { return v[0].str() + "/" + v[1].str() },
			"spec.scaleTargetRef.kind", "spec.scaleTargetRef.name")),
		col("Targets", hpaSpec["metrics"], computed(hpaMetrics, "spec.metrics", "status.currentMetrics")),
		col("MinPods", hpaSpec["minReplicas"], optional("spec.minReplicas", "<unset>")),
		col("MaxPods", hpaSpec["maxReplicas"], integer("spec.maxReplicas")),
		col("Replicas", autoscalingv2.HorizontalPodAutoscalerStatus{}.SwaggerDoc()["currentReplicas"], integer("status.currentReplicas")),
		ageColumn,
	},
	"certificates.k8s.io/certificatesigningrequests": {
		nameColumn,
		ageColumn,
		col("SignerName", csrSpec["signerName"], textOr("spec.signerName", "<none>")),
		col("Requestor", csrSpec["request"], text("spec.username")),
		col("RequestedDuration", csrSpec["expirationSeconds"], computed(requestedDuration, "spec.expirationSeconds")),
		col("Condition", certificatesv1beta1.CertificateSigningRequestStatus{}.SwaggerDoc()["conditions"],
			computed(csrCondition, "status.conditions", "status.certificate")),
	},
	"certificates.k8s.io/clustertrustbundles": {
		nameColumn,
		col("SignerName", certificatesv1.ClusterTrustBundleSpec{}.SwaggerDoc()["signerName"], textOr("spec.signerName", "<none>")),
	},
	"certificates.k8s.io/podcertificaterequests": {
		nameColumn,
		col("PodName", pcrSpec["podName"], text("spec.podName")),
		col("ServiceAccountName", pcrSpec["serviceAccountName"], text("spec.serviceAccountName")),
		col("NodeName", pcrSpec["nodeName"], text("spec.nodeName")),
		col("SignerName", pcrSpec["signerName"], text("spec.signerName")),
		col("State", "Is the request Pending, Issued, Denied, or Failed?", computed(podCertificateState, "status.conditions")),
		col("UnverifiedUserAnnotations", pcrSpec["unverifiedUserAnnotations"], labelMap("spec.unverifiedUserAnnotations")),
	},
	// kube's printer describes the handler by ObjectMeta's (absent) handler.
	"node.k8s.io/runtimeclasses": {nameColumn, col("Handler", "", text("handler")), ageColumn},
	"storage.k8s.io/csidrivers": {
		nameColumn,
		col("AttachRequired", csiDriver["attachRequired"], boolOr("spec.attachRequired", true)).ofType("boolean"),
		col("PodInfoOnMount", csiDriver["podInfoOnMount"], boolean("spec.podInfoOnMount")).ofType("boolean"),
		col("StorageCapacity", csiDriver["storageCapacity"], boolean("spec.storageCapacity")).ofType("boolean"),
		col("TokenRequests", csiDriver["tokenRequests"], computed(tokenAudiences, "spec.tokenRequests")),
		col("RequiresRepublish", csiDriver["requiresRepublish"], boolean("spec.requiresRepublish")).ofType("boolean"),
		col("Modes", csiDriver["volumeLifecycleModes"], computed(joined(",", "<none>"), "spec.volumeLifecycleModes")),
		ageColumn,
	},
	"storage.k8s.io/csinodes": {
		nameColumn,
		col("Drivers", "Drivers indicates the number of CSI drivers registered on the node", count("spec.drivers")).ofType("integer"),
		ageColumn,
	},
	"storage.k8s.io/csistoragecapacities": {nameColumn, createdAt},
	"storage.k8s.io/volumeattachments": {
		nameColumn,
		{name: "Attacher", typ: "string", format: "name", description: storagev1.VolumeAttachmentSpec{}.SwaggerDoc()["attacher"], cell: text("spec.attacher")},
		col("PV", storagev1.VolumeAttachmentSource{}.SwaggerDoc()["persistentVolumeName"], text("spec.source.persistentVolumeName")),
		col("Node", storagev1.VolumeAttachmentSpec{}.SwaggerDoc()["nodeName"], text("spec.nodeName")),
		col("Attached", storagev1.VolumeAttachmentStatus{}.SwaggerDoc()["attached"], boolean("status.attached")).ofType("boolean"),
		ageColumn,
	},
	"storage.k8s.io/volumeattributesclasses": {
		nameColumn,
		col("DriverName", storagev1.VolumeAttributesClass{}.SwaggerDoc()["driverName"], text("driverName")),
		ageColumn,
	},
	"networking.k8s.io/ipaddresses": {
		nameColumn,
		col("ParentRef", networkingv1.IPAddressSpec{}.SwaggerDoc()["parentRef"], computed(parentRef,
			"spec.parentRef", "spec.parentRef.group", "spec.parentRef.resource", "spec.parentRef.namespace", "spec.parentRef.name")),
		ageColumn.undefined(),
	},
	"networking.k8s.io/servicecidrs": {
		nameColumn,
		col("CIDRs", networkingv1.ServiceCIDRSpec{}.SwaggerDoc()["cidrs"], computed(joined(",", ""), "spec.cidrs")),
		ageColumn,
	},
	"apiregistration.k8s.io/apiservices": {
		nameColumn,
		col("Service", "The reference to the service that hosts this API endpoint.", computed(apiServiceService,
			"spec.service", "spec.service.namespace", "spec.service.name")),
		col("Available", "Whether this service is available.", computed(apiServiceAvailable, "status.conditions")),
		ageColumn,
	},
	"flowcontrol.apiserver.k8s.io/flowschemas": {
		nameColumn,
		col("PriorityLevel", flowcontrolv1.PriorityLevelConfigurationReference{}.SwaggerDoc()["name"], text("spec.priorityLevelConfiguration.name")),
		col("MatchingPrecedence", flowcontrolv1.FlowSchemaSpec{}.SwaggerDoc()["matchingPrecedence"], integer("spec.matchingPrecedence")),
		col("DistinguisherMethod", flowcontrolv1.FlowSchemaSpec{}.SwaggerDoc()["distinguisherMethod"],
			computed(func(v []raw, _ *row) any { return or(v[0].str(), "<none>") }, "spec.distinguisherMethod.type")),
		ageColumn,
		col("MissingPL", "references a broken or non-existent PriorityLevelConfiguration", computed(danglingCondition, "status.conditions")),
	},
	"flowcontrol.apiserver.k8s.io/prioritylevelconfigurations": {
		nameColumn,
		col("Type", flowcontrolv1.PriorityLevelConfigurationSpec{}.SwaggerDoc()["type"], text("spec.type")),
		col("NominalConcurrencyShares", flowcontrolv1.LimitedPriorityLevelConfiguration{}.SwaggerDoc()["nominalConcurrencyShares"],
			limitedInt("spec.limited", "spec.limited.nominalConcurrencyShares")),
		col("Queues", queuing["queues"], limitedInt("spec.limited.limitResponse.queuing", "spec.limited.limitResponse.queuing.queues")),
		col("HandSize", queuing["handSize"], limitedInt("spec.limited.limitResponse.queuing", "spec.limited.limitResponse.queuing.handSize")),
		col("QueueLengthLimit", queuing["queueLengthLimit"],
			limitedInt("spec.limited.limitResponse.queuing", "spec.limited.limitResponse.queuing.queueLengthLimit")),
		ageColumn,
	},
	"resource.k8s.io/deviceclasses": {nameColumn, ageColumn},
	"resource.k8s.io/devicetaintrules": {
		nameColumn,
		col("Key", taint["key"], text("spec.taint.key")),
		col("Value", taint["value"], text("spec.taint.value")),
		col("Effect", taint["effect"], text("spec.taint.effect")),
		col("TimeAdded", taint["timeAdded"], computed(func(v []raw, r *row) any {
			if !v[0].present() {
				return ""
			}
			return since(v[0].time(), r.now)
		}, "spec.taint.timeAdded")),
		ageColumn,
	},
	"resource.k8s.io/resourceclaims": {
		nameColumn,
		col("State", "A summary of the current state (allocated, pending, reserved, etc.).",
			computed(claimState, "metadata.deletionTimestamp", "status.allocation", "status.reservedFor")),
		ageColumn,
	},
	"resource.k8s.io/resourceclaimtemplates": {nameColumn, ageColumn},
	"resource.k8s.io/resourceslices": {
		nameColumn,
		col("Node", sliceSpec["nodeName"], text("spec.nodeName")),
		col("Driver", sliceSpec["driver"], text("spec.driver")),
		col("Pool", resourcev1.ResourcePool{}.SwaggerDoc()["name"], text("spec.pool.name")),
		ageColumn,
	},
	"storagemigration.k8s.io/storageversionmigrations": {
		col("Name", objectMeta["name"], text("metadata.name")),
		col("Resource", "GroupResource to migrate", computed(groupResource, "spec.resource.resource", "spec.resource.group")),
		col("Status", "Status of the migration", computed(migrationStatus, "status.conditions")),
	},
}

// boolOr is the boolean at path, or def when it is absent.
func boolOr(path string, def bool) cell {
	return cell{[]string{path}, func(v []raw, _ *row) any {
		if !v[0].present() {
			return def
		}
		return v[0].bool()
	}}
}

// limitedInt is the integer at path when the object at parent is present,
// "<none>" otherwise.
func limitedInt(parent, path string) cell {
	return cell{[]string{parent, path}, func(v []raw, _ *row) any {
		if !v[0].present() {
			return "<none>"
		}
		return v[1].int()
	}}
}

// joined joins the strings of a list with sep, none when empty.
func joined(sep, none string) func(v []raw, _ *row) any {
	return func(v []raw, _ *row) any {
		var items []string
		for e := range v[0].elements() {
			items = append(items, e.str())
		}
		return or(strings.Join(items, sep), none)
	}
}

// tokenAudiences are a CSI driver's token requests' audiences,
// "<unset>" without token requests.
func tokenAudiences(v []raw, _ *row) any {
	if !v[0].present() {
		return "<unset>"
	}
	var audiences []string
	for t := range v[0].elements() {
		audiences = append(audiences, t.get("audience").str())
	}
	return strings.Join(audiences, ",")
}

// requestedDuration is a CSR's expirationSeconds as a duration, "<none>"
// when unset.
func requestedDuration(v []raw, _ *row) any {
	if !v[0].present() {
		return "<none>"
	}
	return duration.HumanDuration(time.Duration(v[0].int()) * time.Second)
}

// csrCondition sums up a CSR's conditions: Denied, Approved or Pending,
// then Failed and Issued.
func csrCondition(v []raw, _ *row) any {
	var approved, denied, failed bool
	for c := range v[0].elements() {
		switch c.get("type").str() {
		case "Approved":
			approved = true
		case "Denied":
			denied = true
		case "Failed":
			failed = true
		}
	}
	status := "Pending"
	if denied {
		status = "Denied"
	} else if approved {
		status = "Approved"
	}
	if failed {
		status += ",Failed"
	}
	if v[1].str() != "" {
		status += ",Issued"
	}
	return status
}

// podCertificateState is the last of the Issued, Denied and Failed
// conditions of a PodCertificateRequest, else Pending.
func podCertificateState(v []raw, _ *row) any {
	state := "Pending"
	for c := range v[0].elements() {
		switch t := c.get("type").str(); t {
		case "Issued", "Denied", "Failed":
			state = t
		}
	}
	return state
}

// parentRef is an IPAddress's parent as "resource.group/namespace/name",
// "<none>" without one.
func parentRef(v []raw, _ *row) any {
	if !v[0].present() {
		return "<none>"
	}
	s := strings.ToLower(v[2].str())
	if g := v[1].str(); g != "" {
		s += "." + strings.ToLower(g)
	}
	if ns := v[3].str(); ns != "" {
		s += "/" + ns
	}
	return s + "/" + v[4].str()
}

// apiServiceService is the service of an APIService as "namespace/name",
// "Local" without one.
func apiServiceService(v []raw, _ *row) any {
	if !v[0].present() {
		return "Local"
	}
	return v[1].str() + "/" + v[2].str()
}

// apiServiceAvailable is the status of an APIService's Available
// condition, with its reason when not True; Unknown without one.
func apiServiceAvailable(v []raw, _ *row) any {
	for c := range v[0].elements() {
		if c.get("type").str() != "Available" {
			continue
		}
		status, reason := c.get("status").str(), c.get("reason").str()
		if status != "True" && reason != "" {
			return fmt.Sprintf("%s (%s)", status, reason)
		}
		return status
	}
	return "Unknown"
}

// danglingCondition is the status of a FlowSchema's Dangling condition,
// "?" without one.
func danglingCondition(v []raw, _ *row) any {
	for c := range v[0].elements() {
		if c.get("type").str() == "Dangling" {
			return c.get("status").str()
		}
	}
	return "?"
}

// claimState sums up a ResourceClaim: deleted, pending, allocated,
// reserved.
func claimState(v []raw, _ *row) any {
	var states []string
	deleted := v[0].present()
	if deleted {
		states = append(states, "deleted")
	}
	if !v[1].present() {
		if !deleted {
			states = append(states, "pending")
		}
	} else {
		states = append(states, "allocated")
		if v[2].count() > 0 {
			states = append(states, "reserved")
		}
	}
	return strings.Join(states, ",")
}

// groupResource is a GroupResource as "resource.group" ("resource" in
// the core group).
func groupResource(v []raw, _ *row) any {
	if g := v[1].str(); g != "" {
		return v[0].str() + "." + g
	}
	return v[0].str()
}

// migrationStatus is the type of a StorageVersionMigration's last true
// Running, Failed or Succeeded condition, else Unknown.
func migrationStatus(v []raw, _ *row) any {
	status := "Unknown"
	for c := range v[0].elements() {
		if c.get("status").str() != "True" {
			continue
		}
		switch t := c.get("type").str(); t {
		case "Running", "Failed", "Succeeded":
			status = t
		}
	}
	return status
}

// hpaMetrics are an HPA's metrics, "current/target" each, the first two
// and how many more, as kubectl shows them.
func hpaMetrics(v []raw, _ *row) any {
	var specs []autoscalingv2.MetricSpec
	var statuses []autoscalingv2.MetricStatus
	if v[0].present() {
		if err := json.Unmarshal(v[0], &specs); err != nil {
			return "<error>"
		}
	}
	if v[1].present() {
		_ = json.Unmarshal(v[1], &statuses)
	}
	if len(specs) == 0 {
		return "<none>"
	}
	var list []string
	for i, spec := range specs {
		var status *autoscalingv2.MetricStatus
		if i < len(statuses) {
			status = &statuses[i]
		}
		list = append(list, hpaMetric(spec, status))
	}
	if len(list) > 2 {
		return fmt.Sprintf("%s + %d more...", strings.Join(list[:2], ", "), len(list)-2)
	}
	return strings.Join(list, ", ")
}

// hpaMetric is one metric of an HPA as kubectl shows it.
func hpaMetric(spec autoscalingv2.MetricSpec, status *autoscalingv2.MetricStatus) string {
	const unknown = "<unknown>"
	valueOrAverage := func(target autoscalingv2.MetricTarget, current *autoscalingv2.MetricValueStatus) string {
		if target.AverageValue != nil {
			cur := unknown
			if current != nil && current.AverageValue != nil {
				cur = current.AverageValue.String()
			}
			return fmt.Sprintf("%s/%s (avg)", cur, target.AverageValue.String())
		}
		cur := unknown
		if current != nil {
			cur = quantityString(current.Value)
		}
		return fmt.Sprintf("%s/%s", cur, quantityString(target.Value))
	}
	resource := func(name string, target autoscalingv2.MetricTarget, current *autoscalingv2.MetricValueStatus) string {
		if target.AverageValue != nil {
			cur := unknown
			if current != nil {
				cur = quantityString(current.AverageValue)
			}
			return fmt.Sprintf("%s: %s/%s", name, cur, target.AverageValue.String())
		}
		cur := unknown
		if current != nil && current.AverageUtilization != nil {
			cur = fmt.Sprintf("%d%%", *current.AverageUtilization)
		}
		tgt := "<auto>"
		if target.AverageUtilization != nil {
			tgt = fmt.Sprintf("%d%%", *target.AverageUtilization)
		}
		return fmt.Sprintf("%s: %s/%s", name, cur, tgt)
	}
	switch {
	case spec.Type == autoscalingv2.ExternalMetricSourceType && spec.External != nil:
		var cur *autoscalingv2.MetricValueStatus
		if status != nil && status.External != nil {
			cur = &status.External.Current
		}
		return valueOrAverage(spec.External.Target, cur)
	case spec.Type == autoscalingv2.PodsMetricSourceType && spec.Pods != nil:
		cur := unknown
		if status != nil && status.Pods != nil {
			cur = quantityString(status.Pods.Current.AverageValue)
		}
		return fmt.Sprintf("%s/%s", cur, quantityString(spec.Pods.Target.AverageValue))
	case spec.Type == autoscalingv2.ObjectMetricSourceType && spec.Object != nil:
		var cur *autoscalingv2.MetricValueStatus
		if status != nil && status.Object != nil {
			cur = &status.Object.Current
		}
		return valueOrAverage(spec.Object.Target, cur)
	case spec.Type == autoscalingv2.ResourceMetricSourceType && spec.Resource != nil:
		var cur *autoscalingv2.MetricValueStatus
		if status != nil && status.Resource != nil {
			cur = &status.Resource.Current
		}
		return resource(string(spec.Resource.Name), spec.Resource.Target, cur)
	case spec.Type == autoscalingv2.ContainerResourceMetricSourceType && spec.ContainerResource != nil:
		var cur *autoscalingv2.MetricValueStatus
		if status != nil && status.ContainerResource != nil {
			cur = &status.ContainerResource.Current
		}
		return resource(string(spec.ContainerResource.Name), spec.ContainerResource.Target, cur)
	}
	return "<unknown type>"
}

// quantityString is a quantity in canonical form, "0" when nil (kube's
// internal types hold quantities, not pointers).
func quantityString(q *resource.Quantity) string {
	if q == nil {
		return "0"
	}
	return q.String()
}

// undefined is the column with its cell in every row but no definition:
// kube-apiserver's printer for IPAddresses prints an age it defines no
// column for.
func (c column) undefined() column {
	c.noDefinition = true
	return c
}
