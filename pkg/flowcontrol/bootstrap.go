// The bootstrap configuration: kube-apiserver's mandatory and suggested
// FlowSchemas and PriorityLevelConfigurations (bootstrap.json, recorded
// from kube-apiserver 1.37), kept in the stores as its
// priority-and-fairness-config-producer keeps them.

package flowcontrol

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"reflect"
	"time"

	"github.com/watchcache/watchcache/pkg/jsontree"
	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/resource"
	"github.com/watchcache/watchcache/pkg/storage"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
)

//go:embed bootstrap.json
var bootstrapJSON []byte

// autoUpdateAnnotation on a bootstrap object says whether the server keeps
// its spec as the bootstrap configuration's ("true") or leaves it to its
// users ("false").
const autoUpdateAnnotation = flowcontrolv1.AutoUpdateAnnotationKey

// mandatory are the objects the server restores whatever a user did to
// them (kube-apiserver's mandatory configuration: the exempt and
// catch-all FlowSchemas and priority levels); the others are suggested.
var mandatory = map[string]bool{flowcontrolv1.FlowSchemaNameExempt: true, flowcontrolv1.FlowSchemaNameCatchAll: true}

// bootstrapObject is one object of bootstrap.json.
type bootstrapObject struct {
	Kind     string            `json:"kind"`
	Metadata metav1.ObjectMeta `json:"metadata"`
	Spec     json.RawMessage   `json:"spec"`
	raw      map[string]any
}

// bootstrap is bootstrap.json decoded: FlowSchemas and priority levels.
type bootstrap struct {
	flowSchemas    []flowcontrolv1.FlowSchema
	priorityLevels []flowcontrolv1.PriorityLevelConfiguration
	objects        []bootstrapObject
}

func loadBootstrap() (*bootstrap, error) {
	var file struct {
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(bootstrapJSON, &file); err != nil {
		return nil, fmt.Errorf("bootstrap.json: %w", err)
	}
	b := &bootstrap{}
	for _, item := range file.Items {
		var o bootstrapObject
		if err := json.Unmarshal(item, &o); err != nil {
			return nil, err
		}
		if err := json.Unmarshal(item, &o.raw); err != nil {
			return nil, err
		}
		b.objects = append(b.objects, o)
		switch o.Kind {
		case "FlowSchema":
			var fs flowcontrolv1.FlowSchema
			if err := json.Unmarshal(item, &fs); err != nil {
				return nil, err
			}
			b.flowSchemas = append(b.flowSchemas, fs)
		case "PriorityLevelConfiguration":
			var pl flowcontrolv1.PriorityLevelConfiguration
			if err := json.Unmarshal(item, &pl); err != nil {
				return nil, err
			}
			b.priorityLevels = append(b.priorityLevels, pl)
		default:
			return nil, fmt.Errorf("bootstrap.json: unexpected kind %q", o.Kind)
		}
	}
	return b, nil
}

// kindStore is one of the two kinds' resource (for its encoding) and store.
type kindStore struct {
	res   *resource.Resource
	store storage.Interface
}

// ensure creates the bootstrap objects that are missing and updates those
// the server keeps (see ensureOne); it is idempotent: a second run writes
// nothing.
func (b *bootstrap) ensure(ctx context.Context, flowSchemas, priorityLevels kindStore) error {
	for _, o := range b.objects {
		ks := flowSchemas
		if o.Kind == "PriorityLevelConfiguration" {
			ks = priorityLevels
		}
		if err := ensureOne(ctx, ks, o); err != nil {
			return fmt.Errorf("%s %s: %w", o.Kind, o.Metadata.Name, err)
		}
	}
	return nil
}

// ensureOne creates o if it is missing. An existing object gets o's spec
// and autoupdate annotation "true" if it is mandatory, or if it is
// suggested and its users have not taken it over: its annotation is
// "true", or, without the annotation, it was never changed (generation 1),
// as kube-apiserver decides.
func ensureOne(ctx context.Context, ks kindStore, o bootstrapObject) error {
	name := o.Metadata.Name
	_, err := ks.store.GuaranteedUpdate(ctx, name, nil, func(cur *object.Object) ([]byte, error) {
		var obj map[string]any
		if err := json.Unmarshal(cur.Stored(), &obj); err != nil {
			return nil, err
		}
		meta := jsontree.Child(obj, "metadata")
		annotations, _ := meta["annotations"].(map[string]any)
		value, annotated := annotations[autoUpdateAnnotation].(string)
		generation, _ := meta["generation"].(float64)
		if !mandatory[name] && (annotated && value != "true" || !annotated && generation != 1) {
			return cur.Stored(), nil // the users' now
		}
		var want any
		if err := json.Unmarshal(o.Spec, &want); err != nil {
			return nil, err
		}
		if reflect.DeepEqual(obj["spec"], want) && value == "true" {
			return cur.Stored(), nil
		}
		if !reflect.DeepEqual(obj["spec"], want) {
			obj["spec"] = want
			meta["generation"] = generation + 1
		}
		jsontree.Child(meta, "annotations")[autoUpdateAnnotation] = "true"
		return ks.res.Encode(obj)
	}, nil)
	if storage.CodeOf(err) != storage.ErrNotFound {
		return err
	}
	obj := jsontree.DeepCopy(o.raw).(map[string]any)
	meta := obj["metadata"].(map[string]any)
	meta["uid"] = string(uuid.NewUUID())
	meta["creationTimestamp"] = time.Now().UTC().Format(time.RFC3339)
	meta["generation"] = 1
	data, err := ks.res.Encode(obj)
	if err != nil {
		return err
	}
	if _, err := ks.store.Create(ctx, name, data); err != nil && storage.CodeOf(err) != storage.ErrAlreadyExists {
		return err
	}
	return nil
}
