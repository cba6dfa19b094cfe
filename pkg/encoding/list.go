// Writing a list response: streamed from the storage list after its status
// and header, the encoding of a JSON list kind, and aborting a response the
// client left.

package encoding

import (
	"bufio"
	"errors"
	"net/http"

	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/storage"
)

// listBufferSize is the write buffer of a streamed list: large enough that
// a list costs few writes, small enough that it never holds a whole list.
const listBufferSize = 64 << 10

// ListEncoding is how a list response is written: everything before its
// first item (the list metadata included), each item, the separator
// between items, and the end.
type ListEncoding struct {
	open  func(bw *bufio.Writer, list *storage.List)
	item  func(bw *bufio.Writer, obj *object.Object)
	close string
}

// ErrClientGone marks a failed write of a response: the client went away.
var ErrClientGone = errors.New("writing the response failed")

// StreamList writes a list response item by item as the store reads it:
// the objects' ready bytes are copied into the response, never decoded
// again, and a list streamed from etcd (storage.List.Rest) is flushed to
// the client after each chunk, so that whatever the list's size the
// server holds one chunk of it and the write buffer. A client that stops
// reading holds the reading back (the writes block), so memory stays
// bounded however slow it is.
//
// The status (200) and the beginning of the body are written before the
// rest is read, so a store error after that (a compaction of the list's
// revision, etcd down) cannot be answered with a Status: StreamList
// returns it and the caller must abort the response (AbortResponse) so
// that the client sees a broken transfer rather than a list that looks
// complete. A failed write (the client gone) is returned wrapping
// ErrClientGone; there is nobody left to tell.
func StreamList(w http.ResponseWriter, list *storage.List, enc ListEncoding) error {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	bw := bufio.NewWriterSize(w, listBufferSize)
	enc.open(bw, list)
	streamed := list.Rest != nil
	n := 0
	err := list.Chunks(func(chunk []*object.Object) error {
		for _, obj := range chunk {
			if n > 0 {
				bw.WriteByte(',')
			}
			n++
			enc.item(bw, obj)
		}
		if !streamed {
			return nil
		}
		if err := bw.Flush(); err != nil {
			return errors.Join(ErrClientGone, err)
		}
		if flusher != nil {
			flusher.Flush()
		}
		return nil
	})
	if err != nil {
		return err
	}
	bw.WriteString(enc.close)
	if err := bw.Flush(); err != nil {
		return errors.Join(ErrClientGone, err)
	}
	return nil
}

// AbortResponse ends a response that has begun without completing it:
// net/http then closes the connection without the final chunk (HTTP/1.1)
// or resets the stream (HTTP/2), and the client's read of the body fails
// ("unexpected EOF", "stream error ... INTERNAL_ERROR") instead of ending
// cleanly. A JSON list cut short would not parse anyway; this makes the
// failure one of the transfer, which clients (client-go's reflector,
// kubectl) report and retry like any other broken connection.
// kube-apiserver likewise closes the stream when a streamed list fails.
// The filters between here and net/http (audit, the request deadline)
// re-panic what they recover.
func AbortResponse() {
	panic(http.ErrAbortHandler)
}

// JSONList is the encoding of a JSON list of kind (e.g. PodList).
func JSONList(kind, apiVersion string) ListEncoding {
	return ListEncoding{
		open: func(bw *bufio.Writer, list *storage.List) {
			bw.WriteString(`{"kind":`)
			writeJSONString(bw, kind)
			bw.WriteString(`,"apiVersion":`)
			writeJSONString(bw, apiVersion)
			bw.WriteString(`,"metadata":`)
			bw.Write(appendListMeta(nil, list))
			bw.WriteString(`,"items":[`)
		},
		item:  func(bw *bufio.Writer, obj *object.Object) { obj.WriteJSON(bw) },
		close: "]}\n",
	}
}

// WriteList writes a JSON list of kind; see StreamList for its errors.
func WriteList(w http.ResponseWriter, kind, apiVersion string, list *storage.List) error {
	return StreamList(w, list, JSONList(kind, apiVersion))
}
