// Package controller runs inside the server the controllers of
// kube-controller-manager that the API's own lifecycle depends on (the
// namespace controller and its companions, the garbage collector), fed by
// the watch cache through package informer and writing to the stores
// directly, as the system itself.
package controller

import (
	"context"
	"log/slog"
	"time"

	"github.com/watchcache/watchcache/pkg/informer"
	"k8s.io/client-go/util/workqueue"
)

// queue is a rate-limited work queue of keys.
type queue[T comparable] = workqueue.TypedRateLimitingInterface[T]

// newQueue makes a queue that shuts down when ctx ends.
func newQueue[T comparable](ctx context.Context, name string) queue[T] {
	q := workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedItemExponentialFailureRateLimiter[T](informer.MinBackoff, informer.MaxBackoff),
		workqueue.TypedRateLimitingQueueConfig[T]{Name: name})
	context.AfterFunc(ctx, q.ShutDown)
	return q
}

// result is what a sync asks of the queue besides success: to be looked at
// again after a while (work that waits on others, such as finalizers).
type result struct{ requeueAfter time.Duration }

// work runs sync on q's keys until q shuts down: a failed key is retried
// with backoff, a key may ask to be requeued, each key is synced by one
// worker at a time.
func work[T comparable](ctx context.Context, q queue[T], sync func(context.Context, T) (result, error), log *slog.Logger) {
	for {
		key, shutdown := q.Get()
		if shutdown {
			return
		}
		res, err := sync(ctx, key)
		switch {
		case err != nil && ctx.Err() == nil:
			log.Warn("controller: retrying", "key", key, "err", err)
			q.AddRateLimited(key)
		case res.requeueAfter > 0:
			q.Forget(key)
			q.AddAfter(key, res.requeueAfter)
		default:
			q.Forget(key)
		}
		q.Done(key)
	}
}
