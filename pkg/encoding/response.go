// Writing one answer in the negotiated format: an object, a typed value
// (a Scale, a TokenRequest, a review), a Status.

package encoding

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strconv"

	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/resource"
	"github.com/watchcache/watchcache/pkg/storage"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// WriteJSON writes v as a JSON response.
func WriteJSON(w http.ResponseWriter, code int, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	WriteRaw(w, code, data)
}

// WriteRaw writes ready JSON bytes.
func WriteRaw(w http.ResponseWriter, code int, data []byte) {
	writeBytes(w, code, JSONType, data)
}

// writeBytes writes a whole answer of a media type.
func writeBytes(w http.ResponseWriter, code int, mediaType string, data []byte) {
	w.Header().Set("Content-Type", mediaType)
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	w.WriteHeader(code)
	w.Write(data)
}

// WriteObject answers with res's object obj in format f (a Table, if f
// asks for one, of the one object).
func WriteObject(w http.ResponseWriter, code int, f Format, res *resource.Resource, obj *object.Object) error {
	var data []byte
	var err error
	switch {
	case f.Table != nil:
		data = f.Table.AppendTable(nil, res, []*object.Object{obj}, &storage.List{ResourceVersion: obj.ResourceVersion()})
	case f.Partial != "" && f.Protobuf():
		var meta *metav1.ObjectMeta
		if meta, err = objectMeta(obj); err == nil {
			data, err = partialProtobuf(f.Partial, meta)
		}
	case f.Partial != "":
		data = appendPartialJSON(nil, f.Partial, obj)
	case f.Protobuf():
		data, err = ObjectProtobuf(res, obj)
	case f.MediaType == YAMLType:
		data, err = yaml.JSONToYAML(obj.JSON())
	default:
		data = obj.JSON()
	}
	if err != nil {
		return err
	}
	writeBytes(w, code, f.MediaType, data)
	return nil
}

// WriteStored answers with an object as it would be stored: without a
// resourceVersion (a dry run's create, which stored nothing).
func WriteStored(w http.ResponseWriter, code int, f Format, res *resource.Resource, obj *object.Object) error {
	t, ok := protobufType(res)
	if !f.Protobuf() || !ok {
		writeBytes(w, code, JSONType, obj.Stored())
		return nil
	}
	typed := reflect.New(t).Interface()
	if err := kjson.UnmarshalCaseSensitivePreserveInts(obj.Stored(), typed); err != nil {
		return err
	}
	raw, err := marshal(typed.(protobufMarshaler))
	if err != nil {
		return err
	}
	writeBytes(w, code, ProtobufType, envelope(res.GroupVersion(), res.Kind, raw))
	return nil
}

// WriteValue answers with a typed value: JSON, or protobuf if f asks for
// it and v is a kind the scheme knows.
func WriteValue(w http.ResponseWriter, code int, f Format, v any) {
	if obj, ok := v.(runtime.Object); ok && f.Protobuf() {
		if data, err := ValueProtobuf(obj); err == nil {
			writeBytes(w, code, ProtobufType, data)
			return
		}
	}
	WriteJSON(w, code, v)
}

// EncodeStatus is a Status in mediaType (JSON, YAML or protobuf), for
// apistatus.Write.
func EncodeStatus(mediaType string, status *metav1.Status) (string, []byte) {
	switch mediaType {
	case ProtobufType:
		return ProtobufType, StatusProtobuf(status)
	case YAMLType:
		data, _ := json.Marshal(status)
		if out, err := yaml.JSONToYAML(data); err == nil {
			return YAMLType, out
		}
	}
	data, _ := json.Marshal(status)
	return JSONType, data
}
