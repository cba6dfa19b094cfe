// Package deletion deletes objects in storage as kube-apiserver's generic
// registry does (k8s.io/apiserver/pkg/registry/generic/registry's Store:
// Delete, DeleteCollection and the removal of an object whose update took
// its last finalizer away): removed at once, or marked with
// deletionTimestamp while finalizers or a grace period hold them
// (strategy.BeginDelete decides, as rest.BeforeDelete), and removed when an
// update takes their last finalizer away. The server's delete requests and
// the controllers inside the server share it.
package deletion

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"

	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/resource"
	"github.com/watchcache/watchcache/pkg/storage"
	"github.com/watchcache/watchcache/pkg/strategy"
	kjson "sigs.k8s.io/json"
)

// errNotMarked ends a delete's update when the object is not to be marked.
var errNotMarked = errors.New("not marked for deletion")

// deleteAttempts bounds how often a delete is redone when the object
// changed between deciding to remove it and removing it.
const deleteAttempts = 10

// Delete deletes the object at key as a delete request asks: removed, or
// marked with deletionTimestamp while finalizers or a grace period hold
// it. It returns the object's last state. cached, if not nil, is the
// object as last seen.
func Delete(ctx context.Context, res *resource.Resource, store storage.Interface, key string, pre *storage.Preconditions,
	d strategy.Deletion, cached *object.Object) (*object.Object, error) {
	for attempt := 0; ; attempt++ {
		var action strategy.DeleteAction
		var seen *object.Object
		marked, err := store.GuaranteedUpdate(ctx, key, pre, func(cur *object.Object) ([]byte, error) {
			var obj map[string]any
			if err := kjson.UnmarshalCaseSensitivePreserveInts(cur.JSON(), &obj); err != nil {
				return nil, err
			}
			seen, action = cur, strategy.BeginDelete(res, obj, d)
			if action != strategy.Mark {
				return nil, errNotMarked
			}
			if meta, ok := obj["metadata"].(map[string]any); ok {
				delete(meta, "resourceVersion")
			}
			return json.Marshal(obj)
		}, cached)
		switch {
		case err == nil:
			return marked, nil
		case !errors.Is(err, errNotMarked):
			return nil, err
		case action == strategy.Unchanged:
			return seen, nil
		}
		// Remove, only if the object is still the one decided on.
		deleted, err := removeExactly(ctx, store, seen, pre)
		if storage.CodeOf(err) == storage.ErrConflict && attempt < deleteAttempts {
			cached = nil
			continue
		}
		return deleted, err
	}
}

// removeExactly removes obj from storage if it is still at obj's
// resourceVersion (and meets pre's UID, if any).
func removeExactly(ctx context.Context, store storage.Interface, obj *object.Object, pre *storage.Preconditions) (*object.Object, error) {
	rv := storage.FormatResourceVersion(obj.ResourceVersion())
	exact := &storage.Preconditions{ResourceVersion: &rv}
	if pre != nil {
		exact.UID = pre.UID
	}
	return store.Delete(ctx, obj.Key(), exact, obj)
}

// DeleteAll deletes (or marks, see Delete) the objects of a consistent
// list, each only if it is still the object listed (same uid); objects
// already gone are skipped. It returns the objects deleted, with the
// list's Shard when a shard selector limited the deletion to a shard.
func DeleteAll(ctx context.Context, res *resource.Resource, store storage.Interface, scope string, opts storage.ListOptions, d strategy.Deletion) (*storage.List, error) {
	list, err := store.GetList(ctx, scope, opts)
	if err != nil {
		return nil, err
	}
	out := &storage.List{ResourceVersion: list.ResourceVersion, Shard: list.Shard}
	for _, obj := range list.Items {
		uid := obj.UID()
		last, err := Delete(ctx, res, store, obj.Key(), &storage.Preconditions{UID: &uid}, d, obj)
		switch storage.CodeOf(err) {
		case 0:
			out.Items = append(out.Items, last)
			out.ResourceVersion = max(out.ResourceVersion, last.ResourceVersion())
		case storage.ErrNotFound, storage.ErrConflict:
		default:
			return nil, err
		}
	}
	return out, nil
}

// BeingDeleted reports whether obj has a deletionTimestamp.
func BeingDeleted(obj *object.Object) bool {
	return bytes.Contains(obj.AppendMetadata(nil), []byte(`"deletionTimestamp"`))
}

// FinishUpdate removes an updated object that was being deleted and has
// lost its last finalizer, as kube-apiserver does on such an update, and
// returns its last state.
func FinishUpdate(ctx context.Context, res *resource.Resource, store storage.Interface, updated *object.Object) (*object.Object, error) {
	if !BeingDeleted(updated) {
		return updated, nil
	}
	var obj map[string]any
	if err := kjson.UnmarshalCaseSensitivePreserveInts(updated.JSON(), &obj); err != nil {
		return nil, err
	}
	if !strategy.DeleteAfterUpdate(res, obj) {
		return updated, nil
	}
	uid := updated.UID()
	_, err := removeExactly(ctx, store, updated, &storage.Preconditions{UID: &uid})
	if storage.CodeOf(err) == storage.ErrNotFound || storage.CodeOf(err) == storage.ErrConflict {
		err = nil // removed meanwhile, or changed again: that write decides
	}
	return updated, err
}
