package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
)

// aggregatedAccept asks for the aggregated discovery document, with the
// classic one as second choice, as client-go does.
const (
	aggregatedType   = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
	aggregatedAccept = aggregatedType + ",application/json"
)

// aggregatedDocs are kube-apiserver 1.37's aggregated /api and /apis
// (testdata/discovery-aggregated.json): its built-in groups, and the group
// of testdata/aggdisc-crds.yaml recorded while those were served.
func aggregatedDocs(t *testing.T) map[string]*apidiscoveryv2.APIGroupDiscoveryList {
	t.Helper()
	data, err := os.ReadFile("testdata/discovery-aggregated.json")
	if err != nil {
		t.Fatal(err)
	}
	var docs map[string]*apidiscoveryv2.APIGroupDiscoveryList
	if err := json.Unmarshal(data, &docs); err != nil {
		t.Fatal(err)
	}
	return docs
}

// getAggregated reads path's aggregated document, checking the answer's
// headers, and returns it with its ETag.
func getAggregated(t *testing.T, path string) (*apidiscoveryv2.APIGroupDiscoveryList, string) {
	t.Helper()
	resp, data := htDo(t, "GET", path, "", nil, "Accept", aggregatedAccept)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != aggregatedType ||
		resp.Header.Get("Vary") != "Accept" || resp.Header.Get("Cache-Control") != "public" || resp.Header.Get("ETag") == "" {
		t.Fatalf("GET %s: %d %v %s", path, resp.StatusCode, resp.Header, htShort(data))
	}
	var list apidiscoveryv2.APIGroupDiscoveryList
	if err := json.Unmarshal(data, &list); err != nil {
		t.Fatal(err)
	}
	if list.Kind != "APIGroupDiscoveryList" || list.APIVersion != "apidiscovery.k8s.io/v2" {
		t.Fatalf("GET %s: %s", path, htShort(data))
	}
	return &list, resp.Header.Get("ETag")
}

// TestAggregatedDiscoveryMatchesKubeAPIServer compares the aggregated /api
// and /apis with kube-apiserver 1.37's. Neither server serves all the
// other's groups, so what is compared is what both serve: the groups and
// versions both have, in the same order; in each, every resource served
// here must be kube-apiserver's, identical (verbs, short names,
// categories, singular name, scope, responseKind, freshness) and in its
// order, with some of its subresources (pods/exec and the like are not
// served here), those identical and in its order.
func TestAggregatedDiscoveryMatchesKubeAPIServer(t *testing.T) {
	t.Parallel()
	for path, want := range aggregatedDocs(t) {
		got, _ := getAggregated(t, path)
		if n := compareAggregated(t, path, got, want); n < 10 {
			t.Errorf("%s: %d resources compared, want many more", path, n)
		}
	}
}

// compareAggregated compares got with kube-apiserver's want as
// TestAggregatedDiscoveryMatchesKubeAPIServer says, and returns how many
// resources it compared.
func compareAggregated(t *testing.T, path string, got, want *apidiscoveryv2.APIGroupDiscoveryList) int {
	t.Helper()
	compared := 0
	wantGroups := map[string]apidiscoveryv2.APIGroupDiscovery{}
	for _, g := range want.Items {
		wantGroups[g.Name] = g
	}
	for _, g := range inOrder(t, path+" groups", got.Items, want.Items, false, func(g apidiscoveryv2.APIGroupDiscovery) string { return g.Name }) {
		wg := wantGroups[g.Name]
		wantVersions := map[string]apidiscoveryv2.APIVersionDiscovery{}
		for _, v := range wg.Versions {
			wantVersions[v.Version] = v
		}
		for _, v := range inOrder(t, path+" "+g.Name+" versions", g.Versions, wg.Versions, false, func(v apidiscoveryv2.APIVersionDiscovery) string { return v.Version }) {
			wv := wantVersions[v.Version]
			where := fmt.Sprintf("%s %s/%s", path, g.Name, v.Version)
			if v.Freshness != wv.Freshness {
				t.Errorf("%s: freshness %q, want %q", where, v.Freshness, wv.Freshness)
			}
			wantResources := map[string]apidiscoveryv2.APIResourceDiscovery{}
			for _, r := range wv.Resources {
				wantResources[r.Resource] = r
			}
			for _, r := range inOrder(t, where, v.Resources, wv.Resources, true, func(r apidiscoveryv2.APIResourceDiscovery) string { return r.Resource }) {
				compared++
				wr := wantResources[r.Resource]
				subs := inOrder(t, where+" "+r.Resource+" subresources", r.Subresources, wr.Subresources, true,
					func(s apidiscoveryv2.APISubresourceDiscovery) string { return s.Subresource })
				wantSubs := slices.DeleteFunc(slices.Clone(wr.Subresources), func(s apidiscoveryv2.APISubresourceDiscovery) bool {
					return !slices.ContainsFunc(subs, func(g apidiscoveryv2.APISubresourceDiscovery) bool { return g.Subresource == s.Subresource })
				})
				r.Subresources, wr.Subresources = subs, wantSubs
				if !reflect.DeepEqual(r, wr) {
					g, _ := json.Marshal(r)
					w, _ := json.Marshal(wr)
					t.Errorf("%s: %s is\n%s\nwant\n%s", where, r.Resource, g, w)
				}
			}
		}
	}
	return compared
}

// inOrder returns got's entries that want has too, in got's order, and
// fails the test unless they are in want's order; with subset, it also
// fails it for each entry of got that want has not.
func inOrder[T any](t *testing.T, what string, got, want []T, subset bool, name func(T) string) []T {
	t.Helper()
	index := map[string]int{}
	for i, w := range want {
		index[name(w)] = i
	}
	var common []T
	last := -1
	for _, g := range got {
		i, ok := index[name(g)]
		switch {
		case !ok && subset:
			t.Errorf("%s: %s is not kube-apiserver's", what, name(g))
		case !ok:
		case i < last:
			t.Errorf("%s: %s is out of kube-apiserver's order", what, name(g))
		default:
			last = i
		}
		if ok {
			common = append(common, g)
		}
	}
	return common
}

// TestAggregatedDiscoveryETag: the ETag of an aggregated document, 304 Not
// Modified to an If-None-Match naming it, and the document in protobuf
// (what kube-apiserver serves too) equal to the JSON one.
func TestAggregatedDiscoveryETag(t *testing.T) {
	t.Parallel()
	for _, path := range []string{"/api", "/apis"} {
		list, etag := getAggregated(t, path)
		resp, data := htDo(t, "GET", path, "", nil, "Accept", aggregatedAccept, "If-None-Match", etag)
		if resp.StatusCode != http.StatusNotModified || len(data) != 0 || resp.Header.Get("ETag") != etag || resp.Header.Get("Vary") != "Accept" {
			t.Errorf("GET %s If-None-Match %s: %d %v %s", path, etag, resp.StatusCode, resp.Header, htShort(data))
		}
		resp, data = htDo(t, "GET", path, "", nil, "Accept", aggregatedAccept, "If-None-Match", `"0123"`)
		if resp.StatusCode != http.StatusOK || len(data) == 0 {
			t.Errorf("GET %s with another ETag: %d %s", path, resp.StatusCode, htShort(data))
		}
		pbType := "application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
		resp, data = htDo(t, "GET", path, "", nil, "Accept", pbType)
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != pbType {
			t.Fatalf("GET %s in protobuf: %d %v", path, resp.StatusCode, resp.Header)
		}
		scheme := runtime.NewScheme()
		if err := apidiscoveryv2.AddToScheme(scheme); err != nil {
			t.Fatal(err)
		}
		obj, _, err := protobuf.NewSerializer(scheme, scheme).Decode(data, nil, nil)
		if err != nil {
			t.Fatalf("GET %s in protobuf: %v", path, err)
		}
		pb := obj.(*apidiscoveryv2.APIGroupDiscoveryList)
		pb.Kind, pb.APIVersion = list.Kind, list.APIVersion
		// Other tests add and remove custom resources meanwhile: the
		// built-in groups are compared.
		custom := func(g apidiscoveryv2.APIGroupDiscovery) bool {
			return strings.Contains(g.Name, ".") && !strings.HasSuffix(g.Name, ".k8s.io")
		}
		pb.Items, list.Items = slices.DeleteFunc(pb.Items, custom), slices.DeleteFunc(list.Items, custom)
		if !reflect.DeepEqual(pb, list) {
			t.Errorf("GET %s: the protobuf document differs from the JSON one", path)
		}
	}
}

// TestAggregatedDiscoveryCustomResources: the custom resources of
// testdata/aggdisc-crds.yaml are in the aggregated /apis as soon as their
// definitions are established, as kube-apiserver 1.37 lists them (two
// versions, status and scale, short names, categories, a cluster-scoped
// kind), and go when the definitions are deleted.
func TestAggregatedDiscoveryCustomResources(t *testing.T) {
	const group = "aggdisc.example.com"
	var want *apidiscoveryv2.APIGroupDiscovery
	for _, g := range aggregatedDocs(t)["/apis"].Items {
		if g.Name == group {
			want = &g
		}
	}
	k := newKubectl(t, "aggdisc")
	_, before := getAggregated(t, "/apis")
	k.must("apply", "-f", "testdata/aggdisc-crds.yaml")
	t.Cleanup(func() { k.run("delete", "--wait=false", "-f", "testdata/aggdisc-crds.yaml") })
	k.must("wait", "--for", "condition=Established", "crd/gadgets."+group, "crd/cogs."+group)
	list, after := getAggregated(t, "/apis")
	if after == before {
		t.Errorf("the ETag %s did not change with the new group", after)
	}
	i := slices.IndexFunc(list.Items, func(g apidiscoveryv2.APIGroupDiscovery) bool { return g.Name == group })
	if i < 0 {
		t.Fatalf("%s is not in /apis once established", group)
	}
	if !reflect.DeepEqual(&list.Items[i], want) {
		g, _ := json.Marshal(list.Items[i])
		w, _ := json.Marshal(want)
		t.Errorf("%s is\n%s\nwant\n%s", group, g, w)
	}
	if n := compareAggregated(t, "/apis", list, aggregatedDocs(t)["/apis"]); n < 10 {
		t.Errorf("%d resources compared", n)
	}
	k.must("delete", "-f", "testdata/aggdisc-crds.yaml")
	waitFor(t, group+" gone from /apis", func() bool {
		list, _ := getAggregated(t, "/apis")
		return !slices.ContainsFunc(list.Items, func(g apidiscoveryv2.APIGroupDiscovery) bool { return g.Name == group })
	})
}

// TestKubectlAggregatedDiscovery: with an empty discovery cache, `kubectl
// get pods` learns the API from the aggregated /api and /apis, one request
// each, and asks for no group version's resources, as with
// kube-apiserver. A recording proxy in front of the server sees its
// requests.
func TestKubectlAggregatedDiscovery(t *testing.T) {
	k := newKubectl(t, "aggregated")
	target, err := url.Parse(testServer.URL)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var seen []string
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.Transport = htClient.Transport // the administrator's credentials
	recorder := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.Path+" "+r.Header.Get("Accept"))
		mu.Unlock()
		proxy.ServeHTTP(w, r)
	}))
	defer recorder.Close()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: proxy, cluster: {server: %q}}]
users: [{name: proxy, user: {}}]
contexts: [{name: proxy, context: {cluster: proxy, user: proxy}}]
current-context: proxy
`, recorder.URL)), 0o600); err != nil {
		t.Fatal(err)
	}
	// These flags come after kc's own, and win.
	k.must("--kubeconfig", kubeconfig, "--cache-dir", t.TempDir(), "get", "pods")
	mu.Lock()
	defer mu.Unlock()
	var discovery []string
	for _, req := range seen {
		method, rest, _ := strings.Cut(req, " ")
		path, accept, _ := strings.Cut(rest, " ")
		parts := strings.Split(strings.Trim(path, "/"), "/")
		switch {
		case parts[0] == "api" && len(parts) <= 2, parts[0] == "apis" && len(parts) <= 3:
			discovery = append(discovery, method+" "+path)
			if !strings.HasPrefix(accept, "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList") {
				t.Errorf("%s %s asked for %q", method, path, accept)
			}
		}
	}
	slices.Sort(discovery)
	if want := []string{"GET /api", "GET /apis"}; !slices.Equal(discovery, want) {
		t.Errorf("kubectl's discovery requests: %q, want %q; all requests:\n%s", discovery, want, strings.Join(seen, "\n"))
	}
}
