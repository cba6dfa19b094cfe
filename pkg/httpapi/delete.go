// DELETE of one object and of a collection: DeleteOptions from the query and
// body, system objects that may not be deleted (namespaces, PriorityClasses),
// the pipeline's Delete.

package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"time"

	"github.com/watchcache/watchcache/pkg/apistatus"
	"github.com/watchcache/watchcache/pkg/encoding"
	"github.com/watchcache/watchcache/pkg/storage"
	"github.com/watchcache/watchcache/pkg/strategy"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// SystemNamespaces exist from the start and may not be deleted, as in
// kube-apiserver.
var SystemNamespaces = []string{"default", "kube-system", "kube-public", "kube-node-lease"}

// SystemPriorityClasses exist from the start and may not be deleted, as in
// kube-apiserver (a deletecollection deletes them there too).
var SystemPriorityClasses = []schedulingv1.PriorityClass{
	systemPriorityClass("system-node-critical", 2000001000, "Used for system critical pods that must not be moved from their current node."),
	systemPriorityClass("system-cluster-critical", 2000000000,
		"Used for system critical pods that must run in the cluster, but can be moved to another node if necessary."),
}

// systemPriorityClass is a system PriorityClass as kube-apiserver makes it.
func systemPriorityClass(name string, value int32, description string) schedulingv1.PriorityClass {
	policy := corev1.PreemptLowerPriority
	return schedulingv1.PriorityClass{TypeMeta: metav1.TypeMeta{APIVersion: "scheduling.k8s.io/v1", Kind: "PriorityClass"},
		ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value, Description: description, PreemptionPolicy: &policy}
}

// undeletable are the objects a delete may not remove, by "group/plural":
// their names and kube-apiserver's reason.
var undeletable = map[string]struct {
	names  []string
	reason string
}{
	"/namespaces": {SystemNamespaces, "this namespace may not be deleted"},
	"scheduling.k8s.io/priorityclasses": {
		[]string{SystemPriorityClasses[0].Name, SystemPriorityClasses[1].Name}, "this is a system priority class and cannot be deleted"},
}

func (s *Server) delete(w http.ResponseWriter, r *http.Request, req *request, store storage.Interface) {
	opts, aerr := readDeleteOptions(r)
	if aerr != nil {
		apistatus.Write(w, aerr, req.res.Subject(req.name))
		return
	}
	if u, ok := undeletable[req.res.Group+"/"+req.res.Plural]; ok && slices.Contains(u.names, req.name) {
		apistatus.Write(w, apierrors.NewForbidden(schema.GroupResource{Group: req.res.Group, Resource: req.res.Plural}, req.name, errors.New(u.reason)), req.res.Subject(req.name))
		return
	}
	req.dryRun = opts.dryRun
	deleted, err := s.pipeline.Delete(r.Context(), req.writeStore(store), req.key(),
		admissionRequest(r.Context(), req, admissionv1.Delete, req.name, nil, nil), opts.pre, opts.deletion)
	if err != nil {
		apistatus.Write(w, err, req.res.Subject(req.name))
		return
	}
	s.writeObject(w, req, http.StatusOK, deleted)
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
func readDeleteOptions(r *http.Request) (deleteOptions, *apierrors.StatusError) {
	out := deleteOptions{deletion: strategy.Deletion{Now: time.Now()}}
	var opts metav1.DeleteOptions
	query := r.URL.Query()
	if err := metav1.Convert_url_Values_To_v1_DeleteOptions(&query, &opts, nil); err != nil {
		return out, apistatus.BadRequest("the query parameters are not valid DeleteOptions: %v", err)
	}
	body, aerr := encoding.ReadBody(r)
	if aerr != nil {
		return out, aerr
	}
	if len(body) > 0 {
		if encoding.MediaType(r) == encoding.ProtobufType {
			if _, _, err := encoding.ProtobufDecoder.Decode(body, nil, &opts); err != nil {
				return out, apistatus.BadRequest("the request body is not valid DeleteOptions: %v", err)
			}
		} else if err := json.Unmarshal(body, &opts); err != nil {
			return out, apistatus.BadRequest("the request body is not valid DeleteOptions: %v", err)
		}
	}
	if errs := metav1validation.ValidateDeleteOptions(&opts); len(errs) > 0 {
		return out, apistatus.From(apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "DeleteOptions"}, "", errs), apistatus.Subject{})
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
	p, aerr := parseListParams(r.URL.Query(), req.res, s.sharding)
	if aerr != nil {
		apistatus.Write(w, aerr, req.res.Subject(""))
		return
	}
	opts, aerr := readDeleteOptions(r)
	if aerr != nil {
		apistatus.Write(w, aerr, req.res.Subject(""))
		return
	}
	req.dryRun = opts.dryRun
	deleted, err := s.pipeline.DeleteCollection(r.Context(), req.writeStore(store), req.scope(), p.opts,
		admissionRequest(r.Context(), req, admissionv1.Delete, "", nil, nil), opts.deletion)
	if err != nil {
		apistatus.Write(w, err, req.res.Subject(""))
		return
	}
	s.writeList(w, req, deleted)
}
