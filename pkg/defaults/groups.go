// The defaults of the kinds of the other default groups (autoscaling,
// certificates, storage's CSIDriver, flowcontrol, resource,
// apiregistration), read off kube-apiserver 1.37's defaulters and
// strategies and checked against its answers (e2e/testdata/defaults).

package defaults

import (
	"maps"
	"time"
)

func init() {
	maps.Copy(kinds, groupKinds)
	maps.Copy(onCreate, groupOnCreate)
}

// hpaScalingPolicy is one policy of an HPA's scaling rules.
func hpaScalingPolicy(typ string, value int64) map[string]any {
	return map[string]any{"type": typ, "value": value, "periodSeconds": int64(15)}
}

// claimDevices are the devices of a ResourceClaim's spec, also in a
// template.
var claimDevices = []Rule{
	{Path: "devices.requests[].exactly", Fn: defaultAllocationMode},
	{Path: "devices.requests[].firstAvailable[]", Fn: defaultAllocationMode},
}

// groupKinds are the defaults applied on every write, by "group/Kind".
var groupKinds = map[string][]Rule{
	"autoscaling/HorizontalPodAutoscaler": {
		{Path: "metadata", Fn: dropHPARoundTripAnnotations},
		{Path: "spec.minReplicas", Value: int64(1)},
		{Path: "spec", Fn: defaultHPAMetrics},
		// Scaling rules are filled in only when the HPA has a behavior.
		{Path: "spec.behavior.scaleUp", Value: map[string]any{}},
		{Path: "spec.behavior.scaleUp.stabilizationWindowSeconds", Value: int64(0)},
		{Path: "spec.behavior.scaleUp.selectPolicy", Value: "Max"},
		{Path: "spec.behavior.scaleUp.policies", Value: []any{hpaScalingPolicy("Pods", 4), hpaScalingPolicy("Percent", 100)}},
		{Path: "spec.behavior.scaleDown", Value: map[string]any{}},
		{Path: "spec.behavior.scaleDown.selectPolicy", Value: "Max"},
		{Path: "spec.behavior.scaleDown.policies", Value: []any{hpaScalingPolicy("Percent", 100)}},
	},
	"certificates.k8s.io/PodCertificateRequest": {{Path: "spec.maxExpirationSeconds", Value: int64(86400)}},
	"storage.k8s.io/CSIDriver": {
		{Path: "spec.attachRequired", Value: true},
		{Path: "spec.podInfoOnMount", Value: false},
		{Path: "spec.storageCapacity", Value: false},
		{Path: "spec.fsGroupPolicy", Value: "ReadWriteOnceWithFSType"},
		{Path: "spec", Fn: defaultVolumeLifecycleModes},
		{Path: "spec.requiresRepublish", Value: false},
		{Path: "spec.seLinuxMount", Value: false},
		{Path: "spec.preventPodSchedulingIfMissing", Value: false},
	},
	"flowcontrol.apiserver.k8s.io/FlowSchema": {{Path: "spec", Fn: defaultMatchingPrecedence}},
	"flowcontrol.apiserver.k8s.io/PriorityLevelConfiguration": {
		{Path: "spec.limited.nominalConcurrencyShares", Value: int64(30)},
		{Path: "spec.limited.lendablePercent", Value: int64(0)},
		{Path: "spec.limited.limitResponse.queuing", Fn: defaultQueuing},
		{Path: "spec.exempt.nominalConcurrencyShares", Value: int64(0)},
		{Path: "spec.exempt.lendablePercent", Value: int64(0)},
	},
	"resource.k8s.io/ResourceClaim":         under("spec", claimDevices),
	"resource.k8s.io/ResourceClaimTemplate": under("spec.spec", claimDevices),
	"resource.k8s.io/DeviceTaintRule":       {{Path: "spec.taint", Fn: defaultTimeAdded}},
}

// groupOnCreate are what the kinds' strategies set on a new object, by
// "group/Kind": a local APIService (no service) is available at once.
var groupOnCreate = map[string][]Rule{
	"apiregistration.k8s.io/APIService": {{Path: "", Fn: setLocalAvailable}},
}

// defaultHPAMetrics: an HPA without metrics targets 80% CPU utilization.
func defaultHPAMetrics(spec map[string]any) {
	if metrics, _ := spec["metrics"].([]any); len(metrics) > 0 {
		return
	}
	spec["metrics"] = []any{map[string]any{"type": "Resource", "resource": map[string]any{
		"name": "cpu", "target": map[string]any{"type": "Utilization", "averageUtilization": int64(80)}}}}
}

// dropHPARoundTripAnnotations: an autoscaling/v2 HPA keeps none of the
// annotations in which autoscaling/v1 carries what it cannot express
// (kube-apiserver's conversion from v2 drops them).
func dropHPARoundTripAnnotations(meta map[string]any) {
	annotations, _ := meta["annotations"].(map[string]any)
	if annotations == nil {
		return
	}
	for _, k := range []string{"autoscaling.alpha.kubernetes.io/metrics", "autoscaling.alpha.kubernetes.io/current-metrics",
		"autoscaling.alpha.kubernetes.io/conditions", "autoscaling.alpha.kubernetes.io/behavior"} {
		delete(annotations, k)
	}
	if len(annotations) == 0 {
		delete(meta, "annotations")
	}
}

// defaultVolumeLifecycleModes: a CSI driver without modes serves
// Persistent volumes.
func defaultVolumeLifecycleModes(spec map[string]any) {
	if modes, _ := spec["volumeLifecycleModes"].([]any); len(modes) == 0 {
		spec["volumeLifecycleModes"] = []any{"Persistent"}
	}
}

// defaultMatchingPrecedence: a FlowSchema's precedence 0 (or none) is
// 1000.
func defaultMatchingPrecedence(spec map[string]any) {
	if isZero(spec["matchingPrecedence"]) {
		spec["matchingPrecedence"] = int64(1000)
	}
}

// defaultQueuing: a priority level's zero queuing parameters are 64
// queues, hand size 8 and queue length limit 50.
func defaultQueuing(q map[string]any) {
	for field, v := range map[string]int64{"handSize": 8, "queues": 64, "queueLengthLimit": 50} {
		if isZero(q[field]) {
			q[field] = v
		}
	}
}

// isZero reports whether a JSON integer is absent or 0.
func isZero(v any) bool {
	n, _ := v.(int64)
	return n == 0
}

// defaultAllocationMode: a device request allocates ExactCount devices,
// 1 unless it says how many.
func defaultAllocationMode(req map[string]any) {
	if mode, _ := req["allocationMode"].(string); mode == "" {
		req["allocationMode"] = "ExactCount"
	}
	if req["allocationMode"] == "ExactCount" && isZero(req["count"]) {
		req["count"] = int64(1)
	}
}

// defaultTimeAdded: a device taint without its time was added now.
func defaultTimeAdded(taint map[string]any) {
	if taint["timeAdded"] == nil {
		taint["timeAdded"] = time.Now().UTC().Format(time.RFC3339)
	}
}

// setLocalAvailable: a new APIService without a service is served by this
// server and Available, as kube-aggregator's strategy marks it.
func setLocalAvailable(obj map[string]any) {
	spec, _ := obj["spec"].(map[string]any)
	if spec != nil && spec["service"] != nil {
		return
	}
	status, _ := obj["status"].(map[string]any)
	if status == nil {
		status = map[string]any{}
		obj["status"] = status
	}
	status["conditions"] = []any{map[string]any{"type": "Available", "status": "True",
		"lastTransitionTime": time.Now().UTC().Format(time.RFC3339), "reason": "Local",
		"message": "Local APIServices are always available"}}
}

// requesterKinds are the kinds whose new objects name the user who
// created them, by "group/Kind": a CertificateSigningRequest's
// spec.username, uid, groups and extra (its strategy sets them; a
// client's are ignored).
var requesterKinds = map[string]bool{"certificates.k8s.io/CertificateSigningRequest": true}

// SetRequester records the user creating obj, of kind group/kind, where
// the kind's strategy does (requesterKinds); other kinds are left as
// they are.
func SetRequester(group, kind string, obj map[string]any, name, uid string, groups []string, extra map[string][]string) {
	if !requesterKinds[group+"/"+kind] {
		return
	}
	spec, _ := obj["spec"].(map[string]any)
	if spec == nil {
		spec = map[string]any{}
		obj["spec"] = spec
	}
	for _, f := range []string{"username", "uid", "groups", "extra"} {
		delete(spec, f)
	}
	if name != "" {
		spec["username"] = name
	}
	if uid != "" {
		spec["uid"] = uid
	}
	if len(groups) > 0 {
		list := make([]any, len(groups))
		for i, g := range groups {
			list[i] = g
		}
		spec["groups"] = list
	}
	if len(extra) > 0 {
		m := make(map[string]any, len(extra))
		for k, vs := range extra {
			list := make([]any, len(vs))
			for i, v := range vs {
				list[i] = v
			}
			m[k] = list
		}
		spec["extra"] = m
	}
}
