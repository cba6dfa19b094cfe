// An object's metadata on writes: apiVersion and kind, namespace and name
// from the path, naming rules, a new object's uid, creationTimestamp and
// generated name, and the system fields an update keeps.

package httpapi

import (
	"crypto/rand"
	"fmt"
	"strings"
	"time"

	"github.com/watchcache/watchcache/pkg/apistatus"
	"github.com/watchcache/watchcache/pkg/resource"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// metadataOf returns obj's metadata map, creating it if absent.
func metadataOf(obj map[string]any) (map[string]any, *apierrors.StatusError) {
	switch m := obj["metadata"].(type) {
	case map[string]any:
		return m, nil
	case nil:
		created := map[string]any{}
		obj["metadata"] = created
		return created, nil
	default:
		return nil, apistatus.BadRequest("metadata must be an object")
	}
}

// stringField returns m[k] if it is a string (or absent: "").
func stringField(m map[string]any, k string) (string, *apierrors.StatusError) {
	switch v := m[k].(type) {
	case nil:
		return "", nil
	case string:
		return v, nil
	default:
		return "", apistatus.BadRequest("metadata.%s must be a string", k)
	}
}

// checkTypeMeta fills in apiVersion and kind, or rejects values that do not
// match the resource of the path.
func checkTypeMeta(obj map[string]any, res *resource.Resource) *apierrors.StatusError {
	for field, want := range map[string]string{"apiVersion": res.GroupVersion(), "kind": res.Kind} {
		switch v := obj[field].(type) {
		case nil:
			obj[field] = want
		case string:
			if v == "" {
				obj[field] = want
			} else if v != want {
				return apistatus.BadRequest("the %s of the object (%s) does not match the %s of the request (%s)", field, v, field, want)
			}
		default:
			return apistatus.BadRequest("%s must be a string", field)
		}
	}
	return nil
}

// checkIdentity makes the object's namespace and name those of the path:
// filled in when absent, an error when different. A cluster-scoped
// object's namespace is cleared, whatever it says, as kube-apiserver's
// strategies do (the kubebuilder tutorial creates its Namespace with
// metadata.namespace set).
func checkIdentity(meta map[string]any, req *request) *apierrors.StatusError {
	ns, err := stringField(meta, "namespace")
	if err != nil {
		return err
	}
	switch {
	case !req.res.Namespaced:
		delete(meta, "namespace")
	case ns == "":
		meta["namespace"] = req.namespace
	case ns != req.namespace:
		return apistatus.BadRequest("the namespace of the provided object (%s) does not match the namespace sent on the request (%s)", ns, req.namespace)
	}
	if req.name == "" {
		return nil
	}
	name, err := stringField(meta, "name")
	if err != nil {
		return err
	}
	switch {
	case name == "":
		meta["name"] = req.name
	case name != req.name:
		return apistatus.BadRequest("the name of the object (%s) does not match the name on the URL (%s)", name, req.name)
	}
	return nil
}

// validateName applies the naming rule of obj's kind (resource.NameRule):
// a DNS-1123 subdomain, label or path segment, or a signer's prefix.
func validateName(res *resource.Resource, name string, obj map[string]any) *apierrors.StatusError {
	if problems := res.NameRule().Check(name, obj); len(problems) > 0 {
		return invalidObject(res, name, field.ErrorList{field.Invalid(field.NewPath("metadata", "name"), name, strings.Join(problems, "; "))})
	}
	return nil
}

// prepareCreate readies a new object's metadata: generated name, uid,
// creationTimestamp. It returns the object's name.
func prepareCreate(obj map[string]any, req *request) (string, *apierrors.StatusError) {
	if err := checkTypeMeta(obj, req.res); err != nil {
		return "", err
	}
	meta, err := metadataOf(obj)
	if err != nil {
		return "", err
	}
	if err := checkIdentity(meta, req); err != nil {
		return "", err
	}
	name, err := stringField(meta, "name")
	if err != nil {
		return "", err
	}
	if name == "" {
		generate, err := stringField(meta, "generateName")
		if err != nil {
			return "", err
		}
		if generate == "" {
			return "", invalid(req.res, "", "metadata.name", "Required value: name or generateName is required")
		}
		name = generate + randomSuffix()
		meta["name"] = name
	}
	if err := validateName(req.res, name, obj); err != nil {
		return "", err
	}
	meta["uid"] = string(uuid.NewUUID())
	meta["creationTimestamp"] = time.Now().UTC().Format(time.RFC3339)
	return name, nil
}

// randomSuffix is the 5-character suffix of a generated name, from the
// alphabet kube-apiserver uses (no vowels, no look-alike characters).
func randomSuffix() string {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	var b [5]byte
	rand.Read(b[:])
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b[:])
}

// preserveSystemFields carries uid and creationTimestamp over from the
// current object into an updated one: clients may omit them but not
// change them.
func preserveSystemFields(meta map[string]any, res *resource.Resource, uid, created string) *apierrors.StatusError {
	name, _ := stringField(meta, "name")
	if v, _ := stringField(meta, "uid"); v != "" && v != uid {
		return invalid(res, name, "metadata.uid", fmt.Sprintf("Invalid value: %q: field is immutable", v))
	}
	meta["uid"] = uid
	if created != "" {
		meta["creationTimestamp"] = created
	}
	return nil
}
