package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclientset "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apiextensionsinformers "k8s.io/apiextensions-apiserver/pkg/client/informers/externalversions"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
)

// The media types of issue 24: protobuf answers for the built-in kinds
// (custom resources stay JSON), watches framed as kube-apiserver frames
// them.
const (
	pbType      = "application/vnd.kubernetes.protobuf"
	pbWatchType = "application/vnd.kubernetes.protobuf;stream=watch"
)

// pbMagic starts every protobuf body of kube-apiserver (runtime.Unknown
// envelope).
var pbMagic = []byte("k8s\x00")

// pbExchange is one request of a recorded client and what came back.
type pbExchange struct {
	method, url, accept string
	code                int
	contentType         string
	watch               bool

	mu   sync.Mutex
	n    int    // bytes of the body read
	head []byte // its first bytes
}

func (e *pbExchange) String() string { return e.method + " " + e.url }

// pbBody counts what the client reads of a body.
type pbBody struct {
	io.ReadCloser
	ex *pbExchange
}

func (b *pbBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.ex.mu.Lock()
	if len(b.ex.head) < len(pbMagic) {
		b.ex.head = append(b.ex.head, p[:min(n, len(pbMagic)-len(b.ex.head))]...)
	}
	b.ex.n += n
	b.ex.mu.Unlock()
	return n, err
}

// pbRecorder records every answer a client gets, to check their media
// type: want (protobuf or JSON).
type pbRecorder struct {
	want string

	mu        sync.Mutex
	exchanges []*pbExchange
}

func (r *pbRecorder) wrap(rt http.RoundTripper) http.RoundTripper {
	return cgRoundTripFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		if err != nil {
			return resp, err
		}
		q := req.URL.Query()
		ex := &pbExchange{method: req.Method, url: req.URL.RequestURI(), accept: req.Header.Get("Accept"),
			code: resp.StatusCode, contentType: resp.Header.Get("Content-Type"),
			watch: q.Get("watch") == "true" || q.Get("watch") == "1"}
		resp.Body = &pbBody{ReadCloser: resp.Body, ex: ex}
		r.mu.Lock()
		r.exchanges = append(r.exchanges, ex)
		r.mu.Unlock()
		return resp, nil
	})
}

// check fails t for every answer not in r.want: non-watch answers (errors
// too: Status) in want with a body (a protobuf body starts with pbMagic),
// watches in want's stream=watch form.
func (r *pbRecorder) check(t *testing.T) {
	t.Helper()
	r.mu.Lock()
	exchanges := r.exchanges
	r.exchanges = nil
	r.mu.Unlock()
	if len(exchanges) == 0 {
		t.Errorf("the %s client made no request", r.want)
	}
	const maxReported = 25
	bad := 0
	for _, ex := range exchanges {
		ex.mu.Lock()
		n, head := ex.n, slices.Clone(ex.head)
		ex.mu.Unlock()
		var problems []string
		if ex.accept != r.want {
			problems = append(problems, fmt.Sprintf("the client sent Accept %q (a bug of the test)", ex.accept))
		}
		want := r.want
		if ex.watch && ex.code == http.StatusOK && r.want == pbType {
			want = pbWatchType
		}
		if ex.contentType != want {
			problems = append(problems, fmt.Sprintf("Content-Type %q, want %q", ex.contentType, want))
		}
		if !ex.watch {
			switch {
			case n == 0:
				problems = append(problems, "no body")
			case r.want == pbType && !bytes.Equal(head, pbMagic):
				problems = append(problems, fmt.Sprintf("the body starts with %q, not protobuf's %q", head, pbMagic))
			}
		}
		if len(problems) == 0 {
			continue
		}
		if bad++; bad <= maxReported {
			t.Errorf("%s answered %d: %s", ex, ex.code, strings.Join(problems, "; "))
		}
	}
	if bad > maxReported {
		t.Errorf("... and %d more answers not in %s (of %d requests)", bad-maxReported, r.want, len(exchanges))
	}
}

// pbClients are the clientsets of a subtest, configured as issue 24 says
// protobuf clients are (ContentType and AcceptContentTypes protobuf), with
// every answer recorded and checked when the subtest ends.
type pbClients struct {
	rec  *pbRecorder
	kube *kubernetes.Clientset
	ext  *apiextensionsclientset.Clientset
}

func newPBClients(t *testing.T, mediaType string) *pbClients {
	t.Helper()
	rec := &pbRecorder{want: mediaType}
	cfg := cgConfig(rec.wrap)
	cfg.ContentType, cfg.AcceptContentTypes = mediaType, mediaType
	ext, err := apiextensionsclientset.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Registered first, it runs after the subtest's other cleanups (its
	// informers stopped).
	t.Cleanup(func() { rec.check(t) })
	return &pbClients{rec: rec, kube: clientset(t, cfg), ext: ext}
}

type pbObject interface {
	runtime.Object
	metav1.Object
}

// pbClient is what the typed clients of every kind have.
type pbClient[T pbObject, L runtime.Object] interface {
	Create(context.Context, T, metav1.CreateOptions) (T, error)
	Get(context.Context, string, metav1.GetOptions) (T, error)
	Update(context.Context, T, metav1.UpdateOptions) (T, error)
	Delete(context.Context, string, metav1.DeleteOptions) error
	List(context.Context, metav1.ListOptions) (L, error)
	Watch(context.Context, metav1.ListOptions) (watch.Interface, error)
}

// pbFactory is what the informer factories of client-go and of
// apiextensions-apiserver have.
type pbFactory interface {
	Start(<-chan struct{})
	WaitForCacheSync(<-chan struct{}) map[reflect.Type]bool
	Shutdown()
}

// pbKind is a kind pbExercise drives.
type pbKind[T pbObject, L runtime.Object] struct {
	gr     schema.GroupResource
	client pbClient[T, L]
	// mk returns a new object from a name (the object's name may be
	// derived from it).
	mk func(name string) T
	// informer returns a new factory with the kind's informer, for the
	// objects selected by selector.
	informer func(selector string) (pbFactory, cache.SharedIndexInformer)
}

func pbKubeInformer(cs kubernetes.Interface, ns string, pick func(informers.SharedInformerFactory) cache.SharedIndexInformer) func(string) (pbFactory, cache.SharedIndexInformer) {
	return func(selector string) (pbFactory, cache.SharedIndexInformer) {
		f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns),
			informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = selector }))
		return f, pick(f)
	}
}

// pbChanged is the label pbExercise's updates set.
const pbChanged = "changed"

// pbExercise drives a kind through the protobuf clientset: create, get,
// list in pages, update seen by a watch, a WatchList (sendInitialEvents),
// an informer syncing and seeing an add, an update and a delete, delete,
// and the NotFound Status of a missing object. Its objects carry the label
// pbtest=set.
func pbExercise[T pbObject, L runtime.Object](t *testing.T, k pbKind[T, L], set string) {
	ctx := cgContext(t)
	selector := "pbtest=" + set
	c := k.client
	mk := func(name string) T {
		obj := k.mk(name)
		labels := obj.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels["pbtest"] = set
		obj.SetLabels(labels)
		return obj
	}
	// change sets the label pbChanged on the object name, as a controller
	// does (read, modify, update, again on a conflict).
	change := func(name string) T {
		t.Helper()
		var updated T
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			obj, err := c.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			labels := obj.GetLabels()
			labels[pbChanged] = "yes"
			obj.SetLabels(labels)
			updated, err = c.Update(ctx, obj, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Fatalf("update %s: %v", name, err)
		}
		if updated.GetLabels()[pbChanged] != "yes" {
			t.Fatalf("update %s returned labels %v", name, updated.GetLabels())
		}
		return updated
	}
	isT := func(what string, obj runtime.Object) T {
		t.Helper()
		o, ok := obj.(T)
		if !ok {
			t.Fatalf("%s: an object of type %T, want %T", what, obj, *new(T))
		}
		return o
	}

	var names []string
	for _, base := range []string{"alpha", "bravo", "charlie"} {
		obj := mk(base)
		created, err := c.Create(ctx, obj, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create %s: %v", obj.GetName(), err)
		}
		if created.GetName() != obj.GetName() || created.GetUID() == "" || created.GetResourceVersion() == "" || created.GetLabels()["pbtest"] != set {
			t.Fatalf("create %s returned name %q, uid %q, resourceVersion %q, labels %v", obj.GetName(),
				created.GetName(), created.GetUID(), created.GetResourceVersion(), created.GetLabels())
		}
		got, err := c.Get(ctx, created.GetName(), metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get %s: %v", created.GetName(), err)
		}
		if got.GetUID() != created.GetUID() {
			t.Fatalf("get %s: uid %s, created %s", created.GetName(), got.GetUID(), created.GetUID())
		}
		names = append(names, created.GetName())
	}
	slices.Sort(names)

	// List in pages of 2.
	var listed []string
	var listRV string
	opts := metav1.ListOptions{LabelSelector: selector, Limit: 2}
	for page := 0; ; page++ {
		list, err := c.List(ctx, opts)
		if err != nil {
			t.Fatalf("list page %d (continue %q): %v", page, opts.Continue, err)
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			t.Fatal(err)
		}
		if len(items) > 2 {
			t.Errorf("list page %d: %d items, over the limit 2", page, len(items))
		}
		for _, item := range items {
			listed = append(listed, isT("list item", item).GetName())
		}
		lm, err := meta.ListAccessor(list)
		if err != nil {
			t.Fatal(err)
		}
		if page == 0 {
			listRV = lm.GetResourceVersion()
			if lm.GetContinue() == "" {
				t.Errorf("list with limit 2 of %d objects: no continue token", len(names))
			}
		}
		if opts.Continue = lm.GetContinue(); opts.Continue == "" {
			break
		}
		if page > len(names) {
			t.Fatalf("list: more pages than objects")
		}
	}
	slices.Sort(listed)
	if !slices.Equal(listed, names) {
		t.Errorf("list in pages: %v, want %v", listed, names)
	}

	// A watch from the list sees the update.
	w, err := c.Watch(ctx, metav1.ListOptions{LabelSelector: selector, ResourceVersion: listRV})
	if err != nil {
		t.Fatalf("watch from %s: %v", listRV, err)
	}
	updated := change(names[0])
	for {
		ev := cgNextNonBookmark(t, w)
		o := isT("watch event", ev.Object)
		// (A CRD's status changes too.)
		if ev.Type == watch.Modified && o.GetName() == names[0] && o.GetLabels()[pbChanged] == "yes" {
			if o.GetResourceVersion() != updated.GetResourceVersion() {
				t.Errorf("watch: the update of %s at resourceVersion %s, the update returned %s", names[0], o.GetResourceVersion(), updated.GetResourceVersion())
			}
			break
		}
	}
	w.Stop()

	// WatchList: the objects as ADDED events, then the bookmark ending
	// them.
	wl, err := c.Watch(ctx, metav1.ListOptions{LabelSelector: selector, SendInitialEvents: cgPtr(true),
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, AllowWatchBookmarks: true})
	if err != nil {
		t.Fatalf("watch with sendInitialEvents: %v", err)
	}
	var initial []string
	for {
		ev := cgNext(t, wl)
		o := isT("watch-list event", ev.Object)
		if ev.Type == watch.Bookmark {
			if o.GetAnnotations()[metav1.InitialEventsAnnotationKey] != "true" {
				t.Fatalf("watch-list: a bookmark without %s before the initial events ended: %v", metav1.InitialEventsAnnotationKey, o.GetAnnotations())
			}
			break
		}
		if ev.Type != watch.Added {
			t.Fatalf("watch-list: an initial %v event for %s", ev.Type, o.GetName())
		}
		if o.GetName() == names[0] && o.GetLabels()[pbChanged] != "yes" {
			t.Errorf("watch-list: %s without its update: labels %v", o.GetName(), o.GetLabels())
		}
		initial = append(initial, o.GetName())
	}
	wl.Stop()
	slices.Sort(initial)
	if !slices.Equal(initial, names) {
		t.Errorf("watch-list initial events: %v, want %v", initial, names)
	}

	// An informer syncs, then sees an add, an update and a delete.
	factory, informer := k.informer(selector)
	var mu sync.Mutex
	var seen []string
	note := func(s string) {
		mu.Lock()
		seen = append(seen, s)
		mu.Unlock()
	}
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { note("add " + obj.(metav1.Object).GetName()) },
		UpdateFunc: func(_, obj any) {
			if o := obj.(metav1.Object); o.GetLabels()[pbChanged] == "yes" {
				note("update " + o.GetName())
			}
		},
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			note("delete " + obj.(metav1.Object).GetName())
		},
	}); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	factory.Start(stop)
	t.Cleanup(func() {
		close(stop)
		factory.Shutdown()
	})
	syncCtx, cancel := context.WithTimeout(ctx, cgTimeout)
	defer cancel()
	for typ, ok := range factory.WaitForCacheSync(syncCtx.Done()) {
		if !ok {
			t.Fatalf("the informer of %v did not sync", typ)
		}
	}
	var stored []string
	for _, obj := range informer.GetStore().List() {
		stored = append(stored, obj.(metav1.Object).GetName())
	}
	slices.Sort(stored)
	if !slices.Equal(stored, names) {
		t.Errorf("the synced informer holds %v, want %v", stored, names)
	}
	extra, err := c.Create(ctx, mk("delta"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create delta: %v", err)
	}
	change(extra.GetName())
	if err := c.Delete(ctx, extra.GetName(), metav1.DeleteOptions{GracePeriodSeconds: cgPtr(int64(0))}); err != nil {
		t.Fatalf("delete %s: %v", extra.GetName(), err)
	}
	for _, want := range []string{"add", "update", "delete"} {
		want += " " + extra.GetName()
		waitFor(t, "the informer's "+want, func() bool {
			mu.Lock()
			defer mu.Unlock()
			return slices.Contains(seen, want)
		})
	}

	// Delete (with a DeleteOptions body) and NotFound.
	for _, name := range names {
		if err := c.Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: cgPtr(int64(0))}); err != nil {
			t.Fatalf("delete %s: %v", name, err)
		}
		waitFor(t, name+" to go", func() bool {
			_, err := c.Get(ctx, name, metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		})
	}
	_, err = c.Get(ctx, "missing", metav1.GetOptions{})
	if want := apierrors.NewNotFound(k.gr, "missing"); !apierrors.IsNotFound(err) || err.Error() != want.Error() {
		t.Errorf("get of a missing object: %v, want NotFound %q", err, want.Error())
	}
}

func pbCRD(group, plural, kind string) *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group,
			Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Kind: kind},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec": {Type: "object", XPreserveUnknownFields: cgPtr(true)}}}}}},
		},
	}
}

func pbDeployment(name string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{Replicas: cgPtr(int32(1)), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx"}}}}}}
}

// TestProtobuf is issue 24's "Done when": a clientset speaking protobuf
// (ContentType and AcceptContentTypes application/vnd.kubernetes.protobuf)
// gets protobuf answers, and only those, for everything it does on the
// built-in kinds (CRDs included); JSON clients see no change; custom
// resources stay JSON; Accept is negotiated as kube-apiserver does.
func TestProtobuf(t *testing.T) {
	t.Parallel()

	// Each kind in a namespace of its own, with its own recorded clients.
	kinds := []struct {
		name string
		run  func(t *testing.T, c *pbClients, ns string)
	}{
		{"pods", func(t *testing.T, c *pbClients, ns string) {
			pbExercise(t, pbKind[*corev1.Pod, *corev1.PodList]{
				gr: corev1.Resource("pods"), client: c.kube.CoreV1().Pods(ns),
				mk: func(name string) *corev1.Pod {
					return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
						Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox:1"}}}}
				},
				informer: pbKubeInformer(c.kube, ns, func(f informers.SharedInformerFactory) cache.SharedIndexInformer {
					return f.Core().V1().Pods().Informer()
				}),
			}, ns)
		}},
		{"configmaps", func(t *testing.T, c *pbClients, ns string) {
			pbExercise(t, pbKind[*corev1.ConfigMap, *corev1.ConfigMapList]{
				gr: corev1.Resource("configmaps"), client: c.kube.CoreV1().ConfigMaps(ns),
				mk: func(name string) *corev1.ConfigMap {
					return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name},
						Data: map[string]string{"k": "v"}, BinaryData: map[string][]byte{"b": {0, 1, 2}}}
				},
				informer: pbKubeInformer(c.kube, ns, func(f informers.SharedInformerFactory) cache.SharedIndexInformer {
					return f.Core().V1().ConfigMaps().Informer()
				}),
			}, ns)
		}},
		{"deployments", func(t *testing.T, c *pbClients, ns string) {
			pbExercise(t, pbKind[*appsv1.Deployment, *appsv1.DeploymentList]{
				gr: appsv1.Resource("deployments"), client: c.kube.AppsV1().Deployments(ns), mk: pbDeployment,
				informer: pbKubeInformer(c.kube, ns, func(f informers.SharedInformerFactory) cache.SharedIndexInformer {
					return f.Apps().V1().Deployments().Informer()
				}),
			}, ns)
		}},
		{"leases", func(t *testing.T, c *pbClients, ns string) {
			pbExercise(t, pbKind[*coordinationv1.Lease, *coordinationv1.LeaseList]{
				gr: coordinationv1.Resource("leases"), client: c.kube.CoordinationV1().Leases(ns),
				mk: func(name string) *coordinationv1.Lease {
					return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name},
						Spec: coordinationv1.LeaseSpec{HolderIdentity: cgPtr("holder"), LeaseDurationSeconds: cgPtr(int32(15)),
							RenewTime: &metav1.MicroTime{Time: time.Now().Truncate(time.Microsecond)}}}
				},
				informer: pbKubeInformer(c.kube, ns, func(f informers.SharedInformerFactory) cache.SharedIndexInformer {
					return f.Coordination().V1().Leases().Informer()
				}),
			}, ns)
		}},
		{"horizontalpodautoscalers-autoscaling-v1", func(t *testing.T, c *pbClients, ns string) {
			pbExercise(t, pbKind[*autoscalingv1.HorizontalPodAutoscaler, *autoscalingv1.HorizontalPodAutoscalerList]{
				gr: autoscalingv1.Resource("horizontalpodautoscalers"), client: c.kube.AutoscalingV1().HorizontalPodAutoscalers(ns),
				mk: func(name string) *autoscalingv1.HorizontalPodAutoscaler {
					return &autoscalingv1.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: name},
						Spec: autoscalingv1.HorizontalPodAutoscalerSpec{MaxReplicas: 4, TargetCPUUtilizationPercentage: cgPtr(int32(70)),
							ScaleTargetRef: autoscalingv1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}}}
				},
				informer: pbKubeInformer(c.kube, ns, func(f informers.SharedInformerFactory) cache.SharedIndexInformer {
					return f.Autoscaling().V1().HorizontalPodAutoscalers().Informer()
				}),
			}, ns)
		}},
		{"events-core-v1", func(t *testing.T, c *pbClients, ns string) {
			pbExercise(t, pbKind[*corev1.Event, *corev1.EventList]{
				gr: corev1.Resource("events"), client: c.kube.CoreV1().Events(ns),
				mk: func(name string) *corev1.Event {
					return &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: name},
						InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: "web", APIVersion: "v1"},
						Reason:         "Killing", Message: "stopping", Type: corev1.EventTypeNormal, Count: 2}
				},
				informer: pbKubeInformer(c.kube, ns, func(f informers.SharedInformerFactory) cache.SharedIndexInformer {
					return f.Core().V1().Events().Informer()
				}),
			}, ns)
		}},
		{"events-events-k8s-io-v1", func(t *testing.T, c *pbClients, ns string) {
			pbExercise(t, pbKind[*eventsv1.Event, *eventsv1.EventList]{
				gr: eventsv1.Resource("events"), client: c.kube.EventsV1().Events(ns),
				mk: func(name string) *eventsv1.Event {
					return &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Name: name},
						EventTime: metav1.NewMicroTime(time.Now()), ReportingController: "example.com/controller", ReportingInstance: "i-1",
						Action: "Pulling", Reason: "Pulled", Note: "pulled the image", Type: corev1.EventTypeNormal,
						Regarding: corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: "web", APIVersion: "v1"}}
				},
				informer: pbKubeInformer(c.kube, ns, func(f informers.SharedInformerFactory) cache.SharedIndexInformer {
					return f.Events().V1().Events().Informer()
				}),
			}, ns)
		}},
		{"services", func(t *testing.T, c *pbClients, ns string) {
			pbExercise(t, pbKind[*corev1.Service, *corev1.ServiceList]{
				gr: corev1.Resource("services"), client: c.kube.CoreV1().Services(ns),
				mk: func(name string) *corev1.Service {
					return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name},
						Spec: corev1.ServiceSpec{Selector: map[string]string{"app": name},
							Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}}}}
				},
				informer: pbKubeInformer(c.kube, ns, func(f informers.SharedInformerFactory) cache.SharedIndexInformer {
					return f.Core().V1().Services().Informer()
				}),
			}, ns)
		}},
		{"roles", func(t *testing.T, c *pbClients, ns string) {
			pbExercise(t, pbKind[*rbacv1.Role, *rbacv1.RoleList]{
				gr: rbacv1.Resource("roles"), client: c.kube.RbacV1().Roles(ns),
				mk: func(name string) *rbacv1.Role {
					return &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name},
						Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list"}}}}
				},
				informer: pbKubeInformer(c.kube, ns, func(f informers.SharedInformerFactory) cache.SharedIndexInformer {
					return f.Rbac().V1().Roles().Informer()
				}),
			}, ns)
		}},
		{"rolebindings", func(t *testing.T, c *pbClients, ns string) {
			pbExercise(t, pbKind[*rbacv1.RoleBinding, *rbacv1.RoleBindingList]{
				gr: rbacv1.Resource("rolebindings"), client: c.kube.RbacV1().RoleBindings(ns),
				mk: func(name string) *rbacv1.RoleBinding {
					return &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
						RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
						Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}}}
				},
				informer: pbKubeInformer(c.kube, ns, func(f informers.SharedInformerFactory) cache.SharedIndexInformer {
					return f.Rbac().V1().RoleBindings().Informer()
				}),
			}, ns)
		}},
		{"customresourcedefinitions", func(t *testing.T, c *pbClients, ns string) {
			// Cluster-scoped: the label (the namespace's name) keeps the
			// objects apart.
			pbExercise(t, pbKind[*apiextensionsv1.CustomResourceDefinition, *apiextensionsv1.CustomResourceDefinitionList]{
				gr: apiextensionsv1.Resource("customresourcedefinitions"), client: c.ext.ApiextensionsV1().CustomResourceDefinitions(),
				mk: func(name string) *apiextensionsv1.CustomResourceDefinition {
					return pbCRD(ns+".protobuf.example.com", "pb"+name+"s", "Pb"+name)
				},
				informer: func(selector string) (pbFactory, cache.SharedIndexInformer) {
					f := apiextensionsinformers.NewSharedInformerFactoryWithOptions(c.ext, 0,
						apiextensionsinformers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = selector }))
					return f, f.Apiextensions().V1().CustomResourceDefinitions().Informer()
				},
			}, ns)
		}},
	}
	for _, kind := range kinds {
		t.Run(kind.name, func(t *testing.T) {
			t.Parallel()
			c := newPBClients(t, pbType)
			ns := cgNamespace(t, cgDynamic(t), "protobuf")
			kind.run(t, c, ns)
		})
	}

	t.Run("subresources", func(t *testing.T) {
		t.Parallel()
		c := newPBClients(t, pbType)
		ns := cgNamespace(t, cgDynamic(t), "protobuf-sub")
		ctx := cgContext(t)
		deployments := c.kube.AppsV1().Deployments(ns)
		if _, err := deployments.Create(ctx, pbDeployment("web"), metav1.CreateOptions{}); err != nil {
			t.Fatalf("create deployment: %v", err)
		}

		// scale
		scale, err := deployments.GetScale(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("GetScale: %v", err)
		}
		if scale.Name != "web" || scale.Spec.Replicas != 1 || scale.ResourceVersion == "" {
			t.Errorf("GetScale: %+v", scale)
		}
		scale.Spec.Replicas = 3
		scaled, err := deployments.UpdateScale(ctx, "web", scale, metav1.UpdateOptions{})
		if err != nil {
			t.Fatalf("UpdateScale: %v", err)
		}
		if scaled.Spec.Replicas != 3 || scaled.ResourceVersion == scale.ResourceVersion {
			t.Errorf("UpdateScale: %+v", scaled)
		}
		d, err := deployments.Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if *d.Spec.Replicas != 3 {
			t.Errorf("the deployment after UpdateScale has %d replicas, want 3", *d.Spec.Replicas)
		}

		// status
		err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
			d, err := deployments.Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				return err
			}
			d.Status.ObservedGeneration = d.Generation
			d.Status.Replicas, d.Status.UpdatedReplicas = 3, 3
			updated, err := deployments.UpdateStatus(ctx, d, metav1.UpdateOptions{})
			if err == nil && (updated.Status.ObservedGeneration != d.Generation || updated.Status.Replicas != 3) {
				t.Errorf("UpdateStatus returned status %+v", updated.Status)
			}
			return err
		})
		if err != nil {
			t.Fatalf("UpdateStatus: %v", err)
		}

		// TokenRequest
		if _, err := c.kube.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "robot"}}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create service account: %v", err)
		}
		tr, err := c.kube.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "robot",
			&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: cgPtr(int64(3600))}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("CreateToken: %v", err)
		}
		if tr.Status.Token == "" || tr.Status.ExpirationTimestamp.IsZero() {
			t.Errorf("CreateToken: %+v", tr.Status)
		}
	})

	t.Run("status-errors", func(t *testing.T) {
		t.Parallel()
		c := newPBClients(t, pbType)
		ns := cgNamespace(t, cgDynamic(t), "protobuf-status")
		ctx := cgContext(t)
		pods := c.kube.CoreV1().Pods(ns)
		_, err := pods.Get(ctx, "missing", metav1.GetOptions{})
		var st apierrors.APIStatus
		if !apierrors.IsNotFound(err) || !errors.As(err, &st) || st.Status().Details == nil ||
			st.Status().Details.Name != "missing" || st.Status().Details.Kind != "pods" || st.Status().Code != http.StatusNotFound {
			t.Errorf("GET pods/missing: %#v, want a NotFound Status naming pods missing", err)
		}
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox:1"}}}}
		if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
			t.Errorf("create of an existing pod: %v, want AlreadyExists", err)
		}
		bad := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "Not_A_Name"}}
		_, err = c.kube.CoreV1().ConfigMaps(ns).Create(ctx, bad, metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) || !errors.As(err, &st) || st.Status().Details == nil || len(st.Status().Details.Causes) == 0 ||
			st.Status().Details.Causes[0].Field != "metadata.name" {
			t.Errorf("create of an invalid config map: %#v, want Invalid with a cause for metadata.name", err)
		}
	})

	t.Run("json-clients-unchanged", func(t *testing.T) {
		t.Parallel()
		pb := newPBClients(t, pbType)
		js := newPBClients(t, "application/json")
		ns := cgNamespace(t, cgDynamic(t), "protobuf-apply")
		ctx := cgContext(t)
		// The same sequence, the first write in protobuf for one object,
		// in JSON for the other; then kubectl's server-side apply in JSON.
		type managed struct {
			Manager, Operation, APIVersion, FieldsType, Subresource, FieldsV1 string
		}
		managedOf := func(obj metav1.Object) []managed {
			var out []managed
			for _, e := range obj.GetManagedFields() {
				m := managed{Manager: e.Manager, Operation: string(e.Operation), APIVersion: e.APIVersion, FieldsType: e.FieldsType, Subresource: e.Subresource}
				if e.FieldsV1 != nil {
					m.FieldsV1 = string(e.FieldsV1.Raw)
				}
				out = append(out, m)
			}
			return out
		}
		compare := func(what string, fromPB, fromJSON metav1.Object) {
			t.Helper()
			if got, want := managedOf(fromPB), managedOf(fromJSON); !reflect.DeepEqual(got, want) {
				g, _ := json.MarshalIndent(got, "", " ")
				w, _ := json.MarshalIndent(want, "", " ")
				t.Errorf("%s: the managedFields of the object created in protobuf:\n%s\nwant those of the one created in JSON:\n%s", what, g, w)
			}
		}
		applyOpts := metav1.PatchOptions{FieldManager: "kubectl", Force: cgPtr(true)}

		// ConfigMaps.
		cmApply := func(name string) []byte {
			return fmt.Appendf(nil, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  labels: {applied: \"yes\"}\ndata:\n  a: \"2\"\n  b: \"3\"\n", name)
		}
		var cms [2]*corev1.ConfigMap
		for i, c := range []*pbClients{pb, js} {
			name := []string{"from-protobuf", "from-json"}[i]
			if _, err := c.kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name},
				Data: map[string]string{"a": "1"}}, metav1.CreateOptions{}); err != nil {
				t.Fatalf("create config map %s: %v", name, err)
			}
			applied, err := js.kube.CoreV1().ConfigMaps(ns).Patch(ctx, name, types.ApplyPatchType, cmApply(name), applyOpts)
			if err != nil {
				t.Fatalf("server-side apply of config map %s: %v", name, err)
			}
			if applied.Data["a"] != "2" || applied.Data["b"] != "3" || applied.Labels["applied"] != "yes" {
				t.Errorf("server-side apply of config map %s: %+v", name, applied)
			}
			cms[i] = applied
		}
		compare("config maps", cms[0], cms[1])

		// Deployments.
		deployApply := func(name string) []byte {
			return fmt.Appendf(nil, `apiVersion: apps/v1
kind: Deployment
metadata:
  name: %[1]s
spec:
  replicas: 2
  selector:
    matchLabels: {app: %[1]s}
  template:
    metadata:
      labels: {app: %[1]s}
    spec:
      containers:
      - name: web
        image: nginx:1.27
`, name)
		}
		var ds [2]*appsv1.Deployment
		for i, c := range []*pbClients{pb, js} {
			name := []string{"from-protobuf", "from-json"}[i]
			if _, err := c.kube.AppsV1().Deployments(ns).Create(ctx, pbDeployment(name), metav1.CreateOptions{}); err != nil {
				t.Fatalf("create deployment %s: %v", name, err)
			}
			applied, err := js.kube.AppsV1().Deployments(ns).Patch(ctx, name, types.ApplyPatchType, deployApply(name), applyOpts)
			if err != nil {
				t.Fatalf("server-side apply of deployment %s: %v", name, err)
			}
			if *applied.Spec.Replicas != 2 || applied.Spec.Template.Spec.Containers[0].Image != "nginx:1.27" {
				t.Errorf("server-side apply of deployment %s: %+v", name, applied.Spec)
			}
			ds[i] = applied
		}
		// The app label differs with the name: compare with it renamed.
		for _, d := range ds {
			for i, e := range d.ManagedFields {
				if e.FieldsV1 != nil {
					d.ManagedFields[i].FieldsV1.Raw = bytes.ReplaceAll(e.FieldsV1.Raw, []byte(d.Name), []byte("NAME"))
				}
			}
		}
		compare("deployments", ds[0], ds[1])
	})

	t.Run("accept-negotiation", func(t *testing.T) {
		t.Parallel()
		ns := cgNamespace(t, cgDynamic(t), "protobuf-accept")
		ctx := cgContext(t)
		// (In JSON: the clientset's default is protobuf for CRDs.)
		jsonCfg := cgConfig(nil)
		jsonCfg.ContentType = "application/json"
		ext, err := apiextensionsclientset.NewForConfig(jsonCfg)
		if err != nil {
			t.Fatal(err)
		}
		crd := pbCRD(ns+".protobuf.example.com", "snaps", "Snap")
		if _, err := ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create CRD: %v", err)
		}
		t.Cleanup(func() {
			ext.ApiextensionsV1().CustomResourceDefinitions().Delete(context.Background(), crd.Name, metav1.DeleteOptions{})
		})
		snaps := "/apis/" + crd.Spec.Group + "/v1/namespaces/" + ns + "/snaps"
		waitFor(t, "the custom resource to be served", func() bool {
			resp, _ := htDo(t, "GET", snaps, "", nil)
			return resp.StatusCode == http.StatusOK
		})
		if resp, data := htDo(t, "POST", snaps, "application/json",
			[]byte(`{"apiVersion":"`+crd.Spec.Group+`/v1","kind":"Snap","metadata":{"name":"s1"},"spec":{"x":1}}`)); resp.StatusCode != http.StatusCreated {
			t.Fatalf("POST %s: %d %s", snaps, resp.StatusCode, htShort(data))
		}
		pods := "/api/v1/namespaces/" + ns + "/pods"
		if resp, data := htDo(t, "POST", pods, "application/json",
			[]byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p1"},"spec":{"containers":[{"name":"c","image":"busybox:1"}]}}`)); resp.StatusCode != http.StatusCreated {
			t.Fatalf("POST %s: %d %s", pods, resp.StatusCode, htShort(data))
		}

		cases := []struct {
			path, accept string
			code         int
			contentType  string
			// message is the Status's, for failures.
			message string
		}{
			// Custom resources have no protobuf: 406 for protobuf only
			// (its Status in protobuf, as kube-apiserver's), JSON when the
			// client takes it too.
			{snaps, pbType, http.StatusNotAcceptable, pbType, pbNotAcceptable},
			{snaps + "/s1", pbType, http.StatusNotAcceptable, pbType, pbNotAcceptable},
			{snaps, pbType + ", application/json", http.StatusOK, "application/json", ""},
			{snaps + "/s1", pbType + ", application/json", http.StatusOK, "application/json", ""},
			// The higher q wins.
			{pods, "application/json;q=0.5, " + pbType + ";q=0.9", http.StatusOK, pbType, ""},
			{pods, "application/json;q=0.9, " + pbType + ";q=0.5", http.StatusOK, "application/json", ""},
			{pods + "/p1", "application/json;q=0.5, " + pbType + ";q=0.9", http.StatusOK, pbType, ""},
			{pods, pbType, http.StatusOK, pbType, ""},
			{pods, pbType + ", application/json", http.StatusOK, pbType, ""},
			// A missing object's Status in protobuf too.
			{pods + "/missing", pbType, http.StatusNotFound, pbType, ""},
		}
		for _, tc := range cases {
			resp, data := htDo(t, "GET", tc.path, "", nil, "Accept", tc.accept)
			what := fmt.Sprintf("GET %s with Accept %q", tc.path, tc.accept)
			if resp.StatusCode != tc.code || resp.Header.Get("Content-Type") != tc.contentType {
				t.Errorf("%s: %d with Content-Type %q, want %d with %q: %s", what, resp.StatusCode, resp.Header.Get("Content-Type"), tc.code, tc.contentType, htShort(data))
				continue
			}
			if tc.contentType == pbType {
				obj, _, err := clientgoscheme.Codecs.UniversalDeserializer().Decode(data, nil, nil)
				if err != nil || !bytes.HasPrefix(data, pbMagic) {
					t.Errorf("%s: the protobuf body does not decode: %v: %q", what, err, htShort(data))
					continue
				}
				switch o := obj.(type) {
				case *corev1.PodList:
					if len(o.Items) != 1 || o.Items[0].Name != "p1" {
						t.Errorf("%s: %+v", what, o)
					}
				case *corev1.Pod:
					if o.Name != "p1" {
						t.Errorf("%s: %+v", what, o.ObjectMeta)
					}
				case *metav1.Status:
					reason := map[int]metav1.StatusReason{http.StatusNotFound: metav1.StatusReasonNotFound,
						http.StatusNotAcceptable: metav1.StatusReasonNotAcceptable}[tc.code]
					if o.Code != int32(tc.code) || o.Reason != reason || (tc.message != "" && o.Message != tc.message) {
						t.Errorf("%s: Status %d %s %q, want %d %s %q", what, o.Code, o.Reason, o.Message, tc.code, reason, tc.message)
					}
				default:
					t.Errorf("%s: a %T", what, obj)
				}
				continue
			}
			var body struct {
				Kind    string `json:"kind"`
				Message string `json:"message"`
			}
			if err := json.Unmarshal(data, &body); err != nil {
				t.Errorf("%s: the answer is not JSON: %v: %s", what, err, htShort(data))
			} else if tc.message != "" && (body.Kind != "Status" || body.Message != tc.message) {
				t.Errorf("%s: %s %q, want Status %q", what, body.Kind, body.Message, tc.message)
			} else if tc.message == "" && body.Kind != "SnapList" && body.Kind != "Snap" && body.Kind != "PodList" {
				t.Errorf("%s: a %s", what, body.Kind)
			}
		}
	})

	t.Run("body-kind-mismatch", func(t *testing.T) {
		t.Parallel()
		ns := cgNamespace(t, cgDynamic(t), "protobuf-mismatch")
		info, ok := runtime.SerializerInfoForMediaType(clientgoscheme.Codecs.SupportedMediaTypes(), pbType)
		if !ok {
			t.Fatal("client-go has no protobuf serializer")
		}
		body, err := runtime.Encode(clientgoscheme.Codecs.EncoderForVersion(info.Serializer, corev1.SchemeGroupVersion),
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "mismatch"}, Data: map[string]string{"k": "v"}})
		if err != nil {
			t.Fatal(err)
		}
		secrets := "/api/v1/namespaces/" + ns + "/secrets"
		resp, data := htDo(t, "POST", secrets, pbType, body, "Accept", "application/json")
		var st metav1.Status
		if err := json.Unmarshal(data, &st); err != nil {
			t.Fatalf("POST %s (a ConfigMap in protobuf): %d, not a JSON Status: %s", secrets, resp.StatusCode, htShort(data))
		}
		if resp.StatusCode != http.StatusBadRequest || st.Reason != metav1.StatusReasonBadRequest || st.Message != pbKindMismatch {
			t.Errorf("POST %s (a ConfigMap in protobuf): %d %s %q, want 400 BadRequest %q", secrets, resp.StatusCode, st.Reason, st.Message, pbKindMismatch)
		}
		if resp, _ := htDo(t, "GET", secrets+"/mismatch", "", nil); resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s/mismatch after the refused POST: %d, want 404", secrets, resp.StatusCode)
		}
	})
}

// kube-apiserver 1.37's messages (the reference server): the 406 of a
// custom resource asked for in protobuf only, and the 400 of a protobuf
// ConfigMap POSTed to secrets.
const (
	pbNotAcceptable = "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf"
	pbKindMismatch  = `ConfigMap in version "v1" cannot be handled as a Secret: converting (v1.ConfigMap) to (core.Secret): unknown conversion`
)

// TestEmptyListStoredAsNone: protobuf, the storage encoding of built-in
// kinds, cannot tell an empty list from none, so a ClusterRole created with
// "rules":[] is answered, read and watched with "rules":null, as
// kube-apiserver 1.37.2 answers it (recorded: its create response ends
// `"rules":null}`), rather than the create answering [] and every later
// read null.
func TestEmptyListStoredAsNone(t *testing.T) {
	const path = "/apis/rbac.authorization.k8s.io/v1/clusterroles"
	body := []byte(`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"e2e-empty-rules"},"rules":[]}`)
	resp, created := htDo(t, "POST", path, "application/json", body)
	if resp.StatusCode != 201 {
		t.Fatalf("create: %d %s", resp.StatusCode, created)
	}
	defer htDo(t, "DELETE", path+"/e2e-empty-rules", "", nil)
	_, read := htDo(t, "GET", path+"/e2e-empty-rules", "", nil)
	for what, data := range map[string][]byte{"create": created, "get": read} {
		if !bytes.HasSuffix(data, []byte(`"rules":null}`)) {
			t.Errorf("%s answered %s, want \"rules\":null as kube-apiserver", what, data)
		}
	}
}
