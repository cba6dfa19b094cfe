package resource

import (
	"bytes"
	"testing"

	"github.com/watchcache/watchcache/pkg/protojson"
)

// protobufCodecs are the codecs of the built-in kinds stored in protobuf
// in their served version: those the transcoder may serve.
func protobufCodecs(t testing.TB) map[string]*StorageCodec {
	t.Helper()
	reg, err := NewRegistry(Builtins()...)
	if err != nil {
		t.Fatal(err)
	}
	codecs := map[string]*StorageCodec{}
	for _, r := range reg.All() {
		if !r.OwnStorage() || r.StrategicMergeType == nil {
			continue
		}
		if c := r.StorageCodec(); !c.json && c.storage == nil {
			codecs[r.String()] = c
		}
	}
	return codecs
}

func TestTranscoderKinds(t *testing.T) {
	for name, c := range protobufCodecs(t) {
		if c.transcoder == nil {
			_, err := protojson.For(c.typ)
			t.Logf("%s: %v", name, err)
		}
	}
}

// The transcoder writes, for every protobuf value recorded from the
// reference, what the Go path writes.
func TestTranscoderMatchesReference(t *testing.T) {
	reg := referenceRegistry(t)
	values, served := referenceData(t)
	n := 0
	for _, s := range served {
		res, _, _ := lookupPath(t, reg, s.Path)
		if s := reg.StorageOf(res); s != nil {
			res = s
		}
		value := values[s.Key]
		if !bytes.HasPrefix(value, protobufMagic) {
			continue
		}
		c := res.StorageCodec()
		_, _, raw, err := parseEnvelope(value[len(protobufMagic):])
		if err != nil {
			t.Fatal(err)
		}
		want, err := c.decodeServed(raw)
		if err != nil {
			t.Fatal(err)
		}
		if c.transcoder == nil {
			t.Errorf("%s: no transcoder", s.Key)
			continue
		}
		got, ok := c.transcoder.Append(nil, raw, c.kind, c.apiVersion)
		if !ok || !bytes.Equal(got, want) {
			t.Errorf("%s: transcoded (%v)\n%s\nGo path\n%s", s.Key, ok, got, want)
		}
		n++
	}
	t.Logf("%d compared", n)
}
