// Package resource is the registry of the resources the server serves:
// the built-in core/v1 kinds and custom resources from a file.
package resource

import (
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"github.com/watchcache/watchcache/pkg/apistatus"
	"github.com/watchcache/watchcache/pkg/crd/crdschema"
	"github.com/watchcache/watchcache/pkg/object"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Resource describes one served resource.
type Resource struct {
	// Group is the API group; "" for the core group.
	Group   string `json:"group"`
	Version string `json:"version"`
	Kind    string `json:"kind"`
	// Plural is the resource name in URLs ("pods").
	Plural     string   `json:"plural"`
	Singular   string   `json:"singular"`
	ShortNames []string `json:"shortNames,omitempty"`
	// Categories group resources for kubectl ("all": `kubectl get all`).
	Categories []string `json:"categories,omitempty"`
	Namespaced bool     `json:"namespaced"`
	// SelectableFields are the JSON paths field selectors may use besides
	// metadata.name and metadata.namespace.
	SelectableFields []string `json:"selectableFields,omitempty"`
	// IndexedFields are the selectable fields the watch cache indexes.
	IndexedFields []string `json:"indexedFields,omitempty"`
	// FieldValues say where the values of the selectable fields listed
	// come from when that is not the JSON path of their label: a field
	// absent from the object selects as its type's zero ("false", "0"), as
	// in kube-apiserver's field sets.
	FieldValues map[string]object.FieldValue `json:"-"`
	// FieldLabels rename selectable fields to the labels of the resource
	// the objects are StoredWith, whose store evaluates the selectors
	// (events.k8s.io's regarding.kind is core/v1's involvedObject.kind).
	FieldLabels map[string]string `json:"-"`
	// FieldLabelError is the message format (one argument: the label) of
	// the 400 for a field selector on a field that is not selectable.
	// Complete sets kube-apiserver's: "field label not supported: %s" for
	// resources with selectable fields of their own and custom resources,
	// the metadata-only text for the others.
	FieldLabelError string `json:"-"`

	// Verbs are the verbs the resource serves, as its discovery lists
	// them; Complete sets AllVerbs (create alone for a CreateOnly
	// resource) if none are given. A request of another verb is refused
	// with 405 MethodNotAllowed.
	Verbs []string `json:"-"`
	// CreateOnly marks a resource that is never stored: a POST of it is
	// answered by an action (the reviews of authorization.k8s.io and
	// authentication.k8s.io). It has no store and no other verb.
	CreateOnly bool `json:"-"`
	// Subresources are the resource's subresources answered by actions
	// (serviceaccounts/token), for routing and discovery.
	Subresources []Subresource `json:"-"`

	// Status says the kind has a status subresource: writes of the object
	// keep its status (a create drops it), writes of /status change only
	// the status.
	Status bool `json:"-"`
	// Generation says metadata.generation counts changes to anything but
	// metadata and status: 1 on create, one more on each such update.
	Generation bool `json:"-"`
	// GenerationAnnotations says a change of metadata.annotations counts
	// too, as kube-apiserver's strategy for Deployments does (their
	// annotations are copied to their ReplicaSets).
	GenerationAnnotations bool `json:"-"`
	// Scale says the kind has a scale subresource (autoscaling/v1 Scale
	// over spec.replicas, status.replicas and spec.selector).
	Scale bool `json:"-"`
	// ScalePaths, for a custom resource with a scale subresource, are the
	// dotted paths its definition gives (the built-in kinds use
	// spec.replicas, status.replicas and spec.selector).
	ScalePaths *ScalePaths `json:"-"`
	// OrphanByDefault says a delete that names no propagation policy
	// orphans the object's dependents, as kube-apiserver's strategy for
	// core/v1 ReplicationControllers does for compatibility (other kinds
	// default to background deletion).
	OrphanByDefault bool `json:"-"`
	// DeleteFinalizer, if set, is added to an object's finalizers by its
	// delete, so that a controller cleans up before it goes (a
	// CustomResourceDefinition's objects are deleted first).
	DeleteFinalizer string `json:"-"`
	// NotServed marks a custom resource's storage version that its
	// definition does not serve: its store holds the objects of the served
	// versions, but requests and discovery do not see it.
	NotServed bool `json:"-"`
	// Finalize says the kind has a finalize subresource (namespaces): an
	// update of it writes only spec.finalizers.
	Finalize bool `json:"-"`
	// Approval says the kind has an approval subresource
	// (CertificateSigningRequests): get, update and patch of it write only
	// status.conditions.
	Approval bool `json:"-"`

	// Expires says the kind's objects are deleted by etcd --event-ttl after
	// their last write (Events), as kube-apiserver's are.
	Expires bool `json:"-"`

	// StoredWith, for a resource that serves another resource's objects in
	// another version (events.k8s.io/v1 events are core/v1 events), names
	// that resource: the two share its store and watch cache, objects
	// converted on the way (package conversion). Nil for a resource stored
	// on its own.
	StoredWith *GroupResource `json:"-"`

	// ReportedStorageVersion, if set, is the version kube-apiserver stores
	// the kind in where that is not the served one, as discovery's
	// storageVersionHash tells it: CustomResourceDefinitions are stored as
	// v1beta1 there (here as v1), and clients compare the hash.
	ReportedStorageVersion string `json:"-"`

	// Definition is the name of the CustomResourceDefinition that defines a
	// custom resource served through the API ("" for the others).
	Definition string `json:"-"`
	// CustomSchema is a custom resource's schema (nil: any object): its objects
	// are pruned, defaulted and validated by it.
	CustomSchema *crdschema.Schema `json:"-"`
	// Terminating marks a custom resource whose definition is being
	// deleted: its objects are being deleted, and creates are refused.
	Terminating bool `json:"-"`
	// DeprecationWarning, if set, is sent as a Warning with every response
	// about the resource (a deprecated version of a custom resource).
	DeprecationWarning string `json:"-"`
	// PrinterColumns are a custom resource's additional printer columns.
	PrinterColumns []apiextensionsv1.CustomResourceColumnDefinition `json:"-"`

	// StrategicMergeType is a value of the kind's Go type from k8s.io/api,
	// for strategic merge patch; nil for custom resources.
	StrategicMergeType any `json:"-"`

	schema *object.Schema
	// builtin marks the kinds of Builtins, whose groups (apps, batch, ...)
	// need not contain a dot.
	builtin bool
}

// AllVerbs are the verbs of a stored resource served in full, sorted as
// discovery lists them.
var AllVerbs = []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}

// Allows reports whether the resource serves verb.
func (r *Resource) Allows(verb string) bool { return slices.Contains(r.Verbs, verb) }

// ScalePaths are where a custom resource keeps what its Scale shows: the
// desired and current replicas and, optionally, its pods' label selector
// (a string).
type ScalePaths struct{ SpecReplicas, StatusReplicas, LabelSelector string }

// GroupResource names a resource by group and plural.
type GroupResource struct{ Group, Plural string }

// Subresource is a subresource answered by an action: a POST of an object
// of its own kind, possibly of another group (serviceaccounts/token takes
// an authentication.k8s.io/v1 TokenRequest).
type Subresource struct {
	Name    string
	Group   string
	Version string
	Kind    string
}

// Subresource finds a subresource by name; nil if the resource has none
// of that name.
func (r *Resource) Subresource(name string) *Subresource {
	for i := range r.Subresources {
		if r.Subresources[i].Name == name {
			return &r.Subresources[i]
		}
	}
	return nil
}

// Stored reports whether the resource's objects live in etcd (false for
// create-only resources such as reviews).
func (r *Resource) Stored() bool { return !r.CreateOnly }

// OwnStorage reports whether the resource has a store of its own: stored,
// and not in another resource's store (StoredWith).
func (r *Resource) OwnStorage() bool { return r.Stored() && r.StoredWith == nil }

// GroupVersion is the apiVersion of the resource's objects ("v1",
// "example.com/v1").
func (r *Resource) GroupVersion() string {
	if r.Group == "" {
		return r.Version
	}
	return r.Group + "/" + r.Version
}

// GroupVersionKind is the resource's kind in its version.
func (r *Resource) GroupVersionKind() schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: r.Group, Version: r.Version, Kind: r.Kind}
}

// ListKind is the kind of the resource's lists.
func (r *Resource) ListKind() string { return r.Kind + "List" }

// Schema is the object schema (selectable fields) of the resource.
func (r *Resource) Schema() *object.Schema { return r.schema }

// Key is the storage key of an object of this resource.
func (r *Resource) Key(namespace, name string) string {
	if r.Namespaced {
		return namespace + "/" + name
	}
	return name
}

// Scope is the storage scope of the resource's objects in namespace (all
// of them for ""): a key prefix ending in "/".
func (r *Resource) Scope(namespace string) string {
	if namespace == "" {
		return ""
	}
	return namespace + "/"
}

// String names the resource for logs: "pods" or "widgets.example.com".
func (r *Resource) String() string {
	if r.Group == "" {
		return r.Plural
	}
	return r.Plural + "." + r.Group
}

var (
	dnsLabel  = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	versionRE = regexp.MustCompile(`^v[1-9][0-9]*((alpha|beta)[1-9][0-9]*)?$`)
	kindRE    = regexp.MustCompile(`^[A-Z][A-Za-z0-9]*$`)
	// dns1035Label is what apiextensions validation asks of a custom
	// resource's version names and of its kind in lower case; it has no
	// CamelCase rule (a kind "lower" is served).
	dns1035Label = regexp.MustCompile(`^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$`)
)

// Complete checks the description and builds the schema of its
// selectable fields; registering a resource completes it.
func (r *Resource) Complete() error {
	switch {
	case r.Group != "" && (!strings.Contains(r.Group, ".") && !r.builtin || !isDNSSubdomain(r.Group)):
		return fmt.Errorf("group %q must be a DNS subdomain containing a dot (e.g. example.com)", r.Group)
	case r.Definition != "" && !dns1035Label.MatchString(r.Version):
		return fmt.Errorf("version %q must be a DNS-1035 label", r.Version)
	case r.Definition != "" && !dns1035Label.MatchString(strings.ToLower(r.Kind)):
		return fmt.Errorf("kind %q may have mixed case, but should otherwise be a DNS-1035 label", r.Kind)
	case r.Definition == "" && !versionRE.MatchString(r.Version):
		return fmt.Errorf("version %q must look like v1, v2beta1 or v1alpha2", r.Version)
	case r.Definition == "" && !kindRE.MatchString(r.Kind):
		return fmt.Errorf("kind %q must be CamelCase starting with a capital letter", r.Kind)
	case !dnsLabel.MatchString(r.Plural):
		return fmt.Errorf("plural %q must be a lowercase DNS label", r.Plural)
	case r.Singular != "" && !dnsLabel.MatchString(r.Singular):
		return fmt.Errorf("singular %q must be a lowercase DNS label", r.Singular)
	}
	if r.Singular == "" {
		r.Singular = strings.ToLower(r.Kind)
	}
	if r.Verbs == nil {
		r.Verbs = AllVerbs
		if r.CreateOnly {
			r.Verbs = []string{"create"}
		}
	}
	for _, v := range r.Verbs {
		if !slices.Contains(AllVerbs, v) {
			return fmt.Errorf("verb %q is not one of %v", v, AllVerbs)
		}
	}
	for _, s := range r.ShortNames {
		if !dnsLabel.MatchString(s) {
			return fmt.Errorf("short name %q must be a lowercase DNS label", s)
		}
	}
	for _, f := range r.IndexedFields {
		if !slices.Contains(r.SelectableFields, f) && f != "metadata.name" && f != "metadata.namespace" {
			return fmt.Errorf("indexed field %q is not a selectable field", f)
		}
	}
	for f := range r.FieldValues {
		if !slices.Contains(r.SelectableFields, f) {
			return fmt.Errorf("field value of %q, which is not a selectable field", f)
		}
	}
	for f := range r.FieldLabels {
		if !slices.Contains(r.SelectableFields, f) {
			return fmt.Errorf("field label of %q, which is not a selectable field", f)
		}
	}
	if r.FieldLabelError == "" {
		r.FieldLabelError = `%q is not a known field selector: only "metadata.name", "metadata.namespace"`
		if len(r.SelectableFields) > 0 || r.Definition != "" {
			r.FieldLabelError = "field label not supported: %s"
		}
	}
	schema, err := object.NewSchemaWith(r.SelectableFields, r.FieldValues)
	if err != nil {
		return err
	}
	if !r.Namespaced {
		schema = schema.WithClusterScope()
	}
	r.schema = schema
	return nil
}

func isDNSSubdomain(s string) bool {
	if len(s) > 253 {
		return false
	}
	for _, part := range strings.Split(s, ".") {
		if !dnsLabel.MatchString(part) {
			return false
		}
	}
	return true
}

// Subject is what an error about the object name of r is about, for its
// Status (apistatus.From); a nil r is "object".
func (r *Resource) Subject(name string) apistatus.Subject {
	if r == nil {
		return apistatus.Subject{Name: name}
	}
	return apistatus.Subject{Group: r.Group, Resource: r.Plural, Kind: r.Kind, Name: name}
}

// Encode is the JSON an object of r is stored as: a built-in kind's
// through its Go type, as kube-apiserver encodes it, so that unknown
// fields are dropped, fields without omitempty are written with their zero
// values (a new Service's "status":{"loadBalancer":{}}) and kind and
// apiVersion come first (which lists of built-in kinds rely on to serve
// their items without them); custom resources as they are. Every writer of
// stored objects (the handlers, the controllers) encodes through it.
func (r *Resource) Encode(obj map[string]any) ([]byte, error) {
	data, _, err := r.EncodeTyped(obj)
	return data, err
}

// EncodeTyped is Encode, and for a built-in kind the Go object the JSON is
// marshalled from (nil for custom resources), which the storage codec
// encodes without decoding the JSON again (StorageCodec.EncodeBuilt,
// storage.Built).
//
// The map is converted to the Go type without JSON text in between
// (runtime.DefaultUnstructuredConverter, which reads a map as encoding/json
// reads its text); where the converter refuses it, the object goes through
// JSON text as before, for encoding/json's verdict and message. Unlike
// encoding/json the converter matches field names case-sensitively, as
// kube-apiserver's decoder does, and an integer too large for its field
// wraps rather than fails (the handlers' strict decoding of the body has
// refused such a value before).
func (r *Resource) EncodeTyped(obj map[string]any) ([]byte, runtime.Object, error) {
	if r.StrategicMergeType == nil {
		data, err := json.Marshal(obj)
		return data, nil, err
	}
	typed := reflect.New(reflect.TypeOf(r.StrategicMergeType)).Interface().(runtime.Object)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, typed); err != nil {
		data, err := json.Marshal(obj)
		if err != nil {
			return nil, nil, err
		}
		typed = reflect.New(reflect.TypeOf(r.StrategicMergeType)).Interface().(runtime.Object)
		if err := json.Unmarshal(data, typed); err != nil {
			return nil, nil, apistatus.BadRequest("the object is not a valid %s: %v", r.Kind, err)
		}
	}
	data, err := json.Marshal(typed)
	if err != nil {
		return nil, nil, err
	}
	return data, typed, nil
}
