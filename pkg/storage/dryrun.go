// DryRun: a store that checks writes as the real one would (taken keys,
// preconditions, decoding) and stores nothing, for dryRun=All.

package storage

import (
	"bytes"
	"context"

	"github.com/watchcache/watchcache/pkg/object"
)

// DryRun wraps a store for dryRun=All requests, as kube-apiserver's
// DryRunnableStorage does: reads go to s; writes read the current object
// consistently, check what the real write would check (existence,
// preconditions, the update function's verdict) and return the object as
// it would be stored, writing nothing.
//
// A dry-run Create's object has resourceVersion 0: it was never stored
// (kube-apiserver answers such a create without a resourceVersion).
func DryRun(s Interface) Interface { return dryRun{s} }

type dryRun struct{ Interface }

// Create fails as a real create would on a taken key and otherwise returns
// the object data describes.
func (d dryRun) Create(ctx context.Context, key string, data []byte) (*object.Object, error) {
	_, err := d.Get(ctx, key, GetOptions{})
	switch CodeOf(err) {
	case 0:
		return nil, NewAlreadyExists(key)
	case ErrNotFound:
		return d.decode(key, data, 0)
	}
	return nil, err
}

// GuaranteedUpdate applies tryUpdate to the current object (cached is
// ignored: a dry run answers for the object as it is now).
func (d dryRun) GuaranteedUpdate(ctx context.Context, key string, preconditions *Preconditions, tryUpdate UpdateFunc, _ *object.Object) (*object.Object, error) {
	cur, err := d.Get(ctx, key, GetOptions{})
	if err != nil {
		return nil, err
	}
	if err := preconditions.Check(key, cur); err != nil {
		return nil, err
	}
	data, err := tryUpdate(cur)
	if err != nil {
		return nil, err
	}
	if bytes.Equal(data, cur.Stored()) {
		return cur, nil
	}
	return d.decode(key, data, cur.ResourceVersion())
}

// Delete returns the current object if the preconditions hold.
func (d dryRun) Delete(ctx context.Context, key string, preconditions *Preconditions, _ *object.Object) (*object.Object, error) {
	cur, err := d.Get(ctx, key, GetOptions{})
	if err != nil {
		return nil, err
	}
	if err := preconditions.Check(key, cur); err != nil {
		return nil, err
	}
	return cur, nil
}

// decode checks data as a real write would and returns its object at rv.
func (d dryRun) decode(key string, data []byte, rv uint64) (*object.Object, error) {
	obj, _, err := DecodeWrite(d.Schema(), key, data)
	if err != nil {
		return nil, err
	}
	return obj.WithResourceVersion(rv), nil
}
