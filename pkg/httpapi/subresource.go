// The /status and /scale subresources: get, update and patch of a stored
// subresource, and the Scale of /scale read from and written to spec.replicas.

package httpapi

import (
	"encoding/json"
	"net/http"

	"github.com/watchcache/watchcache/pkg/apistatus"
	"github.com/watchcache/watchcache/pkg/encoding"
	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/pipeline"
	"github.com/watchcache/watchcache/pkg/resource"
	"github.com/watchcache/watchcache/pkg/storage"
	"github.com/watchcache/watchcache/pkg/strategy"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	kjson "sigs.k8s.io/json"
)

// hasStoredSubresource reports whether res serves sub from its own store:
// status (the object, of which only status is written), scale, a
// namespace's finalize (only spec.finalizers written) or a CSR's approval
// (only status.conditions written).
func hasStoredSubresource(res *resource.Resource, sub string) bool {
	return sub == "status" && res.Status || sub == "scale" && res.Scale || sub == "finalize" && res.Finalize ||
		sub == "approval" && res.Approval
}

// serveStoredSubresource answers get, update and patch of /status and
// /scale, and update of /finalize.
func (s *Server) serveStoredSubresource(w http.ResponseWriter, r *http.Request, req *request, store storage.Interface) {
	switch {
	case req.verb != "get" && req.verb != "update" && req.verb != "patch",
		req.subresource == "finalize" && req.verb != "update":
		apistatus.Write(w, apistatus.MethodNotAllowed(), req.res.Subject(req.name))
	case (req.subresource == "status" || req.subresource == "approval") && req.verb == "get":
		s.get(w, r, req, store)
	case req.subresource != "scale" && req.verb == "update":
		s.update(w, r, req, store)
	case req.subresource == "status" || req.subresource == "approval":
		s.patch(w, r, req, store)
	case req.verb == "get":
		obj, err := store.Get(r.Context(), req.key(), storage.GetOptions{ResourceVersion: r.URL.Query().Get("resourceVersion")})
		if err != nil {
			apistatus.Write(w, err, req.res.Subject(req.name))
			return
		}
		s.writeScale(w, req, obj)
	default:
		s.updateScale(w, r, req, store)
	}
}

// scaleKind is the Scale kind, for strategic merge patches of /scale.
var scaleKind = &resource.Resource{Kind: "Scale", StrategicMergeType: autoscalingv1.Scale{}}

// updateScale answers a PUT or PATCH of /scale: spec.replicas of the Scale
// becomes the object's, with the Scale's resourceVersion, if any, as a
// precondition.
func (s *Server) updateScale(w http.ResponseWriter, r *http.Request, req *request, store storage.Interface) {
	var patchType string
	if req.verb == "patch" {
		patchType = encoding.MediaType(r)
		if aerr := checkPatchType(patchType, scaleKind); aerr != nil {
			apistatus.Write(w, aerr, req.res.Subject(req.name))
			return
		}
	}
	var body []byte
	var aerr *apierrors.StatusError
	if req.verb == "patch" {
		body, aerr = encoding.ReadBody(r)
	} else {
		body, aerr = encoding.ReadJSONBody(r, "autoscaling", "Scale", true)
	}
	if aerr != nil {
		apistatus.Write(w, aerr, req.res.Subject(req.name))
		return
	}
	updated, err := s.pipeline.Update(r.Context(), store, req.key(), func(cur *object.Object) (*pipeline.Request, pipeline.Encoder, error) {
		scaleJSON := body
		if req.verb == "patch" {
			current, err := strategy.ScaleOf(req.res, cur.JSON())
			if err != nil {
				return nil, nil, err
			}
			doc, _ := json.Marshal(current)
			var aerr *apierrors.StatusError
			if scaleJSON, aerr = applyPatch(patchType, doc, body, scaleKind); aerr != nil {
				return nil, nil, aerr
			}
		}
		var scale autoscalingv1.Scale
		if err := json.Unmarshal(scaleJSON, &scale); err != nil {
			return nil, nil, apistatus.BadRequest("the request body is not a Scale: %v", err)
		}
		if scale.Spec.Replicas < 0 {
			return nil, nil, invalid(req.res, req.name, "spec.replicas", "Invalid value: "+jsonString(scale.Spec.Replicas)+": must be greater than or equal to 0")
		}
		if scale.ResourceVersion != "" && scale.ResourceVersion != storage.FormatResourceVersion(cur.ResourceVersion()) {
			return nil, nil, storage.NewError(storage.ErrConflict, cur.Key(), "the object has been modified; please apply your changes to the latest version and try again")
		}
		var obj map[string]any
		if err := kjson.UnmarshalCaseSensitivePreserveInts(cur.JSON(), &obj); err != nil {
			return nil, nil, err
		}
		strategy.SetReplicas(req.res, obj, scale.Spec.Replicas)
		// The object's update, as an update of its scale subresource (which
		// admission rules for the object alone do not select).
		return s.prepareUpdate(r.Context(), obj, nil, &request{verb: "update", res: req.res, namespace: req.namespace, name: req.name,
			subresource: "scale", dryRun: req.dryRun, manager: req.manager}, cur)
	})
	if err != nil {
		apistatus.Write(w, err, req.res.Subject(req.name))
		return
	}
	s.writeScale(w, req, updated)
}

// writeScale answers with obj's Scale.
func (s *Server) writeScale(w http.ResponseWriter, req *request, obj *object.Object) {
	scale, err := strategy.ScaleOf(req.res, obj.JSON())
	if err != nil {
		apistatus.Write(w, err, req.res.Subject(req.name))
		return
	}
	encoding.WriteValue(w, http.StatusOK, req.format, scale)
}

func jsonString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
