// Package rbac is kube-apiserver's RBAC authorizer served from the watch
// cache: an in-memory index of Roles, ClusterRoles, RoleBindings and
// ClusterRoleBindings, fed like an informer (list from the cache, then
// watch with bookmarks), answers every request with map lookups.
//
// It also holds what the RBAC registry does around writes (escalation
// prevention, CheckEscalation) and the ClusterRole aggregation controller
// kube-controller-manager runs upstream. The bootstrap policy is in the
// bootstrap sub-package.
//
// Semantics follow kube-apiserver's plugin/pkg/auth/authorizer/rbac and
// pkg/registry/rbac: RBAC only allows (a missing permission is NoOpinion),
// ClusterRoleBindings apply in every namespace, RoleBindings in theirs, and
// the group system:masters is allowed everything.
package rbac
