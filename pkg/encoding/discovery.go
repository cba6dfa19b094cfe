// Negotiating discovery documents: the classic ones (meta.k8s.io/v1
// APIVersions, APIGroupList, APIResourceList) and the aggregated one
// (apidiscovery.k8s.io/v2 APIGroupDiscoveryList) that /api and /apis give
// to clients that ask for it (kubectl, client-go).

package encoding

import (
	"encoding/json"
	"net/http"

	"github.com/munnerz/goautoneg"
	"github.com/watchcache/watchcache/pkg/apistatus"
	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// AggregatedDiscoveryParams are the media type parameters that name the
// aggregated discovery document, in an Accept header and in the answer's
// Content-Type.
const AggregatedDiscoveryParams = ";g=" + apidiscoveryv2.GroupName + ";v=v2;as=APIGroupDiscoveryList"

// DiscoveryFormat is the form and media type of a discovery answer.
type DiscoveryFormat struct {
	// MediaType is JSONType, YAMLType or ProtobufType.
	MediaType string
	// Aggregated asks for the APIGroupDiscoveryList.
	Aggregated bool
}

// NegotiateDiscovery chooses the form of a discovery document as
// kube-apiserver 1.37 does. Where the aggregated form is served (/api,
// /apis: aggregated is true), a clause of the Accept header asking for it
// (g=apidiscovery.k8s.io, v=v2, as=APIGroupDiscoveryList) wins over every
// other clause whatever its q-value, the first such clause by preference
// choosing the media type. Otherwise the first clause by preference that
// asks for no conversion (no g, v or as) is the classic form. v2beta1 is
// not served (kube-apiserver's AggregatedDiscoveryRemoveBetaType is on):
// a clause asking for it is one no form answers. No clause answered is
// 406. No Accept header is the classic form in JSON.
func NegotiateDiscovery(r *http.Request, aggregated bool) (DiscoveryFormat, error) {
	header := r.Header.Get("Accept")
	if header == "" {
		return DiscoveryFormat{MediaType: JSONType}, nil
	}
	clauses := goautoneg.ParseAccept(header)
	if aggregated {
		for _, clause := range clauses {
			mt, ok := discoveryOffered(clause)
			if ok && clause.Params["g"] == apidiscoveryv2.GroupName && clause.Params["v"] == "v2" && clause.Params["as"] == "APIGroupDiscoveryList" {
				return DiscoveryFormat{MediaType: mt, Aggregated: true}, nil
			}
		}
	}
	for _, clause := range clauses {
		_, g := clause.Params["g"]
		_, v := clause.Params["v"]
		_, as := clause.Params["as"]
		if mt, ok := discoveryOffered(clause); ok && !g && !v && !as {
			return DiscoveryFormat{MediaType: mt}, nil
		}
	}
	return DiscoveryFormat{}, apistatus.New(http.StatusNotAcceptable, metav1.StatusReasonNotAcceptable,
		"only the following media types are accepted: %s", acceptedTypes)
}

// discoveryOffered is the media type a discovery document is answered in
// for an Accept clause, if any: unlike resources (routed by go-restful),
// discovery takes application/* and */* for JSON, as kube-apiserver.
func discoveryOffered(clause goautoneg.Accept) (string, bool) {
	if clause.Type == "application" && clause.SubType == "*" {
		return JSONType, true
	}
	return offered(clause)
}

// EncodeValue is a typed value of a kind the scheme knows in mediaType:
// JSON, YAML, or protobuf (kube-apiserver's envelope). Its apiVersion and
// kind are its TypeMeta's.
func EncodeValue(mediaType string, v runtime.Object) ([]byte, error) {
	if mediaType == ProtobufType {
		return ValueProtobuf(v)
	}
	data, err := json.Marshal(v)
	if err != nil || mediaType != YAMLType {
		return data, err
	}
	return yaml.JSONToYAML(data)
}
