package encoding

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/resource"
	"github.com/watchcache/watchcache/pkg/storage"
	"google.golang.org/protobuf/encoding/protowire"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// goldenDir holds what a kube-apiserver 1.37 answers in protobuf about one
// object of each built-in resource (see its README.md).
const goldenDir = "testdata/protobuf"

// TestProtobufGolden: the protobuf encodings of objects, lists, watch
// events and Statuses are byte for byte kube-apiserver's, for the objects
// recorded in testdata/protobuf (<group>_<version>_<plural>.*, "core" for
// the core group).
func TestProtobufGolden(t *testing.T) {
	reg, err := resource.NewRegistry(resource.Builtins()...)
	if err != nil {
		t.Fatal(err)
	}
	objects, err := filepath.Glob(filepath.Join(goldenDir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, path := range objects {
		name := filepath.Base(path)
		if strings.HasSuffix(name, ".list.json") || strings.HasPrefix(name, "notfound_") {
			continue
		}
		base := strings.TrimSuffix(name, ".json")
		res := goldenResource(t, reg, base)
		n++
		t.Run(base, func(t *testing.T) { testGoldenResource(t, res, base) })
	}
	if n == 0 {
		t.Fatalf("no recorded objects in %s", goldenDir)
	}
	// Every stored built-in kind with a Go type has its recording.
	for _, res := range resource.Builtins() {
		if !res.Stored() || res.StrategicMergeType == nil {
			continue
		}
		if _, err := os.Stat(filepath.Join(goldenDir, goldenBase(res)+".json")); err != nil {
			t.Errorf("%s: nothing recorded: %v", res, err)
		}
	}
}

// goldenBase names the files of res.
func goldenBase(res *resource.Resource) string {
	group := res.Group
	if group == "" {
		group = "core"
	}
	return group + "_" + res.Version + "_" + res.Plural
}

// goldenResource is the resource base names.
func goldenResource(t *testing.T, reg *resource.Registry, base string) *resource.Resource {
	t.Helper()
	parts := strings.Split(base, "_")
	if len(parts) != 3 {
		t.Fatalf("%s: not <group>_<version>_<plural>", base)
	}
	group := parts[0]
	if group == "core" {
		group = ""
	}
	res := reg.Lookup(group, parts[1], parts[2])
	if res == nil {
		t.Fatalf("%s: no such resource", base)
	}
	return res
}

func readGolden(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(goldenDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func testGoldenResource(t *testing.T, res *resource.Resource, base string) {
	data := readGolden(t, base+".json")
	var meta struct {
		Metadata struct {
			Name, Namespace, ResourceVersion string
		}
	}
	if err := json.Unmarshal(data, &meta); err != nil {
		t.Fatal(err)
	}
	rv, err := storage.ParseResourceVersion(meta.Metadata.ResourceVersion)
	if err != nil {
		t.Fatal(err)
	}
	obj, _, err := object.Decode(res.Schema(), res.Key(meta.Metadata.Namespace, meta.Metadata.Name), data, rv)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("object", func(t *testing.T) {
		got, err := ObjectProtobuf(res, obj)
		if err != nil {
			t.Fatal(err)
		}
		compareBodies(t, base+".pb", readGolden(t, base+".pb"), got)
	})

	t.Run("list", func(t *testing.T) {
		var list struct {
			Metadata struct {
				ResourceVersion    string `json:"resourceVersion"`
				Continue           string `json:"continue"`
				RemainingItemCount *int64 `json:"remainingItemCount"`
			} `json:"metadata"`
			Items []struct {
				Metadata struct{ ResourceVersion string } `json:"metadata"`
			} `json:"items"`
		}
		if err := json.Unmarshal(readGolden(t, base+".list.json"), &list); err != nil {
			t.Fatal(err)
		}
		// The list holds the recorded object (as the store keeps it, with its
		// kind and apiVersion).
		if len(list.Items) != 1 || list.Items[0].Metadata.ResourceVersion != meta.Metadata.ResourceVersion {
			t.Fatalf("%s.list.json does not hold the object recorded at %s alone", base, meta.Metadata.ResourceVersion)
		}
		listRV, err := storage.ParseResourceVersion(list.Metadata.ResourceVersion)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ListProtobuf(res, &storage.List{Items: []*object.Object{obj}, ResourceVersion: listRV,
			Continue: list.Metadata.Continue, RemainingItemCount: list.Metadata.RemainingItemCount})
		if err != nil {
			t.Fatal(err)
		}
		compareBodies(t, base+".list.pb", readGolden(t, base+".list.pb"), got)
	})

	t.Run("watch", func(t *testing.T) {
		got, err := WatchEventProtobuf(res, storage.Event{Type: storage.EventAdded, Object: obj, ResourceVersion: rv})
		if err != nil {
			t.Fatal(err)
		}
		compareFrames(t, base+".watch.pb", readGolden(t, base+".watch.pb"), got)
	})

	t.Run("bookmark", func(t *testing.T) {
		want, err := os.ReadFile(filepath.Join(goldenDir, base+".bookmark.pb"))
		if os.IsNotExist(err) {
			t.Skipf("no bookmark recorded for %s", base)
		}
		if err != nil {
			t.Fatal(err)
		}
		bookmarkMeta, err := frameObjectMeta(want)
		if err != nil {
			t.Fatalf("%s.bookmark.pb: %v", base, err)
		}
		bookmarkRV, err := storage.ParseResourceVersion(bookmarkMeta.ResourceVersion)
		if err != nil {
			t.Fatal(err)
		}
		_, initialEventsEnd := bookmarkMeta.Annotations[metav1.InitialEventsAnnotationKey]
		got, err := WatchEventProtobuf(res, storage.Event{Type: storage.EventBookmark, ResourceVersion: bookmarkRV, InitialEventsEnd: initialEventsEnd})
		if err != nil {
			t.Fatal(err)
		}
		compareFrames(t, base+".bookmark.pb", want, got)
	})
}

// TestProtobufGoldenStatus: a Status (a 404 of a get) in protobuf is
// kube-apiserver's, byte for byte.
func TestProtobufGoldenStatus(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(goldenDir, "notfound_*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no recorded Status in %s", goldenDir)
	}
	for _, path := range files {
		base := strings.TrimSuffix(filepath.Base(path), ".json")
		t.Run(base, func(t *testing.T) {
			var status metav1.Status
			if err := json.Unmarshal(readGolden(t, base+".json"), &status); err != nil {
				t.Fatal(err)
			}
			compareBodies(t, base+".pb", readGolden(t, base+".pb"), StatusProtobuf(&status))
		})
	}
}

// goldenScheme knows every kind recorded, for decoding both sides of a
// mismatch.
var goldenScheme = func() *runtime.Scheme {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		panic(err)
	}
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		panic(err)
	}
	metav1.AddToGroupVersion(scheme, metav1.SchemeGroupVersion)
	return scheme
}()

// compareBodies fails t, readably, if the protobuf body got is not want:
// both decoded (runtime.Unknown and the typed object, shown as JSON) and
// their wire fields, as paths of field numbers, diffed.
func compareBodies(t *testing.T, name string, want, got []byte) {
	t.Helper()
	if bytes.Equal(want, got) {
		return
	}
	t.Errorf("%s: the encoding (%d bytes) differs from kube-apiserver's (%d bytes)%s", name, len(got), len(want), explainBodies(want, got))
}

// compareFrames is compareBodies for watch frames: the length, the
// WatchEvent, then its object's body.
func compareFrames(t *testing.T, name string, want, got []byte) {
	t.Helper()
	if bytes.Equal(want, got) {
		return
	}
	var msg strings.Builder
	fmt.Fprintf(&msg, "%s: the watch frame (%d bytes) differs from kube-apiserver's (%d bytes)", name, len(got), len(want))
	wantEvent, wantErr := decodeFrame(want)
	gotEvent, gotErr := decodeFrame(got)
	switch {
	case wantErr != nil:
		fmt.Fprintf(&msg, "\nthe recorded frame does not decode: %v", wantErr)
	case gotErr != nil:
		fmt.Fprintf(&msg, "\nthe frame does not decode: %v\n%s", gotErr, hexDiff(want, got))
	default:
		if wantEvent.Type != gotEvent.Type {
			fmt.Fprintf(&msg, "\nevent type %s, want %s", gotEvent.Type, wantEvent.Type)
		}
		if bytes.Equal(wantEvent.Object.Raw, gotEvent.Object.Raw) {
			fmt.Fprintf(&msg, "\nthe objects are the same; the WatchEvent messages differ:\n%s", cmp.Diff(wireLines(want[4:], ""), wireLines(got[4:], "")))
		} else {
			msg.WriteString(explainBodies(wantEvent.Object.Raw, gotEvent.Object.Raw))
		}
	}
	t.Error(msg.String())
}

// decodeFrame decodes a frame's length and WatchEvent.
func decodeFrame(frame []byte) (*metav1.WatchEvent, error) {
	if len(frame) < 4 {
		return nil, fmt.Errorf("%d bytes: no length", len(frame))
	}
	if n := binary.BigEndian.Uint32(frame); int(n) != len(frame)-4 {
		return nil, fmt.Errorf("length %d, but %d bytes follow", n, len(frame)-4)
	}
	var ev metav1.WatchEvent
	if err := ev.Unmarshal(frame[4:]); err != nil {
		return nil, err
	}
	return &ev, nil
}

// frameObjectMeta is the metadata of a watch frame's object: field 1 of
// every kind's message.
func frameObjectMeta(frame []byte) (*metav1.ObjectMeta, error) {
	ev, err := decodeFrame(frame)
	if err != nil {
		return nil, err
	}
	u, err := decodeUnknown(ev.Object.Raw)
	if err != nil {
		return nil, err
	}
	meta := &metav1.ObjectMeta{}
	for b := u.Raw; len(b) > 0; {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, protowire.ParseError(n)
		}
		b = b[n:]
		if num == 1 && typ == protowire.BytesType {
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return nil, protowire.ParseError(n)
			}
			return meta, meta.Unmarshal(v)
		}
		if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
			return nil, protowire.ParseError(n)
		}
		b = b[n:]
	}
	return meta, nil
}

// decodeUnknown decodes the runtime.Unknown of a protobuf body.
func decodeUnknown(body []byte) (*runtime.Unknown, error) {
	magic := []byte("k8s\x00")
	if !bytes.HasPrefix(body, magic) {
		return nil, fmt.Errorf("no %q prefix", magic)
	}
	u := &runtime.Unknown{}
	if err := u.Unmarshal(body[len(magic):]); err != nil {
		return nil, err
	}
	return u, nil
}

// explainBodies tells how two protobuf bodies differ: their envelopes,
// their objects decoded (as JSON), and their wire fields.
func explainBodies(want, got []byte) string {
	var msg strings.Builder
	wantU, wantErr := decodeUnknown(want)
	gotU, gotErr := decodeUnknown(got)
	switch {
	case wantErr != nil:
		fmt.Fprintf(&msg, "\nthe recorded body does not decode: %v", wantErr)
		return msg.String()
	case gotErr != nil:
		fmt.Fprintf(&msg, "\nthe body does not decode: %v\n%s", gotErr, hexDiff(want, got))
		return msg.String()
	}
	if wantU.TypeMeta != gotU.TypeMeta || wantU.ContentEncoding != gotU.ContentEncoding || wantU.ContentType != gotU.ContentType {
		fmt.Fprintf(&msg, "\nenvelope: %+v %q %q, want %+v %q %q", gotU.TypeMeta, gotU.ContentEncoding, gotU.ContentType,
			wantU.TypeMeta, wantU.ContentEncoding, wantU.ContentType)
	}
	decoder := protobuf.NewSerializer(goldenScheme, goldenScheme)
	wantObj, _, wantErr := decoder.Decode(want, nil, nil)
	gotObj, _, gotErr := decoder.Decode(got, nil, nil)
	switch {
	case wantErr != nil:
		fmt.Fprintf(&msg, "\nthe recorded object does not decode: %v", wantErr)
	case gotErr != nil:
		fmt.Fprintf(&msg, "\nthe object does not decode: %v", gotErr)
	default:
		if diff := cmp.Diff(asJSON(wantObj), asJSON(gotObj)); diff != "" {
			fmt.Fprintf(&msg, "\ndecoded objects (-kube-apiserver +got):\n%s", diff)
		} else {
			msg.WriteString("\nthe decoded objects are equal")
		}
	}
	fmt.Fprintf(&msg, "\nwire fields of the envelope's object (-kube-apiserver +got):\n%s", cmp.Diff(wireLines(wantU.Raw, ""), wireLines(gotU.Raw, "")))
	return msg.String()
}

// asJSON is a decoded object as generic JSON, for a diff.
func asJSON(obj runtime.Object) any {
	data, err := json.Marshal(obj)
	if err != nil {
		return err.Error()
	}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return err.Error()
	}
	return v
}

// wireLines renders a protobuf message as one line per field, named by
// the path of field numbers from the message's root ("1.3.2"); a bytes
// field shows as a nested message if it parses as one and is not printable
// text, else as text or hex.
func wireLines(b []byte, path string) []string {
	var lines []string
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return append(lines, fmt.Sprintf("%s: unparsable: %x", path, b))
		}
		b = b[n:]
		field := fmt.Sprint(num)
		if path != "" {
			field = path + "." + field
		}
		switch typ {
		case protowire.VarintType:
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return append(lines, fmt.Sprintf("%s: unparsable varint: %x", field, b))
			}
			lines = append(lines, fmt.Sprintf("%s varint %d", field, v))
			b = b[n:]
		case protowire.BytesType:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return append(lines, fmt.Sprintf("%s: unparsable bytes: %x", field, b))
			}
			b = b[n:]
			switch {
			case len(v) == 0:
				lines = append(lines, fmt.Sprintf("%s bytes \"\"", field))
			case printable(v):
				lines = append(lines, fmt.Sprintf("%s bytes %q", field, v))
			case isMessage(v):
				lines = append(lines, fmt.Sprintf("%s message (%d bytes)", field, len(v)))
				lines = append(lines, wireLines(v, field)...)
			default:
				lines = append(lines, fmt.Sprintf("%s bytes %x", field, v))
			}
		default:
			n := protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return append(lines, fmt.Sprintf("%s: unparsable: %x", field, b))
			}
			lines = append(lines, fmt.Sprintf("%s wire type %d %x", field, typ, b[:n]))
			b = b[n:]
		}
	}
	return lines
}

// printable reports whether b is text.
func printable(b []byte) bool {
	if !utf8.Valid(b) {
		return false
	}
	for _, r := range string(b) {
		if r < 0x20 && r != '\n' && r != '\t' {
			return false
		}
	}
	return true
}

// isMessage reports whether b parses as a protobuf message.
func isMessage(b []byte) bool {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || num == 0 || typ == protowire.StartGroupType || typ == protowire.EndGroupType {
			return false
		}
		b = b[n:]
		if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
			return false
		}
		b = b[n:]
	}
	return true
}

// hexDiff shows where two byte strings first differ.
func hexDiff(want, got []byte) string {
	i := 0
	for i < len(want) && i < len(got) && want[i] == got[i] {
		i++
	}
	from := max(0, i-16)
	excerpt := func(b []byte) string { return hex.EncodeToString(b[min(from, len(b)):min(i+32, len(b))]) }
	return fmt.Sprintf("first difference at byte %d:\n  kube-apiserver …%s\n  got            …%s", i, excerpt(want), excerpt(got))
}
