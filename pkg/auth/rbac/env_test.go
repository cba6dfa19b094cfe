package rbac_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/watchcache/watchcache/pkg/auth/rbac"
	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/storage"
	"github.com/watchcache/watchcache/pkg/storage/cacher"
	"github.com/watchcache/watchcache/pkg/storage/etcd3"
	"github.com/watchcache/watchcache/pkg/storage/storagetest"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
)

func TestMain(m *testing.M) { storagetest.Main(m) }

var envSeq atomic.Int64

// env is one test's four RBAC stores (watch caches over a real etcd, under
// a fresh prefix) and an authorizer over them.
type env struct {
	t      *testing.T
	ctx    context.Context
	stores rbac.Stores
	a      *rbac.Authorizer
}

// newEnv builds the stores; start starts the authorizer.
func newEnv(t *testing.T) *env {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	prefix := fmt.Sprintf("/rbactest/%d", envSeq.Add(1))
	store := func(resource string) storage.Interface {
		c := cacher.New(cacher.Config{
			Store: etcd3.New(etcd3.Config{Client: storagetest.Client(), Prefix: prefix + "/" + resource,
				Schema: object.MustSchema(), Resource: resource}),
			Resource: resource, BookmarkInterval: storagetest.ProgressNotifyInterval,
			ConsistentListFromCache: true, ConsistentGetFromCache: true,
		})
		t.Cleanup(c.Stop)
		for !c.Ready() {
			if ctx.Err() != nil {
				t.Fatal("cache not ready")
			}
			time.Sleep(time.Millisecond)
		}
		return c
	}
	return &env{t: t, ctx: ctx, stores: rbac.Stores{Roles: store("roles"), RoleBindings: store("rolebindings"),
		ClusterRoles: store("clusterroles"), ClusterRoleBindings: store("clusterrolebindings")}}
}

func (e *env) start() *rbac.Authorizer {
	ctx, cancel := context.WithCancel(e.ctx)
	e.t.Cleanup(cancel) // before the caches stop
	e.a = rbac.New(e.stores, nil)
	e.a.Start(ctx)
	for !e.a.HasSynced() {
		if e.ctx.Err() != nil {
			e.t.Fatal("authorizer not synced")
		}
		time.Sleep(time.Millisecond)
	}
	return e.a
}

func (e *env) store(resource string) storage.Interface {
	return map[string]storage.Interface{"roles": e.stores.Roles, "rolebindings": e.stores.RoleBindings,
		"clusterroles": e.stores.ClusterRoles, "clusterrolebindings": e.stores.ClusterRoleBindings}[resource]
}

// create stores obj (a typed RBAC object) and waits until the authorizer
// applied it.
func (e *env) create(resource string, obj metav1.Object) {
	e.t.Helper()
	obj.SetUID(uuid.NewUUID())
	data, err := json.Marshal(obj)
	if err != nil {
		e.t.Fatal(err)
	}
	key := obj.GetName()
	if obj.GetNamespace() != "" {
		key = obj.GetNamespace() + "/" + key
	}
	o, err := e.store(resource).Create(e.ctx, key, data)
	if err != nil {
		e.t.Fatalf("create %s %s: %v", resource, key, err)
	}
	if err := e.a.WaitFor(e.ctx, resource, o.ResourceVersion()); err != nil {
		e.t.Fatal(err)
	}
}

// remove deletes an object and waits until the authorizer applied it.
func (e *env) remove(resource, key string) {
	e.t.Helper()
	o, err := e.store(resource).Delete(e.ctx, key, nil, nil)
	if err != nil {
		e.t.Fatalf("delete %s %s: %v", resource, key, err)
	}
	if err := e.a.WaitFor(e.ctx, resource+".rbac.authorization.k8s.io", o.ResourceVersion()); err != nil {
		e.t.Fatal(err)
	}
}

// words splits a comma-separated list.
func words(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}
