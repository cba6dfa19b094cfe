package resource

import (
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
)

// rbac is the group of the RBAC kinds, which the authorizer reads from
// their watch caches.
const rbac = "rbac.authorization.k8s.io"

// The groups of the reviews, which are answered, never stored.
const (
	authorization  = "authorization.k8s.io"
	authentication = "authentication.k8s.io"
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
		{Version: "v1", Kind: "ServiceAccount", Plural: "serviceaccounts", Singular: "serviceaccount", ShortNames: []string{"sa"},
			Namespaced: true, StrategicMergeType: corev1.ServiceAccount{},
			Subresources: []Subresource{{Name: "token", Group: "authentication.k8s.io", Version: "v1", Kind: "TokenRequest"}}},
		{Group: rbac, Version: "v1", Kind: "Role", Plural: "roles", Singular: "role", Namespaced: true,
			StrategicMergeType: rbacv1.Role{}},
		{Group: rbac, Version: "v1", Kind: "RoleBinding", Plural: "rolebindings", Singular: "rolebinding", Namespaced: true,
			StrategicMergeType: rbacv1.RoleBinding{}},
		{Group: rbac, Version: "v1", Kind: "ClusterRole", Plural: "clusterroles", Singular: "clusterrole",
			StrategicMergeType: rbacv1.ClusterRole{}},
		{Group: rbac, Version: "v1", Kind: "ClusterRoleBinding", Plural: "clusterrolebindings", Singular: "clusterrolebinding",
			StrategicMergeType: rbacv1.ClusterRoleBinding{}},
		{Group: authorization, Version: "v1", Kind: "SelfSubjectAccessReview", Plural: "selfsubjectaccessreviews", CreateOnly: true,
			StrategicMergeType: authorizationv1.SelfSubjectAccessReview{}},
		{Group: authorization, Version: "v1", Kind: "SelfSubjectRulesReview", Plural: "selfsubjectrulesreviews", CreateOnly: true,
			StrategicMergeType: authorizationv1.SelfSubjectRulesReview{}},
		{Group: authorization, Version: "v1", Kind: "SubjectAccessReview", Plural: "subjectaccessreviews", CreateOnly: true,
			StrategicMergeType: authorizationv1.SubjectAccessReview{}},
		{Group: authorization, Version: "v1", Kind: "LocalSubjectAccessReview", Plural: "localsubjectaccessreviews", CreateOnly: true,
			Namespaced: true, StrategicMergeType: authorizationv1.LocalSubjectAccessReview{}},
		{Group: authentication, Version: "v1", Kind: "TokenReview", Plural: "tokenreviews", CreateOnly: true,
			StrategicMergeType: authenticationv1.TokenReview{}},
		{Group: authentication, Version: "v1", Kind: "SelfSubjectReview", Plural: "selfsubjectreviews", CreateOnly: true,
			StrategicMergeType: authenticationv1.SelfSubjectReview{}},
	}
}
