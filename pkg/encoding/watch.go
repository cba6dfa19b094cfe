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
	res   *resource.Resource
	table *TableOptions // nil: objects as they are
	// scratch holds this client's own encodings, reused from event to
	// event; encodings shared with other watchers are never written into.
	scratch []byte
}

// NewEventEncoder returns the encoder of res's watch events for one
// client: as JSON objects, or as Tables if table is not nil.
func NewEventEncoder(res *resource.Resource, table *TableOptions) *EventEncoder {
	return &EventEncoder{res: res, table: table}
}

// Line returns one event's JSON line: for an event delivered to many
// watchers, the encoding they share (encoded once for all); otherwise one
// in the scratch buffer, valid until the next call.
func (e *EventEncoder) Line(ev storage.Event) []byte {
	if ev.Shared != nil && e.table == nil && ev.Object != nil {
		return ev.Shared.Get(ev.Type, func() []byte { return e.appendEvent(nil, ev) })
	}
	e.scratch = e.appendEvent(e.scratch[:0], ev)
	return e.scratch
}

// appendEvent appends one event's JSON line to buf. An ERROR event carries
// the Status of its error.
func (e *EventEncoder) appendEvent(buf []byte, ev storage.Event) []byte {
	buf = append(buf, `{"type":"`...)
	buf = append(buf, ev.Type...)
	buf = append(buf, `","object":`...)
	switch ev.Type {
	case storage.EventBookmark:
		buf = e.appendBookmark(buf, ev)
	case storage.EventError:
		data, _ := json.Marshal(&apistatus.From(ev.Err, e.res.Subject("")).ErrStatus)
		buf = append(buf, data...)
	default:
		if e.table != nil {
			buf = e.table.AppendTable(buf, e.res, []*object.Object{ev.Object}, nil)
			e.table.noHeaders = true // the first event's are the watch's
		} else {
			buf = ev.Object.AppendJSON(buf)
		}
	}
	return append(buf, "}\n"...)
}

// appendBookmark appends a BOOKMARK's object: the resource's kind with only
// metadata.resourceVersion (and the initial-events-end annotation).
func (e *EventEncoder) appendBookmark(buf []byte, ev storage.Event) []byte {
	buf = append(buf, `{"kind":"`...)
	buf = append(buf, e.res.Kind...)
	buf = append(buf, `","apiVersion":"`...)
	buf = append(buf, e.res.GroupVersion()...)
	buf = append(buf, `","metadata":{"resourceVersion":"`...)
	buf = strconv.AppendUint(buf, ev.ResourceVersion, 10)
	buf = append(buf, '"')
	if ev.InitialEventsEnd {
		buf = append(buf, `,"annotations":{"k8s.io/initial-events-end":"true"}`...)
	}
	return append(buf, "}}"...)
}
