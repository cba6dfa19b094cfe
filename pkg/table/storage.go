// The cells of PersistentVolumes', PersistentVolumeClaims', StorageClasses'
// and ResourceQuotas' rows: phase, capacity, access modes, claim, class,
// quota usage.

package table

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// The annotations that mark the default storage class.
const (
	defaultStorageClass     = "storageclass.kubernetes.io/is-default-class"
	betaDefaultStorageClass = "storageclass.beta.kubernetes.io/is-default-class"
)

// volumePhase is a volume's (or claim's) phase, Terminating once deleted.
func volumePhase(v []raw, _ *row) any {
	if v[1].present() {
		return "Terminating"
	}
	return v[0].str()
}

// claimCapacity is a bound claim's capacity.
func claimCapacity(v []raw, _ *row) any {
	if v[0].str() == "" {
		return ""
	}
	return canonical(v[1])
}

// claimAccessModes are a bound claim's access modes.
func claimAccessModes(v []raw, _ *row) any {
	if v[0].str() == "" {
		return ""
	}
	return accessModes(v[1:], nil)
}

// accessModes are a volume's access modes, abbreviated: "RWO,ROX".
func accessModes(v []raw, _ *row) any {
	var modes []string
	for m := range v[0].elements() {
		modes = append(modes, m.str())
	}
	var short []string
	for _, m := range []struct{ mode, abbreviation string }{
		{"ReadWriteOnce", "RWO"}, {"ReadOnlyMany", "ROX"}, {"ReadWriteMany", "RWX"}, {"ReadWriteOncePod", "RWOP"},
	} {
		if slices.Contains(modes, m.mode) {
			short = append(short, m.abbreviation)
		}
	}
	return strings.Join(short, ",")
}

// claim names the claim a volume is bound to: "namespace/name".
func claim(v []raw, _ *row) any {
	if !v[0].present() {
		return ""
	}
	return v[1].str() + "/" + v[2].str()
}

// storageClassOf is a volume's (or claim's) storage class: its beta
// annotation, else spec.storageClassName.
func storageClassOf(v []raw, _ *row) any {
	if class := v[0].get(corev1.BetaStorageClassAnnotation); class != nil {
		return class.str()
	}
	return v[1].str()
}

// quotaRequests are a quota's used and hard amounts of the resources not
// named limits.*: "pods: 1/10, requests.cpu: 0/1".
func quotaRequests(v []raw, _ *row) any { return quotaUsage(v[0], v[1], false) }

// quotaLimits are a quota's used and hard amounts of the limits.*
// resources.
func quotaLimits(v []raw, _ *row) any { return quotaUsage(v[0], v[1], true) }

// quotaUsage lists the used and hard amounts of the limits.* resources
// of a quota, or of the others.
func quotaUsage(hard, used raw, limits bool) string {
	var names []string
	for name := range hard.members() {
		if isLimit := strings.HasPrefix(string(name), "limits."); isLimit == limits {
			names = append(names, string(name))
		}
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, name := range names {
		parts[i] = fmt.Sprintf("%s: %s/%s", name, canonical(used.get(name)), canonical(hard.get(name)))
	}
	return strings.Join(parts, ", ")
}
