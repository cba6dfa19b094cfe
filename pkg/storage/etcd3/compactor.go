// Compactor: etcd compaction as kube-apiserver's compactor does it, every
// interval, coordinated among servers through the compact_rev_key key.

package etcd3

import (
	"context"
	"log/slog"
	"strconv"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// CompactRevisionKey is the etcd key through which the servers sharing an
// etcd agree on compactions. Its version counts compactions cluster-wide.
const CompactRevisionKey = "compact_rev_key"

// Compactor compacts etcd like kube-apiserver does: every interval it
// compacts to the revision it saw one interval earlier, so history is kept
// for at least one interval. Servers sharing an etcd coordinate through a
// transaction on CompactRevisionKey's version: in each interval only the
// first one to bump it compacts; the others adopt the new version.
type Compactor struct {
	client   *clientv3.Client
	key      string
	interval time.Duration
	log      *slog.Logger
}

// NewCompactor returns a compactor whose coordination key lives under
// prefix (the server's etcd prefix, e.g. "/registry").
func NewCompactor(client *clientv3.Client, prefix string, interval time.Duration, log *slog.Logger) *Compactor {
	return &Compactor{client: client, key: prefix + "/" + CompactRevisionKey, interval: interval, log: log}
}

// Run compacts every interval until ctx ends.
func (c *Compactor) Run(ctx context.Context) {
	var version, rev int64
	t := time.NewTicker(c.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		var err error
		version, rev, err = c.compactOnce(ctx, version, rev)
		if err != nil && ctx.Err() == nil {
			c.log.Warn("etcd compaction failed", "err", err)
		}
	}
}

// compactOnce is one step. version is the coordination key's version this
// server last saw and rev the revision it saw then. If nobody bumped the
// version since, this server bumps it and compacts to rev; either way it
// returns the key's new version and the current revision, which become the
// target of the next step.
func (c *Compactor) compactOnce(ctx context.Context, version, rev int64) (int64, int64, error) {
	resp, err := c.client.Txn(ctx).
		If(clientv3.Compare(clientv3.Version(c.key), "=", version)).
		Then(clientv3.OpPut(c.key, strconv.FormatInt(rev, 10))).
		Else(clientv3.OpGet(c.key)).
		Commit()
	if err != nil {
		return version, rev, err
	}
	current := resp.Header.Revision
	if !resp.Succeeded {
		return resp.Responses[0].GetResponseRange().Kvs[0].Version, current, nil
	}
	if rev == 0 {
		// The first step only records where we are.
		return version + 1, current, nil
	}
	if _, err := c.client.Compact(ctx, rev); err != nil {
		return version + 1, current, err
	}
	c.log.Info("compacted etcd", "revision", rev)
	return version + 1, current, nil
}
