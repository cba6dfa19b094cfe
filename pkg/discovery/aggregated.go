// The aggregated discovery document (apidiscovery.k8s.io/v2
// APIGroupDiscoveryList, KEP-3352): /api and /apis each tell in one answer
// every group version with its resources and their subresources, so that
// a client learns the API in two requests instead of one per group
// version. It is made from the classic documents' entries as
// kube-apiserver makes it from its classic lists, from the registry as it
// is at each request: a custom resource is in it as soon as it is served
// (freshness Current) and gone as soon as it is not.

package discovery

import (
	"crypto/sha512"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/watchcache/watchcache/pkg/apistatus"
	"github.com/watchcache/watchcache/pkg/encoding"
	"github.com/watchcache/watchcache/pkg/resource"
	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// serveAggregated answers /api (legacy) or /apis with the aggregated
// document in mediaType, as kube-apiserver does: with an ETag (the
// SHA-512 of the document's JSON, whatever the media type; Vary: Accept
// tells caches that the media type differs) and 304 Not Modified to an
// If-None-Match naming it.
func (s *Handler) serveAggregated(w http.ResponseWriter, r *http.Request, mediaType string, legacy bool) {
	list := s.aggregated(legacy)
	etag, err := calculateETag(list)
	if err != nil {
		apistatus.Write(w, err, apistatus.Subject{})
		return
	}
	list.TypeMeta = metav1.TypeMeta{APIVersion: apidiscoveryv2.SchemeGroupVersion.String(), Kind: "APIGroupDiscoveryList"}
	data, err := encoding.EncodeValue(mediaType, list)
	if err != nil {
		apistatus.Write(w, err, apistatus.Subject{})
		return
	}
	quoted := strconv.Quote(etag)
	h := w.Header()
	h.Set("ETag", quoted)
	h.Set("Vary", "Accept")
	h.Set("Cache-Control", "public")
	if r.Header.Get("If-None-Match") == quoted {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Type", mediaType+encoding.AggregatedDiscoveryParams)
	h.Set("Content-Length", strconv.Itoa(len(data)))
	w.WriteHeader(http.StatusOK)
	w.Write(data)
}

// calculateETag is kube-apiserver's ETag of an aggregated document: the
// upper-case hex SHA-512 of its JSON without kind and apiVersion.
func calculateETag(list *apidiscoveryv2.APIGroupDiscoveryList) (string, error) {
	data, err := json.Marshal(list)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%X", sha512.Sum512(data)), nil
}

// aggregated is the document of /api (legacy: the core group, whose name
// is "") or of /apis (the other groups in kube-apiserver's order, each
// group's versions by priority).
func (s *Handler) aggregated(legacy bool) *apidiscoveryv2.APIGroupDiscoveryList {
	list := &apidiscoveryv2.APIGroupDiscoveryList{Items: []apidiscoveryv2.APIGroupDiscovery{}}
	add := func(name string, versions []string) {
		if g, ok := s.groupDiscovery(name, versions); ok {
			list.Items = append(list.Items, g)
		}
	}
	if legacy {
		add("", []string{"v1"})
		return list
	}
	groups := s.registry.Groups()
	for _, name := range sortedGroups(groups) {
		add(name, groups[name])
	}
	return list
}

// groupDiscovery is a group's entry: its versions that have resources.
func (s *Handler) groupDiscovery(name string, versions []string) (apidiscoveryv2.APIGroupDiscovery, bool) {
	g := apidiscoveryv2.APIGroupDiscovery{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, v := range versions {
		groupVersion := v
		if name != "" {
			groupVersion = name + "/" + v
		}
		vd := apidiscoveryv2.APIVersionDiscovery{Version: v, Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent}
		for _, res := range s.registry.InGroupVersion(groupVersion) {
			vd.Resources = append(vd.Resources, resourceDiscovery(res, entries(res, s.registry.StorageOf(res))))
		}
		if len(vd.Resources) > 0 {
			g.Versions = append(g.Versions, vd)
		}
	}
	return g, len(g.Versions) > 0
}

// resourceDiscovery is res's aggregated entry, made from its classic
// entries (the resource's, then its subresources').
func resourceDiscovery(res *resource.Resource, es []metav1.APIResource) apidiscoveryv2.APIResourceDiscovery {
	top := es[0]
	scope := apidiscoveryv2.ScopeCluster
	if top.Namespaced {
		scope = apidiscoveryv2.ScopeNamespace
	}
	d := apidiscoveryv2.APIResourceDiscovery{
		Resource:         top.Name,
		ResponseKind:     responseKind(res, top),
		Scope:            scope,
		SingularResource: top.SingularName,
		Verbs:            top.Verbs,
		ShortNames:       top.ShortNames,
		Categories:       top.Categories,
	}
	for _, sub := range es[1:] {
		d.Subresources = append(d.Subresources, apidiscoveryv2.APISubresourceDiscovery{
			Subresource:  strings.TrimPrefix(sub.Name, top.Name+"/"),
			ResponseKind: responseKind(res, sub),
			Verbs:        sub.Verbs,
		})
	}
	return d
}

// responseKind is the kind a resource or subresource answers with: the
// classic entry's group, version and kind, which for a built-in kind of
// the resource's own group version are empty (kube-apiserver's), while
// apiextensions-apiserver names a custom resource's group and version.
func responseKind(res *resource.Resource, e metav1.APIResource) *metav1.GroupVersionKind {
	gvk := &metav1.GroupVersionKind{Group: e.Group, Version: e.Version, Kind: e.Kind}
	if res.Definition != "" && gvk.Group == "" && gvk.Version == "" {
		gvk.Group, gvk.Version = res.Group, res.Version
	}
	return gvk
}
