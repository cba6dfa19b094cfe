package openapi

import (
	"encoding/json"
	"net/http"
	"reflect"
	"testing"

	"k8s.io/kube-openapi/pkg/spec3"
)

// TestOpenAPIV3RoundTrip checks that every served v3 document survives
// kube-openapi's spec3.OpenAPI → JSON → spec3.OpenAPI unchanged, as
// kube-apiserver's do: no empty "parameters" or "properties", which
// kube-openapi leaves out when it writes a document again.
func TestOpenAPIV3RoundTrip(t *testing.T) {
	s, _ := openAPITestServer(t)
	var index struct {
		Paths map[string]struct {
			ServerRelativeURL string `json:"serverRelativeURL"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(openAPIGet(t, s, "/openapi/v3").Body.Bytes(), &index); err != nil {
		t.Fatal(err)
	}
	for key, e := range index.Paths {
		w := openAPIGet(t, s, e.ServerRelativeURL)
		if w.Code != http.StatusOK {
			t.Fatalf("%s: %d", key, w.Code)
		}
		var first, second spec3.OpenAPI
		if err := json.Unmarshal(w.Body.Bytes(), &first); err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		again, err := json.Marshal(&first)
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		if err := json.Unmarshal(again, &second); err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		if !reflect.DeepEqual(first, second) {
			t.Errorf("%s: spec3.OpenAPI changes in a round trip", key)
		}
		var served any
		json.Unmarshal(w.Body.Bytes(), &served)
		if where := emptyMember(served, key); where != "" {
			t.Errorf("%s", where)
		}
	}
}

// emptyMember names the first empty "parameters" or "properties" in v.
func emptyMember(v any, at string) string {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if k == "parameters" || k == "properties" {
				if (reflect.ValueOf(x).Kind() == reflect.Slice || reflect.ValueOf(x).Kind() == reflect.Map) && reflect.ValueOf(x).Len() == 0 {
					return at + ": empty " + k
				}
			}
			if where := emptyMember(x, at+"/"+k); where != "" {
				return where
			}
		}
	case []any:
		for _, x := range v {
			if where := emptyMember(x, at+"[]"); where != "" {
				return where
			}
		}
	}
	return ""
}
