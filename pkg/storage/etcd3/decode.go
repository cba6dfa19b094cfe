package etcd3

import (
	"runtime"
	"sync"

	"github.com/watchcache/watchcache/pkg/object"
	"go.etcd.io/etcd/api/v3/mvccpb"
)

// parallelDecodeMin is the fewest key-values a worker of decodeKVs takes:
// below it, a goroutine costs more than it saves.
const parallelDecodeMin = 32

// decodeKVs builds the records of kvs, in their order. Where values go
// through a codec (a pod's protobuf decoded into JSON costs 25-60 µs,
// most of a cache's start) and there are enough of them, GOMAXPROCS
// workers decode at once.
func (s *Store) decodeKVs(kvs []*mvccpb.KeyValue) ([]*object.Object, error) {
	objs := make([]*object.Object, len(kvs))
	workers := min(runtime.GOMAXPROCS(0), len(kvs)/parallelDecodeMin)
	if s.codec == nil || workers < 2 {
		workers = 1
	}
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < len(kvs); i += workers {
				if objs[i], errs[w] = s.decodeKV(kvs[i].Key, kvs[i].Value, kvs[i].ModRevision); errs[w] != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return objs, nil
}
