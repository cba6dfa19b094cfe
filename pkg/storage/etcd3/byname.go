// Lists and watches by name against etcd: a list that only one key can
// answer read as one Get, and the key or prefix a watch by name watches.

package etcd3

import (
	"context"

	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/storage"
	"github.com/watchcache/watchcache/pkg/storage/storagemetrics"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// readKey answers a list over scope whose selectors only an object at key
// can pass (a list by name, see storage.LookupByName) with one Get of that
// key, at the revision plan says: the newest (consistent, "any", and "not
// older than", checked against N) or exactly N (exact reads and
// continuations). The list has at most one object, so it never continues;
// a continue token from a list that did (another store's, or a list of all
// namespaces) starts at plan.StartKey, which may be past key.
func (s *Store) readKey(ctx context.Context, scope, key string, plan storage.ListPlan, opts *storage.ListOptions) (*storage.List, error) {
	var ops []clientv3.OpOption
	if plan.Read == storage.ReadExact {
		ops = append(ops, clientv3.WithRev(int64(plan.RV)))
	}
	resp, err := s.client.Get(ctx, s.prefix+key, ops...)
	if err != nil {
		return nil, interpret(err, scope)
	}
	out := &storage.List{ResourceVersion: uint64(resp.Header.Revision)}
	switch plan.Read {
	case storage.ReadExact:
		out.ResourceVersion = plan.RV
	case storage.ReadNotOlderThan:
		if out.ResourceVersion < plan.RV {
			return nil, storage.NewTooLargeResourceVersion(plan.RV, out.ResourceVersion)
		}
	}
	if len(resp.Kvs) == 1 && key >= plan.StartKey {
		kv := resp.Kvs[0]
		obj, err := s.decodeKV(kv.Key, kv.Value, kv.ModRevision)
		if err != nil {
			return nil, err
		}
		if opts.Matches(obj) {
			out.Items = []*object.Object{obj}
		}
	}
	s.metrics.ListServed(s.resource, storagemetrics.StorageEtcd, len(resp.Kvs), len(out.Items))
	return out, nil
}

// watchRange is what a watch over scope with opts watches in etcd: the
// one key a watch by name can see (storage.LookupByName), else every key
// under scope (prefix).
func (s *Store) watchRange(scope string, opts *storage.ListOptions) (key string, prefix bool) {
	if l, ok := opts.LookupByName(scope, s.schema.ClusterScoped()); ok && l.Key != "" {
		return s.prefix + l.Key, false
	}
	return s.prefix + scope, true
}
