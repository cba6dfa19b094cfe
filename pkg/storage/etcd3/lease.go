// Expiring objects: every write of an object of a store with a TTL attaches
// its key to an etcd lease, so etcd deletes it (and watches see the delete)
// once the TTL has passed since its last write: kube-apiserver's Events
// (--event-ttl).

package etcd3

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Lease sharing, kube-apiserver's (its storage's lease manager, 1.37): a
// lease is granted for the TTL plus a reuse period (5 % of the TTL, at most
// a minute) and attached to every write within that period, at most
// maxObjectsPerLease of them; an object thus lives between TTL and TTL +
// the reuse period after its last write, and a busy store grants a lease a
// minute (or per thousand writes), not one per write.
const (
	leaseReuseFraction    = 0.05
	leaseMaxReuse         = time.Minute
	maxObjectsPerLease    = 1000
	leaseGrantGranularity = time.Second // etcd's TTLs are whole seconds
)

// leases hands out the lease a write attaches its key to.
type leases struct {
	client *clientv3.Client
	ttl    time.Duration

	mu sync.Mutex // guards the fields below
	// id is the last lease granted, expiring at expires; attached counts
	// the writes given it.
	id       clientv3.LeaseID
	expires  time.Time
	attached int
}

// reuse is how long after its grant a lease is still given to writes.
func (l *leases) reuse() time.Duration {
	return min(time.Duration(leaseReuseFraction*float64(l.ttl)).Truncate(leaseGrantGranularity), leaseMaxReuse)
}

// get returns the lease the next write attaches its key to: the last one
// if it outlives the TTL from now and has not served too many writes, else
// a new one.
func (l *leases) get(ctx context.Context) (clientv3.LeaseID, error) {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.attached++
	if l.id != 0 && l.attached <= maxObjectsPerLease && now.Add(l.ttl).Before(l.expires) {
		return l.id, nil
	}
	ttl := (l.ttl + l.reuse()).Round(leaseGrantGranularity)
	resp, err := l.client.Grant(ctx, int64(ttl/time.Second))
	if err != nil {
		return 0, err
	}
	l.id, l.expires, l.attached = resp.ID, now.Add(ttl), 1
	return l.id, nil
}

// forget drops the last lease, which etcd no longer has.
func (l *leases) forget() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.id = 0
}

// withPutOptions runs write with the options of a put of a key: its lease,
// if the store's objects expire. If etcd no longer has the lease (revoked,
// or expired while etcd was down), write runs once more with a new one.
func (s *Store) withPutOptions(ctx context.Context, write func([]clientv3.OpOption) error) error {
	if s.leases == nil {
		return write(nil)
	}
	for retried := false; ; retried = true {
		id, err := s.leases.get(ctx)
		if err != nil {
			return interpret(err, "")
		}
		err = write([]clientv3.OpOption{clientv3.WithLease(id)})
		if retried || !errors.Is(err, rpctypes.ErrLeaseNotFound) {
			return err
		}
		s.leases.forget()
	}
}
