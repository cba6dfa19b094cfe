// The store of one RBAC resource's objects as JSON that the reconciliation
// reads and writes: get, create, update, delete and their Status errors.

package bootstrap

import (
	"context"
	"encoding/json"

	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/storage"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
)

// objectStore reads and writes one RBAC resource's objects as JSON through
// its store, with Status errors (the reconciliation helpers test them with
// apierrors.IsNotFound and the like).
type objectStore struct {
	ctx   context.Context
	store storage.Interface
	gr    schema.GroupResource
}

func storeKey(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

// get decodes the object into out (with its resourceVersion).
func (s objectStore) get(namespace, name string, out any) error {
	o, err := s.store.Get(s.ctx, storeKey(namespace, name), storage.GetOptions{})
	if err != nil {
		return s.status(err, name)
	}
	return json.Unmarshal(o.JSON(), out)
}

// create stores a new object, with a uid and creationTimestamp, and
// decodes the stored object into out.
func (s objectStore) create(obj metav1.Object, out any) error {
	obj.SetUID(uuid.NewUUID())
	obj.SetCreationTimestamp(metav1.Now())
	obj.SetResourceVersion("")
	data, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	o, err := s.store.Create(s.ctx, storeKey(obj.GetNamespace(), obj.GetName()), data)
	if err != nil {
		return s.status(err, obj.GetName())
	}
	return json.Unmarshal(o.JSON(), out)
}

// update replaces the object if it is still at obj's resourceVersion, and
// decodes the stored object into out.
func (s objectStore) update(obj metav1.Object, out any) error {
	rv := obj.GetResourceVersion()
	obj.SetResourceVersion("")
	data, err := json.Marshal(obj)
	obj.SetResourceVersion(rv)
	if err != nil {
		return err
	}
	o, err := s.store.GuaranteedUpdate(s.ctx, storeKey(obj.GetNamespace(), obj.GetName()),
		&storage.Preconditions{ResourceVersion: &rv}, func(*object.Object) ([]byte, error) { return data, nil }, nil)
	if err != nil {
		return s.status(err, obj.GetName())
	}
	return json.Unmarshal(o.JSON(), out)
}

// delete removes the object if its uid is still uid.
func (s objectStore) delete(namespace, name string, uid types.UID) error {
	u := string(uid)
	_, err := s.store.Delete(s.ctx, storeKey(namespace, name), &storage.Preconditions{UID: &u}, nil)
	return s.status(err, name)
}

// status turns a storage error into the Status error the reconciliation
// helpers expect.
func (s objectStore) status(err error, name string) error {
	switch storage.CodeOf(err) {
	case 0:
		return nil
	case storage.ErrNotFound:
		return apierrors.NewNotFound(s.gr, name)
	case storage.ErrAlreadyExists:
		return apierrors.NewAlreadyExists(s.gr, name)
	case storage.ErrConflict:
		return apierrors.NewConflict(s.gr, name, err)
	default:
		return err
	}
}
