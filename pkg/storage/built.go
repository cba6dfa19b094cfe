// Built: a write's object as its writer built it, carried to the store that
// encodes it for etcd.

package storage

import (
	"context"
	"sync/atomic"
)

// Built carries, from a writer to the store that writes to etcd, the value
// the bytes of a write were marshalled from: a built-in kind's Go object,
// which the store's codec would otherwise decode the bytes into again to
// encode them as protobuf. It travels in the write's context (WithBuilt)
// through the stores that wrap one another (the watch cache, conversion,
// dry run), unseen by them.
//
// The invariant: a value is set together with the exact bytes it was
// marshalled from, which the store is given (the same slice: same memory
// and length) and nobody modifies (Interface.Create's rule). BuiltFor
// answers only for those bytes, so a store given other bytes (a conversion
// to another version, a retried update's next attempt, another write made
// with the same context) encodes them from their JSON as before.
type Built struct{ last atomic.Pointer[built] }

type built struct {
	data  []byte
	value any
}

type builtKey struct{}

// WithBuilt is ctx carrying a new, empty Built, which the writer sets for
// each attempt of its write.
func WithBuilt(ctx context.Context) (context.Context, *Built) {
	b := &Built{}
	return context.WithValue(ctx, builtKey{}, b), b
}

// Set records that data was marshalled from value (nil: from nothing the
// store could use). It replaces what was set before.
func (b *Built) Set(data []byte, value any) {
	if value == nil {
		b.last.Store(nil)
		return
	}
	b.last.Store(&built{data: data, value: value})
}

// BuiltFor is the value ctx's Built says data was marshalled from, if it
// was set for these very bytes; otherwise nil.
func BuiltFor(ctx context.Context, data []byte) any {
	b, _ := ctx.Value(builtKey{}).(*Built)
	if b == nil {
		return nil
	}
	last := b.last.Load()
	if last == nil || len(last.data) != len(data) || len(data) == 0 || &last.data[0] != &data[0] {
		return nil
	}
	return last.value
}
