package server

import (
	"net/http"

	"github.com/watchcache/watchcache/pkg/storage"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// dryRun=All: a write is decoded, defaulted, validated and admitted as
// usual, against a store that writes nothing (storage.DryRun), and
// answered with the object as it would have been stored. Nothing is
// written, so nothing is told to AfterWrite. dryRun is ignored by reads, as
// by kube-apiserver; actions (reviews, token requests) write nothing and
// answer as usual.

// writeOptionsKinds name the options kind whose validation a write's
// dryRun parameter fails, for the 422's details.
var writeOptionsKinds = map[string]string{"create": "CreateOptions", "update": "UpdateOptions", "patch": "PatchOptions"}

// parseDryRun reads a create's, update's or patch's dryRun parameter
// ("All" is the one value) into req.dryRun.
func parseDryRun(r *http.Request, req *request) *apiError {
	values := r.URL.Query()["dryRun"]
	kind, isWrite := writeOptionsKinds[req.verb]
	if !isWrite || len(values) == 0 {
		return nil
	}
	if errs := metav1validation.ValidateDryRun(field.NewPath("dryRun"), values); len(errs) > 0 {
		return toAPIError(apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: kind}, "", errs), nil, "")
	}
	req.dryRun = true
	return nil
}

// writeStore is the store a write of req goes to.
func (req *request) writeStore(store storage.Interface) storage.Interface {
	if req.dryRun {
		return storage.DryRun(store)
	}
	return store
}
