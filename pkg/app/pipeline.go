// The write pipeline: the stages a create, update or delete passes, in
// kube-apiserver's order (built-in plugins, create defaults, admission
// policies and webhooks, validation, RBAC escalation, quota, storage, RBAC
// catch-up).

package app

import (
	"slices"

	"github.com/watchcache/watchcache/pkg/admission"
	"github.com/watchcache/watchcache/pkg/auth/signers"
	"github.com/watchcache/watchcache/pkg/pipeline"
	"github.com/watchcache/watchcache/pkg/resource"
	"github.com/watchcache/watchcache/pkg/servicenet"
)

// writePipeline is the write pipeline: every stage a create, update or
// delete passes through after its handler has prepared it (decoded,
// metadata, defaults, the kind's strategy, managedFields), in order. It is
// kube-apiserver's order: the mutating admission plugins, then
// MutatingAdmissionPolicy and the mutating webhooks, then the kind's
// validation, then the validating plugins, ValidatingAdmissionPolicy and
// the validating webhooks, then storage. A Service's cluster IPs are
// allocated where kube-apiserver's Service REST does (after mutating
// admission, before validation) and released once it is deleted; so are
// its node ports. ResourceQuota comes last, as in kube-apiserver (whose
// RBAC escalation check is made before admission), so that a write refused
// by another stage reserves nothing. Deletes pass the validating stages
// only. The admission plugins are those of --enable-admission-plugins and
// --disable-admission-plugins (a plugin watchcache does not run is
// logged).
func writePipeline(cfg Config, registry *resource.Registry, authz *authorization, nodePorts *servicenet.NodePorts) (*pipeline.Pipeline, error) {
	on, warnings, err := admission.SelectPlugins(cfg.EnableAdmissionPlugins, cfg.DisableAdmissionPlugins)
	if err != nil {
		return nil, err
	}
	for _, w := range warnings {
		cfg.Log.Warn(w)
	}
	plugins := &admission.Builtin{Registry: registry, Plugins: on}
	webhooks := &admission.Webhooks{Registry: registry}
	alloc := &servicenet.Allocator{Registry: registry}
	// stage is s, or nothing if its plugin is off.
	stage := func(plugin string, s pipeline.Stage) []pipeline.Stage {
		if !on[plugin] {
			return nil
		}
		return []pipeline.Stage{s}
	}
	return pipeline.New(slices.Concat([]pipeline.Stage{
		{Name: "LimitRanger, ServiceAccount, Priority, DefaultStorageClass, DefaultIngressClass", Step: admission.MutatingPlugins{Builtin: plugins}},
		{Name: "create defaults after the plugins (pod QoS class)", Step: admission.CreateDefaults{}}},
		stage(admission.MutatingPolicyPlugin, pipeline.Stage{Name: "MutatingAdmissionPolicy", Step: admission.MutatingPolicies{Webhooks: webhooks}}),
		stage(admission.MutatingWebhookPlugin, pipeline.Stage{Name: "MutatingAdmissionWebhook", Step: admission.MutatingWebhooks{Webhooks: webhooks}}),
		[]pipeline.Stage{
			{Name: "Service cluster IPs (allocation)", Step: servicenet.Allocate{Allocator: alloc}},
			{Name: "Service node ports (allocation)", Step: servicenet.AllocateNodePorts{NodePorts: nodePorts}},
			{Name: "validation", Step: pipeline.Validation}},
		stage(admission.NodeRestrictionPlugin, pipeline.Stage{Name: "NodeRestriction", Step: admission.NodeRestriction{Builtin: plugins}}),
		[]pipeline.Stage{
			{Name: "LimitRanger, ServiceAccount, Priority (validating)", Step: admission.ValidatingPlugins{Builtin: plugins}},
			{Name: "CertificateApproval, CertificateSigning, ClusterTrustBundleAttest, CertificateSubjectRestriction",
				Step: signers.Admission{Authorizer: authz}}},
		stage(admission.ValidatingPolicyPlugin, pipeline.Stage{Name: "ValidatingAdmissionPolicy", Step: admission.ValidatingPolicies{Webhooks: webhooks}}),
		stage(admission.ValidatingWebhookPlugin, pipeline.Stage{Name: "ValidatingAdmissionWebhook", Step: admission.ValidatingWebhooks{Webhooks: webhooks}}),
		[]pipeline.Stage{{Name: "RBAC escalation check", Step: rbacEscalation{authz}}},
		stage(admission.ResourceQuotaPlugin, pipeline.Stage{Name: "ResourceQuota", Step: &admission.Quota{Registry: registry}}),
		[]pipeline.Stage{
			{Name: "storage", Step: pipeline.Storage},
			{Name: "RBAC authorizer catches up", Step: rbacCatchUp{authz}},
			{Name: "Service cluster IPs (release)", Step: servicenet.Release{Allocator: alloc}},
			{Name: "Service node ports (release)", Step: servicenet.ReleaseNodePorts{NodePorts: nodePorts}}},
	)...), nil
}
