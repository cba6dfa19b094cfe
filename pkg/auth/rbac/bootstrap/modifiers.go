// The client interfaces of k8s.io/component-helpers' RBAC reconciliation
// (RuleOwner, RoleBinding modifiers) for ClusterRoles, Roles,
// ClusterRoleBindings and RoleBindings over the stores.

package bootstrap

import (
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/component-helpers/auth/rbac/reconciliation"
)

// The reconciliation helpers' clients, over objectStores.

type clusterRoles struct{ s objectStore }

func (c clusterRoles) Get(_, name string) (reconciliation.RuleOwner, error) {
	out := &rbacv1.ClusterRole{}
	if err := c.s.get("", name, out); err != nil {
		return nil, err
	}
	return reconciliation.ClusterRoleRuleOwner{ClusterRole: out}, nil
}

func (c clusterRoles) Create(in reconciliation.RuleOwner) (reconciliation.RuleOwner, error) {
	out := &rbacv1.ClusterRole{}
	if err := c.s.create(in.(reconciliation.ClusterRoleRuleOwner).ClusterRole, out); err != nil {
		return nil, err
	}
	return reconciliation.ClusterRoleRuleOwner{ClusterRole: out}, nil
}

func (c clusterRoles) Update(in reconciliation.RuleOwner) (reconciliation.RuleOwner, error) {
	out := &rbacv1.ClusterRole{}
	if err := c.s.update(in.(reconciliation.ClusterRoleRuleOwner).ClusterRole, out); err != nil {
		return nil, err
	}
	return reconciliation.ClusterRoleRuleOwner{ClusterRole: out}, nil
}

type roles struct{ s objectStore }

func (c roles) Get(namespace, name string) (reconciliation.RuleOwner, error) {
	out := &rbacv1.Role{}
	if err := c.s.get(namespace, name, out); err != nil {
		return nil, err
	}
	return reconciliation.RoleRuleOwner{Role: out}, nil
}

func (c roles) Create(in reconciliation.RuleOwner) (reconciliation.RuleOwner, error) {
	out := &rbacv1.Role{}
	if err := c.s.create(in.(reconciliation.RoleRuleOwner).Role, out); err != nil {
		return nil, err
	}
	return reconciliation.RoleRuleOwner{Role: out}, nil
}

func (c roles) Update(in reconciliation.RuleOwner) (reconciliation.RuleOwner, error) {
	out := &rbacv1.Role{}
	if err := c.s.update(in.(reconciliation.RoleRuleOwner).Role, out); err != nil {
		return nil, err
	}
	return reconciliation.RoleRuleOwner{Role: out}, nil
}

type clusterRoleBindings struct{ s objectStore }

func (c clusterRoleBindings) Get(_, name string) (reconciliation.RoleBinding, error) {
	out := &rbacv1.ClusterRoleBinding{}
	if err := c.s.get("", name, out); err != nil {
		return nil, err
	}
	return reconciliation.ClusterRoleBindingAdapter{ClusterRoleBinding: out}, nil
}

func (c clusterRoleBindings) Create(in reconciliation.RoleBinding) (reconciliation.RoleBinding, error) {
	out := &rbacv1.ClusterRoleBinding{}
	if err := c.s.create(in.(reconciliation.ClusterRoleBindingAdapter).ClusterRoleBinding, out); err != nil {
		return nil, err
	}
	return reconciliation.ClusterRoleBindingAdapter{ClusterRoleBinding: out}, nil
}

func (c clusterRoleBindings) Update(in reconciliation.RoleBinding) (reconciliation.RoleBinding, error) {
	out := &rbacv1.ClusterRoleBinding{}
	if err := c.s.update(in.(reconciliation.ClusterRoleBindingAdapter).ClusterRoleBinding, out); err != nil {
		return nil, err
	}
	return reconciliation.ClusterRoleBindingAdapter{ClusterRoleBinding: out}, nil
}

func (c clusterRoleBindings) Delete(_, name string, uid types.UID) error {
	return c.s.delete("", name, uid)
}

type roleBindings struct{ s objectStore }

func (c roleBindings) Get(namespace, name string) (reconciliation.RoleBinding, error) {
	out := &rbacv1.RoleBinding{}
	if err := c.s.get(namespace, name, out); err != nil {
		return nil, err
	}
	return reconciliation.RoleBindingAdapter{RoleBinding: out}, nil
}

func (c roleBindings) Create(in reconciliation.RoleBinding) (reconciliation.RoleBinding, error) {
	out := &rbacv1.RoleBinding{}
	if err := c.s.create(in.(reconciliation.RoleBindingAdapter).RoleBinding, out); err != nil {
		return nil, err
	}
	return reconciliation.RoleBindingAdapter{RoleBinding: out}, nil
}

func (c roleBindings) Update(in reconciliation.RoleBinding) (reconciliation.RoleBinding, error) {
	out := &rbacv1.RoleBinding{}
	if err := c.s.update(in.(reconciliation.RoleBindingAdapter).RoleBinding, out); err != nil {
		return nil, err
	}
	return reconciliation.RoleBindingAdapter{RoleBinding: out}, nil
}

func (c roleBindings) Delete(namespace, name string, uid types.UID) error {
	return c.s.delete(namespace, name, uid)
}
