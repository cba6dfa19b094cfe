// The authorizer's in-memory index of Roles, RoleBindings, ClusterRoles and
// ClusterRoleBindings: decoded objects and bindings by subject.

package rbac

import (
	"encoding/json"
	"fmt"

	"github.com/watchcache/watchcache/pkg/auth/user"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// kind is one of the four RBAC resources the index holds.
type kind int

const (
	kindRoles kind = iota
	kindRoleBindings
	kindClusterRoles
	kindClusterRoleBindings
	numKinds
)

// kindNames are the resources' plurals, as WaitFor and CheckEscalation
// name them.
var kindNames = [numKinds]string{"roles", "rolebindings", "clusterroles", "clusterrolebindings"}

// clusterRole is an indexed ClusterRole with its aggregation selectors
// parsed (nil without an aggregationRule; selectorErr if one is invalid,
// which validation should have refused).
type clusterRole struct {
	role        *rbacv1.ClusterRole
	selectors   []labels.Selector
	selectorErr error
}

// binding is an indexed RoleBinding (namespace set) or ClusterRoleBinding
// (decoded as a RoleBinding: their JSON has the same shape). keys[i] is
// where subjects[i] is indexed (the zero key: nowhere, the subject cannot
// apply to anyone).
type binding struct {
	obj       *rbacv1.RoleBinding
	namespace string
	name      string
	roleRef   rbacv1.RoleRef
	subjects  []rbacv1.Subject
	keys      []subjectKey
}

// subjectKey finds the bindings of a subject: the binding's namespace (""
// for ClusterRoleBindings), 'u' for a user name (ServiceAccounts are
// indexed by their user name system:serviceaccount:<ns>:<name>) or 'g' for
// a group, and the name.
type subjectKey struct {
	namespace string
	kind      byte
	name      string
}

// index is the authorizer's view of the four resources. It is guarded by
// the Authorizer's mutex; the objects in it are never modified.
type index struct {
	roles        map[string]*rbacv1.Role // "namespace/name"
	clusterRoles map[string]*clusterRole
	bindings     [numKinds]map[string]*binding // rolebindings by "namespace/name", clusterrolebindings by name
	bySubject    map[subjectKey]map[*binding]struct{}
}

func newIndex() index {
	x := index{roles: map[string]*rbacv1.Role{}, clusterRoles: map[string]*clusterRole{},
		bySubject: map[subjectKey]map[*binding]struct{}{}}
	x.bindings[kindRoleBindings] = map[string]*binding{}
	x.bindings[kindClusterRoleBindings] = map[string]*binding{}
	return x
}

// decoded is an object decoded for the index: a *rbacv1.Role, a
// *clusterRole or a *binding.
type decoded any

// decode turns a stored object of kind k into what the index keeps.
func decode(k kind, data []byte) (decoded, error) {
	switch k {
	case kindRoles:
		var r rbacv1.Role
		if err := json.Unmarshal(data, &r); err != nil {
			return nil, err
		}
		return &r, nil
	case kindClusterRoles:
		var r rbacv1.ClusterRole
		if err := json.Unmarshal(data, &r); err != nil {
			return nil, err
		}
		return newClusterRole(&r), nil
	default:
		var b rbacv1.RoleBinding
		if err := json.Unmarshal(data, &b); err != nil {
			return nil, err
		}
		if k == kindClusterRoleBindings {
			b.Namespace = ""
		}
		return newBinding(&b), nil
	}
}

// newClusterRole parses r's aggregation selectors.
func newClusterRole(r *rbacv1.ClusterRole) *clusterRole {
	c := &clusterRole{role: r}
	if r.AggregationRule == nil {
		return c
	}
	for i := range r.AggregationRule.ClusterRoleSelectors {
		s, err := metav1.LabelSelectorAsSelector(&r.AggregationRule.ClusterRoleSelectors[i])
		if err != nil {
			c.selectors, c.selectorErr = nil, fmt.Errorf("clusterrole %q: aggregationRule: %w", r.Name, err)
			return c
		}
		c.selectors = append(c.selectors, s)
	}
	return c
}

// newBinding computes where each subject of rb is indexed.
func newBinding(rb *rbacv1.RoleBinding) *binding {
	namespace := rb.Namespace
	b := &binding{obj: rb, namespace: namespace, name: rb.Name, roleRef: rb.RoleRef, subjects: rb.Subjects,
		keys: make([]subjectKey, len(rb.Subjects))}
	for i, s := range rb.Subjects {
		switch s.Kind {
		case rbacv1.UserKind:
			b.keys[i] = subjectKey{namespace, 'u', s.Name}
		case rbacv1.GroupKind:
			b.keys[i] = subjectKey{namespace, 'g', s.Name}
		case rbacv1.ServiceAccountKind:
			// The subject's namespace defaults to the binding's.
			ns := s.Namespace
			if ns == "" {
				ns = namespace
			}
			if ns != "" {
				b.keys[i] = subjectKey{namespace, 'u', user.ServiceAccountUsernamePrefix + ns + ":" + s.Name}
			}
		}
	}
	return b
}

// key is the storage key of an indexed object.
func key(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

// put stores (or with d nil, removes) the object of kind k under key.
func (x *index) put(k kind, key string, d decoded) {
	switch k {
	case kindRoles:
		if d == nil {
			delete(x.roles, key)
		} else {
			x.roles[key] = d.(*rbacv1.Role)
		}
	case kindClusterRoles:
		if d == nil {
			delete(x.clusterRoles, key)
		} else {
			x.clusterRoles[key] = d.(*clusterRole)
		}
	default:
		if old := x.bindings[k][key]; old != nil {
			x.unindex(old)
			delete(x.bindings[k], key)
		}
		if d != nil {
			b := d.(*binding)
			x.bindings[k][key] = b
			for _, sk := range b.keys {
				if sk == (subjectKey{}) {
					continue
				}
				set := x.bySubject[sk]
				if set == nil {
					set = map[*binding]struct{}{}
					x.bySubject[sk] = set
				}
				set[b] = struct{}{}
			}
		}
	}
}

// unindex removes b from the subject index.
func (x *index) unindex(b *binding) {
	for _, sk := range b.keys {
		if set := x.bySubject[sk]; set != nil {
			delete(set, b)
			if len(set) == 0 {
				delete(x.bySubject, sk)
			}
		}
	}
}

// replace makes objs (by key) the whole content of kind k.
func (x *index) replace(k kind, objs map[string]decoded) {
	var keys []string
	switch k {
	case kindRoles:
		for key := range x.roles {
			keys = append(keys, key)
		}
	case kindClusterRoles:
		for key := range x.clusterRoles {
			keys = append(keys, key)
		}
	default:
		for key := range x.bindings[k] {
			keys = append(keys, key)
		}
	}
	for _, key := range keys {
		if _, ok := objs[key]; !ok {
			x.put(k, key, nil)
		}
	}
	for key, d := range objs {
		x.put(k, key, d)
	}
}
