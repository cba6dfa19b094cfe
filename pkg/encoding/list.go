// Writing a list response: streamed from the storage list after its status
// and header, the encoding of a JSON list kind, and aborting a response the
// client left.

package encoding

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/resource"
	"github.com/watchcache/watchcache/pkg/storage"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
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

// streamList writes a JSON list response item by item as the store reads it:
// the objects' ready bytes are copied into the response, never decoded
// again, and a list streamed from etcd (storage.List.Rest) is flushed to
// the client after each chunk, so that whatever the list's size the
// server holds one chunk of it and the write buffer. A client that stops
// reading holds the reading back (the writes block), so memory stays
// bounded however slow it is.
//
// The status (200) and the beginning of the body are written before the
// rest is read, so a store error after that (a compaction of the list's
// revision, etcd down) cannot be answered with a Status: streamList
// returns it and the caller must abort the response (AbortResponse) so
// that the client sees a broken transfer rather than a list that looks
// complete. A failed write (the client gone) is returned wrapping
// ErrClientGone; there is nobody left to tell.
func streamList(w http.ResponseWriter, list *storage.List, enc ListEncoding) error {
	w.Header().Set("Content-Type", JSONType)
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

// jsonList is the encoding of a JSON list of kind (e.g. PodList), its
// items written by item.
func jsonList(kind, apiVersion string, item func(bw *bufio.Writer, obj *object.Object)) ListEncoding {
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
		item:  item,
		close: "]}\n",
	}
}

// WriteList answers with a list of res in format f, streamed as the store
// reads it (see streamList for the errors returned once the answer has
// begun). A protobuf list is written once its items' messages are made
// (its length comes first), a YAML list once it is whole: a failure before
// that is returned with started false and nothing written, for the caller
// to answer with its Status.
func WriteList(w http.ResponseWriter, f Format, res *resource.Resource, list *storage.List) (started bool, err error) {
	kind, apiVersion := res.ListKind(), res.GroupVersion()
	if f.Partial != "" {
		kind, apiVersion = "PartialObjectMetadataList", metav1.GroupName+"/"+f.Partial
	}
	switch {
	case f.Protobuf():
		return writeProtobufList(w, f, res, list, kind, apiVersion)
	case f.Table != nil:
		return true, streamList(w, list, f.Table.TableList(res))
	case f.Partial != "":
		var scratch []byte
		return true, streamList(w, list, jsonList(kind, apiVersion, func(bw *bufio.Writer, obj *object.Object) {
			scratch = appendPartialJSON(scratch[:0], f.Partial, obj)
			bw.Write(scratch)
		}))
	}
	write := writeObjectJSON
	if res.Definition == "" {
		// kube-apiserver's typed lists have items without kind and
		// apiVersion; custom resources' (unstructured) keep them.
		write = writeItemJSON(res)
	}
	if f.MediaType == YAMLType {
		err := writeYAMLList(w, list, jsonList(kind, apiVersion, write))
		return err == nil, err
	}
	return true, streamList(w, list, jsonList(kind, apiVersion, write))
}

// writeItemJSON writes an item of a built-in kind's JSON list without its
// kind and apiVersion: at once when its stored JSON begins with them (as
// every writer stores it: resource.Resource.Encode), else, for an object
// stored otherwise (by an earlier version's controllers), through a
// decoding.
func writeItemJSON(res *resource.Resource) func(bw *bufio.Writer, obj *object.Object) {
	kindJSON, _ := json.Marshal(res.Kind)
	apiVersionJSON, _ := json.Marshal(res.GroupVersion())
	prefix := `{"kind":` + string(kindJSON) + `,"apiVersion":` + string(apiVersionJSON) + `,`
	return func(bw *bufio.Writer, obj *object.Object) {
		if done, _ := obj.WriteJSONWithoutPrefix(bw, prefix); done {
			return
		}
		var members map[string]json.RawMessage
		if err := json.Unmarshal(obj.JSON(), &members); err != nil {
			obj.WriteJSON(bw)
			return
		}
		delete(members, "kind")
		delete(members, "apiVersion")
		data, _ := json.Marshal(members)
		bw.Write(data)
	}
}

// writeObjectJSON writes an item of a JSON list.
func writeObjectJSON(bw *bufio.Writer, obj *object.Object) { obj.WriteJSON(bw) }

// writeProtobufList answers with a list in protobuf.
func writeProtobufList(w http.ResponseWriter, f Format, res *resource.Resource, list *storage.List, kind, apiVersion string) (started bool, err error) {
	item := func(obj *object.Object) ([]byte, error) { return message(res, obj) }
	if f.Partial != "" {
		item = partialItemProtobuf
	}
	var bw *bufio.Writer
	err = protobufList(apiVersion, kind, list, item, func(p []byte) error {
		if bw == nil { // the items are made: the answer begins
			w.Header().Set("Content-Type", ProtobufType)
			w.WriteHeader(http.StatusOK)
			bw = bufio.NewWriterSize(w, listBufferSize)
		}
		_, err := bw.Write(p)
		return err
	})
	if bw == nil {
		return false, err
	}
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		return true, errors.Join(ErrClientGone, err)
	}
	return true, nil
}

// writeYAMLList answers with a list in YAML: the JSON list, converted
// whole (kube-apiserver's YAML lists are not streamed either).
func writeYAMLList(w http.ResponseWriter, list *storage.List, enc ListEncoding) error {
	var buf bytes.Buffer
	bw := bufio.NewWriter(&buf)
	enc.open(bw, list)
	n := 0
	if err := list.Chunks(func(chunk []*object.Object) error {
		for _, obj := range chunk {
			if n > 0 {
				bw.WriteByte(',')
			}
			n++
			enc.item(bw, obj)
		}
		return nil
	}); err != nil {
		return err
	}
	bw.WriteString(enc.close)
	bw.Flush()
	data, err := yaml.JSONToYAML(buf.Bytes())
	if err != nil {
		return err
	}
	writeBytes(w, http.StatusOK, YAMLType, data)
	return nil
}
