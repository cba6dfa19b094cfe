// Encoding watch events for one client: an event's JSON line (shared by all
// clients of the same encoding), ERROR and BOOKMARK events, and a list's
// ListMeta with its shardInfo.

package encoding

import (
	"bufio"
	"encoding/json"
	"strconv"

	"github.com/watchcache/watchcache/pkg/apistatus"
	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/resource"
	"github.com/watchcache/watchcache/pkg/storage"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// appendListMeta appends a list's ListMeta, with shardInfo when a shard
// selector filtered the list.
func appendListMeta(buf []byte, list *storage.List) []byte {
	buf = append(buf, `{"resourceVersion":"`...)
	buf = strconv.AppendUint(buf, list.ResourceVersion, 10)
	buf = append(buf, '"')
	if list.Continue != "" {
		buf = append(buf, `,"continue":`...)
		data, _ := json.Marshal(list.Continue)
		buf = append(buf, data...)
	}
	if list.RemainingItemCount != nil {
		buf = append(buf, `,"remainingItemCount":`...)
		buf = strconv.AppendInt(buf, *list.RemainingItemCount, 10)
	}
	if list.Shard != nil {
		// The selector as the request gave it (KEP-5866): its presence
		// says the list is a shard, not the whole collection.
		buf = append(buf, `,"shardInfo":{"selector":`...)
		data, _ := json.Marshal(list.Shard.String())
		buf = append(buf, data...)
		buf = append(buf, '}')
	}
	return append(buf, '}')
}

func writeJSONString(bw *bufio.Writer, s string) {
	data, _ := json.Marshal(s)
	bw.Write(data)
}

// EventEncoder encodes watch events of one resource for one client.
type EventEncoder struct {
	res    *resource.Resource
	format Format
	// scratch holds this client's own encodings, reused from event to
	// event; encodings shared with other watchers are never written into.
	scratch []byte
}

// NewEventEncoder returns the encoder of res's watch events for one
// client, in format f: JSON lines (objects, Tables or partial objects) or
// protobuf frames.
func NewEventEncoder(res *resource.Resource, f Format) *EventEncoder {
	return &EventEncoder{res: res, format: f}
}

// ContentType is the watch response's Content-Type.
func (e *EventEncoder) ContentType() string {
	if e.format.Protobuf() {
		return ProtobufType + watchStream
	}
	return JSONType
}

// Line returns one event's encoding (a JSON line or a protobuf frame):
// for an event delivered to many watchers, the encoding they share
// (encoded once for all, per media type); otherwise one in the scratch
// buffer, valid until the next call.
func (e *EventEncoder) Line(ev storage.Event) ([]byte, error) {
	if ev.Shared != nil && e.format.Table == nil && ev.Object != nil {
		var err error
		line := ev.Shared.Get(ev.Type, e.sharedKey(), func() []byte {
			var data []byte
			data, err = e.appendEvent(nil, ev)
			return data
		})
		return line, err
	}
	var err error
	e.scratch, err = e.appendEvent(e.scratch[:0], ev)
	return e.scratch, err
}

// sharedKey names this encoder's encoding of an event among those its
// watchers share: its media type, and the partial object's version if it
// sends partial objects (a Table's rows are per watcher: not shared).
func (e *EventEncoder) sharedKey() string {
	if e.format.Partial != "" {
		return e.format.MediaType + ";as=PartialObjectMetadata;v=" + e.format.Partial
	}
	return e.format.MediaType
}

// appendEvent appends one event's encoding to buf. An ERROR event carries
// the Status of its error.
func (e *EventEncoder) appendEvent(buf []byte, ev storage.Event) ([]byte, error) {
	if e.format.Protobuf() {
		object, err := e.protobufObject(ev)
		if err != nil {
			return nil, err
		}
		return watchFrame(buf, ev.Type, object), nil
	}
	buf = append(buf, `{"type":"`...)
	buf = append(buf, ev.Type...)
	buf = append(buf, `","object":`...)
	switch {
	case ev.Type == storage.EventBookmark && e.format.Table != nil:
		// kube-apiserver converts a bookmark as any object: a Table of
		// one row, the cells of an empty object, the bookmark's object
		// as includeObject asks.
		buf = e.appendTableBookmark(buf, ev)
	case ev.Type == storage.EventBookmark:
		buf = e.appendBookmark(buf, ev)
	case ev.Type == storage.EventError:
		data, _ := json.Marshal(&apistatus.From(ev.Err, e.res.Subject("")).ErrStatus)
		buf = append(buf, data...)
	case e.format.Table != nil:
		// With the object's resourceVersion, as kube-apiserver's.
		buf = e.format.Table.AppendTable(buf, e.res, []*object.Object{ev.Object}, &storage.List{ResourceVersion: ev.Object.ResourceVersion()})
		e.format.Table.noHeaders = true // the first event's are the watch's
	case e.format.Partial != "":
		buf = appendPartialJSON(buf, e.format.Partial, ev.Object)
	default:
		buf = ev.Object.AppendJSON(buf)
	}
	return append(buf, "}\n"...), nil
}

// protobufObject is the enveloped object of a protobuf watch event.
func (e *EventEncoder) protobufObject(ev storage.Event) ([]byte, error) {
	switch {
	case ev.Type == storage.EventError:
		return StatusProtobuf(&apistatus.From(ev.Err, e.res.Subject("")).ErrStatus), nil
	case e.format.Partial != "" && ev.Type == storage.EventBookmark:
		return partialProtobuf(e.format.Partial, bookmarkMeta(ev))
	case e.format.Partial != "":
		meta, err := objectMeta(ev.Object)
		if err != nil {
			return nil, err
		}
		return partialProtobuf(e.format.Partial, meta)
	case ev.Type == storage.EventBookmark:
		return bookmarkProtobuf(e.res, ev), nil
	}
	return ObjectProtobuf(e.res, ev.Object)
}

// appendTableBookmark appends a BOOKMARK's object as a Table.
func (e *EventEncoder) appendTableBookmark(buf []byte, ev storage.Event) []byte {
	bookmark := *e
	bookmark.format.Partial = ""
	data := bookmark.appendBookmark(nil, storage.Event{InitialEventsEnd: ev.InitialEventsEnd})
	obj, _, err := object.Decode(e.res.Schema(), "", data, ev.ResourceVersion)
	if err != nil { // the bookmark's own JSON: a bug
		return bookmark.appendBookmark(buf, ev)
	}
	buf = e.format.Table.AppendTable(buf, e.res, []*object.Object{obj}, &storage.List{ResourceVersion: ev.ResourceVersion})
	e.format.Table.noHeaders = true
	return buf
}

// appendBookmark appends a BOOKMARK's object: the resource's kind (or
// PartialObjectMetadata) with only metadata.resourceVersion (and the
// initial-events-end annotation).
func (e *EventEncoder) appendBookmark(buf []byte, ev storage.Event) []byte {
	kind, apiVersion := e.res.Kind, e.res.GroupVersion()
	if e.format.Partial != "" {
		kind, apiVersion = "PartialObjectMetadata", metav1.GroupName+"/"+e.format.Partial
	}
	buf = append(buf, `{"kind":"`...)
	buf = append(buf, kind...)
	buf = append(buf, `","apiVersion":"`...)
	buf = append(buf, apiVersion...)
	buf = append(buf, `","metadata":{"resourceVersion":"`...)
	buf = strconv.AppendUint(buf, ev.ResourceVersion, 10)
	buf = append(buf, '"')
	if ev.InitialEventsEnd {
		buf = append(buf, `,"annotations":{"k8s.io/initial-events-end":"true"}`...)
	}
	return append(buf, "}}"...)
}
