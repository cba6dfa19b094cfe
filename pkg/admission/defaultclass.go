// The DefaultStorageClass and DefaultIngressClass plugins: a new
// PersistentVolumeClaim or Ingress that names no class gets the class
// annotated as the default.

package admission

import (
	"context"
	"slices"
	"strings"

	"github.com/watchcache/watchcache/pkg/jsontree"
	"github.com/watchcache/watchcache/pkg/pipeline"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The DefaultStorageClass and DefaultIngressClass plugins: a new object
// that names no class gets the default class, the newest of those
// annotated as the default (on a tie, the first by name).

// classDefaulting is how a kind's objects name their class.
type classDefaulting struct {
	group, plural string // the classes' resource
	// defaultAnnotations are the annotations that, "true", make a class a
	// default.
	defaultAnnotations []string
	// field is the object's spec field naming its class; an object with
	// classAnnotation names its class by it.
	field, classAnnotation string
}

// storageClassDefaulting: a PersistentVolumeClaim's StorageClass.
var storageClassDefaulting = classDefaulting{
	group: "storage.k8s.io", plural: "storageclasses",
	defaultAnnotations: []string{"storageclass.kubernetes.io/is-default-class", "storageclass.beta.kubernetes.io/is-default-class"},
	field:              "storageClassName", classAnnotation: "volume.beta.kubernetes.io/storage-class",
}

// ingressClassDefaulting: an Ingress's IngressClass.
var ingressClassDefaulting = classDefaulting{
	group: "networking.k8s.io", plural: "ingressclasses",
	defaultAnnotations: []string{"ingressclass.kubernetes.io/is-default-class"},
	field:              "ingressClassName", classAnnotation: "kubernetes.io/ingress.class",
}

// defaultClassOf gives a new object that names no class the default class
// of d, if there is one.
func defaultClassOf(d classDefaulting) func(ctx context.Context, b *Builtin, req *pipeline.Request) error {
	return func(ctx context.Context, b *Builtin, req *pipeline.Request) error {
		spec := jsontree.Child(req.Object, "spec")
		meta, _ := req.Object["metadata"].(map[string]any)
		annotations, _ := meta["annotations"].(map[string]any)
		if _, named := annotations[d.classAnnotation]; named {
			return nil
		}
		if _, named := spec[d.field]; named {
			return nil
		}
		var classes []metav1.PartialObjectMetadata
		if err := b.list(ctx, d.group, d.plural, "", &classes); err != nil {
			return err
		}
		if name := d.defaultClass(classes); name != "" {
			spec[d.field] = name
		}
		return nil
	}
}

// defaultClass is the name of the default among classes ("" if none).
func (d classDefaulting) defaultClass(classes []metav1.PartialObjectMetadata) string {
	defaults := slices.DeleteFunc(classes, func(c metav1.PartialObjectMetadata) bool {
		return !slices.ContainsFunc(d.defaultAnnotations, func(a string) bool { return c.Annotations[a] == "true" })
	})
	if len(defaults) == 0 {
		return ""
	}
	newest := slices.MinFunc(defaults, func(a, b metav1.PartialObjectMetadata) int {
		if c := b.CreationTimestamp.Compare(a.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return newest.Name
}
