// Bootstrap: reconciling the stores with the default RBAC policy at startup,
// as kube-apiserver's rbac/bootstrap-roles post-start hook, and its logging.

package bootstrap

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/watchcache/watchcache/pkg/auth/rbac"
	"golang.org/x/sync/errgroup"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/retry"
	"k8s.io/component-helpers/auth/rbac/reconciliation"
)

// Bootstrap reconciles the stores with the bootstrap policy, as
// kube-apiserver does at every start: missing objects are created (with a
// uid and creationTimestamp), and existing ones annotated
// rbac.authorization.kubernetes.io/autoupdate "true" get the policy's
// missing rules, aggregation selectors, subjects, labels and annotations
// (nothing is removed; a changed roleRef recreates the binding). Objects
// annotated autoupdate "false" are left alone. It is idempotent: a second
// run writes nothing. log may be nil.
func Bootstrap(ctx context.Context, stores rbac.Stores, log *slog.Logger) error {
	if log == nil {
		log = slog.Default()
	}
	p, err := Load()
	if err != nil {
		return err
	}
	gr := func(r string) schema.GroupResource { return schema.GroupResource{Group: rbacv1.GroupName, Resource: r} }
	cr := clusterRoles{objectStore{ctx, stores.ClusterRoles, gr("clusterroles")}}
	crb := clusterRoleBindings{objectStore{ctx, stores.ClusterRoleBindings, gr("clusterrolebindings")}}
	r := roles{objectStore{ctx, stores.Roles, gr("roles")}}
	rb := roleBindings{objectStore{ctx, stores.RoleBindings, gr("rolebindings")}}

	// The objects are independent of one another (a binding names its role
	// but does not need it to exist), so they are reconciled concurrently:
	// a first start writes 141 objects, one etcd round trip each.
	var g errgroup.Group
	g.SetLimit(reconcileConcurrency)
	for i := range p.ClusterRoles {
		o := &p.ClusterRoles[i]
		g.Go(func() error {
			return reconcileRole(log, "clusterrole", reconciliation.ClusterRoleRuleOwner{ClusterRole: o}, cr)
		})
	}
	for i := range p.ClusterRoleBindings {
		o := &p.ClusterRoleBindings[i]
		g.Go(func() error {
			return reconcileBinding(log, "clusterrolebinding", reconciliation.ClusterRoleBindingAdapter{ClusterRoleBinding: o}, crb)
		})
	}
	for i := range p.Roles {
		o := &p.Roles[i]
		g.Go(func() error { return reconcileRole(log, "role", reconciliation.RoleRuleOwner{Role: o}, r) })
	}
	for i := range p.RoleBindings {
		o := &p.RoleBindings[i]
		g.Go(func() error {
			return reconcileBinding(log, "rolebinding", reconciliation.RoleBindingAdapter{RoleBinding: o}, rb)
		})
	}
	return g.Wait()
}

// reconcileConcurrency bounds the objects reconciled at once.
const reconcileConcurrency = 16

func reconcileRole(log *slog.Logger, what string, role reconciliation.RuleOwner, client reconciliation.RuleOwnerModifier) error {
	opts := reconciliation.ReconcileRoleOptions{Role: role, Client: client, Confirm: true}
	return retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		result, err := opts.Run()
		if err != nil {
			return fmt.Errorf("bootstrap policy: %s %s: %w", what, name(role.GetNamespace(), role.GetName()), err)
		}
		logResult(log, what, role.GetNamespace(), role.GetName(), result.Operation, result.Protected)
		return nil
	})
}

func reconcileBinding(log *slog.Logger, what string, b reconciliation.RoleBinding, client reconciliation.RoleBindingModifier) error {
	opts := reconciliation.ReconcileRoleBindingOptions{RoleBinding: b, Client: client, Confirm: true}
	return retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		result, err := opts.Run()
		if err != nil {
			return fmt.Errorf("bootstrap policy: %s %s: %w", what, name(b.GetNamespace(), b.GetName()), err)
		}
		logResult(log, what, b.GetNamespace(), b.GetName(), result.Operation, result.Protected)
		return nil
	})
}

func name(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

// logResult logs what reconciling one object did, as upstream does.
func logResult(log *slog.Logger, what, namespace, n string, op reconciliation.ReconcileOperation, protected bool) {
	switch {
	case protected && op != reconciliation.ReconcileNone:
		log.Warn("bootstrap policy: skipped reconciling a protected object", "kind", what, "name", name(namespace, n), "operation", op)
	case op != reconciliation.ReconcileNone:
		log.Debug("bootstrap policy: reconciled", "kind", what, "name", name(namespace, n), "operation", op)
	}
}
