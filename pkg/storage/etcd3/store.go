// Package etcd3 implements storage.Interface with every call served by
// etcd.
//
// Layout: an object under key K lives at etcd key Prefix + "/" + K, its
// value the record's JSON through the Codec (kube-apiserver's protobuf for
// built-in kinds) and the Transformer (encryption at rest). Its
// resourceVersion is the key's mod_revision; a list's resourceVersion is the
// revision of the read. Stored values never contain
// metadata.resourceVersion; it is spliced in when the record is built.
// Writes are transactions comparing mod_revision (optimistic concurrency).
package etcd3

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/storage"
	"github.com/watchcache/watchcache/pkg/storage/storagemetrics"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/metadata"
)

// Config configures a Store.
type Config struct {
	Client *clientv3.Client
	// Prefix is the resource's etcd key prefix, e.g. "/registry/pods",
	// without a trailing slash.
	Prefix string
	Schema *object.Schema
	// Resource names the resource in metrics (e.g. "pods").
	Resource string
	// Metrics, if not nil, records lists served.
	Metrics *storagemetrics.Storage
	// Transformer, if not nil, encrypts values on their way to etcd and
	// decrypts them on their way back (encryption at rest); everything
	// above this store sees plaintext.
	Transformer Transformer
	// Codec, if not nil, turns a record's JSON into the value etcd keeps
	// (before the transformer) and back: protobuf as kube-apiserver stores
	// built-in kinds. Nil: values are the records' JSON.
	Codec Codec
	// ListChunkKeys, if not zero, is the limit of the first read of a list
	// without a limit and of the ranged Gets that read its rest where
	// RangeStream is not used (tests: many small chunks); zero: 100 keys
	// first, then about 4 MB per read. RangeStream's chunks are etcd's to
	// size (10 keys, doubling up to about 1.5 MB).
	ListChunkKeys int64
	// NoRangeStream reads lists without a limit with ranged Gets even from
	// an etcd that has RangeStream (tests of the fallback).
	NoRangeStream bool
	// DisableShardedListAndWatch turns the ShardedListAndWatch feature gate
	// off: lists and watches ignore ListOptions.Shard. The zero value (on)
	// is the default.
	DisableShardedListAndWatch bool
	// TTL, if not zero, is how long an object lives after its last write
	// (at most a minute more: see lease.go); etcd then deletes it. Events'
	// --event-ttl.
	TTL time.Duration
}

// Transformer turns a value into what etcd stores at etcdKey, and back.
type Transformer interface {
	ToStorage(plain []byte, etcdKey string) ([]byte, error)
	// FromStorage returns the plaintext; stale says the value was written
	// with a key that no longer writes.
	FromStorage(stored []byte, etcdKey string) (plain []byte, stale bool, err error)
}

// Codec turns a record's stored JSON into the value etcd keeps, and back.
type Codec interface {
	Encode(stored []byte) ([]byte, error)
	Decode(value []byte) ([]byte, error)
}

// BuiltEncoder is a Codec that can encode a record's JSON from the object
// its writer marshalled it from (storage.Built) rather than decode it again.
type BuiltEncoder interface {
	EncodeBuilt(stored []byte, built any) ([]byte, error)
}

// Store is one resource's storage in etcd.
type Store struct {
	client *clientv3.Client
	prefix string // Config.Prefix + "/"
	schema *object.Schema
	// resource and metrics record lists served.
	resource    string
	metrics     *storagemetrics.Storage
	transformer Transformer
	codec       Codec
	// listChunkKeys and noRangeStream are Config's.
	listChunkKeys int64
	noRangeStream bool
	// noSharding is Config.DisableShardedListAndWatch.
	noSharding bool
	// noRangeStreamUntil is when RangeStream may be tried again after etcd
	// answered Unimplemented (Unix nanoseconds; 0: never refused).
	noRangeStreamUntil atomic.Int64
	// written is what this store has just written, for its watches.
	written written
	// leases, if not nil, are the leases writes attach keys to (Config.TTL).
	leases *leases
}

var _ storage.Interface = (*Store)(nil)

// New returns a Store for the resource under cfg.Prefix.
func New(cfg Config) *Store {
	s := &Store{client: cfg.Client, prefix: strings.TrimSuffix(cfg.Prefix, "/") + "/", schema: cfg.Schema,
		resource: cfg.Resource, metrics: cfg.Metrics, transformer: cfg.Transformer, codec: cfg.Codec,
		listChunkKeys: cfg.ListChunkKeys, noRangeStream: cfg.NoRangeStream, noSharding: cfg.DisableShardedListAndWatch}
	if cfg.TTL > 0 {
		s.leases = &leases{client: cfg.Client, ttl: cfg.TTL}
	}
	return s
}

// Schema implements storage.Interface.
func (s *Store) Schema() *object.Schema { return s.schema }

// Create implements storage.Interface: a transaction that puts the key only
// if it has never been created (create_revision 0), so two concurrent
// creates cannot both succeed.
func (s *Store) Create(ctx context.Context, key string, data []byte) (*object.Object, error) {
	if err := storage.CheckKey(key); err != nil {
		return nil, err
	}
	obj, clientRV, err := storage.DecodeWrite(s.schema, key, data)
	if err != nil {
		return nil, err
	}
	if clientRV != "" {
		return nil, storage.NewError(storage.ErrInvalid, key, "resourceVersion should not be set on objects to be created")
	}
	full := s.prefix + key
	value, obj, err := s.storedValue(ctx, full, obj)
	if err != nil {
		return nil, err
	}
	var resp *clientv3.TxnResponse
	err = s.withPutOptions(ctx, func(putOpts []clientv3.OpOption) (err error) {
		resp, err = s.client.Txn(ctx).
			If(clientv3.Compare(clientv3.CreateRevision(full), "=", 0)).
			Then(clientv3.OpPut(full, value, putOpts...)).
			Commit()
		return err
	})
	if err != nil {
		return nil, interpret(err, key)
	}
	if !resp.Succeeded {
		return nil, storage.NewAlreadyExists(key)
	}
	return obj.WithResourceVersion(uint64(resp.Header.Revision)), nil
}

// Get implements storage.Interface. Every Get is a linearizable read, which
// satisfies "any" and "not older than" as well; for "not older than N" the
// read's revision is checked against N.
func (s *Store) Get(ctx context.Context, key string, opts storage.GetOptions) (*object.Object, error) {
	plan, err := storage.PlanGet(opts)
	if err != nil {
		return nil, err
	}
	if err := storage.CheckKey(key); err != nil {
		return nil, err
	}
	resp, err := s.client.Get(ctx, s.prefix+key)
	if err != nil {
		return nil, interpret(err, key)
	}
	if plan.Read == storage.ReadNotOlderThan && uint64(resp.Header.Revision) < plan.RV {
		return nil, storage.NewTooLargeResourceVersion(plan.RV, uint64(resp.Header.Revision))
	}
	if len(resp.Kvs) == 0 {
		return nil, storage.NewNotFound(key)
	}
	return s.decodeKV(resp.Kvs[0].Key, resp.Kvs[0].Value, resp.Kvs[0].ModRevision)
}

// GuaranteedUpdate implements storage.Interface.
func (s *Store) GuaranteedUpdate(ctx context.Context, key string, pre *storage.Preconditions, tryUpdate storage.UpdateFunc, cached *object.Object) (*object.Object, error) {
	if err := storage.CheckKey(key); err != nil {
		return nil, err
	}
	full := s.prefix + key
	cur, fromCache := cached, cached != nil
	for {
		if cur == nil {
			var err error
			if cur, err = s.Get(ctx, key, storage.GetOptions{}); err != nil {
				return nil, err
			}
		}
		// A cached state may be stale: an outcome computed from it (a failed
		// precondition, an error or a no-op) is redone once against the
		// state read from etcd.
		refreshIfCached := func() bool {
			if fromCache {
				cur, fromCache = nil, false
				return true
			}
			return false
		}
		if err := pre.Check(key, cur); err != nil {
			if refreshIfCached() {
				continue
			}
			return nil, err
		}
		data, err := tryUpdate(cur)
		if err != nil {
			if refreshIfCached() {
				continue
			}
			return nil, err
		}
		next, _, err := storage.DecodeWrite(s.schema, key, data)
		if err != nil {
			return nil, err
		}
		if next.StoredEqual(cur) {
			if refreshIfCached() {
				continue
			}
			return cur, nil
		}
		value, next, err := s.storedValue(ctx, full, next)
		if err != nil {
			return nil, err
		}
		var rev uint64
		var latest *object.Object
		err = s.withPutOptions(ctx, func(putOpts []clientv3.OpOption) (err error) {
			rev, latest, err = s.writeIfUnchanged(ctx, key, cur, clientv3.OpPut(full, value, putOpts...))
			return err
		})
		if err != nil {
			return nil, err
		}
		if latest == nil {
			return next.WithResourceVersion(rev), nil
		}
		cur, fromCache = latest, false
	}
}

// Delete implements storage.Interface.
func (s *Store) Delete(ctx context.Context, key string, pre *storage.Preconditions, cached *object.Object) (*object.Object, error) {
	if err := storage.CheckKey(key); err != nil {
		return nil, err
	}
	cur, fromCache := cached, cached != nil
	for {
		if cur == nil {
			var err error
			if cur, err = s.Get(ctx, key, storage.GetOptions{}); err != nil {
				return nil, err
			}
		}
		if err := pre.Check(key, cur); err != nil {
			if fromCache {
				cur, fromCache = nil, false
				continue
			}
			return nil, err
		}
		rev, latest, err := s.writeIfUnchanged(ctx, key, cur, clientv3.OpDelete(s.prefix+key))
		if err != nil {
			return nil, err
		}
		if latest == nil {
			return cur.WithResourceVersion(rev), nil
		}
		cur, fromCache = latest, false
	}
}

// CurrentResourceVersion implements storage.Interface: a linearizable read
// of one key that never exists (the bare prefix), whose header carries the
// current revision.
func (s *Store) CurrentResourceVersion(ctx context.Context) (uint64, error) {
	resp, err := s.client.Get(ctx, s.prefix, clientv3.WithLimit(1), clientv3.WithKeysOnly())
	if err != nil {
		return 0, interpret(err, "")
	}
	return uint64(resp.Header.Revision), nil
}

// IsCompacted reports whether etcd has compacted away revision rev: one
// keys-only read at rev of a key that never exists.
func (s *Store) IsCompacted(ctx context.Context, rev uint64) (bool, error) {
	_, err := s.client.Get(ctx, s.prefix, clientv3.WithRev(int64(rev)), clientv3.WithKeysOnly())
	switch {
	case err == nil:
		return false, nil
	case errors.Is(err, rpctypes.ErrCompacted):
		return true, nil
	default:
		return false, interpret(err, "")
	}
}

// RequestProgress implements storage.Interface. It must reach the gRPC
// stream this store's watches use, so it carries the same metadata.
func (s *Store) RequestProgress(ctx context.Context) error {
	return interpret(s.client.RequestProgress(s.watchContext(ctx)), "")
}

// watchContext gives every watch of this resource one etcd watch stream of
// its own (etcd picks the stream by the context's outgoing metadata), and
// makes the stream fail when the member loses its leader.
func (s *Store) watchContext(ctx context.Context) context.Context {
	return clientv3.WithRequireLeader(metadata.AppendToOutgoingContext(ctx, "watchcache-resource", s.prefix))
}

// writeIfUnchanged applies op (a put or delete of key) in a transaction
// that succeeds only if key is still at cur's revision, and returns the
// write's revision; otherwise it returns the state key has now (read in the
// same transaction), or ErrNotFound.
func (s *Store) writeIfUnchanged(ctx context.Context, key string, cur *object.Object, op clientv3.Op) (uint64, *object.Object, error) {
	full := s.prefix + key
	resp, err := s.client.Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision(full), "=", int64(cur.ResourceVersion()))).
		Then(op).
		Else(clientv3.OpGet(full)).
		Commit()
	if err != nil {
		return 0, nil, interpret(err, key)
	}
	if resp.Succeeded {
		return uint64(resp.Header.Revision), nil, nil
	}
	kvs := resp.Responses[0].GetResponseRange().Kvs
	if len(kvs) == 0 {
		return 0, nil, storage.NewNotFound(key)
	}
	latest, err := s.decodeKV(kvs[0].Key, kvs[0].Value, kvs[0].ModRevision)
	return 0, latest, err
}

// storedValue is what etcd stores for obj at fullKey: its stored JSON,
// encoded by the codec (from the object the writer built it from, if
// ctx's storage.Built has it and the codec is a BuiltEncoder) and
// encrypted by the transformer if there are; and the record the write
// answers with: obj, or, where the codec may not give obj back byte for
// byte (RoundTripCodec), what a read of the value gives (kube-apiserver
// answers a write with its object read back from its storage encoding:
// "rules":[] written, "rules":null answered and read).
func (s *Store) storedValue(ctx context.Context, fullKey string, obj *object.Object) (string, *object.Object, error) {
	value := obj.Stored()
	// decodes says a watch decoding the value gives obj (see written).
	decodes := true
	if s.codec != nil {
		var err error
		enc, ok := s.codec.(BuiltEncoder)
		if built := storage.BuiltFor(ctx, value); ok && built != nil {
			value, err = enc.EncodeBuilt(value, built)
		} else {
			value, err = s.codec.Encode(value)
		}
		if err != nil {
			return "", nil, &storage.Error{Code: storage.ErrInternal, Key: strings.TrimPrefix(fullKey, s.prefix), Message: "encoding the object", Err: err}
		}
		rt, ok := s.codec.(RoundTripCodec)
		decodes = ok
		if ok && !rt.RoundTrips(obj.Stored()) {
			if obj, err = s.decodePlain(obj.Key(), value, 0); err != nil {
				return "", nil, err
			}
		}
	}
	if s.transformer != nil {
		var err error
		if value, err = s.transformer.ToStorage(value, fullKey); err != nil {
			return "", nil, &storage.Error{Code: storage.ErrInternal, Key: strings.TrimPrefix(fullKey, s.prefix), Message: "encrypting the object", Err: err}
		}
	}
	stored := unsafe.String(unsafe.SliceData(value), len(value))
	if decodes {
		s.remember(fullKey, stored, obj)
	}
	return stored, obj, nil
}

// decodeKV builds the record of a key-value read from etcd, decrypting
// and decoding it first if the store has a transformer and a codec.
func (s *Store) decodeKV(fullKey, value []byte, rev int64) (*object.Object, error) {
	return s.decodeValue(strings.TrimPrefix(string(fullKey), s.prefix), string(fullKey), value, rev)
}

// decodeValue is decodeKV of the object key read at fullKey.
func (s *Store) decodeValue(key, fullKey string, value []byte, rev int64) (*object.Object, error) {
	if s.transformer != nil {
		plain, _, err := s.transformer.FromStorage(value, fullKey)
		if err != nil {
			return nil, &storage.Error{Code: storage.ErrInternal, Key: key, Message: "stored object cannot be decrypted", Err: err}
		}
		value = plain
	}
	return s.decodePlain(key, value, rev)
}

// decodePlain builds the record of the object key from its decrypted
// value, decoding it first if the store has a codec.
func (s *Store) decodePlain(key string, value []byte, rev int64) (*object.Object, error) {
	if s.codec != nil {
		var err error
		if value, err = s.codec.Decode(value); err != nil {
			return nil, &storage.Error{Code: storage.ErrInternal, Key: key, Message: "stored object cannot be decoded", Err: err}
		}
	}
	obj, _, err := object.Decode(s.schema, key, value, uint64(rev))
	if err != nil {
		return nil, &storage.Error{Code: storage.ErrInternal, Key: key, Message: "stored object cannot be decoded", Err: err}
	}
	return obj, nil
}
