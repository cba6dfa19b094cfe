package resource

import (
	corev1 "k8s.io/api/core/v1"
)

// Builtins returns the built-in core/v1 resources, fresh on each call.
func Builtins() []*Resource {
	return []*Resource{
		{Version: "v1", Kind: "Namespace", Plural: "namespaces", Singular: "namespace", ShortNames: []string{"ns"},
			SelectableFields: []string{"status.phase"}, StrategicMergeType: corev1.Namespace{}},
		{Version: "v1", Kind: "Node", Plural: "nodes", Singular: "node", ShortNames: []string{"no"},
			SelectableFields: []string{"spec.unschedulable"}, StrategicMergeType: corev1.Node{}},
		{Version: "v1", Kind: "Pod", Plural: "pods", Singular: "pod", ShortNames: []string{"po"}, Namespaced: true,
			SelectableFields: []string{"spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
				"status.phase", "status.podIP", "status.nominatedNodeName"},
			IndexedFields: []string{"spec.nodeName"}, StrategicMergeType: corev1.Pod{}},
		{Version: "v1", Kind: "Service", Plural: "services", Singular: "service", ShortNames: []string{"svc"}, Namespaced: true,
			StrategicMergeType: corev1.Service{}},
		{Version: "v1", Kind: "ConfigMap", Plural: "configmaps", Singular: "configmap", ShortNames: []string{"cm"}, Namespaced: true,
			StrategicMergeType: corev1.ConfigMap{}},
		{Version: "v1", Kind: "Secret", Plural: "secrets", Singular: "secret", Namespaced: true,
			SelectableFields: []string{"type"}, StrategicMergeType: corev1.Secret{}},
		{Version: "v1", Kind: "Event", Plural: "events", Singular: "event", ShortNames: []string{"ev"}, Namespaced: true,
			SelectableFields: []string{"involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
				"involvedObject.uid", "involvedObject.apiVersion", "involvedObject.resourceVersion",
				"involvedObject.fieldPath", "reason", "reportingComponent", "source.component", "type"},
			StrategicMergeType: corev1.Event{}},
	}
}
