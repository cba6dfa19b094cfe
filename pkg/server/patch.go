package server

import (
	"net/http"

	"github.com/watchcache/watchcache/pkg/resource"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// The patch media types.
const (
	jsonPatchType      = "application/json-patch+json"
	mergePatchType     = "application/merge-patch+json"
	strategicPatchType = "application/strategic-merge-patch+json"
)

// checkPatchType accepts JSON patch and merge patch for every resource and
// strategic merge patch for built-in kinds (custom resources have no patch
// strategy, so kube-apiserver answers 415 for them too).
func checkPatchType(mt string, res *resource.Resource) *apiError {
	switch {
	case mt == jsonPatchType, mt == mergePatchType:
		return nil
	case mt == strategicPatchType && res.StrategicMergeType != nil:
		return nil
	}
	supported := jsonPatchType + ", " + mergePatchType + ", " + applyPatchType
	if res.StrategicMergeType != nil {
		supported += ", " + strategicPatchType
	}
	return newAPIError(http.StatusUnsupportedMediaType, metav1.StatusReasonUnsupportedMediaType,
		"the body of the request was in an unknown format - accepted media types include: %s", supported)
}

// applyPatch applies a patch of the given media type to an object's JSON.
func applyPatch(mt string, doc, patch []byte, res *resource.Resource) ([]byte, *apiError) {
	var out []byte
	var err error
	switch mt {
	case jsonPatchType:
		p, derr := jsonpatch.DecodePatch(patch)
		if derr != nil {
			return nil, badRequest("the JSON patch is malformed: %v", derr)
		}
		out, err = p.Apply(doc)
	case mergePatchType:
		out, err = jsonpatch.MergePatch(doc, patch)
	case strategicPatchType:
		out, err = strategicpatch.StrategicMergePatch(doc, patch, res.StrategicMergeType)
	}
	if err != nil {
		return nil, newAPIError(http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, "the patch could not be applied: %v", err)
	}
	return out, nil
}
