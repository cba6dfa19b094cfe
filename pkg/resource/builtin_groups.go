// The built-in resources of the groups kube-apiserver 1.37 serves by
// default besides the generic control plane's and the workloads':
// autoscaling, certificates, node, the CSI kinds of storage, the IP
// address kinds of networking, apiregistration, flowcontrol, resource and
// storagemigration.

package resource

import (
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	certificatesv1 "k8s.io/api/certificates/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	networkingv1 "k8s.io/api/networking/v1"
	nodev1 "k8s.io/api/node/v1"
	resourcev1 "k8s.io/api/resource/v1"
	storagev1 "k8s.io/api/storage/v1"
	storagemigrationv1 "k8s.io/api/storagemigration/v1"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
)

// groupBuiltins are the resources of the other groups kube-apiserver
// serves by default, with its names, short names, categories, scope,
// selectable fields and subresources. kube-apiserver still stores a few
// in an older version (ReportedStorageVersion, as its discovery's
// storageVersionHash tells).
func groupBuiltins() []*Resource {
	const (
		certificates = "certificates.k8s.io"
		storage      = "storage.k8s.io"
		flowcontrol  = "flowcontrol.apiserver.k8s.io"
		dra          = "resource.k8s.io"
		networking   = "networking.k8s.io"
	)
	return []*Resource{
		{Group: "autoscaling", Version: "v2", Kind: "HorizontalPodAutoscaler", Plural: "horizontalpodautoscalers", ShortNames: []string{"hpa"},
			Namespaced: true, Categories: all, Status: true, Generation: true, StrategicMergeType: autoscalingv2.HorizontalPodAutoscaler{}},
		// autoscaling/v1 HPAs are autoscaling/v2 HPAs converted, what v1
		// cannot express carried in annotations (package conversion).
		{Group: "autoscaling", Version: "v1", Kind: "HorizontalPodAutoscaler", Plural: "horizontalpodautoscalers", ShortNames: []string{"hpa"},
			Namespaced: true, Categories: all, Status: true, Generation: true, StoredWith: &GroupResource{Group: "autoscaling", Plural: "horizontalpodautoscalers"},
			StrategicMergeType: autoscalingv1.HorizontalPodAutoscaler{}},
		{Group: certificates, Version: "v1", Kind: "CertificateSigningRequest", Plural: "certificatesigningrequests", ShortNames: []string{"csr"},
			SelectableFields: []string{"spec.signerName"}, Status: true, Approval: true,
			StrategicMergeType: certificatesv1.CertificateSigningRequest{}},
		{Group: certificates, Version: "v1", Kind: "ClusterTrustBundle", Plural: "clustertrustbundles",
			SelectableFields: []string{"spec.signerName"}, ReportedStorageVersion: "v1beta1", StrategicMergeType: certificatesv1.ClusterTrustBundle{}},
		{Group: certificates, Version: "v1", Kind: "PodCertificateRequest", Plural: "podcertificaterequests", Namespaced: true,
			SelectableFields: []string{"spec.signerName", "spec.podName", "spec.nodeName"}, Status: true,
			ReportedStorageVersion: "v1beta1", StrategicMergeType: certificatesv1.PodCertificateRequest{}},
		{Group: "node.k8s.io", Version: "v1", Kind: "RuntimeClass", Plural: "runtimeclasses", StrategicMergeType: nodev1.RuntimeClass{}},
		{Group: storage, Version: "v1", Kind: "CSIDriver", Plural: "csidrivers", StrategicMergeType: storagev1.CSIDriver{}},
		{Group: storage, Version: "v1", Kind: "CSINode", Plural: "csinodes", Status: true, StrategicMergeType: storagev1.CSINode{}},
		{Group: storage, Version: "v1", Kind: "CSIStorageCapacity", Plural: "csistoragecapacities", Namespaced: true,
			StrategicMergeType: storagev1.CSIStorageCapacity{}},
		{Group: storage, Version: "v1", Kind: "VolumeAttachment", Plural: "volumeattachments", Status: true,
			StrategicMergeType: storagev1.VolumeAttachment{}},
		{Group: storage, Version: "v1", Kind: "VolumeAttributesClass", Plural: "volumeattributesclasses", ShortNames: []string{"vac"},
			StrategicMergeType: storagev1.VolumeAttributesClass{}},
		{Group: networking, Version: "v1", Kind: "IPAddress", Plural: "ipaddresses", ShortNames: []string{"ip"},
			StrategicMergeType: networkingv1.IPAddress{}},
		{Group: networking, Version: "v1", Kind: "ServiceCIDR", Plural: "servicecidrs", Status: true,
			StrategicMergeType: networkingv1.ServiceCIDR{}},
		{Group: "apiregistration.k8s.io", Version: "v1", Kind: "APIService", Plural: "apiservices", Categories: []string{"api-extensions"},
			Status: true, StrategicMergeType: apiregistrationv1.APIService{}},
		{Group: flowcontrol, Version: "v1", Kind: "FlowSchema", Plural: "flowschemas", Status: true, Generation: true,
			StrategicMergeType: flowcontrolv1.FlowSchema{}},
		{Group: flowcontrol, Version: "v1", Kind: "PriorityLevelConfiguration", Plural: "prioritylevelconfigurations", Status: true,
			Generation: true, StrategicMergeType: flowcontrolv1.PriorityLevelConfiguration{}},
		{Group: dra, Version: "v1", Kind: "DeviceClass", Plural: "deviceclasses", Generation: true, StrategicMergeType: resourcev1.DeviceClass{}},
		{Group: dra, Version: "v1", Kind: "DeviceTaintRule", Plural: "devicetaintrules", Status: true, Generation: true,
			ReportedStorageVersion: "v1beta2", StrategicMergeType: resourcev1.DeviceTaintRule{}},
		{Group: dra, Version: "v1", Kind: "ResourceClaim", Plural: "resourceclaims", Namespaced: true, Status: true,
			StrategicMergeType: resourcev1.ResourceClaim{}},
		{Group: dra, Version: "v1", Kind: "ResourceClaimTemplate", Plural: "resourceclaimtemplates", Namespaced: true,
			StrategicMergeType: resourcev1.ResourceClaimTemplate{}},
		// kube-apiserver's message names the kind's group version
		// (resource.k8s.io/v1, Kind=ResourceSlice).
		{Group: dra, Version: "v1", Kind: "ResourceSlice", Plural: "resourceslices", Generation: true,
			SelectableFields:   []string{"spec.nodeName", "spec.driver", "spec.pool.name"},
			FieldLabelError:    "field label not supported for resource.k8s.io/v1, Kind=ResourceSlice: %s",
			StrategicMergeType: resourcev1.ResourceSlice{}},
		{Group: "storagemigration.k8s.io", Version: "v1", Kind: "StorageVersionMigration", Plural: "storageversionmigrations",
			Status: true, ReportedStorageVersion: "v1beta1", StrategicMergeType: storagemigrationv1.StorageVersionMigration{}},
	}
}
