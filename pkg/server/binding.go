package server

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/watchcache/watchcache/pkg/jsonmap"
	"github.com/watchcache/watchcache/pkg/lifecycle"
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

// bind answers a POST of pods/binding as kube-apiserver's binding storage
// does: a pod not yet assigned and not being deleted gets the Binding's
// target node as spec.nodeName, the Binding's annotations, and the
// PodScheduled condition; the answer is a Success Status (201).
func (s *Server) bind(ctx context.Context, req ActionRequest) (any, error) {
	var b corev1.Binding
	if err := json.Unmarshal(req.Body, &b); err != nil {
		return nil, badRequest("the request body is not a valid Binding: %v", err)
	}
	if b.Name != "" && b.Name != req.Name {
		return nil, badRequest("name in the Binding (%s) does not match the pod's (%s)", b.Name, req.Name)
	}
	var errs field.ErrorList
	if b.Target.Name == "" {
		errs = append(errs, field.Required(field.NewPath("target", "name"), ""))
	}
	if b.Target.Kind != "" && b.Target.Kind != "Node" {
		errs = append(errs, field.NotSupported(field.NewPath("target", "kind"), b.Target.Kind, []string{"Node", "<empty>"}))
	}
	if len(errs) > 0 {
		return nil, apierrors.NewInvalid(schema.GroupKind{Kind: "Binding"}, req.Name, errs)
	}
	pods := s.registry.Lookup("", "v1", "pods")
	store := s.registry.Store(pods)
	if req.DryRun {
		store = storage.DryRun(store)
	}
	now := time.Now().UTC().Format(time.RFC3339)
	_, err := store.GuaranteedUpdate(ctx, pods.Key(req.Namespace, req.Name), nil, func(cur *object.Object) ([]byte, error) {
		if lifecycle.BeingDeleted(cur) {
			return nil, storage.NewError(storage.ErrConflict, cur.Key(), "pod %s is being deleted, cannot be assigned to a host", req.Name)
		}
		var pod map[string]any
		if err := kjson.UnmarshalCaseSensitivePreserveInts(cur.JSON(), &pod); err != nil {
			return nil, err
		}
		spec := jsonmap.Child(pod, "spec")
		if node, _ := spec["nodeName"].(string); node != "" {
			return nil, storage.NewError(storage.ErrConflict, cur.Key(), "pod %s is already assigned to node %q", req.Name, node)
		}
		spec["nodeName"] = b.Target.Name
		meta := jsonmap.Child(pod, "metadata")
		delete(meta, "resourceVersion")
		for k, v := range b.Annotations {
			jsonmap.Child(meta, "annotations")[k] = v
		}
		setPodScheduled(jsonmap.Child(pod, "status"), now)
		return encodeObject(pods, pod)
	}, nil)
	if err != nil {
		return nil, err
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
