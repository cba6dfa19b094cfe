package encoding

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/watchcache/watchcache/pkg/apistatus"
)

// TestNegotiateDiscovery: the form of discovery document each Accept
// header gets, as kube-apiserver 1.37 answered them at /apis (aggregated
// served) and /apis/apps/v1 (classic only). The accept headers of
// client-go 0.37 (AcceptV2NoPeer first, then acceptDiscoveryFormats) and of
// kubectl 1.32 (v2, v2beta1, then JSON) are among them.
func TestNegotiateDiscovery(t *testing.T) {
	const (
		v2      = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
		v2beta1 = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"
		classic = "classic "
		agg     = "aggregated "
		refused = "406"
	)
	for _, c := range []struct {
		accept string
		root   bool   // /api or /apis
		want   string // form and media type, or refused
	}{
		{"", true, classic + JSONType},
		{"application/json", true, classic + JSONType},
		{v2, true, agg + JSONType},
		{v2 + ",application/json", true, agg + JSONType},
		{v2 + ";profile=nopeer," + v2 + ",application/json", true, agg + JSONType},
		{v2 + "," + v2beta1 + ",application/json", true, agg + JSONType},
		{v2beta1, true, refused},
		{v2beta1 + ",application/json", true, classic + JSONType},
		{"application/json;as=APIGroupDiscoveryList;g=apidiscovery.k8s.io;v=v2", true, agg + JSONType},
		{"application/json;as=APIGroupDiscoveryList", true, refused},
		{v2 + ";q=0.5,application/json", true, agg + JSONType},
		{v2 + ";foo=bar", true, agg + JSONType},
		{"application/yaml;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList", true, agg + YAMLType},
		{ProtobufType + ";g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList", true, agg + ProtobufType},
		{"application/*;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList", true, agg + JSONType},
		{"*/*;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList", true, agg + JSONType},
		{"application/*", true, classic + JSONType},
		{"*/*;q=0.5,text/plain", true, classic + JSONType},
		{"text/plain", true, refused},
		{v2, false, refused},
		{v2 + ",application/json", false, classic + JSONType},
	} {
		r := httptest.NewRequest(http.MethodGet, "/apis", nil)
		if c.accept != "" {
			r.Header.Set("Accept", c.accept)
		}
		f, err := NegotiateDiscovery(r, c.root)
		got := classic + f.MediaType
		if f.Aggregated {
			got = agg + f.MediaType
		}
		if err != nil {
			got = refused
			st := apistatus.From(err, apistatus.Subject{}).ErrStatus
			if st.Code != http.StatusNotAcceptable || st.Message != "only the following media types are accepted: "+acceptedTypes {
				t.Errorf("%q: %+v", c.accept, st)
			}
		}
		if got != c.want {
			t.Errorf("%q (root %v): %s, want %s", c.accept, c.root, got, c.want)
		}
	}
}
