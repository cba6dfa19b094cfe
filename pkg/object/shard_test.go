package object

import (
	"fmt"
	"hash/fnv"
	"testing"
	"unsafe"

	"k8s.io/apimachinery/pkg/sharding"
)

// TestShardHash pins the hash to its definition: FNV-1a 64 of the field's
// bytes, as hash/fnv computes it and as upstream's
// k8s.io/apimachinery/pkg/sharding.HashField prints it, and to literal
// values (the empty string's is FNV's offset basis).
func TestShardHash(t *testing.T) {
	literal := map[string]uint64{
		"":                                     0xcbf29ce484222325,
		"a":                                    0xaf63dc4c8601ec8c,
		"default":                              0xebada5168620c5fe,
		"kube-system":                          0xdf65c7bc1d82b35e,
		"3f1c2e0a-5b7d-4c1e-9a8f-2d6b7e4c1a90": 0xd4f448be20e87395,
	}
	for _, s := range []string{"", "a", "default", "kube-system", "3f1c2e0a-5b7d-4c1e-9a8f-2d6b7e4c1a90",
		"uid-ns1-p00", "uid-ns1-p01", "é-unicode-ü", "\x00\xff"} {
		got := ShardHash(s)
		h := fnv.New64a()
		h.Write([]byte(s))
		if want := h.Sum64(); got != want {
			t.Errorf("ShardHash(%q) = %#016x, hash/fnv says %#016x", s, got, want)
		}
		if hex := fmt.Sprintf("%016x", got); hex != sharding.HashField(s) {
			t.Errorf("ShardHash(%q) = %s, upstream's HashField says %s", s, hex, sharding.HashField(s))
		}
		if want, ok := literal[s]; ok && got != want {
			t.Errorf("ShardHash(%q) = %#016x, want %#016x", s, got, want)
		}
	}
}

// TestDecodeHashesUIDAndNamespace: the record carries the hashes of its
// uid and namespace (those of "" when absent), and keeps them at another
// resourceVersion.
func TestDecodeHashesUIDAndNamespace(t *testing.T) {
	for _, tc := range []struct{ in, uid, namespace string }{
		{`{"metadata":{"name":"p","namespace":"ns1","uid":"6c1f0b7e-1d2a-4f3b-8e9c-0a1b2c3d4e5f"}}`, "6c1f0b7e-1d2a-4f3b-8e9c-0a1b2c3d4e5f", "ns1"},
		{`{"metadata":{"name":"n","uid":"u-2"}}`, "u-2", ""},
		{`{"metadata":{"name":"x"}}`, "", ""},
	} {
		obj, _, err := Decode(podSchema, "k", []byte(tc.in), 3)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range []*Object{obj, obj.WithResourceVersion(9)} {
			if o.UIDHash() != ShardHash(tc.uid) || o.NamespaceHash() != ShardHash(tc.namespace) {
				t.Errorf("%s: hashes %#x %#x, want those of uid %q and namespace %q", tc.in, o.UIDHash(), o.NamespaceHash(), tc.uid, tc.namespace)
			}
		}
	}
}

func BenchmarkShardHash(b *testing.B) {
	uid := "3f1c2e0a-5b7d-4c1e-9a8f-2d6b7e4c1a90"
	for b.Loop() {
		ShardHash(uid)
	}
}

// TestRecordSize: the record fills its allocation size class exactly, so
// the shard hashes cost no memory; a field added to it costs 16 bytes per
// cached object (see Object).
func TestRecordSize(t *testing.T) {
	if size := unsafe.Sizeof(Object{}); size != 128 {
		t.Fatalf("Object is %d bytes, want 128 (its allocation size class; a larger record is allocated 144 bytes)", size)
	}
}
