package protojson

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand"
	"reflect"
	"testing"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// appendString quotes as json.Marshal does: every byte, every rune near
// the escaped ones, random and invalid UTF-8.
func TestAppendStringMatchesEncodingJSON(t *testing.T) {
	var samples []string
	for b := range 256 {
		samples = append(samples, string([]byte{byte(b)}), "a"+string([]byte{byte(b)})+"z")
	}
	for _, r := range []rune{0x7f, 0x80, 0xff, 0x2027, 0x2028, 0x2029, 0x202a, 0xfffd, utf8.MaxRune} {
		samples = append(samples, string(r), "x"+string(r)+"y")
	}
	samples = append(samples, "\xe2\x80", "\xe2\x80\xa8\xe2", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xc0\xaf")
	r := rand.New(rand.NewSource(1))
	for range 20000 {
		b := make([]byte, r.Intn(10))
		for i := range b {
			b[i] = byte(r.Intn(256))
			if r.Intn(3) == 0 {
				b[i] = "\xe2\x80\xa8<&>\\\"\n"[r.Intn(9)]
			}
		}
		samples = append(samples, string(b))
	}
	for _, s := range samples {
		want, _ := json.Marshal(s)
		if got := appendString(nil, s); !bytes.Equal(got, want) {
			t.Errorf("%q: %s, encoding/json %s", s, got, want)
		}
	}
}

// appendFloat writes floats as json.Marshal does, float32 and float64, in
// both notations and at their boundaries.
func TestAppendFloatMatchesEncodingJSON(t *testing.T) {
	samples := []float64{0, math.Copysign(0, -1), 1, -1, 1e-6, 9.99999e-7, 1e20, 1e21, 1e-7, 5e-324, math.MaxFloat64, math.SmallestNonzeroFloat32, math.MaxFloat32, 0.1, 123456789.125}
	r := rand.New(rand.NewSource(1))
	for range 20000 {
		samples = append(samples, math.Float64frombits(r.Uint64()), float64(math.Float32frombits(r.Uint32())), r.NormFloat64()*math.Pow(10, float64(r.Intn(60)-30)))
	}
	for _, f := range samples {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			continue
		}
		want, _ := json.Marshal(f)
		if got := appendFloat(nil, f, 64); !bytes.Equal(got, want) {
			t.Errorf("%v: %s, encoding/json %s", f, got, want)
		}
		if f32 := float32(f); !math.IsInf(float64(f32), 0) {
			want, _ := json.Marshal(f32)
			if got := appendFloat(nil, float64(f32), 32); !bytes.Equal(got, want) {
				t.Errorf("float32 %v: %s, encoding/json %s", f32, got, want)
			}
		}
	}
}

// goMessage is what the generated k8s.io/api types implement.
type goMessage interface {
	runtime.Object
	Unmarshal([]byte) error
}

// viaGo is what resource.StorageCodec's Go path writes for msg: the value
// Unmarshal gives, with its kind, by encoding/json.
func viaGo(typ reflect.Type, msg []byte, gvk schema.GroupVersionKind) ([]byte, error) {
	obj := reflect.New(typ).Interface().(goMessage)
	if err := obj.Unmarshal(msg); err != nil {
		return nil, err
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	return json.Marshal(obj)
}

// check transcodes msg as a typ and compares with the Go path: the same
// JSON, or a decline (allowed anywhere if mayDecline, else only where
// the Go path fails).
func check(t testing.TB, typ reflect.Type, gvk schema.GroupVersionKind, msg []byte, mayDecline bool) bool {
	t.Helper()
	tr, err := For(typ)
	if err != nil {
		t.Fatal(err)
	}
	want, err := viaGo(typ, msg, gvk)
	got, ok := tr.Append([]byte("prefix"), msg, gvk.Kind, gvk.GroupVersion().String())
	switch {
	case !bytes.HasPrefix(got, []byte("prefix")):
		t.Errorf("%x: dst lost", msg)
	case err != nil && ok:
		t.Errorf("%x: the Go path fails (%v), the transcoder wrote\n%s", msg, err, got)
	case err == nil && !ok && !mayDecline:
		t.Errorf("%x: declined; the Go path wrote\n%s", msg, want)
	case ok && !bytes.Equal(got[len("prefix"):], want):
		t.Errorf("%x: transcoded\n%s\nthe Go path wrote\n%s", msg, got[len("prefix"):], want)
	case !ok && string(got) != "prefix":
		t.Errorf("%x: declined, but wrote %q", msg, got)
	}
	return ok
}

var (
	configMapGVK = corev1.SchemeGroupVersion.WithKind("ConfigMap")
	secretGVK    = corev1.SchemeGroupVersion.WithKind("Secret")
)

// entry is a map entry's bytes; key or value nil: absent.
func mapEntry(num protowire.Number, key, value []byte) []byte {
	var e []byte
	if key != nil {
		e = protowire.AppendBytes(protowire.AppendTag(e, 1, protowire.BytesType), key)
	}
	if value != nil {
		e = protowire.AppendBytes(protowire.AppendTag(e, 2, protowire.BytesType), value)
	}
	return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), e)
}

// Map entries out of order, a key twice (the last one's value wins),
// an entry without key or value: as the generated code reads them.
func TestMapEntries(t *testing.T) {
	var cm, secret []byte
	for _, e := range [][2][]byte{{[]byte("b"), []byte("1")}, {[]byte("a"), []byte("x")}, {[]byte("b"), []byte("2")},
		{[]byte("a<"), nil}, {nil, []byte("no key")}, {[]byte("a"), []byte("y")}, {[]byte("\xff"), []byte("\u2028")}} {
		cm = append(cm, mapEntry(2, e[0], e[1])...)         // data
		cm = append(cm, mapEntry(3, e[1], e[0])...)         // binaryData
		secret = append(secret, mapEntry(2, e[0], e[1])...) // data: bytes
		secret = append(secret, mapEntry(4, e[1], e[0])...) // stringData
	}
	check(t, reflect.TypeFor[corev1.ConfigMap](), configMapGVK, cm, false)
	check(t, reflect.TypeFor[corev1.Secret](), secretGVK, secret, false)
}

// Present but empty: a pointer to a message with no fields is {}, a
// repeated field packed empty is nil, an inline message empty is its
// zero; unknown fields of every wire type are skipped.
func TestEdgesOfTheWire(t *testing.T) {
	podGVK := corev1.SchemeGroupVersion.WithKind("Pod")
	pod := reflect.TypeFor[corev1.Pod]()
	var spec []byte
	spec = protowire.AppendBytes(protowire.AppendTag(spec, 14, protowire.BytesType), nil) // securityContext: present, empty
	spec = protowire.AppendBytes(protowire.AppendTag(spec, 1, protowire.BytesType),       // volumes: one, its source inline and empty
		protowire.AppendBytes(protowire.AppendTag(nil, 2, protowire.BytesType), nil))
	spec = protowire.AppendVarint(protowire.AppendTag(spec, 999, protowire.VarintType), 7) // unknown
	spec = protowire.AppendFixed32(protowire.AppendTag(spec, 998, protowire.Fixed32Type), 7)
	spec = protowire.AppendFixed64(protowire.AppendTag(spec, 997, protowire.Fixed64Type), 7)
	spec = protowire.AppendBytes(protowire.AppendTag(spec, 996, protowire.BytesType), []byte("x"))
	msg := protowire.AppendBytes(protowire.AppendTag(nil, 2, protowire.BytesType), spec)
	msg = protowire.AppendBytes(protowire.AppendTag(msg, 1, protowire.BytesType), nil) // metadata: present, empty
	if !check(t, pod, podGVK, msg, false) {
		t.Error("declined")
	}
	// A deployment's revisionHistoryLimit ... status.conditions: the
	// message with numbers packed and not.
	var status []byte
	status = protowire.AppendVarint(protowire.AppendTag(status, 2, protowire.VarintType), uint64(1<<63)) // replicas: int32 of a big varint
	check(t, reflect.TypeFor[appsv1.Deployment](), appsv1.SchemeGroupVersion.WithKind("Deployment"),
		protowire.AppendBytes(protowire.AppendTag(nil, 3, protowire.BytesType), status), false)
	// Malformed: declined as the Go path fails.
	for _, bad := range [][]byte{{0x0a}, {0x0a, 0x05, 0x01}, {0x00}, {0x0b, 0x0c}, {0x08, 0x80}} {
		check(t, pod, podGVK, bad, false)
	}
}
