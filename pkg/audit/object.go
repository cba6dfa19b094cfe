// The request and response bodies of events at the levels Request and
// RequestResponse: JSON objects (YAML converted), without managedFields
// when the policy says so.

package audit

import (
	"bytes"
	"encoding/json"
	"strings"

	"sigs.k8s.io/yaml"
)

// objectJSON is a body as the event's requestObject or responseObject:
// JSON as it is, YAML as JSON, nil when empty or in another encoding
// (protobuf, CBOR: watchcache does not decode them for the log, where
// kube-apiserver logs the decoded object).
func objectJSON(data []byte, contentType string, omitManagedFields bool) json.RawMessage {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return nil
	}
	if !json.Valid(data) {
		if !strings.Contains(contentType, "yaml") {
			return nil
		}
		converted, err := yaml.YAMLToJSON(data)
		if err != nil || !json.Valid(converted) {
			return nil
		}
		data = converted
	}
	if omitManagedFields {
		data = withoutManagedFields(data)
	}
	return data
}

// withoutManagedFields drops metadata.managedFields of an object, or of a
// list's items, as kube-apiserver's omitManagedFields.
func withoutManagedFields(data []byte) []byte {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var obj map[string]any
	if d.Decode(&obj) != nil {
		return data // not an object: a JSON patch
	}
	changed := dropManagedFields(obj)
	if items, ok := obj["items"].([]any); ok {
		for _, item := range items {
			if m, ok := item.(map[string]any); ok && dropManagedFields(m) {
				changed = true
			}
		}
	}
	if !changed {
		return data
	}
	out, err := json.Marshal(obj)
	if err != nil {
		return data
	}
	return out
}

func dropManagedFields(obj map[string]any) bool {
	meta, ok := obj["metadata"].(map[string]any)
	if !ok {
		return false
	}
	if _, ok := meta["managedFields"]; !ok {
		return false
	}
	delete(meta, "managedFields")
	return true
}
