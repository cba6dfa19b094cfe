// WaitInitialized: waiting until every watch cache has its initial list, as
// /readyz's watch-cache-initialization check sees it.

package app

import (
	"context"
	"time"
)

// WaitInitialized blocks until /readyz's watch-cache-initialization check
// passes (every built-in resource's cache is initialized, or
// --storage-initialization-timeout has passed since the start) or ctx
// ends, and returns ctx's error then. The command prints how to reach the
// server once it returns, after the caches' log lines.
func (a *App) WaitInitialized(ctx context.Context) error {
	for a.initialized(ctx) != nil {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return nil
}
