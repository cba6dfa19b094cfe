// The authorizer of --authorization-mode (RBAC by default, Node,
// AlwaysAllow, AlwaysDeny), the pipeline's stages that refuse RBAC escalation and wait for
// RBAC to see a write, and RBAC's /readyz check.

package app

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/watchcache/watchcache/pkg/auth/authorizer"
	"github.com/watchcache/watchcache/pkg/auth/node"
	"github.com/watchcache/watchcache/pkg/auth/rbac"
	"github.com/watchcache/watchcache/pkg/auth/rbac/bootstrap"
	"github.com/watchcache/watchcache/pkg/auth/review"
	"github.com/watchcache/watchcache/pkg/auth/user"
	"github.com/watchcache/watchcache/pkg/pipeline"
	"github.com/watchcache/watchcache/pkg/resource"
	"github.com/watchcache/watchcache/pkg/storage"
	rbacv1 "k8s.io/api/rbac/v1"
)

// Authorization modes of --authorization-mode.
const (
	ModeRBAC        = "RBAC"
	ModeNode        = "Node"
	ModeAlwaysAllow = "AlwaysAllow"
	ModeAlwaysDeny  = "AlwaysDeny"
)

// authorization is the server's authorizer: the modes asked for, in order,
// and the RBAC authorizer when RBAC is among them.
type authorization struct {
	authorizer.Authorizer
	// rbac is nil unless RBAC is a mode.
	rbac *rbac.Authorizer
}

// newAuthorization builds the authorizer of modes (default RBAC) over the
// RBAC resources' stores, starts RBAC's index and reconciles the bootstrap
// policy. The default differs from kube-apiserver's (AlwaysAllow), as
// envtest and kubeadm pass RBAC or Node,RBAC: the server is secure
// without flags.
func newAuthorization(ctx context.Context, modes []string, registry *resource.Registry, log *slog.Logger) (*authorization, error) {
	if len(modes) == 0 {
		modes = []string{ModeRBAC}
	}
	z := &authorization{}
	var chain []authorizer.Authorizer
	for _, mode := range modes {
		switch mode {
		case ModeRBAC:
			if z.rbac != nil {
				return nil, fmt.Errorf("authorization mode %s given twice", mode)
			}
			rbacStores := rbacStores(registry)
			z.rbac = rbac.New(rbacStores, log)
			z.rbac.Start(ctx)
			if err := bootstrap.Bootstrap(ctx, rbacStores, log); err != nil {
				return nil, fmt.Errorf("RBAC bootstrap policy: %w", err)
			}
			chain = append(chain, z.rbac)
		case ModeNode:
			rules, err := nodeRules()
			if err != nil {
				return nil, err
			}
			chain = append(chain, node.New(registry, rules))
		case ModeAlwaysAllow:
			chain = append(chain, authorizer.AlwaysAllow)
		case ModeAlwaysDeny:
			chain = append(chain, authorizer.AlwaysDeny)
		case "ABAC", "Webhook":
			return nil, fmt.Errorf("authorization-mode %q is not supported by watchcache (known: %s, %s, %s, %s)", mode, ModeRBAC, ModeNode, ModeAlwaysAllow, ModeAlwaysDeny)
		default:
			return nil, fmt.Errorf("authorization-mode %q is not a valid mode (known: %s, %s, %s, %s)", mode, ModeRBAC, ModeNode, ModeAlwaysAllow, ModeAlwaysDeny)
		}
	}
	z.Authorizer = authorizer.Union(chain...)
	return z, nil
}

// nodeRules are the rules of the bootstrap policy's system:node
// ClusterRole: what the Node authorizer allows besides its relationship
// checks (kube-apiserver binds that role to no one).
func nodeRules() ([]rbacv1.PolicyRule, error) {
	policy, err := bootstrap.Load()
	if err != nil {
		return nil, err
	}
	for _, r := range policy.ClusterRoles {
		if r.Name == "system:node" {
			return r.Rules, nil
		}
	}
	return nil, fmt.Errorf("bootstrap policy: no system:node ClusterRole")
}

func rbacStores(registry *resource.Registry) rbac.Stores {
	of := func(plural string) storage.Interface {
		return registry.Store(registry.Lookup("rbac.authorization.k8s.io", "v1", plural))
	}
	return rbac.Stores{Roles: of("roles"), RoleBindings: of("rolebindings"), ClusterRoles: of("clusterroles"),
		ClusterRoleBindings: of("clusterrolebindings")}
}

// rbacEscalation is the write pipeline's stage that refuses RBAC writes
// that would grant what the writer does not hold (escalation prevention),
// reading the object as it will be stored.
type rbacEscalation struct{ z *authorization }

// Validate checks a create or update of an RBAC object.
func (e rbacEscalation) Validate(ctx context.Context, req *pipeline.Request) error {
	if e.z.rbac == nil || req.Resource.Group != "rbac.authorization.k8s.io" || req.Stored == nil {
		return nil
	}
	return e.z.rbac.CheckEscalation(ctx, user.From(ctx), req.Resource.Plural, req.Namespace, req.Stored)
}

// rbacCatchUp is the write pipeline's stage that holds an RBAC write's
// response until the authorizer has the change, so that the next request
// is authorized with it. A write whose change does not arrive in time (the
// request's context ends) still succeeds.
type rbacCatchUp struct{ z *authorization }

// Committed waits for the authorizer to have revision rv of res.
func (c rbacCatchUp) Committed(ctx context.Context, res *resource.Resource, rv uint64) {
	if c.z.rbac == nil || res.Group != "rbac.authorization.k8s.io" {
		return
	}
	c.z.rbac.WaitFor(ctx, res.Plural, rv)
}

// ready is the /readyz check: RBAC's index has its initial lists.
func (z *authorization) ready(context.Context) error {
	if z.rbac != nil && !z.rbac.HasSynced() {
		return fmt.Errorf("RBAC authorizer has not synced")
	}
	return nil
}

// allowsEveryone reports whether anyone may do anything (AlwaysAllow
// first), for the warning at start.
func allowsEveryone(modes []string) bool {
	return len(modes) > 0 && modes[0] == ModeAlwaysAllow
}

// rules is RBAC for rules reviews; nil in other modes.
func (z *authorization) rules() review.RulesResolver {
	if z.rbac == nil {
		return nil
	}
	return z.rbac
}
