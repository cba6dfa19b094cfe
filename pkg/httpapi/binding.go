// pods/binding (and the bindings resource): a scheduler's assignment of a pod
// to a node, its PodScheduled condition, and kube-apiserver's wording of a
// failed binding.

package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/watchcache/watchcache/pkg/apistatus"
	"github.com/watchcache/watchcache/pkg/deletion"
	"github.com/watchcache/watchcache/pkg/encoding"
	"github.com/watchcache/watchcache/pkg/jsontree"
	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/storage"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kjson "sigs.k8s.io/json"
)

// bindingSubresource is pods/binding, a scheduler's way to assign a pod
// to a node.
const bindingSubresource = "binding"

// bind answers a POST of pods/binding, or of the bindings resource (the
// pod named by the Binding), as kube-apiserver's binding storage does: a
// pod not yet assigned and not being deleted gets the Binding's target
// node as spec.nodeName, the Binding's annotations, and the PodScheduled
// condition; the Binding's uid and resourceVersion, if set, are
// preconditions. The answer is a Success Status (201).
func (s *Server) bind(ctx context.Context, req ActionRequest) (any, error) {
	var b corev1.Binding
	if err := json.Unmarshal(req.Body, &b); err != nil {
		return nil, encoding.CannotHandle("Binding", "v1", "Binding", err)
	}
	switch {
	case req.Name == "" && b.Name == "":
		return nil, apistatus.BadRequest("Name parameter required.")
	case req.Name != "" && b.Name != req.Name:
		return nil, apistatus.BadRequest("name in URL does not match name in Binding object")
	case b.Namespace != "" && b.Namespace != req.Namespace:
		return nil, apistatus.BadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	var errs field.ErrorList
	if b.Target.Kind != "" && b.Target.Kind != "Node" {
		errs = append(errs, field.NotSupported(field.NewPath("target", "kind"), b.Target.Kind, []string{"Node", "<empty>"}))
	}
	if b.Target.Name == "" {
		errs = append(errs, field.Required(field.NewPath("target", "name"), ""))
	}
	if len(errs) > 0 {
		// kube-apiserver returns the errors as they are, not as an
		// Invalid Status: a 500 without a reason.
		return nil, apistatus.New(http.StatusInternalServerError, "", "%s", errs.ToAggregate())
	}
	var pre *storage.Preconditions
	if b.UID != "" || b.ResourceVersion != "" {
		pre = &storage.Preconditions{}
		if uid := string(b.UID); uid != "" {
			pre.UID = &uid
		}
		if rv := b.ResourceVersion; rv != "" {
			pre.ResourceVersion = &rv
		}
	}
	pods := s.registry.Lookup("", "v1", "pods")
	store := s.registry.Store(pods)
	if req.DryRun {
		store = storage.DryRun(store)
	}
	now := time.Now().UTC().Format(time.RFC3339)
	_, err := store.GuaranteedUpdate(ctx, pods.Key(req.Namespace, b.Name), pre, func(cur *object.Object) ([]byte, error) {
		if deletion.BeingDeleted(cur) {
			return nil, storage.NewError(storage.ErrConflict, cur.Key(), "pod %s is being deleted, cannot be assigned to a host", b.Name)
		}
		var pod map[string]any
		if err := kjson.UnmarshalCaseSensitivePreserveInts(cur.JSON(), &pod); err != nil {
			return nil, err
		}
		spec := jsontree.Child(pod, "spec")
		if node, _ := spec["nodeName"].(string); node != "" {
			return nil, storage.NewError(storage.ErrConflict, cur.Key(), "pod %s is already assigned to node %q", b.Name, node)
		}
		spec["nodeName"] = b.Target.Name
		meta := jsontree.Child(pod, "metadata")
		delete(meta, "resourceVersion")
		for k, v := range b.Annotations {
			jsontree.Child(meta, "annotations")[k] = v
		}
		setPodScheduled(jsontree.Child(pod, "status"), now)
		return pods.Encode(pod)
	}, nil)
	if err != nil {
		return nil, bindingError(err, b.Name)
	}
	return &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess, Code: http.StatusCreated}, nil
}

// setPodScheduled sets a pod status's PodScheduled condition to True.
func setPodScheduled(status map[string]any, now string) {
	conditions, _ := status["conditions"].([]any)
	cond := map[string]any{"type": "PodScheduled", "status": "True", "lastProbeTime": nil, "lastTransitionTime": now}
	for i, c := range conditions {
		if m, _ := c.(map[string]any); m["type"] == "PodScheduled" {
			conditions[i] = cond
			status["conditions"] = conditions
			return
		}
	}
	status["conditions"] = append(conditions, cond)
}

// bindingError is how kube-apiserver words a failed binding: a missing pod
// is a pod not found, a conflict one of pods/binding.
func bindingError(err error, name string) error {
	var se *storage.Error
	if !errors.As(err, &se) {
		return err
	}
	switch se.Code {
	case storage.ErrNotFound:
		return apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, name)
	case storage.ErrConflict:
		return apierrors.NewConflict(schema.GroupResource{Resource: "pods/binding"}, name, errors.New(se.Message))
	}
	return err
}
