package jsontree

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"strings"
	"testing"

	kjson "sigs.k8s.io/json"
)

// sameAsKJSON fails unless Decode gives for data what kjson gives: the
// same tree, or an error where kjson has one.
func sameAsKJSON(t *testing.T, name string, data []byte) {
	t.Helper()
	var want map[string]any
	wantErr := kjson.UnmarshalCaseSensitivePreserveInts(data, &want)
	got, err := Decode(data)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("%s: %q: error %v, kjson's %v", name, data, err, wantErr)
	}
	if err == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: %q: got\n%#v\nkjson\n%#v", name, data, got, want)
	}
}

// referenceObjects are the objects kube-apiserver served in the
// reference recording, as it served them and as encoding/json encodes
// their trees (escaping <, > and &).
func referenceObjects(t *testing.T) [][]byte {
	t.Helper()
	f, err := os.Open("../resource/testdata/reference-served.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out [][]byte
	lines := bufio.NewScanner(f)
	lines.Buffer(nil, 1<<24)
	for lines.Scan() {
		var line struct {
			Object json.RawMessage `json:"object"`
		}
		if err := json.Unmarshal(lines.Bytes(), &line); err != nil {
			t.Fatal(err)
		}
		var tree any
		if err := json.Unmarshal(line.Object, &tree); err != nil {
			t.Fatal(err)
		}
		compact, _ := json.Marshal(tree)
		out = append(out, line.Object, compact)
	}
	if len(out) < 100 {
		t.Fatalf("%d reference objects", len(out))
	}
	return out
}

// mutations are the bytes a sample is changed with.
const mutations = " \t\"\\{}[]:,.-+eE0123456789tfnul\x00\x1f\x80\xff"

// Decode gives kjson's tree for every reference object, for random
// trees, and kjson's verdict for each of them cut short or with a byte
// changed.
func TestDecodeAsKJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	samples := referenceObjects(t)
	fast := 0
	for _, data := range samples {
		if _, ok := decodeFast(data); ok {
			fast++
		}
	}
	if fast < len(samples)/2 {
		t.Errorf("the scanner read %d of %d reference objects itself", fast, len(samples))
	}
	for range 1000 {
		samples = append(samples, randomObject(r))
	}
	for i, data := range samples {
		sameAsKJSON(t, fmt.Sprint("sample ", i), data)
		for range 10 {
			changed := bytes.Clone(data)
			changed[r.IntN(len(changed))] = mutations[r.IntN(len(mutations))]
			sameAsKJSON(t, fmt.Sprint("changed sample ", i), changed)
			sameAsKJSON(t, fmt.Sprint("cut sample ", i), data[:r.IntN(len(data))])
		}
	}
	for _, data := range []string{
		`null`, `{}`, ` {"a":1} `, `[]`, `"s"`, `1`, `{"a":1}x`, `{"a":1,}`, `{"a":[1,]}`, `{"a":01}`, `{"a":-0}`,
		`{"a":-}`, `{"a":1.}`, `{"a":.5}`, `{"a":1e}`, `{"a":1e+}`, `{"a":1E-2}`, `{"a":1e400}`, `{"a":9223372036854775807}`,
		`{"a":9223372036854775808}`, `{"a":-9223372036854775809}`, `{"a":1.0}`, `{"a":1e3}`, `{"a":tru}`, `{"a":nul}`,
		`{"a":1,"a":{"b":2}}`, `{"a":"\u00e9\ud800\"\\\/"}`, "{\"a\":\"\xff\"}", "{\"a\":\"\x01\"}", `{"\u0061":"é"}`,
		`{"a":"\q"}`, `{"a" 1}`, `{1:1}`, `{"a":1 "b":2}`, `{"a":[1 2]}`,
		strings.Repeat(`{"a":`, 1500) + "1" + strings.Repeat("}", 1500),
		`{"a":` + strings.Repeat("[", 11000) + strings.Repeat("]", 11000) + "}",
	} {
		sameAsKJSON(t, "case", []byte(data))
	}
}

// randomObject is a random JSON object, with random spacing.
func randomObject(r *rand.Rand) []byte {
	var b bytes.Buffer
	randomValue(r, &b, 0, true)
	return b.Bytes()
}

func randomValue(r *rand.Rand, b *bytes.Buffer, depth int, object bool) {
	space := func() {
		if r.IntN(8) == 0 {
			b.WriteString(" \n\t\r"[:1+r.IntN(4)])
		}
	}
	space()
	kind := r.IntN(9)
	switch {
	case object || depth < 4 && kind == 0:
		b.WriteByte('{')
		for i := range r.IntN(6) {
			if i > 0 {
				b.WriteByte(',')
			}
			space()
			randomString(r, b)
			space()
			b.WriteByte(':')
			randomValue(r, b, depth+1, false)
		}
		space()
		b.WriteByte('}')
	case depth < 4 && kind == 1:
		b.WriteByte('[')
		for i := range r.IntN(5) {
			if i > 0 {
				b.WriteByte(',')
			}
			randomValue(r, b, depth+1, false)
		}
		b.WriteByte(']')
	case kind <= 3:
		randomString(r, b)
	case kind == 4:
		b.WriteString([]string{"true", "false", "null"}[r.IntN(3)])
	default:
		b.WriteString([]string{"0", "-0", "7", "-42", "1.5", "-0.25", "1e3", "2E-2", "1.5e+300", "12345678901234567890",
			"-9223372036854775808", "9223372036854775807", "3.0", "1e-400"}[r.IntN(14)])
	}
	space()
}

func randomString(r *rand.Rand, b *bytes.Buffer) {
	parts := []string{"a", "name", "k8s.io/x", " ", `\"`, `\\`, `\n`, `\u003c`, `\u00e9`, `\ud83d\ude00`, `\ud800`, "é", "日本", "\xff", "-_.:/"}
	b.WriteByte('"')
	for range r.IntN(5) {
		b.WriteString(parts[r.IntN(len(parts))])
	}
	b.WriteByte('"')
}

func BenchmarkDecode(b *testing.B) {
	data, err := os.ReadFile("../resource/testdata/reference-served.jsonl")
	if err != nil {
		b.Fatal(err)
	}
	var line struct {
		Object json.RawMessage `json:"object"`
	}
	for l := range bytes.SplitSeq(data, []byte("\n")) {
		if bytes.Contains(l, []byte(`"/api/v1/namespaces/`)) && bytes.Contains(l, []byte(`/pods/`)) {
			if err := json.Unmarshal(l, &line); err != nil {
				b.Fatal(err)
			}
			break
		}
	}
	if line.Object == nil {
		b.Fatal("no pod in the reference recording")
	}
	b.Run("Decode", func(b *testing.B) {
		for range b.N {
			if _, err := Decode(line.Object); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("kjson", func(b *testing.B) {
		for range b.N {
			var obj map[string]any
			if err := kjson.UnmarshalCaseSensitivePreserveInts(line.Object, &obj); err != nil {
				b.Fatal(err)
			}
		}
	})
}
