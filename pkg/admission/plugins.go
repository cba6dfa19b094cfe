// Which admission plugins run: kube-apiserver 1.37's names, those on by
// default, and --enable-admission-plugins / --disable-admission-plugins.

package admission

import (
	"fmt"
	"slices"
	"strings"
)

// Names of the admission plugins watchcache runs, as kube-apiserver's.
const (
	LimitRangerPlugin         = "LimitRanger"
	ServiceAccountPlugin      = "ServiceAccount"
	NodeRestrictionPlugin     = "NodeRestriction"
	PriorityPlugin            = "Priority"
	DefaultStorageClassPlugin = "DefaultStorageClass"
	DefaultIngressClassPlugin = "DefaultIngressClass"
	MutatingPolicyPlugin      = "MutatingAdmissionPolicy"
	MutatingWebhookPlugin     = "MutatingAdmissionWebhook"
	ValidatingPolicyPlugin    = "ValidatingAdmissionPolicy"
	ValidatingWebhookPlugin   = "ValidatingAdmissionWebhook"
	ResourceQuotaPlugin       = "ResourceQuota"
)

// kubeAPIServerPlugins are kube-apiserver 1.37's admission plugins (its
// --enable-admission-plugins help), each with whether it is on by default.
var kubeAPIServerPlugins = map[string]bool{
	"AlwaysAdmit": false, "AlwaysDeny": false, "AlwaysPullImages": false, "CertificateApproval": true,
	"CertificateSigning": true, "CertificateSubjectRestriction": true, "ClusterTrustBundleAttest": true,
	DefaultIngressClassPlugin: true, DefaultStorageClassPlugin: true, "DefaultTolerationSeconds": true,
	"DenyServiceExternalIPs": false, "EventRateLimit": false, "ExtendedResourceToleration": false,
	"ImagePolicyWebhook": false, "LimitPodHardAntiAffinityTopology": false, LimitRangerPlugin: true,
	MutatingPolicyPlugin: true, MutatingWebhookPlugin: true, "NamespaceAutoProvision": false,
	"NamespaceExists": false, "NamespaceLifecycle": true, "NodeDeclaredFeatureValidator": true,
	NodeRestrictionPlugin: false, "OwnerReferencesPermissionEnforcement": false,
	"PersistentVolumeClaimResize": true, "PodGroupProtection": true, "PodNodeSelector": false,
	"PodResizeValidator": true, "PodSecurity": true, "PodTolerationRestriction": false,
	"PodTopologyLabels": true, PriorityPlugin: true, ResourceQuotaPlugin: true, "RuntimeClass": true,
	ServiceAccountPlugin: true, "StorageObjectInUseProtection": true, "TaintNodesByCondition": true,
	ValidatingPolicyPlugin: true, ValidatingWebhookPlugin: true,
}

// switchable are the plugins of kubeAPIServerPlugins that watchcache runs
// and that the flags turn on and off. The others are accepted by name and
// not run (or, as DefaultTolerationSeconds in package defaults,
// NamespaceLifecycle in the handlers and the certificate plugins of
// package signers, always run).
var switchable = []string{LimitRangerPlugin, ServiceAccountPlugin, NodeRestrictionPlugin, PriorityPlugin,
	DefaultStorageClassPlugin, DefaultIngressClassPlugin, MutatingPolicyPlugin, MutatingWebhookPlugin,
	ValidatingPolicyPlugin, ValidatingWebhookPlugin, ResourceQuotaPlugin}

// Plugins are the switchable plugins that run, by name.
type Plugins map[string]bool

// DefaultPlugins are the plugins that run without flags: kube-apiserver's
// defaults.
func DefaultPlugins() Plugins {
	p, _, _ := SelectPlugins(nil, nil)
	return p
}

// SelectPlugins is the set of plugins kube-apiserver's defaults, enable
// and disable (its --enable-admission-plugins and
// --disable-admission-plugins, in any order) give. A name kube-apiserver
// does not know is an error naming the flag, as a name in both lists is;
// a name watchcache does not run gives a warning.
func SelectPlugins(enable, disable []string) (Plugins, []string, error) {
	var warnings, both []string
	for _, f := range []struct {
		flag  string
		names []string
	}{{"enable-admission-plugins", enable}, {"disable-admission-plugins", disable}} {
		for _, name := range f.names {
			if _, known := kubeAPIServerPlugins[name]; !known {
				return nil, nil, fmt.Errorf("%s plugin %q is unknown", f.flag, name)
			}
			if !slices.Contains(switchable, name) {
				warnings = append(warnings, fmt.Sprintf("%s: admission plugin %s is not implemented by watchcache; ignored", f.flag, name))
			}
		}
	}
	for _, name := range enable {
		if slices.Contains(disable, name) {
			both = append(both, name)
		}
	}
	if len(both) > 0 {
		return nil, nil, fmt.Errorf("[%s] in enable-admission-plugins and disable-admission-plugins overlapped", strings.Join(both, " "))
	}
	p := Plugins{}
	for _, name := range switchable {
		p[name] = (kubeAPIServerPlugins[name] || slices.Contains(enable, name)) && !slices.Contains(disable, name)
	}
	return p, warnings, nil
}
