package encoding

import (
	"net/http"

	"github.com/munnerz/goautoneg"
	"github.com/watchcache/watchcache/pkg/apistatus"
	"github.com/watchcache/watchcache/pkg/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The media types the API answers in.
const (
	JSONType = "application/json"
	YAMLType = "application/yaml"
	// ProtobufType is Kubernetes' protobuf (built-in kinds only): what
	// client-go's clientsets and Kubernetes' own components speak.
	ProtobufType = "application/vnd.kubernetes.protobuf"
	// WatchStream is the parameter of a watch's streamed media type.
	watchStream = ";stream=watch"
)

// cborType is CBOR (KEP-4222), which is not served.
const cborType = "application/cbor"

// acceptedTypes is the list kube-apiserver names in its 406 answers.
const acceptedTypes = "application/json, application/yaml, application/vnd.kubernetes.protobuf"

// Target is what a response carries, for negotiation: kube-apiserver
// offers other representations of an object than of a list.
type Target int

// The targets of a response.
const (
	// One object (a get, or a write's answer).
	OneObject Target = iota
	// A list.
	List
	// A watch's events.
	Watch
	// An object an action answers with, computed and not stored (a review,
	// a TokenRequest): kube-apiserver has no Table of it.
	Action
)

// Format is the representation a request's Accept header chose, as
// kube-apiserver's negotiation chooses it.
type Format struct {
	// MediaType is JSONType, YAMLType or ProtobufType.
	MediaType string
	// Table, if not nil, asks for a meta.k8s.io Table (JSON only).
	Table *TableOptions
	// Partial is the meta.k8s.io version ("v1", "v1beta1") of an
	// as=PartialObjectMetadata (one object, a watch's objects) or
	// as=PartialObjectMetadataList answer; "" for the objects themselves.
	Partial string
}

// Protobuf reports whether the answer is in protobuf.
func (f Format) Protobuf() bool { return f.MediaType == ProtobufType }

// Negotiate chooses the representation of a response about res to the
// request r: the Accept header's clauses by preference (q-values, then
// specificity, then order), the first that the server can produce for res
// and target wins; no Accept header is JSON. None is 406 NotAcceptable,
// worded as kube-apiserver words it: a Table or a custom resource in
// protobuf is among the types it knows but cannot produce here; a type it
// never produces (text/plain, application/*) is another message.
func Negotiate(r *http.Request, res *resource.Resource, target Target) (Format, error) {
	header := r.Header.Get("Accept")
	if header == "" {
		return Format{MediaType: JSONType}, nil
	}
	known := false
	for _, clause := range goautoneg.ParseAccept(header) {
		mediaType, ok := offered(clause)
		if !ok {
			// CBOR is known to kube-apiserver 1.37 but off by default
			// (feature gate CBORServingAndStorage): it is refused as a
			// type known but not produced here.
			known = known || clause.Type+"/"+clause.SubType == cborType
			continue
		}
		known = true
		f := Format{MediaType: mediaType}
		as, group, version := clause.Params["as"], clause.Params["g"], clause.Params["v"]
		if as != "" && (group != metav1.GroupName || version != "v1" && version != "v1beta1") {
			continue
		}
		switch {
		case as == "" && mediaType == ProtobufType && !hasProtobuf(res):
			continue
		case as == "":
		case as == "Table" && mediaType != ProtobufType && target != Action:
			f.Table = tableOptions(r, version)
		case as == "PartialObjectMetadata" && target != List, as == "PartialObjectMetadataList" && target == List:
			f.Partial = version
		default:
			continue
		}
		if target == Watch && mediaType == YAMLType {
			continue // kube-apiserver streams no YAML
		}
		return f, nil
	}
	if known {
		return Format{}, apistatus.New(http.StatusNotAcceptable, metav1.StatusReasonNotAcceptable,
			"only the following media types are accepted: %s", acceptedTypes)
	}
	e := apistatus.New(http.StatusNotAcceptable, metav1.StatusReasonNotAcceptable,
		"406: Not Acceptable\n\nAvailable representations: %s", acceptedTypes)
	e.ErrStatus.Details = &metav1.StatusDetails{}
	return Format{}, e
}

// offered is the media type the server answers an Accept clause with, if
// it answers it at all: */* is JSON; application/* is not matched, as by
// kube-apiserver.
func offered(clause goautoneg.Accept) (string, bool) {
	switch {
	case clause.Type == "*" && clause.SubType == "*":
		return JSONType, true
	case clause.Type != "application":
		return "", false
	}
	switch mt := "application/" + clause.SubType; mt {
	case JSONType, YAMLType, ProtobufType:
		return mt, true
	}
	return "", false
}

// StatusMediaType is the media type of the Status an error is answered
// with: the first of the Accept header's clauses without "as" that the
// server produces (protobuf even for custom resources, as kube-apiserver),
// JSON otherwise.
func StatusMediaType(r *http.Request) string {
	for _, clause := range goautoneg.ParseAccept(r.Header.Get("Accept")) {
		if mt, ok := offered(clause); ok && clause.Params["as"] == "" {
			return mt
		}
	}
	return JSONType
}

// hasProtobuf reports whether res's objects have a protobuf encoding: the
// built-in kinds, whose Go types are generated with one.
func hasProtobuf(res *resource.Resource) bool {
	_, ok := protobufType(res)
	return ok
}
