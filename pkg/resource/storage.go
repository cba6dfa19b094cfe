// Where and how a resource's objects are stored in etcd, as kube-apiserver
// 1.37 stores them, so that an etcd written by one is served by the other:
// the key of each built-in resource, the version and the encoding of its
// values (recorded from kube-apiserver 1.37.2: testdata/reference-etcd.jsonl,
// checked by TestStorageLayoutMatchesReference).

package resource

import (
	"encoding/json"
	"strings"

	certificatesv1beta1 "k8s.io/api/certificates/v1beta1"
	resourcev1beta2 "k8s.io/api/resource/v1beta2"
	storagemigrationv1beta1 "k8s.io/api/storagemigration/v1beta1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsinstall "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/install"
	apiextensionsv1beta1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
)

// layout is how kube-apiserver stores a built-in resource where it departs
// from its rule: key <root>/<plural>/[<namespace>/]<name>, value the
// object's protobuf in the served version, enveloped (StorageCodec).
type layout struct {
	// path is the key path under the root in place of the plural.
	path string
	// json says the values are JSON: the kinds of apiextensions-apiserver
	// and kube-aggregator, which kube-apiserver stores so.
	json bool
	// storage is the version kube-apiserver stores the kind in where it is
	// not the served one (nil: the served one).
	storage *storageVersion
}

// storageVersion is a version objects are stored in but not served in.
type storageVersion struct {
	apiVersion string
	// typ is a value of the version's Go type.
	typ any
	// toStorage and fromStorage convert a served object into this version
	// and back; nil: field for field through JSON, which is right only for
	// versions with the same fields (those listed are).
	toStorage, fromStorage func(in, out runtime.Object) error
}

// layouts are kube-apiserver 1.37's departures from the rule, by resource.
// Every other built-in resource is stored under its plural, in protobuf,
// in its served version. Custom resources are stored as JSON under
// <root>/<group>/<plural>, in their definition's storage version (package
// crd chooses it). core/v1 RangeAllocation, which is no resource, is in
// RangeAllocationCodec.
var layouts = map[GroupResource]layout{
	{Plural: "nodes"}:                                 {path: "minions"},
	{Plural: "services"}:                              {path: "services/specs"},
	{Plural: "endpoints"}:                             {path: "services/endpoints"},
	{Plural: "replicationcontrollers"}:                {path: "controllers"},
	{Group: "networking.k8s.io", Plural: "ingresses"}: {path: "ingress"},
	{Group: "apiextensions.k8s.io", Plural: "customresourcedefinitions"}: {path: "apiextensions.k8s.io/customresourcedefinitions", json: true,
		storage: &storageVersion{apiVersion: "apiextensions.k8s.io/v1beta1", typ: apiextensionsv1beta1.CustomResourceDefinition{},
			toStorage: convertCRD, fromStorage: convertCRD}},
	{Group: "apiregistration.k8s.io", Plural: "apiservices"}: {path: "apiregistration.k8s.io/apiservices", json: true},
	{Group: "certificates.k8s.io", Plural: "clustertrustbundles"}: {
		storage: &storageVersion{apiVersion: "certificates.k8s.io/v1beta1", typ: certificatesv1beta1.ClusterTrustBundle{}}},
	{Group: "certificates.k8s.io", Plural: "podcertificaterequests"}: {
		storage: &storageVersion{apiVersion: "certificates.k8s.io/v1beta1", typ: certificatesv1beta1.PodCertificateRequest{}}},
	{Group: "resource.k8s.io", Plural: "devicetaintrules"}: {
		storage: &storageVersion{apiVersion: "resource.k8s.io/v1beta2", typ: resourcev1beta2.DeviceTaintRule{}}},
	{Group: "storagemigration.k8s.io", Plural: "storageversionmigrations"}: {
		storage: &storageVersion{apiVersion: "storagemigration.k8s.io/v1beta1", typ: storagemigrationv1beta1.StorageVersionMigration{}}},
}

// EtcdPrefix is where the resource's objects live in etcd under root, as
// kube-apiserver keeps them: root/<plural> for a built-in resource (or the
// path its layout gives: nodes are root/minions), root/<group>/<plural>
// for a custom resource (whose group contains a dot, so never meets a
// built-in plural).
func (r *Resource) EtcdPrefix(root string) string {
	if r.builtin {
		if l, ok := layouts[GroupResource{Group: r.Group, Plural: r.Plural}]; ok && l.path != "" {
			return root + "/" + l.path
		}
		return root + "/" + r.Plural
	}
	return root + "/" + r.Group + "/" + r.Plural
}

// LegacyEtcdPrefix is where watchcache before issue 29 kept the resource's
// objects: root/<group>/<plural>, the core group spelled "core". Equal to
// EtcdPrefix for custom resources, whose objects stay where they were.
func (r *Resource) LegacyEtcdPrefix(root string) string {
	group := r.Group
	if group == "" {
		group = "core"
	}
	return root + "/" + group + "/" + r.Plural
}

// StorageCodec is how the resource's values are stored (see StorageCodec).
func (r *Resource) StorageCodec() *StorageCodec {
	if r.StrategicMergeType == nil {
		return &StorageCodec{apiVersion: r.GroupVersion(), kind: r.Kind, json: true}
	}
	l := layouts[GroupResource{Group: r.Group, Plural: r.Plural}]
	return newCodec(r.GroupVersion(), r.Kind, r.StrategicMergeType, l.json, l.storage)
}

// crdScheme converts CustomResourceDefinitions between v1 and v1beta1
// through apiextensions' internal version, with their defaults.
var crdScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	apiextensionsinstall.Install(s)
	return s
}()

// convertCRD converts a CustomResourceDefinition between versions as
// kube-apiserver does: defaulted in its version, then through the internal
// one.
func convertCRD(in, out runtime.Object) error {
	crdScheme.Default(in)
	var internal apiextensions.CustomResourceDefinition
	if err := crdScheme.Convert(in, &internal, nil); err != nil {
		return err
	}
	return crdScheme.Convert(&internal, out, nil)
}

// convertByJSON converts between two versions with the same fields.
func convertByJSON(in, out runtime.Object) error {
	data, err := json.Marshal(in)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, out)
}

// storedJSONVersion is the apiVersion of a stored JSON value, for the
// resources stored in another version.
func storedJSONVersion(data []byte) string {
	var tm struct {
		APIVersion string `json:"apiVersion"`
	}
	json.Unmarshal(data, &tm)
	return strings.TrimSpace(tm.APIVersion)
}
