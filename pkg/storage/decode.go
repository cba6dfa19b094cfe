// DecodeWrite: checking and decoding an object about to be written under a
// key.

package storage

import (
	"encoding/json"

	"github.com/watchcache/watchcache/pkg/object"
)

// DecodeWrite checks and decodes an object about to be written under key
// (valid JSON; its namespace/name is key), and returns the
// metadata.resourceVersion the writer put in it. The object's
// resourceVersion is 0 until the write gives it one.
func DecodeWrite(schema *object.Schema, key string, data []byte) (*object.Object, string, error) {
	if !json.Valid(data) {
		return nil, "", NewError(ErrInvalid, key, "object is not valid JSON")
	}
	obj, clientRV, err := object.Decode(schema, key, data, 0)
	if err != nil {
		return nil, "", &Error{Code: ErrInvalid, Key: key, Message: err.Error()}
	}
	want := obj.Name()
	if obj.Namespace() != "" {
		want = obj.Namespace() + "/" + want
	}
	if want != key {
		return nil, "", NewError(ErrInvalid, key, "object's namespace/name %q does not match its key %q", want, key)
	}
	return obj, clientRV, nil
}
