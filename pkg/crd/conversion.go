// NopConverter: a custom resource's conversion strategy None, which only
// rewrites apiVersion between the stored and the served version.

package crd

import (
	"encoding/json"

	"github.com/watchcache/watchcache/pkg/conversion"
	kjson "sigs.k8s.io/json"
)

// NopConverter converts a custom resource's objects between its versions
// as conversion strategy None does (apiextensions-apiserver's
// nopConverter): only apiVersion changes, to stored ("example.com/v1") on
// the way in, to served on the way out.
func NopConverter(stored, served string) conversion.Converter {
	return apiVersion{stored: stored, served: served}
}

type apiVersion struct{ stored, served string }

func (c apiVersion) ToStorage(data []byte) ([]byte, error)   { return setAPIVersion(data, c.stored) }
func (c apiVersion) FromStorage(data []byte) ([]byte, error) { return setAPIVersion(data, c.served) }

// setAPIVersion returns data with apiVersion to; data itself if it has
// that already (read first on its own: most objects are stored in the
// version they are read in).
func setAPIVersion(data []byte, to string) ([]byte, error) {
	var typeMeta struct {
		APIVersion string `json:"apiVersion"`
	}
	if json.Unmarshal(data, &typeMeta) == nil && typeMeta.APIVersion == to {
		return data, nil
	}
	var obj map[string]any
	if err := kjson.UnmarshalCaseSensitivePreserveInts(data, &obj); err != nil {
		return nil, err
	}
	obj["apiVersion"] = to
	return json.Marshal(obj)
}
