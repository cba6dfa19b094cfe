package table

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/watchcache/watchcache/pkg/benchdata"
)

func TestCapture(t *testing.T) {
	data := raw(` { "a" : { "b\"}" : "}]\\" , "b" : [ 1 , {"c":"x"} ] ,"n":-12, "t":true } , "e":"caf\u00e9\n", "z" : null } `)
	paths := []string{"a.b", "a.n", "a.t", "e", "z", "a", "missing", "a.b.c"}
	v := make([]raw, len(paths))
	compile(paths).capture(data[space(data, 0):], v)
	want := []string{`[ 1 , {"c":"x"} ]`, `-12`, `true`, `"caf\u00e9\n"`, `null`, "", "", ""}
	for i, w := range want {
		if i == 5 {
			continue // a: the whole object
		}
		if string(v[i]) != w {
			t.Errorf("%s: got %q, want %q", paths[i], v[i], w)
		}
	}
	if v[5].count() != 4 || v[0].count() != 2 || v[1].int() != -12 || !v[2].bool() || v[3].str() != "café\n" || v[4].present() || v[4].str() != "" || v[6] != nil {
		t.Errorf("values: %q", v)
	}
	var keys []string
	for k := range v[5].members() {
		keys = append(keys, string(k))
	}
	if !slices.Equal(keys, []string{`b\"}`, "b", "n", "t"}) {
		t.Errorf("keys: %q", keys)
	}
	if got := raw(`"2026-11-01T10:00:00.5Z"`).time(); !got.Equal(time.Date(2026, 11, 1, 10, 0, 0, 5e8, time.UTC)) {
		t.Errorf("time: %v", got)
	}
	if raw(`1.5`).int() != 0 || raw(`"x"`).time() != (time.Time{}) || raw(`12`).str() != "12" {
		t.Error("values of other types")
	}
}

// BenchmarkPodRow measures a pod's row in the table of pods (the pods of
// the benchmarks).
func BenchmarkPodRow(b *testing.B) {
	pod, tb, now := benchdata.Pod(1, 10, 10), For("", "pods"), time.Now()
	b.SetBytes(int64(len(pod)))
	b.ReportAllocs()
	var buf []byte
	for b.Loop() {
		buf = tb.AppendCells(buf[:0], pod, now)
	}
}

func TestAppendString(t *testing.T) {
	for _, s := range []string{"", "web", "<none>", "a\"b\\c\n\r\t\b\f\x01&", "café", "\u2028x", "bad\xffutf8"} {
		want, _ := json.Marshal(s)
		if got := appendString([]byte("x"), s); string(got) != "x"+string(want) {
			t.Errorf("%q: got %s, want %s", s, got[1:], want)
		}
	}
}
