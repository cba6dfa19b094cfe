// The query of a write: CreateOptions, UpdateOptions and PatchOptions
// (dryRun, fieldManager, force) checked, and the store a write
// goes to (a dry run's store writes nothing).

package httpapi

import (
	"net/http"

	"github.com/watchcache/watchcache/pkg/apistatus"
	"github.com/watchcache/watchcache/pkg/apply"
	"github.com/watchcache/watchcache/pkg/encoding"
	"github.com/watchcache/watchcache/pkg/storage"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// dryRun=All: a write is decoded, defaulted, validated and admitted as
// usual, against a store that writes nothing (storage.DryRun), and
// answered with the object as it would have been stored. Nothing is
// written, so no committed stage of the pipeline is told. dryRun is ignored
// by reads, as by kube-apiserver; actions (reviews, token requests) write nothing and
// answer as usual.

// writeOptionsKinds name the options kind whose validation a write's
// parameters fail, for the 422's details.
var writeOptionsKinds = map[string]string{"create": "CreateOptions", "update": "UpdateOptions", "patch": "PatchOptions"}

// parseWriteOptions reads and checks a create's, update's or patch's
// parameters as kube-apiserver validates its CreateOptions, UpdateOptions
// and PatchOptions: dryRun ("All" is the one value) into req.dryRun,
// fieldManager (required for an apply; else taken from the User-Agent)
// into req.manager, force (for an apply only) into req.force.
func parseWriteOptions(r *http.Request, req *request) *apierrors.StatusError {
	kind, isWrite := writeOptionsKinds[req.verb]
	if !isWrite {
		return nil
	}
	q := r.URL.Query()
	opts := metav1.PatchOptions{DryRun: q["dryRun"], FieldManager: q.Get("fieldManager")}
	if f := q.Get("force"); f != "" {
		force := f == "true"
		opts.Force = &force
	}
	var errs field.ErrorList
	if req.verb == "patch" {
		errs = metav1validation.ValidatePatchOptions(&opts, types.PatchType(encoding.MediaType(r)))
	} else {
		errs = append(metav1validation.ValidateDryRun(field.NewPath("dryRun"), opts.DryRun),
			metav1validation.ValidateFieldManager(opts.FieldManager, field.NewPath("fieldManager"))...)
	}
	if len(errs) > 0 {
		return apistatus.From(apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: kind}, "", errs), apistatus.Subject{})
	}
	req.dryRun = len(opts.DryRun) > 0
	req.manager = apply.ManagerName(opts.FieldManager, r.UserAgent())
	req.force = opts.Force != nil && *opts.Force
	return nil
}

// writeStore is the store a write of req goes to.
func (req *request) writeStore(store storage.Interface) storage.Interface {
	if req.dryRun {
		return storage.DryRun(store)
	}
	return store
}
