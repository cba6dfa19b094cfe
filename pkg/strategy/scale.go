// The scale subresource's Scale of a stored object (built-in kinds and
// custom resources' scale paths) and setting an object's replicas.

package strategy

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/watchcache/watchcache/pkg/jsontree"
	"github.com/watchcache/watchcache/pkg/resource"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	kjson "sigs.k8s.io/json"
)

// defaultReplicas is spec.replicas when absent, as the kinds with a scale
// subresource default it.
const defaultReplicas = 1

// scaled is the part of a scalable object the scale subresource reads.
type scaled struct {
	Metadata metav1.ObjectMeta `json:"metadata"`
	Spec     struct {
		Replicas *int32          `json:"replicas"`
		Selector json.RawMessage `json:"selector"`
	} `json:"spec"`
	Status struct {
		Replicas int32 `json:"replicas"`
	} `json:"status"`
}

// ScaleOf is the autoscaling/v1 Scale of a stored object (its JSON):
// spec.replicas, status.replicas and the label selector as a string. The
// selector of a ReplicationController (core group) is a map of labels; the
// apps kinds' is a LabelSelector.
func ScaleOf(res *resource.Resource, objJSON []byte) (*autoscalingv1.Scale, error) {
	if res.ScalePaths != nil {
		return customScaleOf(res, objJSON)
	}
	var o scaled
	if err := json.Unmarshal(objJSON, &o); err != nil {
		return nil, fmt.Errorf("reading %s for its scale: %w", res.Kind, err)
	}
	selector, err := selectorString(res, o.Spec.Selector)
	if err != nil {
		return nil, err
	}
	replicas := int32(defaultReplicas)
	if o.Spec.Replicas != nil {
		replicas = *o.Spec.Replicas
	}
	return &autoscalingv1.Scale{
		TypeMeta: metav1.TypeMeta{APIVersion: "autoscaling/v1", Kind: "Scale"},
		ObjectMeta: metav1.ObjectMeta{Name: o.Metadata.Name, Namespace: o.Metadata.Namespace, UID: o.Metadata.UID,
			ResourceVersion: o.Metadata.ResourceVersion, CreationTimestamp: o.Metadata.CreationTimestamp},
		Spec:   autoscalingv1.ScaleSpec{Replicas: replicas},
		Status: autoscalingv1.ScaleStatus{Replicas: o.Status.Replicas, Selector: selector},
	}, nil
}

func selectorString(res *resource.Resource, raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	if res.Group == "" {
		var set map[string]string
		if err := json.Unmarshal(raw, &set); err != nil {
			return "", fmt.Errorf("spec.selector: %w", err)
		}
		return labels.SelectorFromSet(set).String(), nil
	}
	var ls metav1.LabelSelector
	if err := json.Unmarshal(raw, &ls); err != nil {
		return "", fmt.Errorf("spec.selector: %w", err)
	}
	sel, err := metav1.LabelSelectorAsSelector(&ls)
	if err != nil {
		return "", fmt.Errorf("spec.selector: %w", err)
	}
	return sel.String(), nil
}

// customScaleOf is the Scale of a custom resource, from the paths of its
// definition (absent replicas are 0, as kube-apiserver shows them).
func customScaleOf(res *resource.Resource, objJSON []byte) (*autoscalingv1.Scale, error) {
	var obj map[string]any
	if err := kjson.UnmarshalCaseSensitivePreserveInts(objJSON, &obj); err != nil {
		return nil, fmt.Errorf("reading %s for its scale: %w", res.Kind, err)
	}
	var meta metav1.ObjectMeta
	data, _ := json.Marshal(obj["metadata"])
	json.Unmarshal(data, &meta)
	replicas := func(path string) int32 {
		v, _ := lookup(obj, strings.Split(path, "."))
		n, _ := v.(int64)
		return int32(n)
	}
	scale := &autoscalingv1.Scale{
		TypeMeta: metav1.TypeMeta{APIVersion: "autoscaling/v1", Kind: "Scale"},
		ObjectMeta: metav1.ObjectMeta{Name: meta.Name, Namespace: meta.Namespace, UID: meta.UID,
			ResourceVersion: meta.ResourceVersion, CreationTimestamp: meta.CreationTimestamp},
		Spec:   autoscalingv1.ScaleSpec{Replicas: replicas(res.ScalePaths.SpecReplicas)},
		Status: autoscalingv1.ScaleStatus{Replicas: replicas(res.ScalePaths.StatusReplicas)},
	}
	if p := res.ScalePaths.LabelSelector; p != "" {
		v, _ := lookup(obj, strings.Split(p, "."))
		scale.Status.Selector, _ = v.(string)
	}
	return scale, nil
}

// SetReplicas sets obj's desired replicas (spec.replicas, or a custom
// resource's specReplicasPath), as an update of the scale subresource
// does; everything else stays.
func SetReplicas(res *resource.Resource, obj map[string]any, replicas int32) {
	path := []string{"spec", "replicas"}
	if res.ScalePaths != nil {
		path = strings.Split(res.ScalePaths.SpecReplicas, ".")
	}
	m := obj
	for _, name := range path[:len(path)-1] {
		m = jsontree.Child(m, name)
	}
	m[path[len(path)-1]] = int64(replicas)
}
