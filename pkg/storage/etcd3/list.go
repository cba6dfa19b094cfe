// GetList from etcd, following storage.PlanList: one key for a list by name,
// pages with a limit and their continue tokens, and reads without a limit.

package etcd3

import (
	"context"
	"strings"

	"github.com/watchcache/watchcache/pkg/storage"
	"github.com/watchcache/watchcache/pkg/storage/storagemetrics"
	clientv3 "go.etcd.io/etcd/client/v3"
)

const (
	// maxPageSize caps one etcd range read while filling a filtered page.
	maxPageSize = 10000
	// maxRangeReads bounds the etcd reads of one filtered page: after that
	// many the page is returned short, with a continue token (KEP-365
	// allows fewer items than the limit, even none).
	maxRangeReads = 8
)

// GetList implements storage.Interface, following storage.PlanList:
// consistent, "any" and "not older than" reads are quorum reads of the
// newest revision (the latter checked against N); exact reads and
// continuations read at their revision, so every page of a list comes from
// one snapshot. A list without a limit is read in chunks at one revision
// (see stream), handed out as it is read when opts.Stream asks for it. A
// list by name that one key answers reads that key (see readKey).
func (s *Store) GetList(ctx context.Context, scope string, opts storage.ListOptions) (*storage.List, error) {
	if s.noSharding {
		opts.Shard = nil
	}
	plan, err := storage.PlanList(opts, scope)
	if err != nil {
		return nil, err
	}
	if err := opts.CheckScopeAndSelectors(scope, s.schema); err != nil {
		return nil, err
	}
	list, err := s.read(ctx, scope, plan, &opts)
	if err == nil && !opts.Stream {
		err = list.Collect()
	}
	if err != nil && plan.Continuation && storage.CodeOf(err) == storage.ErrExpired {
		// KEP-365: offer to continue from the same key at the newest revision.
		return nil, &storage.Error{
			Code: storage.ErrExpired, Key: scope, ResourceVersion: plan.RV,
			Message:  "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.",
			Continue: storage.EncodeContinue(storage.InconsistentContinueRV, plan.StartKey),
		}
	}
	if err != nil {
		return nil, err
	}
	list.Shard = opts.Shard
	return list, nil
}

// list reads one page (plan.Limit > 0): range reads from the start key
// until the page holds Limit matching objects, the range ends, or
// maxRangeReads is reached.
func (s *Store) list(ctx context.Context, scope string, plan storage.ListPlan, opts *storage.ListOptions) (*storage.List, error) {
	from := s.prefix + scope
	if plan.StartKey != "" {
		from = s.prefix + plan.StartKey
	}
	end := clientv3.GetPrefixRangeEnd(s.prefix + scope)
	var rev int64
	if plan.Read == storage.ReadExact {
		rev = int64(plan.RV)
	}
	filtered := opts.Filtered()
	pageSize := plan.Limit
	out := &storage.List{}
	fetched := 0
	defer func() { s.metrics.ListServed(s.resource, storagemetrics.StorageEtcd, fetched, len(out.Items)) }()
	for reads := 0; ; reads++ {
		ops := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(pageSize)}
		if rev > 0 {
			ops = append(ops, clientv3.WithRev(rev))
		}
		resp, err := s.client.Get(ctx, from, ops...)
		if err != nil {
			return nil, interpret(err, scope)
		}
		if rev == 0 {
			// Later reads of this page, and later pages, use this snapshot.
			rev = resp.Header.Revision
			if plan.Read == storage.ReadNotOlderThan && uint64(rev) < plan.RV {
				return nil, storage.NewTooLargeResourceVersion(plan.RV, uint64(rev))
			}
		}
		out.ResourceVersion = uint64(rev)
		fetched += len(resp.Kvs)
		for i, kv := range resp.Kvs {
			obj, err := s.decodeKV(kv.Key, kv.Value, kv.ModRevision)
			if err != nil {
				return nil, err
			}
			if opts.Matches(obj) {
				out.Items = append(out.Items, obj)
			}
			if int64(len(out.Items)) == plan.Limit {
				more := i < len(resp.Kvs)-1 || resp.More
				if more {
					s.setContinue(out, rev, kv.Key)
					if !filtered {
						remaining := resp.Count - int64(i+1)
						out.RemainingItemCount = &remaining
					}
				}
				return out, nil
			}
		}
		if !resp.More {
			return out, nil
		}
		// The page is not full and the range goes on.
		last := resp.Kvs[len(resp.Kvs)-1].Key
		if reads+1 >= maxRangeReads {
			s.setContinue(out, rev, last)
			return out, nil
		}
		from = string(last) + "\x00"
		pageSize = min(pageSize*2, maxPageSize)
	}
}

// setContinue sets a token that resumes right after lastKey, at rev.
func (s *Store) setContinue(out *storage.List, rev int64, lastKey []byte) {
	out.Continue = storage.EncodeContinue(rev, strings.TrimPrefix(string(lastKey), s.prefix)+"\x00")
}

// listAll reads the first chunk of every object under scope matching opts
// at the plan's read kind, the rest left to the list's Rest; for watches'
// initial state.
func (s *Store) listAll(ctx context.Context, scope string, read storage.ReadKind, rv uint64, opts *storage.ListOptions) (*storage.List, error) {
	return s.read(ctx, scope, storage.ListPlan{Read: read, RV: rv}, opts)
}

// read reads a list as plan says: the one key a list by name can find
// (readKey), else one page (list) with a limit, else a stream.
func (s *Store) read(ctx context.Context, scope string, plan storage.ListPlan, opts *storage.ListOptions) (*storage.List, error) {
	if l, ok := opts.LookupByName(scope, s.schema.ClusterScoped()); ok && l.Key != "" {
		return s.readKey(ctx, scope, l.Key, plan, opts)
	}
	if plan.Limit > 0 {
		return s.list(ctx, scope, plan, opts)
	}
	return s.stream(ctx, scope, plan, opts)
}
