package requestinfo

import (
	"net/url"
	"reflect"
	"testing"
)

func TestParse(t *testing.T) {
	cases := []struct {
		method, url string
		want        Info
	}{
		{"GET", "/version", Info{Path: "/version", Verb: "get"}},
		{"GET", "/apis/apps/v1", Info{Path: "/apis/apps/v1", Verb: "get"}},
		{"GET", "/api/v1", Info{Path: "/api/v1", Verb: "get"}},
		{"POST", "/metrics", Info{Path: "/metrics", Verb: "post"}},
		{"GET", "/api/v1/pods", Info{IsResourceRequest: true, Verb: "list", APIVersion: "v1", Resource: "pods", Parts: []string{"pods"}}},
		{"GET", "/api/v1/pods?watch=1", Info{IsResourceRequest: true, Verb: "watch", APIVersion: "v1", Resource: "pods", Parts: []string{"pods"}}},
		{"GET", "/api/v1/watch/namespaces/ns/pods", Info{IsResourceRequest: true, Verb: "watch", APIVersion: "v1", Namespace: "ns",
			Resource: "pods", Parts: []string{"pods"}, WatchPath: true}},
		{"GET", "/api/v1/namespaces/ns/pods/p", Info{IsResourceRequest: true, Verb: "get", APIVersion: "v1", Namespace: "ns",
			Resource: "pods", Name: "p", Parts: []string{"pods", "p"}}},
		{"POST", "/api/v1/namespaces/ns/serviceaccounts/sa/token", Info{IsResourceRequest: true, Verb: "create", APIVersion: "v1",
			Namespace: "ns", Resource: "serviceaccounts", Name: "sa", Subresource: "token", Parts: []string{"serviceaccounts", "sa", "token"}}},
		{"GET", "/api/v1/namespaces/ns", Info{IsResourceRequest: true, Verb: "get", APIVersion: "v1", Namespace: "ns",
			Resource: "namespaces", Name: "ns", Parts: []string{"namespaces", "ns"}}},
		{"PUT", "/api/v1/namespaces/ns/finalize", Info{IsResourceRequest: true, Verb: "update", APIVersion: "v1", Namespace: "ns",
			Resource: "namespaces", Name: "ns", Subresource: "finalize", Parts: []string{"namespaces", "ns", "finalize"}}},
		{"DELETE", "/apis/rbac.authorization.k8s.io/v1/namespaces/ns/roles", Info{IsResourceRequest: true, Verb: "deletecollection",
			APIGroup: "rbac.authorization.k8s.io", APIVersion: "v1", Namespace: "ns", Resource: "roles", Parts: []string{"roles"}}},
		{"PATCH", "/apis/example.com/v1/widgets/w", Info{IsResourceRequest: true, Verb: "patch", APIGroup: "example.com",
			APIVersion: "v1", Resource: "widgets", Name: "w", Parts: []string{"widgets", "w"}}},
		{"GET", "/api/v1/nodes?fieldSelector=metadata.name%3Dn1&watch=true", Info{IsResourceRequest: true, Verb: "watch",
			APIVersion: "v1", Resource: "nodes", Name: "n1", FieldSelector: "metadata.name=n1", Parts: []string{"nodes"}}},
		{"GET", "/api/v1/nodes?fieldSelector=metadata.name!%3Dn1", Info{IsResourceRequest: true, Verb: "list",
			APIVersion: "v1", Resource: "nodes", FieldSelector: "metadata.name!=n1", Parts: []string{"nodes"}}},
	}
	for _, c := range cases {
		u, err := url.Parse(c.url)
		if err != nil {
			t.Fatal(err)
		}
		c.want.Path = u.Path
		got := parse(c.method, u.Path, u.Query())
		if !reflect.DeepEqual(*got, c.want) {
			t.Errorf("%s %s:\n got %+v\nwant %+v", c.method, c.url, *got, c.want)
		}
	}
}
