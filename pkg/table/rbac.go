// The cells of role bindings' rows: the role granted and the subjects of
// each kind.

package table

import (
	"strings"
)

// roleRefName is the role a binding grants: "ClusterRole/admin".
func roleRefName(v []raw, _ *row) any { return v[0].str() + "/" + v[1].str() }

// subjects is the cell of a binding's subjects of one kind (User, Group
// or ServiceAccount, as "namespace/name"), separated by ", ".
func subjects(kind string) cell {
	return computed(func(v []raw, _ *row) any {
		var names []string
		for s := range v[0].elements() {
			if s.get("kind").str() != kind {
				continue
			}
			name := s.get("name").str()
			if kind == "ServiceAccount" {
				name = s.get("namespace").str() + "/" + name
			}
			names = append(names, name)
		}
		return strings.Join(names, ", ")
	}, "subjects")
}
