// The built-in admission plugins of kube-apiserver 1.37 that this server runs
// (LimitRanger, ServiceAccount, NodeRestriction, Priority, DefaultStorageClass,
// DefaultIngressClass), their
// mutating and validating phases, the 403 of a refusal, and the reads of
// other objects (from the watch cache) that the plugins need.

package admission

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/watchcache/watchcache/pkg/pipeline"
	"github.com/watchcache/watchcache/pkg/resource"
	"github.com/watchcache/watchcache/pkg/storage"
	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Builtin runs the default admission plugins of kube-apiserver 1.37 that
// decide from other objects, read from Registry's stores (the watch
// cache): LimitRanger (limitranger.go), ServiceAccount
// (serviceaccount.go), Priority
// (priority.go), DefaultStorageClass and DefaultIngressClass
// (defaultclass.go), those of Plugins (nil: kube-apiserver's defaults). The
// defaults of the plugins that need no other object
// (DefaultTolerationSeconds) are in package defaults; ResourceQuota is a
// stage of its own (quota.go). Not here: PodSecurity, RuntimeClass, the
// LimitRanger's PersistentVolumeClaim limits and pod-level resources.
type Builtin struct {
	Registry *resource.Registry
	Plugins  Plugins
}

// plugin is what one default admission plugin does to writes of one
// resource: admit changes or refuses a new object (the mutating phase,
// before the kind's strategy and validation), validate refuses a create
// or an update (the validating phase, after validation, before the
// admission policies and webhooks).
type plugin struct {
	name     string
	resource string // "group/plural"
	admit    func(ctx context.Context, b *Builtin, req *pipeline.Request) error
	validate func(ctx context.Context, b *Builtin, req *pipeline.Request) error
}

// plugins are the plugins, in kube-apiserver's order.
var plugins = []plugin{
	{name: LimitRangerPlugin, resource: "/pods", admit: defaultContainerResources, validate: enforceLimitRanges},
	{name: ServiceAccountPlugin, resource: "/pods", admit: admitServiceAccount, validate: validateServiceAccount},
	{name: PriorityPlugin, resource: "/pods", admit: resolvePriority},
	{name: PriorityPlugin, resource: "scheduling.k8s.io/priorityclasses", validate: oneGlobalDefault},
	{name: DefaultStorageClassPlugin, resource: "/persistentvolumeclaims", admit: defaultClassOf(storageClassDefaulting)},
	{name: DefaultIngressClassPlugin, resource: "networking.k8s.io/ingresses", admit: defaultClassOf(ingressClassDefaulting)},
}

// admit runs the plugins' mutating phase on a create, changing
// req.Object, its messages naming the object as the request did
// (req.GivenName: a generateName not yet completed).
func (b *Builtin) admit(ctx context.Context, req *pipeline.Request) error {
	if req.Operation != admissionv1.Create {
		return nil
	}
	given := *req
	given.Name = req.GivenName
	return b.run(ctx, &given, func(p *plugin) func(context.Context, *Builtin, *pipeline.Request) error { return p.admit })
}

// validate runs the plugins' validating phase on a create or an update.
func (b *Builtin) validate(ctx context.Context, req *pipeline.Request) error {
	if req.Operation == admissionv1.Delete {
		return nil
	}
	return b.run(ctx, req, func(p *plugin) func(context.Context, *Builtin, *pipeline.Request) error { return p.validate })
}

func (b *Builtin) run(ctx context.Context, req *pipeline.Request, phase func(*plugin) func(context.Context, *Builtin, *pipeline.Request) error) error {
	if req.Subresource != "" {
		return nil
	}
	key := req.Resource.Group + "/" + req.Resource.Plural
	for i := range plugins {
		if fn := phase(&plugins[i]); fn != nil && plugins[i].resource == key && b.on(plugins[i].name) {
			if err := fn(ctx, b, req); err != nil {
				return err
			}
		}
	}
	return nil
}

// on reports whether the plugin name runs.
func (b *Builtin) on(name string) bool {
	if b.Plugins == nil {
		return kubeAPIServerPlugins[name]
	}
	return b.Plugins[name]
}

// forbidden is a plugin's refusal of req: 403 Forbidden, "<resource>
// "<name>" is forbidden: <err>".
func forbidden(req *pipeline.Request, err error) error {
	return apierrors.NewForbidden(schema.GroupResource{Group: req.Resource.Group, Resource: req.Resource.Plural}, req.Name, err)
}

// list decodes into out (a pointer to a slice) the objects of resource
// group/v1/plural in namespace (all: "") as the watch cache has them;
// none if the resource is not served.
func (b *Builtin) list(ctx context.Context, group, plural, namespace string, out any) error {
	return listObjects(ctx, b.Registry, b.Registry.Lookup(group, "v1", plural), namespace, out)
}

// get decodes into out the object group/v1/plural named name, read from
// the watch cache and, if it has none, consistently (an object created
// just before is found, as kube-apiserver's lookups after an informer
// miss find it); found is false if there is none.
func (b *Builtin) get(ctx context.Context, group, plural, name string, out any) (found bool, err error) {
	return b.getIn(ctx, group, plural, "", name, out)
}

// getIn is get of an object in namespace.
func (b *Builtin) getIn(ctx context.Context, group, plural, namespace, name string, out any) (found bool, err error) {
	res := b.Registry.Lookup(group, "v1", plural)
	store := b.Registry.Store(res)
	if store == nil {
		return false, nil
	}
	obj, err := store.Get(ctx, res.Key(namespace, name), storage.GetOptions{ResourceVersion: "0"})
	if storage.CodeOf(err) == storage.ErrNotFound {
		obj, err = store.Get(ctx, res.Key(namespace, name), storage.GetOptions{})
	}
	if storage.CodeOf(err) == storage.ErrNotFound {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, json.Unmarshal(obj.JSON(), out)
}

// listObjects decodes into out (a pointer to a slice) the objects of res
// in namespace (all: "") as the watch cache has them, in key order; none
// if res is nil or has no store.
func listObjects(ctx context.Context, registry *resource.Registry, res *resource.Resource, namespace string, out any) error {
	store := registry.Store(res)
	if res == nil || store == nil {
		return nil
	}
	list, err := store.GetList(ctx, res.Scope(namespace), storage.ListOptions{ResourceVersion: "0"})
	if err != nil || len(list.Items) == 0 {
		return err
	}
	var buf bytes.Buffer
	buf.WriteByte('[')
	for i, o := range list.Items {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.Write(o.JSON())
	}
	buf.WriteByte(']')
	return json.Unmarshal(buf.Bytes(), out)
}
