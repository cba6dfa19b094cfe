// Package discovery serves what a client reads to learn the API, as
// kube-apiserver's endpoints/discovery does: /api and /apis with their
// groups, versions and resources (verbs, short names, categories,
// storageVersionHash), classic or aggregated (aggregated.go), from the
// registry as it is at each request, so that a custom resource is listed
// as soon as it is served; and /version.
package discovery

import (
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"runtime"
	"slices"
	"sort"
	"strings"

	"github.com/watchcache/watchcache/pkg/apistatus"
	"github.com/watchcache/watchcache/pkg/encoding"
	"github.com/watchcache/watchcache/pkg/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"
)

// Version is what /version reports: the Kubernetes version whose API this
// server serves, kube-apiserver 1.37.2's (that of the k8s.io/apimachinery
// module it is built with: TestVersionIsTheAPIModules), with "+watchcache"
// as build metadata. kubectl warns about skew against it; the emulation and
// compatibility versions are kube-apiserver's defaults for its version.
var Version = version.Info{
	Major:                 "1",
	Minor:                 "37",
	EmulationMajor:        "1",
	EmulationMinor:        "37",
	MinCompatibilityMajor: "1",
	MinCompatibilityMinor: "36",
	GitVersion:            "v1.37.2+watchcache",
	GoVersion:             runtime.Version(),
	Compiler:              runtime.Compiler,
	Platform:              runtime.GOOS + "/" + runtime.GOARCH,
}

// ServeVersion serves /version.
func ServeVersion(w http.ResponseWriter, r *http.Request) {
	encoding.WriteJSON(w, http.StatusOK, &Version)
}

// Handler serves the discovery documents of a registry's resources.
type Handler struct {
	registry *resource.Registry
}

// New returns the discovery Handler of registry.
func New(registry *resource.Registry) *Handler {
	return &Handler{registry: registry}
}

// IsPath reports whether a path names a group list, a group or a group
// version: /api, /api/v1, /apis, /apis/g, /apis/g/v.
func IsPath(path string) bool {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch parts[0] {
	case "api":
		return len(parts) <= 2
	case "apis":
		return len(parts) <= 3
	}
	return false
}

// subresourceVerbs are the verbs of /status and /scale.
var subresourceVerbs = metav1.Verbs{"get", "patch", "update"}

// createVerb is the one verb of reviews and action subresources.
var createVerb = metav1.Verbs{"create"}

// ServeHTTP serves the discovery documents: at /api and /apis the
// aggregated one to clients that ask for it (kubectl and client-go do,
// with the classic one as their second choice), the classic ones
// otherwise (in JSON).
func (s *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	root := len(parts) == 1 && (parts[0] == "api" || parts[0] == "apis")
	format, err := encoding.NegotiateDiscovery(r, root)
	if err != nil {
		apistatus.Write(w, err, apistatus.Subject{})
		return
	}
	switch {
	case format.Aggregated:
		s.serveAggregated(w, r, format.MediaType, parts[0] == "api")
	case len(parts) == 1 && parts[0] == "api":
		encoding.WriteJSON(w, http.StatusOK, &metav1.APIVersions{
			TypeMeta:                   metav1.TypeMeta{Kind: "APIVersions"},
			Versions:                   []string{"v1"},
			ServerAddressByClientCIDRs: serverAddresses(r),
		})
	case len(parts) == 2 && parts[0] == "api" && parts[1] == "v1":
		list := s.resourceList("v1")
		list.APIVersion = "" // kube-apiserver's /api/v1 has none
		encoding.WriteJSON(w, http.StatusOK, list)
	case len(parts) == 1 && parts[0] == "apis":
		list := &metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}, Groups: []metav1.APIGroup{}}
		groups := s.registry.Groups()
		for _, g := range sortedGroups(groups) {
			list.Groups = append(list.Groups, s.apiGroup(g, groups[g]))
		}
		encoding.WriteJSON(w, http.StatusOK, list)
	case len(parts) == 2 && parts[0] == "apis":
		versions, ok := s.registry.Groups()[parts[1]]
		if !ok {
			apistatus.Write(w, apistatus.NotFoundPath(), apistatus.Subject{})
			return
		}
		group := s.apiGroup(parts[1], versions)
		group.TypeMeta = metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}
		encoding.WriteJSON(w, http.StatusOK, &group)
	case len(parts) == 3 && parts[0] == "apis":
		list := s.resourceList(parts[1] + "/" + parts[2])
		if len(list.APIResources) == 0 {
			apistatus.Write(w, apistatus.NotFoundPath(), apistatus.Subject{})
			return
		}
		encoding.WriteJSON(w, http.StatusOK, list)
	default:
		apistatus.Write(w, apistatus.NotFoundPath(), apistatus.Subject{})
	}
}

// groupOrder is the order in which kube-apiserver lists the built-in
// groups (its aggregator's group priorities); clients that find a
// resource name in several groups take the first.
var groupOrder = []string{"apiregistration.k8s.io", "apps", "events.k8s.io", "authentication.k8s.io", "authorization.k8s.io",
	"autoscaling", "batch", "certificates.k8s.io", "networking.k8s.io", "policy", "rbac.authorization.k8s.io", "storage.k8s.io",
	"admissionregistration.k8s.io", "apiextensions.k8s.io", "scheduling.k8s.io", "coordination.k8s.io", "node.k8s.io",
	"discovery.k8s.io", "resource.k8s.io", "flowcontrol.apiserver.k8s.io", "storagemigration.k8s.io"}

// groupPriority is a group's place in /apis: the built-in groups in
// groupOrder, then the others (custom resources' groups, by name).
func groupPriority(group string) int {
	if i := slices.Index(groupOrder, group); i >= 0 {
		return i
	}
	return len(groupOrder)
}

// sortedGroups are the names of groups in kube-apiserver's order.
func sortedGroups(groups map[string][]string) []string {
	names := make([]string, 0, len(groups))
	for g := range groups {
		names = append(names, g)
	}
	sort.Slice(names, func(i, j int) bool {
		pi, pj := groupPriority(names[i]), groupPriority(names[j])
		return pi < pj || pi == pj && names[i] < names[j]
	})
	return names
}

// apiGroup is a group's discovery entry; unlike /api, kube-apiserver's
// gives no server addresses.
func (s *Handler) apiGroup(name string, versions []string) metav1.APIGroup {
	g := metav1.APIGroup{Name: name}
	for _, v := range versions {
		g.Versions = append(g.Versions, metav1.GroupVersionForDiscovery{GroupVersion: name + "/" + v, Version: v})
	}
	// The versions come by Kubernetes version priority: the first is
	// preferred.
	g.PreferredVersion = g.Versions[0]
	return g
}

// resourceList is the APIResourceList of a group version (of /api/v1,
// "v1"), its subresources after each resource.
func (s *Handler) resourceList(groupVersion string) *metav1.APIResourceList {
	list := &metav1.APIResourceList{
		TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
		GroupVersion: groupVersion,
		APIResources: []metav1.APIResource{},
	}
	for _, res := range s.registry.InGroupVersion(groupVersion) {
		list.APIResources = append(list.APIResources, entries(res, s.registry.StorageOf(res))...)
	}
	return list
}

// entries are the facts discovery tells of res, in both its forms: res's
// classic entry, then one per subresource ("pods/status") in
// kube-apiserver's order. The aggregated form is made from them as
// kube-apiserver makes it from its classic list.
func entries(res, storage *resource.Resource) []metav1.APIResource {
	out := []metav1.APIResource{apiResource(res, storage)}
	if res.Status {
		out = append(out, metav1.APIResource{Name: res.Plural + "/status", Namespaced: res.Namespaced,
			Kind: res.Kind, Verbs: subresourceVerbs})
	}
	if res.Scale {
		out = append(out, metav1.APIResource{Name: res.Plural + "/scale", Namespaced: res.Namespaced,
			Group: "autoscaling", Version: "v1", Kind: "Scale", Verbs: subresourceVerbs})
	}
	if res.Approval {
		out = append(out, metav1.APIResource{Name: res.Plural + "/approval", Namespaced: res.Namespaced,
			Kind: res.Kind, Verbs: subresourceVerbs})
	}
	if res.Finalize {
		out = append(out, metav1.APIResource{Name: res.Plural + "/finalize", Namespaced: res.Namespaced,
			Kind: res.Kind, Verbs: metav1.Verbs{"update"}})
	}
	for _, sub := range res.Subresources {
		out = append(out, metav1.APIResource{Name: res.Plural + "/" + sub.Name,
			Namespaced: res.Namespaced, Group: sub.Group, Version: sub.Version, Kind: sub.Kind, Verbs: createVerb})
	}
	if res.Definition == "" {
		// kube-apiserver lists a built-in resource's subresources by
		// name; apiextensions-apiserver a custom resource's status
		// before scale.
		subs := out[1:]
		sort.Slice(subs, func(i, j int) bool { return subs[i].Name < subs[j].Name })
	}
	return out
}

// apiResource is the discovery entry of res, whose objects storage's store
// holds (nil for a resource never stored).
func apiResource(res, storage *resource.Resource) metav1.APIResource {
	hash := ""
	if res.Stored() && storage != nil {
		version := storage.Version
		if storage.ReportedStorageVersion != "" {
			version = storage.ReportedStorageVersion
		}
		hash = storageVersionHash(storage.Group, version, storage.Kind)
	}
	return metav1.APIResource{
		Name:               res.Plural,
		SingularName:       res.Singular,
		Namespaced:         res.Namespaced,
		Kind:               res.Kind,
		Verbs:              res.Verbs,
		ShortNames:         res.ShortNames,
		Categories:         res.Categories,
		StorageVersionHash: hash,
	}
}

// storageVersionHash is what kube-apiserver's discovery tells of the
// version a resource is stored in, for clients that notice a change of it
// (the storage version migrator): the base64 of the first 8 bytes of the
// SHA-256 of "<group>/<version>/<kind>" of the storage version.
func storageVersionHash(group, version, kind string) string {
	sum := sha256.Sum256([]byte(group + "/" + version + "/" + kind))
	return base64.StdEncoding.EncodeToString(sum[:8])
}

// serverAddresses is where clients reach this server: the host they asked.
func serverAddresses(r *http.Request) []metav1.ServerAddressByClientCIDR {
	return []metav1.ServerAddressByClientCIDR{{ClientCIDR: "0.0.0.0/0", ServerAddress: r.Host}}
}
