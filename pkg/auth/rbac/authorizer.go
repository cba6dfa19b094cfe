// The RBAC authorizer: its stores, Start (the reflectors and the aggregation
// controller), HasSynced, WaitFor a revision, Authorize and RulesFor, as
// plugin/pkg/auth/authorizer/rbac.

package rbac

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"github.com/watchcache/watchcache/pkg/auth/authorizer"
	"github.com/watchcache/watchcache/pkg/auth/user"
	"github.com/watchcache/watchcache/pkg/storage"
	rbacv1 "k8s.io/api/rbac/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
)

// Stores are the stores of the four RBAC resources (watch caches in front
// of etcd), keyed "namespace/name" or "name".
type Stores struct {
	Roles, RoleBindings, ClusterRoles, ClusterRoleBindings storage.Interface
}

func (s Stores) of(k kind) storage.Interface {
	return [numKinds]storage.Interface{s.Roles, s.RoleBindings, s.ClusterRoles, s.ClusterRoleBindings}[k]
}

// Authorizer is the RBAC authorizer. Its index is fed by Start; until the
// initial lists are in (HasSynced) only system:masters is allowed.
type Authorizer struct {
	stores Stores
	log    *slog.Logger
	// aggregate wakes the aggregation controller (capacity 1: signals
	// coalesce).
	aggregate chan struct{}

	// mu guards the index and the progress below. Authorize holds the read
	// lock; applying events holds the write lock.
	mu  sync.RWMutex
	idx index
	// applied[k] is the revision kind k's events are applied up to.
	applied [numKinds]uint64
	synced  [numKinds]bool
	// changed is closed (and replaced) whenever applied or synced changes.
	changed chan struct{}
}

var _ authorizer.Authorizer = (*Authorizer)(nil)

// New returns an authorizer over stores; log may be nil (slog.Default).
// Nothing runs until Start.
func New(stores Stores, log *slog.Logger) *Authorizer {
	if log == nil {
		log = slog.Default()
	}
	return &Authorizer{stores: stores, log: log, aggregate: make(chan struct{}, 1), idx: newIndex(),
		changed: make(chan struct{})}
}

// Start lists and watches the four resources and runs the ClusterRole
// aggregation controller, until ctx is done. It returns at once.
func (a *Authorizer) Start(ctx context.Context) {
	for k := range numKinds {
		go a.reflect(ctx, k)
	}
	go a.runAggregation(ctx)
}

// HasSynced reports whether the initial list of each of the four resources
// is in the index.
func (a *Authorizer) HasSynced() bool {
	a.mu.RLock()
	defer a.mu.RUnlock()
	for _, s := range a.synced {
		if !s {
			return false
		}
	}
	return true
}

// WaitFor returns once the index has applied resource's changes up to
// revision rv (events and bookmarks count): called with the
// resourceVersion an RBAC write returned, the write is in effect after it.
// resource is "roles", "rolebindings", "clusterroles" or
// "clusterrolebindings", with or without ".rbac.authorization.k8s.io".
func (a *Authorizer) WaitFor(ctx context.Context, resource string, rv uint64) error {
	k, ok := kindOf(resource)
	if !ok {
		return fmt.Errorf("rbac: not an RBAC resource: %q", resource)
	}
	for {
		a.mu.RLock()
		done, changed := a.synced[k] && a.applied[k] >= rv, a.changed
		a.mu.RUnlock()
		if done {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("rbac: waiting for %s to reach revision %d: %w", kindNames[k], rv, ctx.Err())
		}
	}
}

// kindOf maps a resource name to its kind.
func kindOf(resource string) (kind, bool) {
	resource = strings.TrimSuffix(resource, "."+rbacv1.GroupName)
	for k, n := range kindNames {
		if n == resource {
			return kind(k), true
		}
	}
	return 0, false
}

// Authorize implements authorizer.Authorizer: Allow if a rule bound to the
// user allows the request, else NoOpinion, with upstream's reasons ("RBAC:
// allowed by ..." or the roles that could not be found). Members of
// system:masters are allowed everything, even before the index is synced.
func (a *Authorizer) Authorize(_ context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	u := attrs.User
	if u == nil {
		return authorizer.NoOpinion, "", nil
	}
	if u.InGroup(user.SystemPrivilegedGroup) {
		return authorizer.Allow, "", nil
	}
	var (
		by      *binding
		subject int
		errs    []error
	)
	a.mu.RLock()
	a.idx.visitRulesFor(u, attrs.Namespace, func(b *binding, i int, rule *rbacv1.PolicyRule, err error) bool {
		if rule != nil && RuleAllows(&attrs, rule) {
			by, subject = b, i
			return false
		}
		if err != nil {
			errs = append(errs, err)
		}
		return true
	})
	a.mu.RUnlock()
	if by != nil {
		return authorizer.Allow, "RBAC: allowed by " + by.describe(subject), nil
	}
	if len(errs) > 0 {
		return authorizer.NoOpinion, fmt.Sprintf("RBAC: %v", utilerrors.NewAggregate(errs)), nil
	}
	return authorizer.NoOpinion, "", nil
}

// RulesFor returns the rules that apply to u in namespace (cluster-wide
// ones only for namespace ""), resource and non-resource rules together, as
// upstream's RulesFor. The error, if any, lists the bound roles that could
// not be found; the rules are still valid (RBAC only allows). The rules
// share memory with the index: do not modify them.
func (a *Authorizer) RulesFor(u *user.Info, namespace string) ([]rbacv1.PolicyRule, error) {
	if u == nil {
		return nil, nil
	}
	var (
		rules []rbacv1.PolicyRule
		errs  []error
	)
	a.mu.RLock()
	a.idx.visitRulesFor(u, namespace, func(_ *binding, _ int, rule *rbacv1.PolicyRule, err error) bool {
		if rule != nil {
			rules = append(rules, *rule)
		} else {
			errs = append(errs, err)
		}
		return true
	})
	a.mu.RUnlock()
	return rules, utilerrors.NewAggregate(errs)
}
