package encoding

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/watchcache/watchcache/pkg/apistatus"
	"github.com/watchcache/watchcache/pkg/resource"
)

// TestNegotiate: the representation each Accept header gets, and the 406
// answers, as kube-apiserver 1.37 answered the same headers (recorded from
// it for a config map, its list and a custom resource). One deliberate
// difference: a list asked for as=PartialObjectMetadata (not ...List) is
// kube-apiserver's "you requested PartialObjectMetadata, but the requested
// object is a list (*core.ConfigMapList)", naming its internal type; here
// it is the 406 of a representation not produced.
func TestNegotiate(t *testing.T) {
	reg, err := resource.NewRegistry(resource.Builtins()...)
	if err != nil {
		t.Fatal(err)
	}
	cms := reg.Lookup("", "v1", "configmaps")
	widgets := &resource.Resource{Group: "example.com", Version: "v1", Kind: "Widget", Plural: "widgets", Namespaced: true}
	const (
		onlyAccepted = "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf"
		unavailable  = "406: Not Acceptable\n\nAvailable representations: application/json, application/yaml, application/vnd.kubernetes.protobuf"
	)
	for _, c := range []struct {
		accept    string
		res       *resource.Resource
		target    Target
		mediaType string // "" for a 406
		table     bool
		partial   string
		message   string // of the 406
		status    string // the media type of the Status of an error
	}{
		{accept: "", res: cms, mediaType: JSONType, status: JSONType},
		{accept: "*/*", res: cms, mediaType: JSONType, status: JSONType},
		{accept: "application/*", res: cms, message: unavailable, status: JSONType},
		{accept: "text/plain", res: cms, message: unavailable, status: JSONType},
		{accept: "application/yaml", res: cms, mediaType: YAMLType, status: YAMLType},
		{accept: ProtobufType, res: cms, mediaType: ProtobufType, status: ProtobufType},
		{accept: ProtobufType + ", application/json", res: cms, target: List, mediaType: ProtobufType, status: ProtobufType},
		{accept: "application/json;q=0.5, application/vnd.kubernetes.protobuf;q=0.9", res: cms, mediaType: ProtobufType, status: ProtobufType},
		{accept: ProtobufType + ";stream=watch", res: cms, target: Watch, mediaType: ProtobufType, status: ProtobufType},
		{accept: "application/json;as=Table;v=v1;g=meta.k8s.io,application/json", res: cms, target: List, mediaType: JSONType, table: true, status: JSONType},
		{accept: ProtobufType + ";as=Table;v=v1;g=meta.k8s.io", res: cms, message: onlyAccepted, status: JSONType},
		// A create asked for as a Table only: a Table of the object stored
		// (a config map), a 406 for what an action answers (recorded with a
		// SelfSubjectAccessReview and a TokenRequest).
		{accept: "application/json;as=Table;v=v1;g=meta.k8s.io", res: cms, mediaType: JSONType, table: true, status: JSONType},
		{accept: "application/json;as=Table;v=v1;g=meta.k8s.io", res: cms, target: Action, message: onlyAccepted, status: JSONType},
		{accept: "application/json;as=Table;v=v1;g=meta.k8s.io, application/json", res: cms, target: Action, mediaType: JSONType, status: JSONType},
		{accept: ProtobufType + ";as=Table;v=v1;g=meta.k8s.io, application/json", res: cms, target: List, mediaType: JSONType, status: JSONType},
		{accept: ProtobufType + ";as=PartialObjectMetadata;v=v1;g=meta.k8s.io", res: cms, mediaType: ProtobufType, partial: "v1", status: JSONType},
		{accept: ProtobufType + ";as=PartialObjectMetadataList;v=v1;g=meta.k8s.io", res: cms, target: List, mediaType: ProtobufType, partial: "v1", status: JSONType},
		{accept: ProtobufType + ";as=PartialObjectMetadata;v=v1;g=meta.k8s.io", res: cms, target: List, message: onlyAccepted, status: JSONType},
		{accept: "application/json;as=PartialObjectMetadata;v=v1beta1;g=meta.k8s.io", res: widgets, mediaType: JSONType, partial: "v1beta1", status: JSONType},
		{accept: ProtobufType + ";as=PartialObjectMetadata;v=v1;g=meta.k8s.io", res: widgets, mediaType: ProtobufType, partial: "v1", status: JSONType},
		{accept: ProtobufType, res: widgets, message: onlyAccepted, status: ProtobufType},
		{accept: ProtobufType + ", application/json", res: widgets, target: List, mediaType: JSONType, status: ProtobufType},
		{accept: "application/cbor", res: widgets, message: onlyAccepted, status: JSONType},
	} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		if c.accept != "" {
			r.Header.Set("Accept", c.accept)
		}
		f, err := Negotiate(r, c.res, c.target)
		switch {
		case c.mediaType == "":
			if st := apistatus.From(err, apistatus.Subject{}).ErrStatus; err == nil || st.Code != http.StatusNotAcceptable || st.Message != c.message {
				t.Errorf("%s %q: %+v, %v; want 406 %q", c.res.Kind, c.accept, f, err, c.message)
			}
		case err != nil || f.MediaType != c.mediaType || (f.Table != nil) != c.table || f.Partial != c.partial:
			t.Errorf("%s %q (target %d): %+v, %v; want %s (table %v, partial %q)", c.res.Kind, c.accept, c.target, f, err, c.mediaType, c.table, c.partial)
		}
		if got := StatusMediaType(r); got != c.status {
			t.Errorf("%q: Status in %s, want %s", c.accept, got, c.status)
		}
	}
}
