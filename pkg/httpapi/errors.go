// The 422 Invalid errors of one field and of an object that failed
// validation, as kube-apiserver words them.

package httpapi

import (
	"net/http"

	"github.com/watchcache/watchcache/pkg/apistatus"
	"github.com/watchcache/watchcache/pkg/resource"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// invalid is a 422 about one field of an object, as kube-apiserver words it.
func invalid(res *resource.Resource, name, field, detail string) *apierrors.StatusError {
	e := apistatus.New(http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, "%s %q is invalid: %s: %s", res.Kind, name, field, detail)
	e.ErrStatus.Details = &metav1.StatusDetails{Name: name, Group: res.Group, Kind: res.Kind,
		Causes: []metav1.StatusCause{{Type: metav1.CauseTypeFieldValueInvalid, Message: detail, Field: field}}}
	return e
}

// invalidObject is the 422 Invalid of an object that failed validation,
// with one cause per error.
func invalidObject(res *resource.Resource, name string, errs field.ErrorList) *apierrors.StatusError {
	return apistatus.From(apierrors.NewInvalid(schema.GroupKind{Group: res.Group, Kind: res.Kind}, name, errs), res.Subject(name))
}
