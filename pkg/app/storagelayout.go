package app

import (
	"context"
	"fmt"

	"github.com/watchcache/watchcache/pkg/encryption"
	"github.com/watchcache/watchcache/pkg/resource"
	"github.com/watchcache/watchcache/pkg/storage/etcd3"
)

// migrateLayout moves the objects of the built-in resources that an
// older watchcache kept under its own keys (<prefix>/core/pods/...,
// <prefix>/apps/deployments/..., JSON) to kube-apiserver's
// (<prefix>/pods/..., protobuf), before any cache lists them. Each object
// moves in a transaction of its own, so a start stopped halfway resumes
// at the next (etcd3.Store.Migrate). Custom resources and the node port
// record are where they were; their old JSON values are read as they are
// and rewritten in the new encoding by their next write.
func (a *App) migrateLayout(ctx context.Context, cfg Config, registry *resource.Registry, enc *encryption.Config) error {
	total := 0
	for _, res := range registry.All() {
		legacy := res.LegacyEtcdPrefix(cfg.EtcdPrefix)
		if !res.OwnStorage() || legacy == res.EtcdPrefix(cfg.EtcdPrefix) {
			continue
		}
		moved, err := etcd3.New(a.etcdConfig(cfg, res, nil, enc)).Migrate(ctx, legacy)
		total += moved
		if err != nil {
			return fmt.Errorf("moving %s from %s/ to %s/ (kube-apiserver's layout; %d objects moved so far, a restart resumes): %w",
				res, legacy, res.EtcdPrefix(cfg.EtcdPrefix), total, err)
		}
	}
	if total > 0 {
		a.log.Info("moved objects to kube-apiserver's etcd layout", "objects", total)
	}
	return nil
}
