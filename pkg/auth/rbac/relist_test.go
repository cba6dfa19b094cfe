package rbac_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/watchcache/watchcache/pkg/storage"
)

// expiringStore fails its first watches with 410 Expired.
type expiringStore struct {
	storage.Interface
	failures atomic.Int32
}

func (s *expiringStore) Watch(ctx context.Context, scope string, opts storage.ListOptions) (storage.Watcher, error) {
	if s.failures.Add(-1) >= 0 {
		return nil, storage.NewExpired(1, "test")
	}
	return s.Interface.Watch(ctx, scope, opts)
}

// TestRelistAfterExpired checks that the authorizer re-lists after a
// failed watch and then follows the store.
func TestRelistAfterExpired(t *testing.T) {
	e := newEnv(t)
	flaky := &expiringStore{Interface: e.stores.ClusterRoleBindings}
	flaky.failures.Store(2)
	e.stores.ClusterRoleBindings = flaky
	a := e.start()
	e.create("clusterroles", clusterRole("pod-reader", rule("get", "", "pods")))
	e.create("clusterrolebindings", clusterRoleBinding("alice", "pod-reader", userSubject("alice")))
	if flaky.failures.Load() > 0 {
		t.Fatal("the failing watches were not tried")
	}
	if !can(t, a, alice, "get", "pods", "ns1") {
		t.Error("binding not applied after re-listing")
	}
}
