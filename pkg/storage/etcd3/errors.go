// Translating etcd client errors (and context errors) into storage errors.

package etcd3

import (
	"context"
	"errors"

	"github.com/watchcache/watchcache/pkg/storage"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// interpret turns an etcd client error into a storage error. Context
// cancellation by the caller passes through unchanged.
func interpret(err error, key string) error {
	if err == nil {
		return nil
	}
	switch {
	case errors.Is(err, context.Canceled):
		return err
	case errors.Is(err, rpctypes.ErrCompacted):
		return &storage.Error{Code: storage.ErrExpired, Key: key, Message: "the requested resourceVersion has been compacted", Err: err}
	case errors.Is(err, rpctypes.ErrFutureRev):
		return &storage.Error{Code: storage.ErrTooLargeResourceVersion, Key: key, RetryAfterSeconds: 1, Message: "the requested resourceVersion is newer than etcd's", Err: err}
	case errors.Is(err, rpctypes.ErrNoLeader):
		return &storage.Error{Code: storage.ErrUnavailable, Key: key, Message: "etcd has no leader", Err: err}
	case errors.Is(err, context.DeadlineExceeded):
		return &storage.Error{Code: storage.ErrUnavailable, Key: key, Message: "etcd did not answer in time", Err: err}
	}
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded:
		return &storage.Error{Code: storage.ErrUnavailable, Key: key, Message: "etcd is unavailable", Err: err}
	}
	var se *storage.Error
	if errors.As(err, &se) {
		return err
	}
	return &storage.Error{Code: storage.ErrInternal, Key: key, Message: "etcd request failed", Err: err}
}
