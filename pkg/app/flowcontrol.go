// API Priority and Fairness: its controller over the registry's stores,
// with the watch caches' exact object counts for its work estimates.

package app

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/watchcache/watchcache/pkg/flowcontrol"
	"github.com/watchcache/watchcache/pkg/requestinfo"
	"github.com/watchcache/watchcache/pkg/resource"
)

// defaultServerConcurrency is the seats APF shares out when
// --max-requests-inflight and --max-mutating-requests-inflight are both 0
// ("no cap" for the old filter): their defaults' sum, 400 + 200.
const defaultServerConcurrency = 600

// startFlowControl starts APF, or returns nil when cfg turns it off.
func startFlowControl(ctx context.Context, cfg Config, registry *resource.Registry, prom *prometheus.Registry) (*flowcontrol.Controller, error) {
	if cfg.DisablePriorityAndFairness {
		return nil, nil
	}
	limit := cfg.MaxRequestsInflight + cfg.MaxMutatingRequestsInflight
	if limit <= 0 {
		limit = defaultServerConcurrency
	}
	return flowcontrol.Start(ctx, flowcontrol.Config{Registry: registry, ServerConcurrencyLimit: limit, Metrics: prom, Log: cfg.Log,
		CountObjects: func(ri *requestinfo.Info) (int, bool) {
			res := registry.Lookup(ri.APIGroup, ri.APIVersion, ri.Resource)
			if res == nil {
				return 0, false
			}
			counter, ok := registry.Store(registry.StorageOf(res)).(interface{ Count(string) (int, bool) })
			if !ok {
				return 0, false
			}
			return counter.Count(res.Scope(ri.Namespace))
		}})
}
