package controller

import (
	"fmt"
	"slices"
	"strings"
)

// The names of kube-controller-manager's controllers that Manager runs
// (its --controllers names, as in cmd/kube-controller-manager/names).
const (
	NamespaceController                  = "namespace-controller"
	ServiceAccountController             = "serviceaccount-controller"
	RootCACertificatePublisherController = "root-ca-certificate-publisher-controller"
	GarbageCollectorController           = "garbage-collector-controller"
	ResourceQuotaController              = "resourcequota-controller"
	CSRSigningController                 = "certificatesigningrequest-signing-controller"
	CSRApprovingController               = "certificatesigningrequest-approving-controller"
	CSRCleanerController                 = "certificatesigningrequest-cleaner-controller"
	TokenCleanerController               = "token-cleaner-controller"
)

// Implemented are the controllers Manager runs, by kube-controller-manager's
// names. The cluster IP repair (kube-apiserver's) is none of them: it
// always runs.
var Implemented = []string{NamespaceController, ServiceAccountController, RootCACertificatePublisherController, GarbageCollectorController,
	ResourceQuotaController, CSRSigningController, CSRApprovingController, CSRCleanerController, TokenCleanerController}

// kcmControllers are kube-controller-manager 1.37's controllers, canonical
// name to its aliases (the old short names it still accepts).
var kcmControllers = map[string][]string{
	"serviceaccount-token-controller":                                {"serviceaccount-token"},
	"endpoints-controller":                                           {"endpoint"},
	"endpointslice-controller":                                       {"endpointslice"},
	"endpointslice-mirroring-controller":                             {"endpointslicemirroring"},
	"replicationcontroller-controller":                               {"replicationcontroller"},
	"pod-garbage-collector-controller":                               {"podgc"},
	ResourceQuotaController:                                          {"resourcequota"},
	NamespaceController:                                              {"namespace"},
	ServiceAccountController:                                         {"serviceaccount"},
	GarbageCollectorController:                                       {"garbagecollector"},
	"daemonset-controller":                                           {"daemonset"},
	"job-controller":                                                 {"job"},
	"deployment-controller":                                          {"deployment"},
	"replicaset-controller":                                          {"replicaset"},
	"horizontal-pod-autoscaler-controller":                           {"horizontalpodautoscaling"},
	"disruption-controller":                                          {"disruption"},
	"statefulset-controller":                                         {"statefulset"},
	"cronjob-controller":                                             {"cronjob"},
	CSRSigningController:                                             {"csrsigning"},
	CSRApprovingController:                                           {"csrapproving"},
	CSRCleanerController:                                             {"csrcleaner"},
	"ttl-controller":                                                 {"ttl"},
	"bootstrap-signer-controller":                                    {"bootstrapsigner"},
	TokenCleanerController:                                           {"tokencleaner"},
	"node-ipam-controller":                                           {"nodeipam"},
	"node-lifecycle-controller":                                      {"nodelifecycle"},
	"taint-eviction-controller":                                      nil,
	"service-lb-controller":                                          {"service"},
	"node-route-controller":                                          {"route"},
	"cloud-node-lifecycle-controller":                                {"cloud-node-lifecycle"},
	"persistentvolume-binder-controller":                             {"persistentvolume-binder"},
	"persistentvolume-attach-detach-controller":                      {"attachdetach"},
	"persistentvolume-expander-controller":                           {"persistentvolume-expander"},
	"clusterrole-aggregation-controller":                             {"clusterrole-aggregation"},
	"persistentvolumeclaim-protection-controller":                    {"pvc-protection"},
	"persistentvolume-protection-controller":                         {"pv-protection"},
	"ttl-after-finished-controller":                                  {"ttl-after-finished"},
	RootCACertificatePublisherController:                             {"root-ca-cert-publisher"},
	"kube-apiserver-serving-clustertrustbundle-publisher-controller": nil,
	"ephemeral-volume-controller":                                    {"ephemeral-volume"},
	"storageversion-garbage-collector-controller":                    {"storage-version-gc"},
	"resourceclaim-controller":                                       {"resource-claim-controller"},
	"legacy-serviceaccount-token-cleaner-controller":                 {"legacy-service-account-token-cleaner"},
	"validatingadmissionpolicy-status-controller":                    nil,
	"service-cidr-controller":                                        nil,
	"storage-version-migrator-controller":                            nil,
	"selinux-warning-controller":                                     nil,
	"volumeattributesclass-protection-controller":                    nil,
	"device-taint-eviction-controller":                               nil,
	"podcertificaterequest-cleaner-controller":                       nil,
}

// kcmDisabledByDefault are the controllers "*" leaves off.
var kcmDisabledByDefault = []string{"bootstrap-signer-controller", TokenCleanerController, "selinux-warning-controller"}

// kcmAliases maps each alias to its canonical name.
var kcmAliases = func() map[string]string {
	m := map[string]string{}
	for name, aliases := range kcmControllers {
		for _, a := range aliases {
			m[a] = name
		}
	}
	return m
}()

// Selection is a parsed --controllers list, as kube-controller-manager's:
// "*" (every controller on by default), "name" and "-name", by canonical
// name or alias; the first entry naming a controller decides for it, and
// without "*" a controller not named is off. The zero Selection is the
// default, "*".
type Selection struct {
	entries []string // canonical names, "-" prefixed, or "*"
	parsed  bool
}

// DefaultControllers is --controllers' default.
var DefaultControllers = []string{"*"}

// ParseControllers parses a --controllers list (nil: the default, "*";
// empty: none). A name kube-controller-manager does not know is an error,
// as there.
func ParseControllers(list []string) (Selection, error) {
	if list == nil {
		list = DefaultControllers
	}
	s := Selection{parsed: true}
	for _, item := range list {
		item = strings.TrimSpace(item)
		if item == "*" {
			s.entries = append(s.entries, item)
			continue
		}
		name, off := strings.CutPrefix(item, "-")
		if canonical, ok := kcmAliases[name]; ok {
			name = canonical
		}
		if _, ok := kcmControllers[name]; !ok {
			return Selection{}, fmt.Errorf("%q is not in the list of known controllers", name)
		}
		if off {
			name = "-" + name
		}
		s.entries = append(s.entries, name)
	}
	return s, nil
}

// Enabled reports whether controller name (canonical) is selected.
func (s Selection) Enabled(name string) bool {
	star := !s.parsed
	for _, e := range s.entries {
		switch e {
		case name:
			return true
		case "-" + name:
			return false
		case "*":
			star = true
		}
	}
	return star && !slices.Contains(kcmDisabledByDefault, name)
}

// NotImplemented are the controllers the list turns on by name (not only
// through "*") that watchcache does not run: a kube-controller-manager's
// --controllers copied here is accepted, and these are left to it.
func (s Selection) NotImplemented() []string {
	var out []string
	for _, e := range s.entries {
		if e != "*" && !strings.HasPrefix(e, "-") && !slices.Contains(Implemented, e) && s.Enabled(e) {
			out = append(out, e)
		}
	}
	return out
}
