package server

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"time"

	"github.com/watchcache/watchcache/pkg/lifecycle"
	"github.com/watchcache/watchcache/pkg/storage"
	"github.com/watchcache/watchcache/pkg/strategy"
	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kjson "sigs.k8s.io/json"
)

// SystemNamespaces exist from the start and may not be deleted, as in
// kube-apiserver.
var SystemNamespaces = []string{"default", "kube-system", "kube-public", "kube-node-lease"}

func (s *Server) delete(w http.ResponseWriter, r *http.Request, req *request, store storage.Interface) {
	opts, aerr := readDeleteOptions(r)
	if aerr != nil {
		writeError(w, aerr, req.res, req.name)
		return
	}
	if req.res == s.namespaces && slices.Contains(SystemNamespaces, req.name) {
		writeError(w, newAPIError(http.StatusForbidden, metav1.StatusReasonForbidden, "namespaces %q is forbidden: this namespace may not be deleted", req.name), req.res, req.name)
		return
	}
	req.dryRun = opts.dryRun
	if err := s.admitDelete(r.Context(), req, store); err != nil {
		writeError(w, err, req.res, req.name)
		return
	}
	deleted, err := lifecycle.Delete(r.Context(), req.res, req.writeStore(store), req.key(), opts.pre, opts.deletion, nil)
	if err != nil {
		writeError(w, err, req.res, req.name)
		return
	}
	s.written(r.Context(), req, deleted)
	writeRaw(w, http.StatusOK, deleted.JSON())
}

// deleteOptions is what a delete's DeleteOptions ask.
type deleteOptions struct {
	pre      *storage.Preconditions
	deletion strategy.Deletion
	dryRun   bool
}

// readDeleteOptions reads a delete's DeleteOptions: its query parameters
// (gracePeriodSeconds, propagationPolicy, ... as kubectl may send them),
// then its optional body, validated as kube-apiserver validates them.
func readDeleteOptions(r *http.Request) (deleteOptions, *apiError) {
	out := deleteOptions{deletion: strategy.Deletion{Now: time.Now()}}
	var opts metav1.DeleteOptions
	query := r.URL.Query()
	if err := metav1.Convert_url_Values_To_v1_DeleteOptions(&query, &opts, nil); err != nil {
		return out, badRequest("the query parameters are not valid DeleteOptions: %v", err)
	}
	body, aerr := readBody(r)
	if aerr != nil {
		return out, aerr
	}
	if len(body) > 0 {
		if mediaType(r) == protobufType {
			if _, _, err := protobufDecoder.Decode(body, nil, &opts); err != nil {
				return out, badRequest("the request body is not valid DeleteOptions: %v", err)
			}
		} else if err := json.Unmarshal(body, &opts); err != nil {
			return out, badRequest("the request body is not valid DeleteOptions: %v", err)
		}
	}
	if errs := metav1validation.ValidateDeleteOptions(&opts); len(errs) > 0 {
		return out, toAPIError(apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "DeleteOptions"}, "", errs), nil, "")
	}
	out.dryRun = len(opts.DryRun) > 0 // validated: All
	out.deletion.GracePeriodSeconds = opts.GracePeriodSeconds
	out.deletion.Propagation = opts.PropagationPolicy
	out.deletion.OrphanDependents = opts.OrphanDependents //nolint:staticcheck // still honored, as by kube-apiserver
	if opts.Preconditions != nil {
		out.pre = &storage.Preconditions{ResourceVersion: opts.Preconditions.ResourceVersion}
		if opts.Preconditions.UID != nil {
			uid := string(*opts.Preconditions.UID)
			out.pre.UID = &uid
		}
	}
	return out, nil
}

func (s *Server) deleteCollection(w http.ResponseWriter, r *http.Request, req *request, store storage.Interface) {
	p, aerr := parseListParams(r.URL.Query(), s.sharding)
	if aerr != nil {
		writeError(w, aerr, req.res, "")
		return
	}
	opts, aerr := readDeleteOptions(r)
	if aerr != nil {
		writeError(w, aerr, req.res, "")
		return
	}
	req.dryRun = opts.dryRun
	deleted, err := lifecycle.DeleteAll(r.Context(), req.res, req.writeStore(store), req.scope(), p.opts, opts.deletion)
	if err != nil {
		writeError(w, err, req.res, "")
		return
	}
	s.wroteAt(r.Context(), req, deleted.ResourceVersion)
	writeList(w, req.res.ListKind(), req.res.GroupVersion(), deleted)
}

// admitDelete asks the validating webhooks and admission policies about a
// delete, with the object's current state (a consistent read: an object
// created just before must be seen) as oldObject; a missing object is left
// to the delete's own NotFound.
func (s *Server) admitDelete(ctx context.Context, req *request, store storage.Interface) error {
	if s.webhooks == nil {
		return nil
	}
	cur, err := store.Get(ctx, req.key(), storage.GetOptions{})
	if err != nil {
		return nil
	}
	var old map[string]any
	if err := kjson.UnmarshalCaseSensitivePreserveInts(cur.JSON(), &old); err != nil {
		return err
	}
	return s.validateByWebhooks(ctx, req, admissionv1.Delete, req.name, nil, old)
}
