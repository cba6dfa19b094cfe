package etcd3_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/storage"
	"github.com/watchcache/watchcache/pkg/storage/etcd3"
	"github.com/watchcache/watchcache/pkg/storage/storagetest"
)

// builtCodec stores a record's JSON as "json:" and the JSON, or as
// "built:" and the built value (the JSON of another object) when a write
// carries one, to tell which the store used.
type builtCodec struct{}

func (builtCodec) Encode(stored []byte) ([]byte, error) {
	return append([]byte("json:"), stored...), nil
}
func (builtCodec) Decode(value []byte) ([]byte, error) {
	_, after, _ := bytes.Cut(value, []byte(":"))
	return after, nil
}
func (builtCodec) EncodeBuilt(stored []byte, built any) ([]byte, error) {
	return fmt.Appendf(nil, "built:%s", built), nil
}

// Creates and updates encode a write's object from the value its writer
// built (storage.Built) when it was set for the very bytes written, and
// from the JSON otherwise.
func TestWritesEncodeBuiltValue(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := storagetest.Client()
	prefix := "/built-test/pods"
	s := etcd3.New(etcd3.Config{Client: c, Prefix: prefix, Schema: storagetest.PodSchema, Codec: builtCodec{}})
	pod := func(name, node string) []byte {
		return fmt.Appendf(nil, `{"metadata":{"name":%q,"namespace":"ns"},"spec":{"nodeName":%q}}`, name, node)
	}
	raw := func(key string) string {
		resp, err := c.Get(ctx, prefix+"/"+key)
		if err != nil || len(resp.Kvs) != 1 {
			t.Fatalf("reading %s: %v", key, err)
		}
		return string(resp.Kvs[0].Value)
	}

	wctx, built := storage.WithBuilt(ctx)
	a := pod("a", "n1")
	built.Set(a, string(pod("a", "built")))
	if _, err := s.Create(wctx, "ns/a", a); err != nil {
		t.Fatal(err)
	}
	if got, want := raw("ns/a"), "built:"+string(pod("a", "built")); got != want {
		t.Errorf("create with a built value stored %q, want %q", got, want)
	}
	if _, err := s.Create(wctx, "ns/b", pod("b", "n1")); err != nil { // other bytes
		t.Fatal(err)
	}
	if got, want := raw("ns/b"), "json:"+string(pod("b", "n1")); got != want {
		t.Errorf("create of other bytes stored %q, want %q", got, want)
	}

	next := pod("a", "n2")
	if _, err := s.GuaranteedUpdate(wctx, "ns/a", nil, func(*object.Object) ([]byte, error) {
		built.Set(next, string(pod("a", "built2")))
		return next, nil
	}, nil); err != nil {
		t.Fatal(err)
	}
	if got, want := raw("ns/a"), "built:"+string(pod("a", "built2")); got != want {
		t.Errorf("update with a built value stored %q, want %q", got, want)
	}
	if _, err := s.GuaranteedUpdate(wctx, "ns/a", nil, func(*object.Object) ([]byte, error) {
		return pod("a", "n3"), nil // built still holds next's value
	}, nil); err != nil {
		t.Fatal(err)
	}
	if got, want := raw("ns/a"), "json:"+string(pod("a", "n3")); got != want {
		t.Errorf("update of other bytes stored %q, want %q", got, want)
	}
}
