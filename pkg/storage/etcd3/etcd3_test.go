package etcd3_test

import (
	"testing"

	"github.com/watchcache/watchcache/pkg/storage/storagetest"
)

func TestMain(m *testing.M) { storagetest.Main(m) }

// TestConformance runs the storage conformance suite against the etcd3
// store.
func TestConformance(t *testing.T) { storagetest.Run(t, storagetest.NewEtcd3) }
