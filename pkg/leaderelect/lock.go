// client-go's resourcelock.Interface over the server's own Lease store: the
// Lease read consistently, created and updated at its resourceVersion.

package leaderelect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/storage"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// leaseLock is client-go's resourcelock.LeaseLock over the server's own
// lease store instead of a clientset: the same Lease, the same record in
// its spec, and the same optimistic concurrency (an update is conditioned
// on the resourceVersion last read or written).
type leaseLock struct {
	store                storage.Interface
	namespace, name, key string
	identity             string
	mu                   sync.Mutex
	lease                *object.Object // last read or written
}

var _ resourcelock.Interface = (*leaseLock)(nil)

// Get reads the Lease (a consistent read) and its election record.
func (l *leaseLock) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	obj, err := l.store.Get(ctx, l.key, storage.GetOptions{})
	if err != nil {
		return nil, nil, l.apiError(err)
	}
	var lease coordinationv1.Lease
	if err := json.Unmarshal(obj.JSON(), &lease); err != nil {
		return nil, nil, err
	}
	l.remember(obj)
	record := resourcelock.LeaseSpecToLeaderElectionRecord(&lease.Spec)
	raw, err := json.Marshal(*record)
	if err != nil {
		return nil, nil, err
	}
	return record, raw, nil
}

// Create creates the Lease holding record.
func (l *leaseLock) Create(ctx context.Context, record resourcelock.LeaderElectionRecord) error {
	lease := coordinationv1.Lease{
		TypeMeta: metav1.TypeMeta{APIVersion: coordinationv1.SchemeGroupVersion.String(), Kind: "Lease"},
		ObjectMeta: metav1.ObjectMeta{Name: l.name, Namespace: l.namespace, UID: types.UID(uuid.NewUUID()),
			CreationTimestamp: metav1.Now()},
		Spec: resourcelock.LeaderElectionRecordToLeaseSpec(&record),
	}
	data, err := json.Marshal(lease)
	if err != nil {
		return err
	}
	obj, err := l.store.Create(ctx, l.key, data)
	if err != nil {
		return l.apiError(err)
	}
	l.remember(obj)
	return nil
}

// Update writes record into the Lease if it has not changed since it was
// last read or written here (else a Conflict).
func (l *leaseLock) Update(ctx context.Context, record resourcelock.LeaderElectionRecord) error {
	l.mu.Lock()
	last := l.lease
	l.mu.Unlock()
	if last == nil {
		return errors.New("lease not initialized, call get or create first")
	}
	uid, rv := last.UID(), storage.FormatResourceVersion(last.ResourceVersion())
	spec := resourcelock.LeaderElectionRecordToLeaseSpec(&record)
	obj, err := l.store.GuaranteedUpdate(ctx, l.key, &storage.Preconditions{UID: &uid, ResourceVersion: &rv}, func(cur *object.Object) ([]byte, error) {
		var lease coordinationv1.Lease
		if err := json.Unmarshal(cur.JSON(), &lease); err != nil {
			return nil, err
		}
		lease.Spec = spec
		return json.Marshal(lease) // the store ignores its resourceVersion
	}, last)
	if err != nil {
		return l.apiError(err)
	}
	l.remember(obj)
	return nil
}

// remember keeps obj as the Lease last read or written here, which Update
// requires unchanged.
func (l *leaseLock) remember(obj *object.Object) {
	l.mu.Lock()
	l.lease = obj
	l.mu.Unlock()
}

// RecordEvent records nothing: the election logs instead.
func (l *leaseLock) RecordEvent(string) {}

// Identity is the candidate's identity.
func (l *leaseLock) Identity() string { return l.identity }

// Describe names the Lease.
func (l *leaseLock) Describe() string { return l.namespace + "/" + l.name }

// apiError turns a storage error into the API error client-go's election
// tells apart (NotFound: create the Lease; Conflict: read it again).
func (l *leaseLock) apiError(err error) error {
	leases := coordinationv1.Resource("leases")
	switch storage.CodeOf(err) {
	case storage.ErrNotFound:
		return apierrors.NewNotFound(leases, l.name)
	case storage.ErrAlreadyExists:
		return apierrors.NewAlreadyExists(leases, l.name)
	case storage.ErrConflict:
		return apierrors.NewConflict(leases, l.name, err)
	}
	return fmt.Errorf("lease %s: %w", l.Describe(), err)
}
