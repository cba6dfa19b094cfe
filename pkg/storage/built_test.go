package storage

import (
	"context"
	"testing"
)

// BuiltFor answers only for the very bytes the value was set with: not
// for a copy, a prefix, another context, or after a newer Set.
func TestBuiltFor(t *testing.T) {
	data := []byte(`{"a":1}`)
	value := &struct{ A int }{1}
	if BuiltFor(context.Background(), data) != nil {
		t.Error("a value without a Built")
	}
	ctx, b := WithBuilt(context.Background())
	if BuiltFor(ctx, data) != nil {
		t.Error("a value before Set")
	}
	b.Set(data, value)
	if BuiltFor(ctx, data) != value {
		t.Error("no value for the bytes set")
	}
	if BuiltFor(ctx, append([]byte(nil), data...)) != nil {
		t.Error("a value for a copy of the bytes")
	}
	if BuiltFor(ctx, data[:len(data)-1]) != nil {
		t.Error("a value for a prefix of the bytes")
	}
	if BuiltFor(ctx, nil) != nil {
		t.Error("a value for no bytes")
	}
	b.Set([]byte(`{"a":2}`), value)
	if BuiltFor(ctx, data) != nil {
		t.Error("a value for the bytes of an earlier Set")
	}
	b.Set(data, nil)
	if BuiltFor(ctx, data) != nil {
		t.Error("a value after Set(data, nil)")
	}
}
