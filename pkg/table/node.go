// The cells of Nodes' rows: status from conditions, roles, addresses and
// kernel version.

package table

import (
	"slices"
	"sort"
	"strings"
)

// nodeConditions is a node's status: Ready or NotReady (Unknown without a
// Ready condition), and SchedulingDisabled when it is cordoned.
func nodeConditions(v []raw, _ *row) any {
	conditions, unschedulable := v[0], v[1]
	status := "Unknown"
	for c := range conditions.elements() {
		if c.get("type").str() != "Ready" {
			continue
		}
		status = "NotReady"
		if c.get("status").str() == "True" {
			status = "Ready"
		}
	}
	if unschedulable.bool() {
		status += ",SchedulingDisabled"
	}
	return status
}

// nodeRoles are a node's roles from its node-role.kubernetes.io/<role>
// and kubernetes.io/role=<role> labels, sorted, or "<none>".
func nodeRoles(v []raw, _ *row) any {
	var roles []string
	for k, val := range v[0].members() {
		key := string(k)
		switch role, ok := strings.CutPrefix(key, "node-role.kubernetes.io/"); {
		case ok && role != "":
			roles = append(roles, role)
		case key == "kubernetes.io/role" && val.str() != "":
			roles = append(roles, val.str())
		}
	}
	sort.Strings(roles)
	return or(strings.Join(slices.Compact(roles), ","), "<none>")
}

// nodeAddress is the cell of the node's first address of a type.
func nodeAddress(typ string) cell {
	return computed(func(v []raw, _ *row) any {
		for a := range v[0].elements() {
			if a.get("type").str() == typ {
				return a.get("address").str()
			}
		}
		return "<none>"
	}, "status.addresses")
}

// kernelVersion is the node's kernel version and architecture.
func kernelVersion(v []raw, _ *row) any {
	version := or(v[0].str(), "<unknown>")
	if arch := v[1].str(); arch != "" {
		version += " (" + arch + ")"
	}
	return version
}
