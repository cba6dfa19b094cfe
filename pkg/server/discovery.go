package server

import (
	"net/http"
	"runtime"
	"sort"
	"strings"

	"github.com/watchcache/watchcache/pkg/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"
)

// Version is what /version reports: the Kubernetes API version this
// server speaks (kubectl warns about skew against it).
var Version = version.Info{
	Major:      "1",
	Minor:      "32",
	GitVersion: "v1.32.0+watchcache",
	GoVersion:  runtime.Version(),
	Compiler:   runtime.Compiler,
	Platform:   runtime.GOOS + "/" + runtime.GOARCH,
}

func (s *Server) serveVersion(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, &Version)
}

// subresourceVerbs are the verbs of /status and /scale.
var subresourceVerbs = metav1.Verbs{"get", "patch", "update"}

// createVerb is the one verb of reviews and action subresources.
var createVerb = metav1.Verbs{"create"}

// serveDiscovery serves the classic (unaggregated) discovery documents.
// kubectl asks for aggregated discovery first; a plain application/json
// answer makes it fall back to these.
func (s *Server) serveDiscovery(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	switch {
	case len(parts) == 1 && parts[0] == "api":
		writeJSON(w, http.StatusOK, &metav1.APIVersions{
			TypeMeta:                   metav1.TypeMeta{Kind: "APIVersions"},
			Versions:                   []string{"v1"},
			ServerAddressByClientCIDRs: serverAddresses(r),
		})
	case len(parts) == 2 && parts[0] == "api" && parts[1] == "v1":
		writeJSON(w, http.StatusOK, s.resourceList("v1"))
	case len(parts) == 1 && parts[0] == "apis":
		list := &metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}, Groups: []metav1.APIGroup{}}
		groups := s.registry.Groups()
		names := make([]string, 0, len(groups))
		for g := range groups {
			names = append(names, g)
		}
		sort.Strings(names)
		for _, g := range names {
			list.Groups = append(list.Groups, s.apiGroup(g, groups[g], r))
		}
		writeJSON(w, http.StatusOK, list)
	case len(parts) == 2 && parts[0] == "apis":
		versions, ok := s.registry.Groups()[parts[1]]
		if !ok {
			writeError(w, notFoundPath(), nil, "")
			return
		}
		group := s.apiGroup(parts[1], versions, r)
		group.TypeMeta = metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}
		writeJSON(w, http.StatusOK, &group)
	case len(parts) == 3 && parts[0] == "apis":
		list := s.resourceList(parts[1] + "/" + parts[2])
		if len(list.APIResources) == 0 {
			writeError(w, notFoundPath(), nil, "")
			return
		}
		writeJSON(w, http.StatusOK, list)
	default:
		writeError(w, notFoundPath(), nil, "")
	}
}

func (s *Server) apiGroup(name string, versions []string, r *http.Request) metav1.APIGroup {
	g := metav1.APIGroup{Name: name, ServerAddressByClientCIDRs: serverAddresses(r)}
	for _, v := range versions {
		g.Versions = append(g.Versions, metav1.GroupVersionForDiscovery{GroupVersion: name + "/" + v, Version: v})
	}
	// The versions come by Kubernetes version priority: the first is
	// preferred.
	g.PreferredVersion = g.Versions[0]
	return g
}

func (s *Server) resourceList(groupVersion string) *metav1.APIResourceList {
	list := &metav1.APIResourceList{
		TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
		GroupVersion: groupVersion,
		APIResources: []metav1.APIResource{},
	}
	for _, res := range s.registry.InGroupVersion(groupVersion) {
		list.APIResources = append(list.APIResources, apiResource(res))
		if res.Status {
			list.APIResources = append(list.APIResources, metav1.APIResource{Name: res.Plural + "/status", Namespaced: res.Namespaced,
				Kind: res.Kind, Verbs: subresourceVerbs})
		}
		if res.Scale {
			list.APIResources = append(list.APIResources, metav1.APIResource{Name: res.Plural + "/scale", Namespaced: res.Namespaced,
				Group: "autoscaling", Version: "v1", Kind: "Scale", Verbs: subresourceVerbs})
		}
		if res.Finalize {
			list.APIResources = append(list.APIResources, metav1.APIResource{Name: res.Plural + "/finalize", Namespaced: res.Namespaced,
				Kind: res.Kind, Verbs: metav1.Verbs{"update"}})
		}
		for _, sub := range res.Subresources {
			list.APIResources = append(list.APIResources, metav1.APIResource{Name: res.Plural + "/" + sub.Name,
				Namespaced: res.Namespaced, Group: sub.Group, Version: sub.Version, Kind: sub.Kind, Verbs: createVerb})
		}
	}
	return list
}

func apiResource(res *resource.Resource) metav1.APIResource {
	return metav1.APIResource{
		Name:         res.Plural,
		SingularName: res.Singular,
		Namespaced:   res.Namespaced,
		Kind:         res.Kind,
		Verbs:        res.Verbs,
		ShortNames:   res.ShortNames,
		Categories:   res.Categories,
	}
}

func serverAddresses(r *http.Request) []metav1.ServerAddressByClientCIDR {
	return []metav1.ServerAddressByClientCIDR{{ClientCIDR: "0.0.0.0/0", ServerAddress: r.Host}}
}
