// The built-in resources served, fresh on each call: their groups, versions,
// kinds, scopes, selectable fields, short names and categories.

package resource

import (
	"github.com/watchcache/watchcache/pkg/object"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// rbac is the group of the RBAC kinds, which the authorizer reads from
// their watch caches.
const rbac = "rbac.authorization.k8s.io"

// The groups of the reviews, which are answered, never stored.
const (
	authorization  = "authorization.k8s.io"
	authentication = "authentication.k8s.io"
)

// eventFields are the selectable fields of core/v1 events: source is
// source.component, else reportingComponent, as in kube-apiserver's field
// set.
var (
	eventFields = []string{"involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
		"involvedObject.uid", "involvedObject.apiVersion", "involvedObject.resourceVersion",
		"involvedObject.fieldPath", "reason", "reportingComponent", "source", "type"}
	eventFieldValues = map[string]object.FieldValue{"source": {Paths: []string{"source.component", "reportingComponent"}}}
)

// eventsV1Fields are the selectable fields of events.k8s.io/v1 events,
// which kube-apiserver selects by the core/v1 fields they are converted
// to (eventsV1FieldLabels).
var (
	eventsV1Fields = []string{"type", "reason", "reportingController", "regarding.kind", "regarding.namespace", "regarding.name",
		"regarding.uid", "regarding.apiVersion", "regarding.resourceVersion", "regarding.fieldPath"}
	eventsV1FieldLabels = map[string]string{"reportingController": "reportingComponent",
		"regarding.kind": "involvedObject.kind", "regarding.namespace": "involvedObject.namespace", "regarding.name": "involvedObject.name",
		"regarding.uid": "involvedObject.uid", "regarding.apiVersion": "involvedObject.apiVersion",
		"regarding.resourceVersion": "involvedObject.resourceVersion", "regarding.fieldPath": "involvedObject.fieldPath"}
)

// zero is the FieldValue of a field that selects as its type's zero when
// absent ("false", "0"); at path, if not the field's label.
func zero(value string, path ...string) object.FieldValue {
	return object.FieldValue{Paths: path, Zero: value}
}

// all is the category of `kubectl get all`, as kube-apiserver assigns it.
var all = []string{"all"}

// Builtins returns the built-in resources, fresh on each call: the
// generic control plane's kinds and the workloads controllers most often
// create, with kube-apiserver's names, short names, categories, scope and
// selectable fields.
func Builtins() []*Resource {
	rs := []*Resource{
		// Namespaces are not deleted by collection: deletecollection would
		// bypass the protection of the system namespaces (405, as in
		// kube-apiserver).
		{Version: "v1", Kind: "Namespace", Plural: "namespaces", Singular: "namespace", ShortNames: []string{"ns"},
			Verbs:            []string{"create", "delete", "get", "list", "patch", "update", "watch"},
			SelectableFields: []string{"status.phase"}, Status: true, Finalize: true, StrategicMergeType: corev1.Namespace{}},
		{Version: "v1", Kind: "Node", Plural: "nodes", Singular: "node", ShortNames: []string{"no"},
			SelectableFields: []string{"spec.unschedulable"}, FieldValues: map[string]object.FieldValue{"spec.unschedulable": zero("false", "spec.unschedulable")},
			Status: true, StrategicMergeType: corev1.Node{}},
		{Version: "v1", Kind: "Pod", Plural: "pods", Singular: "pod", ShortNames: []string{"po"}, Namespaced: true, Categories: all,
			SelectableFields: []string{"spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
				"spec.hostNetwork", "status.phase", "status.podIP", "status.podIPs", "status.nominatedNodeName"},
			// status.podIPs is accepted but has no value in kube-apiserver's
			// field set.
			FieldValues:   map[string]object.FieldValue{"spec.hostNetwork": zero("false", "spec.hostNetwork"), "status.podIPs": {}},
			IndexedFields: []string{"spec.nodeName"}, Status: true, Generation: true, StrategicMergeType: corev1.Pod{},
			Subresources: []Subresource{{Name: "binding", Kind: "Binding"}}},
		// bindings, as pods/binding, assigns a pod (the Binding's name) to
		// a node.
		{Version: "v1", Kind: "Binding", Plural: "bindings", Namespaced: true, CreateOnly: true, StrategicMergeType: corev1.Binding{}},
		{Version: "v1", Kind: "Service", Plural: "services", Singular: "service", ShortNames: []string{"svc"}, Namespaced: true,
			Categories: all, SelectableFields: []string{"spec.type", "spec.clusterIP"}, Status: true, StrategicMergeType: corev1.Service{}},
		{Version: "v1", Kind: "ConfigMap", Plural: "configmaps", Singular: "configmap", ShortNames: []string{"cm"}, Namespaced: true,
			StrategicMergeType: corev1.ConfigMap{}},
		{Version: "v1", Kind: "Secret", Plural: "secrets", Singular: "secret", Namespaced: true,
			SelectableFields: []string{"type"}, StrategicMergeType: corev1.Secret{}},
		{Version: "v1", Kind: "Event", Plural: "events", Singular: "event", ShortNames: []string{"ev"}, Namespaced: true,
			SelectableFields: eventFields, FieldValues: eventFieldValues, StrategicMergeType: corev1.Event{}, Expires: true},
		{Version: "v1", Kind: "ServiceAccount", Plural: "serviceaccounts", Singular: "serviceaccount", ShortNames: []string{"sa"},
			Namespaced: true, StrategicMergeType: corev1.ServiceAccount{},
			Subresources: []Subresource{{Name: "token", Group: "authentication.k8s.io", Version: "v1", Kind: "TokenRequest"}}},
		{Version: "v1", Kind: "ResourceQuota", Plural: "resourcequotas", ShortNames: []string{"quota"}, Namespaced: true,
			Status: true, StrategicMergeType: corev1.ResourceQuota{}},
		{Version: "v1", Kind: "LimitRange", Plural: "limitranges", ShortNames: []string{"limits"}, Namespaced: true,
			StrategicMergeType: corev1.LimitRange{}},
		{Version: "v1", Kind: "Endpoints", Plural: "endpoints", ShortNames: []string{"ep"}, Namespaced: true,
			StrategicMergeType: corev1.Endpoints{}},
		{Version: "v1", Kind: "PersistentVolumeClaim", Plural: "persistentvolumeclaims", ShortNames: []string{"pvc"}, Namespaced: true,
			Status: true, StrategicMergeType: corev1.PersistentVolumeClaim{}},
		{Version: "v1", Kind: "PersistentVolume", Plural: "persistentvolumes", ShortNames: []string{"pv"},
			Status: true, StrategicMergeType: corev1.PersistentVolume{}},
		{Version: "v1", Kind: "ReplicationController", Plural: "replicationcontrollers", ShortNames: []string{"rc"}, Namespaced: true,
			Categories: all, SelectableFields: []string{"status.replicas"}, FieldValues: map[string]object.FieldValue{"status.replicas": zero("0", "status.replicas")},
			Status: true, Generation: true, Scale: true, OrphanByDefault: true,
			StrategicMergeType: corev1.ReplicationController{}},
		{Version: "v1", Kind: "PodTemplate", Plural: "podtemplates", Namespaced: true, Generation: true, StrategicMergeType: corev1.PodTemplate{}},
		{Group: "events.k8s.io", Version: "v1", Kind: "Event", Plural: "events", Singular: "event", ShortNames: []string{"ev"}, Namespaced: true,
			SelectableFields: eventsV1Fields, FieldLabels: eventsV1FieldLabels, StoredWith: &GroupResource{Plural: "events"},
			StrategicMergeType: eventsv1.Event{}},
		{Group: "coordination.k8s.io", Version: "v1", Kind: "Lease", Plural: "leases", Namespaced: true,
			StrategicMergeType: coordinationv1.Lease{}},
		{Group: "apps", Version: "v1", Kind: "Deployment", Plural: "deployments", ShortNames: []string{"deploy"}, Namespaced: true,
			Categories: all, Status: true, Generation: true, GenerationAnnotations: true, Scale: true, StrategicMergeType: appsv1.Deployment{}},
		{Group: "apps", Version: "v1", Kind: "ReplicaSet", Plural: "replicasets", ShortNames: []string{"rs"}, Namespaced: true,
			Categories: all, Status: true, Generation: true, Scale: true, StrategicMergeType: appsv1.ReplicaSet{}},
		{Group: "apps", Version: "v1", Kind: "StatefulSet", Plural: "statefulsets", ShortNames: []string{"sts"}, Namespaced: true,
			Categories: all, Status: true, Generation: true, Scale: true, StrategicMergeType: appsv1.StatefulSet{}},
		{Group: "apps", Version: "v1", Kind: "DaemonSet", Plural: "daemonsets", ShortNames: []string{"ds"}, Namespaced: true,
			Categories: all, Status: true, Generation: true, StrategicMergeType: appsv1.DaemonSet{}},
		{Group: "apps", Version: "v1", Kind: "ControllerRevision", Plural: "controllerrevisions", Namespaced: true,
			StrategicMergeType: appsv1.ControllerRevision{}},
		{Group: "batch", Version: "v1", Kind: "Job", Plural: "jobs", Namespaced: true, Categories: all,
			// status.successful is the count of status.succeeded.
			SelectableFields: []string{"status.successful"}, FieldValues: map[string]object.FieldValue{"status.successful": zero("0", "status.succeeded")},
			FieldLabelError: "field label %q not supported for Job", Status: true, Generation: true, StrategicMergeType: batchv1.Job{}},
		{Group: "batch", Version: "v1", Kind: "CronJob", Plural: "cronjobs", ShortNames: []string{"cj"}, Namespaced: true,
			Categories: all, Status: true, Generation: true, StrategicMergeType: batchv1.CronJob{}},
		{Group: "discovery.k8s.io", Version: "v1", Kind: "EndpointSlice", Plural: "endpointslices", Namespaced: true,
			Generation: true, StrategicMergeType: discoveryv1.EndpointSlice{}},
		{Group: "policy", Version: "v1", Kind: "PodDisruptionBudget", Plural: "poddisruptionbudgets", ShortNames: []string{"pdb"},
			Namespaced: true, Status: true, Generation: true, StrategicMergeType: policyv1.PodDisruptionBudget{}},
		{Group: "networking.k8s.io", Version: "v1", Kind: "Ingress", Plural: "ingresses", ShortNames: []string{"ing"}, Namespaced: true,
			Status: true, Generation: true, StrategicMergeType: networkingv1.Ingress{}},
		{Group: "networking.k8s.io", Version: "v1", Kind: "IngressClass", Plural: "ingressclasses", Generation: true, StrategicMergeType: networkingv1.IngressClass{}},
		{Group: "networking.k8s.io", Version: "v1", Kind: "NetworkPolicy", Plural: "networkpolicies", ShortNames: []string{"netpol"},
			Namespaced: true, Generation: true, StrategicMergeType: networkingv1.NetworkPolicy{}},
		{Group: "scheduling.k8s.io", Version: "v1", Kind: "PriorityClass", Plural: "priorityclasses", ShortNames: []string{"pc"},
			Generation: true, StrategicMergeType: schedulingv1.PriorityClass{}},
		{Group: "storage.k8s.io", Version: "v1", Kind: "StorageClass", Plural: "storageclasses", ShortNames: []string{"sc"},
			StrategicMergeType: storagev1.StorageClass{}},
		{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition", Plural: "customresourcedefinitions",
			Singular: "customresourcedefinition", ShortNames: []string{"crd", "crds"}, Categories: []string{"api-extensions"},
			Status: true, Generation: true, DeleteFinalizer: "customresourcecleanup.apiextensions.k8s.io", ReportedStorageVersion: "v1beta1",
			StrategicMergeType: apiextensionsv1.CustomResourceDefinition{}},
		{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "MutatingWebhookConfiguration", Plural: "mutatingwebhookconfigurations",
			Categories: []string{"api-extensions"}, Generation: true, StrategicMergeType: admissionregistrationv1.MutatingWebhookConfiguration{}},
		{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "ValidatingWebhookConfiguration", Plural: "validatingwebhookconfigurations",
			Categories: []string{"api-extensions"}, Generation: true, StrategicMergeType: admissionregistrationv1.ValidatingWebhookConfiguration{}},
		{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "ValidatingAdmissionPolicy", Plural: "validatingadmissionpolicies",
			Categories: []string{"api-extensions"}, Status: true, Generation: true, StrategicMergeType: admissionregistrationv1.ValidatingAdmissionPolicy{}},
		{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "ValidatingAdmissionPolicyBinding", Plural: "validatingadmissionpolicybindings",
			Categories: []string{"api-extensions"}, Generation: true, StrategicMergeType: admissionregistrationv1.ValidatingAdmissionPolicyBinding{}},
		{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "MutatingAdmissionPolicy", Plural: "mutatingadmissionpolicies",
			Categories: []string{"api-extensions"}, Generation: true, StrategicMergeType: admissionregistrationv1.MutatingAdmissionPolicy{}},
		{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "MutatingAdmissionPolicyBinding", Plural: "mutatingadmissionpolicybindings",
			Categories: []string{"api-extensions"}, Generation: true, StrategicMergeType: admissionregistrationv1.MutatingAdmissionPolicyBinding{}},
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
	rs = append(rs, groupBuiltins()...)
	for _, r := range rs {
		r.builtin = true
	}
	return rs
}
