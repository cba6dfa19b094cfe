// kube-controller-manager's token-cleaner-controller (off in its "*"):
// bootstrap token Secrets are deleted once they expire.

package certificates

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/watchcache/watchcache/pkg/auth/authn"
	"github.com/watchcache/watchcache/pkg/controller"
	"github.com/watchcache/watchcache/pkg/deletion"
	"github.com/watchcache/watchcache/pkg/informer"
	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/resource"
	"github.com/watchcache/watchcache/pkg/storage"
	"github.com/watchcache/watchcache/pkg/strategy"
	corev1 "k8s.io/api/core/v1"
)

// TokenCleaner deletes expired bootstrap token Secrets of kube-system.
type TokenCleaner struct {
	Registry *resource.Registry
	Log      *slog.Logger
}

// Run deletes each bootstrap token Secret when it expires, until ctx
// ends.
func (t *TokenCleaner) Run(ctx context.Context) {
	secrets := t.Registry.Lookup("", "v1", "secrets")
	q := controller.NewQueue[string](ctx, "tokencleaner")
	add := func(o *object.Object) {
		if o.Namespace() == authn.BootstrapTokenNamespace {
			q.Add(o.Name())
		}
	}
	go informer.Run(ctx, t.Registry.Store(secrets), informer.Handler{
		Replace: func(items []*object.Object, _ uint64) {
			for _, o := range items {
				add(o)
			}
		},
		Apply: func(ev storage.Event) {
			if ev.Type == storage.EventAdded || ev.Type == storage.EventModified {
				add(ev.Object)
			}
		},
	}, "secrets for the token cleaner", t.Log)
	controller.Work(ctx, q, func(ctx context.Context, name string) (controller.Result, error) {
		return t.sync(ctx, secrets, name)
	}, t.Log)
}

// sync deletes Secret kube-system/name if it is an expired bootstrap
// token, or looks again when it expires.
func (t *TokenCleaner) sync(ctx context.Context, secrets *resource.Resource, name string) (controller.Result, error) {
	store := t.Registry.Store(secrets)
	key := secrets.Key(authn.BootstrapTokenNamespace, name)
	o, err := store.Get(ctx, key, storage.GetOptions{ResourceVersion: "0"})
	if storage.CodeOf(err) == storage.ErrNotFound {
		return controller.Result{}, nil
	}
	if err != nil {
		return controller.Result{}, err
	}
	var s corev1.Secret
	if err := json.Unmarshal(o.JSON(), &s); err != nil || s.Type != authn.BootstrapTokenType {
		return controller.Result{}, nil
	}
	left, expired := authn.BootstrapTokenExpiration(&s, time.Now())
	if !expired {
		return controller.Result{RequeueAfter: left}, nil
	}
	t.Log.Info("token-cleaner-controller: deleting an expired bootstrap token", "secret", name)
	uid := o.UID()
	_, err = deletion.Delete(ctx, secrets, store, key, &storage.Preconditions{UID: &uid}, strategy.Deletion{Now: time.Now()}, nil)
	if storage.CodeOf(err) == storage.ErrNotFound || storage.CodeOf(err) == storage.ErrConflict {
		return controller.Result{}, nil
	}
	return controller.Result{}, err
}
