// facts.json: what kube-apiserver's generated OpenAPI knows that reflection
// cannot (enums, defaults, list and map types), laid over the reflected
// schemas, and ReflectedSchemas.

package openapi

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/watchcache/watchcache/pkg/resource"
)

// What kube-apiserver's schemas say that reflection cannot know comes from
// the types' comments' markers (+enum, +default, +listType, +listMapKey,
// +mapType, +optional, +required), which only kube-apiserver's generated
// code carries: enums and their values, defaults, list and map types,
// some required fields, and full descriptions (k8s.io/api's SwaggerDoc
// texts lack the list of an enum's values and stop at a markdown table's
// rule). facts.json records
// them as data: for each schema of kube-apiserver 1.37's OpenAPI v3
// documents of the group versions served here, those keys whose values
// differ from the reflected schema's, and likewise for its properties and
// their items and additionalProperties. A null value removes a key (a
// required list where kube-apiserver has none). The file is made by
// internal/recordopenapi from a running kube-apiserver (see there):
//
//	go run ./pkg/openapi/internal/recordopenapi -kubeconfig <kube-apiserver's kubeconfig>

//go:embed facts.json
var openAPIFactsJSON []byte

// openAPIFacts are the facts of facts.json by schema name.
var openAPIFacts = sync.OnceValue(func() map[string]map[string]any {
	var facts map[string]map[string]any
	if err := json.Unmarshal(openAPIFactsJSON, &facts); err != nil {
		panic(fmt.Sprintf("reading facts.json: %v", err))
	}
	return facts
})

// overlayFacts lays the facts recorded for a schema over it: a fact's value
// replaces the key's, null removes it, those of subschemas go into them.
// A property's reference that gets siblings is wrapped in allOf.
func overlayFacts(s, facts map[string]any) {
	for key, v := range facts {
		switch key {
		case "properties":
			props, _ := s[key].(map[string]any)
			for name, f := range asMap(v) {
				if p, ok := props[name].(map[string]any); ok {
					overlayFacts(p, asMap(f))
					wrapRef(p)
				}
			}
		case "items", "additionalProperties":
			if sub, ok := s[key].(map[string]any); ok {
				overlayFacts(sub, asMap(v))
			}
		default:
			if v == nil {
				delete(s, key)
			} else {
				s[key] = v
			}
		}
	}
}

// ReflectedSchemas are the components of the OpenAPI v3 documents of reg's
// resources, by document key ("api/v1", "apis/apps/v1") and name, as JSON
// decodes them, reflected from their Go types without the recorded facts:
// what internal/recordopenapi compares kube-apiserver's with.
func ReflectedSchemas(reg *resource.Registry) (map[string]map[string]map[string]any, error) {
	docs := map[string]map[string]map[string]any{}
	for _, res := range reg.All() {
		key, members := openAPIKey(res), reg.InGroupVersion(res.GroupVersion())
		if docs[key] != nil || len(members) == 0 {
			continue
		}
		body, err := json.Marshal(groupVersionDocument(members, nil))
		if err != nil {
			return nil, err
		}
		var doc struct {
			Components struct{ Schemas map[string]map[string]any }
		}
		if err := json.Unmarshal(body, &doc); err != nil {
			return nil, err
		}
		docs[key] = doc.Components.Schemas
	}
	return docs, nil
}
