// Lists without a limit read in chunks at one revision: the first chunk,
// then the rest by etcd's RangeStream RPC where etcd has it or by paged
// range reads, decoded and filtered chunk by chunk.

package etcd3

import (
	"context"
	"io"
	"math"
	"sync/atomic"
	"time"

	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/storage"
	"github.com/watchcache/watchcache/pkg/storage/storagemetrics"
	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Lists without a limit are read in chunks at one revision, never in one
// range read: a single read of a large range makes etcd, gRPC and this
// process each hold the whole response at once (about 4× the list for
// each concurrent request). The first chunk is a Range with a limit, which
// fixes the list's revision (the response header's) and fails before
// anything is answered (a compacted or future revision, etcd down). The
// rest is read at that revision, from the key after the first chunk's
// last: with etcd's RangeStream (3.7+, KEP-5966: one RPC; etcd sizes its
// chunks to between half and twice its --max-request-bytes, 1.5 MiB by
// default, 4 MiB in the embedded etcd; no count of the remaining keys per
// chunk), or with ranged Gets sized to about chunkBytes where etcd lacks
// it (Unimplemented; each of them counts the rest of the range, so they
// are not made smaller). A list is handed out as it is read
// (storage.List.Rest) when the caller asked for a stream, and collected
// otherwise.
const (
	// firstChunkKeys is the limit of a list's first read.
	firstChunkKeys = 100
	// chunkBytes is what a later ranged Get aims to read: its limit is
	// chunkBytes over the mean size of the values read so far, within 1 and
	// maxChunkKeys.
	chunkBytes   = 4 << 20
	maxChunkKeys = 10000
	// rangeStreamRetry is how long after etcd answered RangeStream with
	// Unimplemented ranged Gets are used before RangeStream is tried again
	// (etcd may have been upgraded meanwhile).
	rangeStreamRetry = 10 * time.Minute
)

// chunkReader reads one list in chunks at one revision. It is used by one
// goroutine at a time.
type chunkReader struct {
	store    *Store
	ctx      context.Context
	scope    string
	from     string // the next key to read
	end      string // the end of the range (exclusive)
	rev      int64  // the list's revision; 0 until the first read
	opts     *storage.ListOptions
	keyLimit int64 // Config.ListChunkKeys (0: the defaults)

	// keys and bytes count the keys and value bytes read, for sizing.
	keys, bytes int
	// fetched and returned count the keys read and the objects kept since
	// they were last recorded in the metrics.
	fetched, returned int
}

// stream reads the first chunk of a list without a limit; the returned
// list's Rest reads the others, if any.
func (s *Store) stream(ctx context.Context, scope string, plan storage.ListPlan, opts *storage.ListOptions) (*storage.List, error) {
	c := &chunkReader{store: s, ctx: ctx, scope: scope, from: s.prefix + scope, end: clientv3.GetPrefixRangeEnd(s.prefix + scope),
		opts: opts, keyLimit: s.listChunkKeys}
	if plan.StartKey != "" {
		c.from = s.prefix + plan.StartKey
	}
	if plan.Read == storage.ReadExact {
		c.rev = int64(plan.RV)
	}
	first := int64(firstChunkKeys)
	if c.keyLimit > 0 {
		first = c.keyLimit
	}
	items, more, err := c.get(first)
	if err != nil {
		return nil, err
	}
	if plan.Read == storage.ReadNotOlderThan && uint64(c.rev) < plan.RV {
		return nil, storage.NewTooLargeResourceVersion(plan.RV, uint64(c.rev))
	}
	list := &storage.List{Items: items, ResourceVersion: uint64(c.rev)}
	c.record()
	if !more {
		return list, nil
	}
	var used atomic.Bool
	list.Rest = func(yield func([]*object.Object) error) error {
		if used.Swap(true) {
			return &storage.Error{Code: storage.ErrInternal, Key: scope, Message: "the rest of a streamed list was read twice"}
		}
		defer c.record()
		return c.rest(yield)
	}
	return list, nil
}

// record counts what was read since the last call in the metrics.
func (c *chunkReader) record() {
	c.store.metrics.ListServed(c.store.resource, storagemetrics.StorageEtcd, c.fetched, c.returned)
	c.fetched, c.returned = 0, 0
}

// rest reads the chunks after the first: with RangeStream unless etcd is
// known to lack it, else (or when etcd turns out to lack it before sending
// anything) with ranged Gets.
func (c *chunkReader) rest(yield func([]*object.Object) error) error {
	if c.store.rangeStreamAllowed() {
		unimplemented, err := c.rangeStream(yield)
		if !unimplemented {
			return err
		}
		c.store.noRangeStreamUntil.Store(time.Now().Add(rangeStreamRetry).UnixNano())
	}
	for {
		limit := c.keyLimit
		if limit == 0 {
			limit = int64(max(min(chunkBytes/max(c.bytes/max(c.keys, 1), 1), maxChunkKeys), 1))
		}
		items, more, err := c.get(limit)
		if err != nil {
			return err
		}
		if len(items) > 0 {
			if err := yield(items); err != nil {
				return err
			}
		}
		if !more {
			return nil
		}
	}
}

// rangeStreamAllowed reports whether RangeStream may be tried: it is not
// disabled, and etcd did not answer Unimplemented recently.
func (s *Store) rangeStreamAllowed() bool {
	return !s.noRangeStream && time.Now().UnixNano() >= s.noRangeStreamUntil.Load()
}

// get reads up to limit keys from c.from at the list's revision (the
// newest on the first read, which fixes it), decodes and filters them,
// and moves c.from past them.
func (c *chunkReader) get(limit int64) (items []*object.Object, more bool, err error) {
	ops := []clientv3.OpOption{clientv3.WithRange(c.end), clientv3.WithLimit(limit)}
	if c.rev > 0 {
		ops = append(ops, clientv3.WithRev(c.rev))
	}
	resp, err := c.store.client.Get(c.ctx, c.from, ops...)
	if err != nil {
		return nil, false, interpret(err, c.scope)
	}
	if c.rev == 0 {
		c.rev = resp.Header.Revision
	}
	items, err = c.decode(resp.Kvs)
	return items, resp.More, err
}

// rangeStream reads the rest of the range with one RangeStream RPC at the
// list's revision, yielding each chunk etcd sends. It reports whether etcd
// lacks the RPC (it then yielded nothing). The stream is received on the
// caller's goroutine (not through clientv3's GetStream, whose goroutine
// and channel hold two more chunks ahead), so that the process holds the
// chunk being handed on and what gRPC's flow-control window lets in.
func (c *chunkReader) rangeStream(yield func([]*object.Object) error) (unimplemented bool, err error) {
	ctx, cancel := context.WithCancel(c.ctx)
	defer cancel() // ends the RPC if we stop early
	stream, err := clientv3.RetryKVClient(c.store.client).RangeStream(ctx,
		&etcdserverpb.RangeRequest{Key: []byte(c.from), RangeEnd: []byte(c.end), Revision: c.rev}, rangeStreamCallOptions...)
	if err != nil {
		return status.Code(err) == codes.Unimplemented, interpret(clientv3.ContextError(ctx, err), c.scope)
	}
	for first := true; ; first = false {
		resp, err := stream.Recv()
		if err == io.EOF {
			return false, nil
		}
		if err != nil {
			return first && status.Code(err) == codes.Unimplemented, interpret(clientv3.ContextError(ctx, err), c.scope)
		}
		items, err := c.decode(resp.GetRangeResponse().GetKvs())
		if err != nil {
			return false, err
		}
		if len(items) > 0 {
			if err := yield(items); err != nil {
				return false, err
			}
		}
	}
}

// rangeStreamCallOptions are clientv3's defaults for its own calls: wait
// for a connection rather than fail at once, and take messages of any size
// (etcd sizes chunks by its --max-request-bytes, which may exceed gRPC's
// default limit of 4 MiB).
var rangeStreamCallOptions = []grpc.CallOption{grpc.WaitForReady(true), grpc.MaxCallRecvMsgSize(math.MaxInt32)}

// decode builds the records of one chunk's key-values and keeps those the
// selectors match; it moves c.from past the chunk.
func (c *chunkReader) decode(kvs []*mvccpb.KeyValue) ([]*object.Object, error) {
	objs, err := c.store.decodeKVs(kvs)
	if err != nil {
		return nil, err
	}
	var items []*object.Object
	for i, obj := range objs {
		c.bytes += len(kvs[i].Value)
		if c.opts.Matches(obj) {
			items = append(items, obj)
		}
	}
	c.keys += len(kvs)
	c.fetched += len(kvs)
	c.returned += len(items)
	if len(kvs) > 0 {
		c.from = string(kvs[len(kvs)-1].Key) + "\x00"
	}
	return items, nil
}
