package encoding

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/resource"
	"github.com/watchcache/watchcache/pkg/storage"
)

// TestEventLinesKeepSharedEncodings: an encoding shared by the watchers of
// an event is never overwritten by a watcher's next, unshared event (a
// bookmark), and every line is one JSON object.
func TestEventLinesKeepSharedEncodings(t *testing.T) {
	reg, err := resource.NewRegistry(resource.Builtins()...)
	if err != nil {
		t.Fatal(err)
	}
	pods := reg.Lookup("", "v1", "pods")
	obj, _, err := object.Decode(pods.Schema(), "ns/a", []byte(`{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a","namespace":"ns"}}`), 7)
	if err != nil {
		t.Fatal(err)
	}
	shared := &storage.SharedEncoding{}
	jsonFormat, protobufFormat := Format{MediaType: JSONType}, Format{MediaType: ProtobufType}
	first, second := NewEventEncoder(pods, jsonFormat), NewEventEncoder(pods, jsonFormat)
	event := storage.Event{Type: storage.EventModified, Object: obj, ResourceVersion: 7, Shared: shared}

	sharedLine := line(t, first, event)
	want := append([]byte(nil), sharedLine...)
	if got := line(t, second, event); &got[0] != &sharedLine[0] {
		t.Fatal("the second watcher encoded the shared event again")
	}
	// Protobuf watchers share their own encoding of the event.
	frame := line(t, NewEventEncoder(pods, protobufFormat), event)
	if got := line(t, NewEventEncoder(pods, protobufFormat), event); &got[0] != &frame[0] || bytes.Equal(frame, sharedLine) {
		t.Fatal("protobuf watchers do not share their own encoding of the event")
	}
	// Watchers of partial objects share theirs, apart from the objects'.
	partial := Format{MediaType: ProtobufType, Partial: "v1"}
	if got, again := line(t, NewEventEncoder(pods, partial), event), line(t, NewEventEncoder(pods, partial), event); &got[0] != &again[0] || bytes.Equal(got, frame) {
		t.Fatal("watchers of partial objects do not share their own encoding of the event")
	}
	for _, enc := range []*EventEncoder{first, second} {
		bookmark := line(t, enc, storage.Event{Type: storage.EventBookmark, ResourceVersion: 9})
		var decoded struct {
			Type   string          `json:"type"`
			Object json.RawMessage `json:"object"`
		}
		if err := json.Unmarshal(bookmark, &decoded); err != nil || decoded.Type != "BOOKMARK" {
			t.Fatalf("bookmark line %q: %v", bookmark, err)
		}
	}
	if !bytes.Equal(sharedLine, want) {
		t.Fatalf("the shared encoding changed to %q, was %q", sharedLine, want)
	}
	var decoded map[string]any
	if err := json.Unmarshal(want, &decoded); err != nil || decoded["type"] != "MODIFIED" {
		t.Fatalf("shared line %q: %v", want, err)
	}
}

// line is enc's encoding of ev.
func line(t *testing.T, enc *EventEncoder, ev storage.Event) []byte {
	t.Helper()
	data, err := enc.Line(ev)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
