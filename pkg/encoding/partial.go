// PartialObjectMetadata: an object answered as its metadata alone (as=
// PartialObjectMetadata, what metadata-only informers and controller-
// runtime's metadata clients ask for), in JSON or protobuf.

package encoding

import (
	"encoding/json"

	"github.com/watchcache/watchcache/pkg/object"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// appendPartialJSON appends obj as a PartialObjectMetadata of meta.k8s.io
// version.
func appendPartialJSON(buf []byte, version string, obj *object.Object) []byte {
	buf = append(buf, `{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/`...)
	buf = append(buf, version...)
	buf = append(buf, `","metadata":`...)
	buf = obj.AppendMetadata(buf)
	return append(buf, '}')
}

// objectMeta is obj's metadata, typed.
func objectMeta(obj *object.Object) (*metav1.ObjectMeta, error) {
	var meta metav1.ObjectMeta
	err := json.Unmarshal(obj.AppendMetadata(nil), &meta)
	return &meta, err
}

// partialProtobuf is a PartialObjectMetadata of meta.k8s.io version with
// meta, enveloped.
func partialProtobuf(version string, meta *metav1.ObjectMeta) ([]byte, error) {
	raw, err := marshal(&metav1.PartialObjectMetadata{ObjectMeta: *meta})
	if err != nil {
		return nil, err
	}
	return envelope(metav1.GroupName+"/"+version, "PartialObjectMetadata", raw), nil
}

// partialItemProtobuf is obj's PartialObjectMetadata message, for a list.
func partialItemProtobuf(obj *object.Object) ([]byte, error) {
	meta, err := objectMeta(obj)
	if err != nil {
		return nil, err
	}
	return marshal(&metav1.PartialObjectMetadata{ObjectMeta: *meta})
}
