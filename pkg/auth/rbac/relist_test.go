package rbac_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

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
	// The creates are applied once a re-list reaches them, which may come
	// before the last failing watch is tried (after its backoff).
	for deadline := time.Now().Add(10 * time.Second); flaky.failures.Load() > 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the failing watches were not tried")
		}
	}
	if !can(t, a, alice, "get", "pods", "ns1") {
		t.Error("binding not applied after re-listing")
	}
}
