package etcd3_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/watchcache/watchcache/pkg/storage/etcd3"
	"github.com/watchcache/watchcache/pkg/storage/storagetest"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestCompactorCoordination: two servers' compactors share one etcd. The
// first step of each only records; the next step of the first compacts to
// what it recorded; the second, seeing that the coordination key moved,
// does not compact again in that interval.
func TestCompactorCoordination(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := storagetest.Client()
	log := slog.New(slog.DiscardHandler)
	a := etcd3.NewCompactor(c, "/compactor-test", time.Hour, log)
	b := etcd3.NewCompactor(c, "/compactor-test", time.Hour, log)

	va, ra, err := etcd3.CompactOnce(a, ctx, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	vb, rb, err := etcd3.CompactOnce(b, ctx, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if va != 1 || vb != 1 {
		t.Fatalf("after the first steps versions are %d and %d, want 1 and 1", va, vb)
	}
	if _, err := c.Put(ctx, "/compactor-test/x", "1"); err != nil {
		t.Fatal(err)
	}
	if va, _, err = etcd3.CompactOnce(a, ctx, va, ra); err != nil || va != 2 {
		t.Fatalf("second step of a: version %d, err %v", va, err)
	}
	assertCompactedBelow(ctx, t, c, ra)

	if vb, _, err = etcd3.CompactOnce(b, ctx, vb, rb); err != nil || vb != 2 {
		t.Fatalf("second step of b: version %d, err %v", vb, err)
	}
	// b did not compact to its own (newer) revision.
	assertCompactedBelow(ctx, t, c, ra)
}

// assertCompactedBelow checks that etcd's history starts exactly at rev.
func assertCompactedBelow(ctx context.Context, t *testing.T, c *clientv3.Client, rev int64) {
	t.Helper()
	if _, err := c.Get(ctx, "/compactor-test/x", clientv3.WithRev(rev-1)); !errors.Is(err, rpctypes.ErrCompacted) {
		t.Fatalf("read at %d: %v, want compacted", rev-1, err)
	}
	if _, err := c.Get(ctx, "/compactor-test/x", clientv3.WithRev(rev)); err != nil {
		t.Fatalf("read at %d: %v, want it kept", rev, err)
	}
}
