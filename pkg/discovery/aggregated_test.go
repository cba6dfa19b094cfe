package discovery

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"

	"github.com/watchcache/watchcache/pkg/encoding"
	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestAggregatedEncoding: kube-apiserver 1.37's aggregated /api (recorded
// in e2e/testdata/discovery-aggregated.json) has kube-apiserver's ETag
// (the header it was served with) and, in protobuf, its bytes
// (testdata/api.pb, recorded with it).
func TestAggregatedEncoding(t *testing.T) {
	data, err := os.ReadFile("../../e2e/testdata/discovery-aggregated.json")
	if err != nil {
		t.Fatal(err)
	}
	var docs map[string]*apidiscoveryv2.APIGroupDiscoveryList
	if err := json.Unmarshal(data, &docs); err != nil {
		t.Fatal(err)
	}
	list := docs["/api"]
	list.TypeMeta = metav1.TypeMeta{}
	const want = "4D7E1BED90B364BC86049DD9E636494980AEF65B7F8CFAA267616FA062B514A8A3CC2C2851CC9337B8D28B4C80960E2353DE5E0B152E87CC223E02EA3C5C37AC"
	if etag, err := calculateETag(list); err != nil || etag != want {
		t.Errorf("ETag %s, %v; want %s", etag, err, want)
	}
	list.TypeMeta = metav1.TypeMeta{APIVersion: "apidiscovery.k8s.io/v2", Kind: "APIGroupDiscoveryList"}
	got, err := encoding.EncodeValue(encoding.ProtobufType, list)
	if err != nil {
		t.Fatal(err)
	}
	pb, err := os.ReadFile("testdata/api.pb")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, pb) {
		t.Errorf("protobuf differs from kube-apiserver's:\n%q\nwant\n%q", got, pb)
	}
}
