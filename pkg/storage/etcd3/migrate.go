package etcd3

import (
	"context"
	"fmt"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Migrate moves the objects kept under from, an older layout's prefix of
// the store's resource, to the store's prefix, and returns how many it
// moved. Each object moves in one transaction that creates its new key
// (only if absent) and deletes its old one (only if unchanged), keeping
// nothing else: the pass can stop anywhere and be run again, and a
// resumed pass finds only what is left. Values are read and written as
// the store reads and writes (decrypted with their old key, which the
// authenticated providers bind them to, then encoded and encrypted
// anew). An object at both keys is an error naming both: which one is
// right is the administrator's call.
func (s *Store) Migrate(ctx context.Context, from string) (int, error) {
	from = strings.TrimSuffix(from, "/") + "/"
	if from == s.prefix {
		return 0, nil
	}
	moved := 0
	for {
		resp, err := s.client.Get(ctx, from, clientv3.WithPrefix(), clientv3.WithLimit(100))
		if err != nil {
			return moved, interpret(err, "")
		}
		if len(resp.Kvs) == 0 {
			return moved, nil
		}
		for _, kv := range resp.Kvs {
			key := strings.TrimPrefix(string(kv.Key), from)
			obj, err := s.decodeValue(key, string(kv.Key), kv.Value, kv.ModRevision)
			if err != nil {
				return moved, err
			}
			to := s.prefix + key
			value, _, err := s.storedValue(ctx, to, obj)
			if err != nil {
				return moved, err
			}
			txn, err := s.client.Txn(ctx).
				If(clientv3.Compare(clientv3.CreateRevision(to), "=", 0), clientv3.Compare(clientv3.ModRevision(string(kv.Key)), "=", kv.ModRevision)).
				Then(clientv3.OpPut(to, value), clientv3.OpDelete(string(kv.Key))).
				Commit()
			if err != nil {
				return moved, interpret(err, key)
			}
			if !txn.Succeeded {
				cur, err := s.client.Get(ctx, to, clientv3.WithKeysOnly())
				if err != nil {
					return moved, interpret(err, key)
				}
				if len(cur.Kvs) > 0 {
					return moved, fmt.Errorf("%s is kept both at %s (the old layout) and at %s: delete the one that is not right", key, kv.Key, to)
				}
				continue // changed meanwhile: the next read sees it again
			}
			moved++
		}
	}
}
