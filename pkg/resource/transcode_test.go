package resource

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"reflect"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/watchcache/watchcache/pkg/benchdata"
	"github.com/watchcache/watchcache/pkg/etcdembed"
	"github.com/watchcache/watchcache/pkg/protojson"
	"github.com/watchcache/watchcache/pkg/storage/cacher"
	"github.com/watchcache/watchcache/pkg/storage/etcd3"
)

// protobufCodecs are the codecs of the built-in kinds stored in protobuf
// in their served version: those Decode may transcode, by resource name.
func protobufCodecs(t testing.TB) map[string]*StorageCodec {
	t.Helper()
	reg, err := NewRegistry(Builtins()...)
	if err != nil {
		t.Fatal(err)
	}
	codecs := map[string]*StorageCodec{"rangeallocations": RangeAllocationCodec}
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

// Every built-in kind stored in protobuf has a transcoder: a type with an
// encoding of its own that protojson does not know (a new one in
// k8s.io/api) fails this test until protojson writes it (or the kind is
// let fall back to the Go path here).
func TestTranscoderKinds(t *testing.T) {
	var without []string
	for name, c := range protobufCodecs(t) {
		if c.transcoder == nil {
			_, err := protojson.For(c.typ)
			t.Logf("%s: %v", name, err)
			without = append(without, name)
		}
	}
	if len(without) > 0 {
		t.Errorf("kinds without a transcoder: %q", without)
	}
}

// transcodeAgainstGo checks that the transcoder writes what the Go path
// does for raw, or declines where the Go path fails (or anywhere, if
// mayDecline); it reports whether the transcoder wrote.
func transcodeAgainstGo(t testing.TB, name string, c *StorageCodec, raw []byte, mayDecline bool) bool {
	want, err := c.decodeServed(raw)
	got, ok := c.transcoder.Append(nil, raw, c.kind, c.apiVersion)
	switch {
	case err != nil && ok:
		t.Errorf("%s: the Go path fails (%v), the transcoder wrote\n%s", name, err, got)
	case err == nil && !ok && !mayDecline:
		t.Errorf("%s: the transcoder declined; the Go path wrote\n%s", name, want)
	case ok && !bytes.Equal(got, want):
		t.Errorf("%s: transcoded\n%s\nthe Go path wrote\n%s", name, got, want)
	}
	return ok
}

// The transcoder writes, for every protobuf value recorded from the
// reference and for the objects of TestStorageCodecRoundTrips' kind, what
// the Go path writes.
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
		if c.transcoder == nil {
			t.Errorf("%s: no transcoder", s.Key)
			continue
		}
		if transcodeAgainstGo(t, s.Key, c, raw, false) {
			n++
		}
	}
	if n < 55 {
		t.Errorf("%d recorded objects transcoded, want all 58 protobuf ones", n)
	}
}

// The transcoder writes what the Go path does for random objects of
// every built-in kind it serves, many seeds each, full of edge values
// (see filler); it declines exactly where the Go path fails.
func TestTranscoderMatchesGoRandomly(t *testing.T) {
	seeds := 300
	if testing.Short() {
		seeds = 30
	}
	codecs := protobufCodecs(t)
	names := slices.Sorted(func(yield func(string) bool) {
		for name := range codecs {
			if !yield(name) {
				return
			}
		}
	})
	for _, name := range names {
		c := codecs[name]
		if c.transcoder == nil {
			continue
		}
		written, dupWritten := 0, 0
		for seed := range seeds {
			f := &filler{r: rand.New(rand.NewSource(int64(seed)))}
			obj := reflect.New(c.typ)
			f.fill(obj.Elem(), 0)
			msg := obj.Interface().(protobufMessage)
			raw := make([]byte, msg.Size())
			if _, err := msg.MarshalToSizedBuffer(raw); err != nil {
				t.Fatalf("%s seed %d: %v", name, seed, err)
			}
			if transcodeAgainstGo(t, name, c, raw, false) {
				written++
			}
			// The same fields in another order: the same object.
			transcodeAgainstGo(t, name+" shuffled", c, shuffleWire(f.r, raw, false, 0), false)
			// Fields twice, which the generated code merges or
			// overwrites: the transcoder may decline.
			if transcodeAgainstGo(t, name+" with a field twice", c, shuffleWire(f.r, raw, true, 0), true) {
				dupWritten++
			}
			if t.Failed() {
				t.Fatalf("%s: seed %d", name, seed)
			}
		}
		if written < seeds/2 || dupWritten == 0 { // the rest fail in the Go path too (invalid raw JSON, IntOrString type 2)
			t.Errorf("%s: %d of %d objects transcoded, %d with fields twice", name, written, seeds, dupWritten)
		}
	}
}

// BenchmarkStorageCodecDecode: Decode of a stored pod (benchdata's) and
// a 4 KB config map, by the transcoder and by the Go path it replaces.
func BenchmarkStorageCodecDecode(b *testing.B) {
	reg, err := NewRegistry(Builtins()...)
	if err != nil {
		b.Fatal(err)
	}
	data := map[string]any{}
	for i := range 32 {
		data[fmt.Sprintf("key-%02d", i)] = strings.Repeat("v", 100)
	}
	configMap := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "cm", "namespace": "d",
		"uid": "0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0", "creationTimestamp": "2026-11-28T08:00:00Z", "labels": map[string]any{"app": "web"}}, "data": data}
	var pod map[string]any
	if err := json.Unmarshal(benchdata.Pod(1, 100, 1000), &pod); err != nil {
		b.Fatal(err)
	}
	for _, s := range []struct {
		name, plural string
		obj          map[string]any
	}{{"pod", "pods", pod}, {"configmap-4KB", "configmaps", configMap}} {
		res := reg.Lookup("", "v1", s.plural)
		stored, err := res.Encode(s.obj)
		if err != nil {
			b.Fatal(err)
		}
		codec := res.StorageCodec()
		value, err := codec.Encode(stored)
		if err != nil {
			b.Fatal(err)
		}
		_, _, raw, _ := parseEnvelope(value[len(protobufMagic):])
		b.Run(s.name+"/transcoder", func(b *testing.B) {
			for b.Loop() {
				codec.Decode(value)
			}
			b.ReportMetric(float64(len(stored)), "json-bytes")
		})
		b.Run(s.name+"/go", func(b *testing.B) {
			for b.Loop() {
				codec.decodeServed(raw)
			}
		})
	}
}

// BenchmarkCacheStartProtobuf: a pods cache's start, list to ready, over
// 30,000 pods of benchdata stored in protobuf as the server stores them
// (in an embedded etcd), Decode by the transcoder and by the Go path it
// replaces (main's Decode), side by side.
func BenchmarkCacheStartProtobuf(b *testing.B) {
	const pods = 30000
	srv, err := etcdembed.Start(etcdembed.Config{DataDir: b.TempDir(), UnsafeNoFsync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	client, err := srv.NewClient()
	if err != nil {
		b.Fatal(err)
	}
	defer client.Close()
	reg, err := NewRegistry(Builtins()...)
	if err != nil {
		b.Fatal(err)
	}
	res := reg.Lookup("", "v1", "pods")
	storeWith := func(codec *StorageCodec) *etcd3.Store {
		return etcd3.New(etcd3.Config{Client: client, Prefix: "/bench/pods", Schema: res.Schema(), Codec: codec})
	}
	ctx := context.Background()
	load := storeWith(res.StorageCodec())
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := range 16 {
		wg.Go(func() {
			for i := w; i < pods; i += 16 {
				key := fmt.Sprintf("%s/pod-%06d", benchdata.Namespace(i, 100), i)
				if _, err := load.Create(ctx, key, benchdata.Pod(i, 100, 1000)); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
	goPath := res.StorageCodec()
	goPath.transcoder = nil
	for _, s := range []struct {
		name  string
		codec *StorageCodec
	}{{"transcoder", res.StorageCodec()}, {"go", goPath}} {
		store := storeWith(s.codec)
		b.Run(s.name, func(b *testing.B) {
			cpu := processCPU()
			for b.Loop() {
				c := cacher.New(cacher.Config{Store: store, Resource: "pods", IndexedFields: []string{"spec.nodeName"}})
				for !c.Ready() {
					time.Sleep(time.Millisecond)
				}
				c.Stop()
			}
			// The process's CPU (etcd's included, the same for both):
			// steadier than the time on a loaded machine.
			b.ReportMetric((processCPU()-cpu).Seconds()/float64(b.N), "cpu-s/op")
		})
	}
}

// processCPU is the CPU time this process has used, user and system.
func processCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
