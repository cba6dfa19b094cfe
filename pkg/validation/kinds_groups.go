// The checks of the kinds of the other default groups (autoscaling,
// certificates, node, storage's CSI kinds, apiregistration, flowcontrol,
// networking's ServiceCIDR, resource, storagemigration), with
// kube-apiserver 1.37's messages (recorded in e2e/testdata/invalid.json),
// and the checks they are built of.

package validation

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func init() { maps.Copy(kinds, groupKinds) }

// keyUsages are a CertificateSigningRequest's allowed usages, as
// kube-apiserver lists them.
var keyUsages = []string{"any", "cert sign", "client auth", "code signing", "content commitment", "crl sign", "data encipherment",
	"decipher only", "digital signature", "email protection", "encipher only", "ipsec end system", "ipsec tunnel", "ipsec user",
	"key agreement", "key encipherment", "microsoft sgc", "netscape sgc", "ocsp signing", "s/mime", "server auth", "signing",
	"timestamping"}

// versionKinds are the checks of the versions of a kind, by
// "group/version/Kind", whose fields differ from the version it is
// stored in: an autoscaling/v1 HPA's (its other metrics are in an
// annotation; errors have the paths of kube-apiserver's internal
// version, which v2 shares).
var versionKinds = map[string][]Check{
	"autoscaling/v1/HorizontalPodAutoscaler": {
		{Path: "spec", Object: maxReplicasAboveMin},
		required("spec.scaleTargetRef.kind"),
		required("spec.scaleTargetRef.name"),
		{Path: "spec.scaleTargetRef.apiVersion", Test: hpaTargetAPIVersion},
		{Path: "", Object: scaleToZeroV1Metrics},
		{Path: "spec.maxReplicas", Test: hpaMaxReplicas},
	},
}

// groupKinds are the checks of the other default groups' kinds, by
// "group/Kind", in kube-apiserver's order (its declarative checks, such
// as an HPA's required maxReplicas, after its handwritten ones).
var groupKinds = map[string][]Check{
	"autoscaling/HorizontalPodAutoscaler": {
		{Path: "spec", Object: maxReplicasAboveMin},
		required("spec.scaleTargetRef.kind"),
		required("spec.scaleTargetRef.name"),
		{Path: "spec.scaleTargetRef.apiVersion", Test: hpaTargetAPIVersion},
		{Path: "spec", Object: scaleToZeroMetrics},
		{Path: "spec.maxReplicas", Test: hpaMaxReplicas},
	},
	"certificates.k8s.io/CertificateSigningRequest": csrChecks,
	"certificates.k8s.io/ClusterTrustBundle":        ctbChecks,
	"node.k8s.io/RuntimeClass":                      {required("handler")},
	"storage.k8s.io/CSIDriver": {
		oneOf("spec.fsGroupPolicy", "File", "None", "ReadWriteOnceWithFSType"),
		eachOneOf("spec.volumeLifecycleModes", "Persistent", "Ephemeral"),
	},
	"storage.k8s.io/VolumeAttachment": {
		{Path: "spec", Object: func(p *field.Path, spec map[string]any) field.ErrorList {
			source, _ := spec["source"].(map[string]any)
			if source["inlineVolumeSpec"] == nil && source["persistentVolumeName"] == nil {
				return field.ErrorList{field.Required(p.Child("source"), "must specify exactly one of inlineVolumeSpec and persistentVolumeName")}
			}
			return nil
		}},
		dnsSubdomain("spec.nodeName"),
		required("spec.attacher"),
	},
	"storage.k8s.io/CSIStorageCapacity": {dnsSubdomain("storageClassName")},
	"storage.k8s.io/VolumeAttributesClass": {
		required("driverName"),
		requiredWith("parameters", "must contain at least one key/value pair"),
		immutable("driverName"),
	},
	"apiregistration.k8s.io/APIService": {
		{Path: "", Object: apiServiceName},
		{Path: "spec.group", Test: func(p *field.Path, v any, _ bool) field.ErrorList {
			s, _ := v.(string)
			if s == "" {
				return nil
			}
			return messages(p, s, utilvalidation.IsDNS1123Subdomain(s))
		}},
		{Path: "spec.version", Test: func(p *field.Path, v any, _ bool) field.ErrorList {
			s, _ := v.(string)
			return messages(p, s, utilvalidation.IsDNS1035Label(s))
		}},
		priorityBelow("spec.groupPriorityMinimum", 20000),
		priorityBelow("spec.versionPriority", 1000),
	},
	"flowcontrol.apiserver.k8s.io/FlowSchema": {
		{Path: "spec.matchingPrecedence", Test: func(p *field.Path, v any, _ bool) field.ErrorList {
			switch n, _ := v.(int64); {
			case n <= 0:
				return field.ErrorList{field.Invalid(p, n, "must be a positive value")}
			case n > 10000:
				return field.ErrorList{field.Invalid(p, n, "must not be greater than 10000")}
			}
			return nil
		}},
		requiredWith("spec.priorityLevelConfiguration.name", "must reference a priority level"),
	},
	"flowcontrol.apiserver.k8s.io/PriorityLevelConfiguration": {oneOf("spec.type", "Exempt", "Limited")},
	"networking.k8s.io/ServiceCIDR":                           {requiredWith("spec.cidrs", "at least one CIDR required")},
	"resource.k8s.io/ResourceClaim":                           under("spec", deviceRequests),
	"resource.k8s.io/ResourceClaimTemplate":                   under("spec.spec", deviceRequests),
	"resource.k8s.io/ResourceSlice": {
		required("spec.driver"),
		required("spec.pool.name"),
		{Path: "spec.pool.resourceSliceCount", Test: func(p *field.Path, v any, _ bool) field.ErrorList {
			if n, _ := v.(int64); n <= 0 {
				return field.ErrorList{field.Invalid(p, n, "must be greater than zero")}
			}
			return nil
		}},
	},
	"storagemigration.k8s.io/StorageVersionMigration": {
		requiredWith("spec.resource.resource", "resource is required to be set"),
	},
}

// deviceRequests: each request of a claim's spec is exactly one of a
// request for devices of one class and a list of alternatives.
var deviceRequests = []Check{{Path: "devices.requests[]", Object: func(p *field.Path, req map[string]any) field.ErrorList {
	if req["exactly"] == nil && req["firstAvailable"] == nil {
		return field.ErrorList{field.Required(p, "exactly one of `exactly` or `firstAvailable` is required")}
	}
	return nil
}}}

// maxReplicasAboveMin: an HPA's maxReplicas is at least its minReplicas.
func maxReplicasAboveMin(p *field.Path, spec map[string]any) field.ErrorList {
	min, hasMin := spec["minReplicas"].(int64)
	max, _ := spec["maxReplicas"].(int64)
	if hasMin && max < min {
		return field.ErrorList{field.Invalid(p.Child("maxReplicas"), max, "must be greater than or equal to `minReplicas`")}
	}
	return nil
}

func hpaTargetAPIVersion(p *field.Path, v any, _ bool) field.ErrorList {
	if s, _ := v.(string); s == "" {
		return field.ErrorList{field.Invalid(p, "", "apiVersion must specify API group")}
	}
	return nil
}

func hpaMaxReplicas(p *field.Path, v any, _ bool) field.ErrorList {
	if n, _ := v.(int64); n == 0 {
		return field.ErrorList{field.Required(p, "")}
	}
	return nil
}

// scaleToZeroV1Metrics is scaleToZeroMetrics of an autoscaling/v1 HPA,
// whose Object and External metrics are in its metrics annotation.
func scaleToZeroV1Metrics(_ *field.Path, obj map[string]any) field.ErrorList {
	spec, _ := obj["spec"].(map[string]any)
	if spec == nil {
		return nil
	}
	meta, _ := obj["metadata"].(map[string]any)
	annotations, _ := meta["annotations"].(map[string]any)
	raw, _ := annotations["autoscaling.alpha.kubernetes.io/metrics"].(string)
	var metrics []any
	_ = json.Unmarshal([]byte(raw), &metrics)
	withMetrics := maps.Clone(spec)
	withMetrics["metrics"] = metrics
	return scaleToZeroMetrics(field.NewPath("spec"), withMetrics)
}

// scaleToZeroMetrics: an HPA that may scale to zero has an Object or
// External metric.
func scaleToZeroMetrics(p *field.Path, spec map[string]any) field.ErrorList {
	if min, ok := spec["minReplicas"].(int64); !ok || min != 0 {
		return nil
	}
	metrics, _ := spec["metrics"].([]any)
	for _, m := range metrics {
		if m, _ := m.(map[string]any); m["type"] == "Object" || m["type"] == "External" {
			return nil
		}
	}
	return field.ErrorList{field.Forbidden(p.Child("metrics"), "must specify at least one Object or External metric to support scaling to zero replicas")}
}

// apiServiceName: an APIService is named version.group.
func apiServiceName(p *field.Path, obj map[string]any) field.ErrorList {
	meta, _ := obj["metadata"].(map[string]any)
	spec, _ := obj["spec"].(map[string]any)
	name, _ := meta["name"].(string)
	group, _ := spec["group"].(string)
	version, _ := spec["version"].(string)
	if want := version + "." + group; name != want {
		return field.ErrorList{field.Invalid(field.NewPath("metadata", "name"), name, fmt.Sprintf("must be `spec.version+\".\"+spec.group`: %q", want))}
	}
	return nil
}

// dnsSubdomain: a string field (empty when unset) is a DNS subdomain.
func dnsSubdomain(path string) Check {
	return Check{Path: path, Test: func(p *field.Path, v any, _ bool) field.ErrorList {
		s, _ := v.(string)
		return messages(p, s, utilvalidation.IsDNS1123Subdomain(s))
	}}
}

// priorityBelow: an APIService's priority is in 1..max.
func priorityBelow(path string, max int64) Check {
	return Check{Path: path, Test: func(p *field.Path, v any, _ bool) field.ErrorList {
		if n, _ := v.(int64); n <= 0 || n > max {
			return field.ErrorList{field.Invalid(p, n, fmt.Sprintf("must be positive and less than %d", max))}
		}
		return nil
	}}
}

// messages are one Invalid error of value at p for each message.
func messages(p *field.Path, value string, msgs []string) field.ErrorList {
	var errs field.ErrorList
	for _, m := range slices.Clip(msgs) {
		errs = append(errs, field.Invalid(p, value, m))
	}
	return errs
}
