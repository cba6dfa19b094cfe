// Package bootstrap is kube-apiserver's bootstrap RBAC policy, as data
// (policy.yaml, read off kube-apiserver 1.37.2), and Bootstrap, which
// reconciles the stores with it at server start as kube-apiserver's
// rbac/bootstrap-roles post-start hook does.
package bootstrap

import (
	_ "embed"
	"encoding/json"
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

//go:embed policy.yaml
var policyYAML []byte

// Policy is the bootstrap policy: every object kube-apiserver creates, by
// kind, in the order Bootstrap reconciles them.
type Policy struct {
	ClusterRoles        []rbacv1.ClusterRole
	ClusterRoleBindings []rbacv1.ClusterRoleBinding
	Roles               []rbacv1.Role
	RoleBindings        []rbacv1.RoleBinding
}

// Load decodes the embedded policy, fresh on each call.
func Load() (*Policy, error) {
	data, err := yaml.YAMLToJSON(policyYAML)
	if err != nil {
		return nil, fmt.Errorf("bootstrap policy: %w", err)
	}
	var list struct {
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(data, &list); err != nil {
		return nil, fmt.Errorf("bootstrap policy: %w", err)
	}
	p := &Policy{}
	for i, item := range list.Items {
		var head struct {
			Kind string `json:"kind"`
		}
		if err := json.Unmarshal(item, &head); err != nil {
			return nil, fmt.Errorf("bootstrap policy item %d: %w", i, err)
		}
		var into any
		switch head.Kind {
		case "ClusterRole":
			p.ClusterRoles = append(p.ClusterRoles, rbacv1.ClusterRole{})
			into = &p.ClusterRoles[len(p.ClusterRoles)-1]
		case "ClusterRoleBinding":
			p.ClusterRoleBindings = append(p.ClusterRoleBindings, rbacv1.ClusterRoleBinding{})
			into = &p.ClusterRoleBindings[len(p.ClusterRoleBindings)-1]
		case "Role":
			p.Roles = append(p.Roles, rbacv1.Role{})
			into = &p.Roles[len(p.Roles)-1]
		case "RoleBinding":
			p.RoleBindings = append(p.RoleBindings, rbacv1.RoleBinding{})
			into = &p.RoleBindings[len(p.RoleBindings)-1]
		default:
			return nil, fmt.Errorf("bootstrap policy item %d: unexpected kind %q", i, head.Kind)
		}
		if err := json.Unmarshal(item, into); err != nil {
			return nil, fmt.Errorf("bootstrap policy item %d: %w", i, err)
		}
	}
	return p, nil
}
