// The ClusterRole aggregation controller (kube-controller-manager's
// clusterrole-aggregation): the rules of ClusterRoles selected by an
// aggregationRule written into the aggregating ClusterRole.

package rbac

import (
	"context"
	"encoding/json"
	"sort"
	"time"

	"github.com/watchcache/watchcache/pkg/informer"
	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/storage"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/labels"
)

// runAggregation is the ClusterRole aggregation controller: after each
// change to ClusterRoles (once they are listed) it gives every ClusterRole
// with an aggregationRule the rules of the ClusterRoles its selectors
// match, retrying failed writes with backoff.
func (a *Authorizer) runAggregation(ctx context.Context) {
	backoff := informer.MinBackoff
	for {
		select {
		case <-ctx.Done():
			return
		case <-a.aggregate:
		}
		if err := a.aggregateAll(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			a.log.Warn("rbac: aggregating cluster roles", "err", err, "retry", backoff)
			time.AfterFunc(backoff, func() { a.changedKind(kindClusterRoles) })
			backoff = min(2*backoff, informer.MaxBackoff)
			continue
		}
		backoff = informer.MinBackoff
	}
}

// aggregateAll writes the aggregated rules of every aggregating ClusterRole
// whose rules differ from them.
func (a *Authorizer) aggregateAll(ctx context.Context) error {
	a.mu.RLock()
	if !a.synced[kindClusterRoles] {
		a.mu.RUnlock()
		return nil
	}
	want := map[string][]rbacv1.PolicyRule{}
	for name, c := range a.idx.clusterRoles {
		if c.role.AggregationRule == nil {
			continue
		}
		if c.selectorErr != nil {
			a.log.Error("rbac: not aggregating", "err", c.selectorErr)
			continue
		}
		rules := aggregatedRules(a.idx.clusterRoles, name, c.selectors)
		if !equality.Semantic.DeepEqual(rules, c.role.Rules) {
			want[name] = rules
		}
	}
	a.mu.RUnlock()
	for name, rules := range want {
		if err := a.writeRules(ctx, name, rules); err != nil {
			return err
		}
	}
	return nil
}

// aggregatedRules is the union of the rules of the ClusterRoles (other
// than name) matching any selector, in upstream's order: selector by
// selector, matching roles by name, each rule once.
func aggregatedRules(roles map[string]*clusterRole, name string, selectors []labels.Selector) []rbacv1.PolicyRule {
	rules := []rbacv1.PolicyRule{}
	for _, s := range selectors {
		var matched []*rbacv1.ClusterRole
		for n, c := range roles {
			if n != name && s.Matches(labels.Set(c.role.Labels)) {
				matched = append(matched, c.role)
			}
		}
		sort.Slice(matched, func(i, j int) bool { return matched[i].Name < matched[j].Name })
		for _, r := range matched {
			for _, rule := range r.Rules {
				if !ruleExists(rules, rule) {
					rules = append(rules, rule)
				}
			}
		}
	}
	return rules
}

func ruleExists(rules []rbacv1.PolicyRule, rule rbacv1.PolicyRule) bool {
	for i := range rules {
		if equality.Semantic.DeepEqual(rules[i], rule) {
			return true
		}
	}
	return false
}

// writeRules sets a ClusterRole's rules, unless it lost its aggregationRule
// or already has them. A role deleted meanwhile is not an error.
func (a *Authorizer) writeRules(ctx context.Context, name string, rules []rbacv1.PolicyRule) error {
	_, err := a.stores.ClusterRoles.GuaranteedUpdate(ctx, name, nil, func(cur *object.Object) ([]byte, error) {
		var r rbacv1.ClusterRole
		if err := json.Unmarshal(cur.Stored(), &r); err != nil {
			return nil, err
		}
		if r.AggregationRule == nil || equality.Semantic.DeepEqual(r.Rules, rules) {
			return cur.Stored(), nil
		}
		r.Rules = rules
		return json.Marshal(&r)
	}, nil)
	if storage.IsNotFound(err) {
		return nil
	}
	return err
}
