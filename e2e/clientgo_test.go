package e2e

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	clientfeatures "k8s.io/client-go/features"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/pager"
)

var (
	cgConfigMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	cgPods       = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	cgWidgets    = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	cgNamespaces = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
)

// cgTimeout bounds every wait of these tests: what they wait for takes
// well under a second on a quiet machine, but a machine at a load average
// of 20 (the shared 2-core machines) made informers' syncs and a CRD's
// conditions take over 20 s.
const cgTimeout = 45 * time.Second

// cgConfig is a client-go configuration for testServer without client-side
// rate limiting (the tests create thousands of objects). wrap, if not nil,
// wraps the transport.
func cgConfig(wrap func(http.RoundTripper) http.RoundTripper) *rest.Config {
	cfg := rest.CopyConfig(testServerREST)
	if wrap != nil {
		cfg.WrapTransport = wrap
	}
	return cfg
}

func cgDynamic(t testing.TB) *dynamic.DynamicClient {
	t.Helper()
	c, err := dynamic.NewForConfig(cgConfig(nil))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func cgContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), cgTimeout*3)
	t.Cleanup(cancel)
	return ctx
}

// cgNamespace creates a namespace of the test's own (generated name from
// prefix), waits for its rootCAConfigMap, and deletes it, with its contents,
// when the test ends.
func cgNamespace(t testing.TB, dyn dynamic.Interface, prefix string) string {
	t.Helper()
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace",
		"metadata": map[string]any{"generateName": prefix + "-"}}}
	created, err := dyn.Resource(cgNamespaces).Create(context.Background(), ns, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	name := created.GetName()
	t.Cleanup(func() {
		if err := dyn.Resource(cgNamespaces).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
			t.Errorf("delete namespace %s: %v", name, err)
		}
	})
	waitForRootCA(t, name)
	return name
}

func cgConfigMap(name string, labels map[string]string, data map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name}, "data": data}}
	if labels != nil {
		u.SetLabels(labels)
	}
	return u
}

func cgWidget(name, color string, labels map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": name}, "spec": map[string]any{"color": color, "size": int64(1)}}}
	if labels != nil {
		u.SetLabels(labels)
	}
	return u
}

func cgPod(name, node string, labels map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{"nodeName": node, "containers": []any{
			map[string]any{"name": "main", "image": "busybox:1"},
		}}}}
	if labels != nil {
		u.SetLabels(labels)
	}
	return u
}

// cgRV parses an object's resourceVersion.
func cgRV(t testing.TB, rv string) uint64 {
	t.Helper()
	v, err := strconv.ParseUint(rv, 10, 64)
	if err != nil {
		t.Fatalf("resourceVersion %q is not a number: %v", rv, err)
	}
	return v
}

// cgCreateMany creates n objects made by mk(i) with a few goroutines.
func cgCreateMany(t testing.TB, ri dynamic.ResourceInterface, n int, mk func(i int) *unstructured.Unstructured) {
	t.Helper()
	const workers = 8
	ctx := context.Background()
	start := time.Now()
	defer func() { t.Logf("created %d objects in %v", n, time.Since(start)) }()
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := w; i < n; i += workers {
				if _, err := ri.Create(ctx, mk(i), metav1.CreateOptions{}); err != nil {
					errs <- fmt.Errorf("create #%d: %w", i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// cgNames returns the names of a list's items, sorted, without
// rootCAConfigMap.
func cgNames(list *unstructured.UnstructuredList) []string {
	var names []string
	for _, item := range list.Items {
		names = append(names, item.GetName())
	}
	slices.Sort(names)
	return withoutRootCA(names)
}

// TestClientGoCRUD drives create, get, update, the three patch types and
// delete through the dynamic client, for a built-in kind and the custom
// resource.
func TestClientGoCRUD(t *testing.T) {
	t.Parallel()
	dyn := cgDynamic(t)
	ctx := cgContext(t)
	ns := cgNamespace(t, dyn, "crud")
	cases := []struct {
		name string
		gvr  schema.GroupVersionResource
		mk   func(name string) *unstructured.Unstructured
		// field is the path of a string field to change by update and patch.
		field []string
		// strategic says whether strategic merge patch is supported.
		strategic bool
	}{
		{"configmaps", cgConfigMaps, func(n string) *unstructured.Unstructured {
			return cgConfigMap(n, map[string]string{"app": "crud"}, map[string]any{"k": "v0"})
		}, []string{"data", "k"}, true},
		{"widgets", cgWidgets, func(n string) *unstructured.Unstructured {
			return cgWidget(n, "red", map[string]string{"app": "crud"})
		}, []string{"spec", "color"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ri := dyn.Resource(tc.gvr).Namespace(ns)
			field := func(u *unstructured.Unstructured) string {
				v, _, _ := unstructured.NestedString(u.Object, tc.field...)
				return v
			}

			created, err := ri.Create(ctx, tc.mk("one"), metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("create: %v", err)
			}
			if ts := created.GetCreationTimestamp(); created.GetUID() == "" || ts.IsZero() || created.GetResourceVersion() == "" {
				t.Fatalf("created object lacks uid, creationTimestamp or resourceVersion: %v", created.Object["metadata"])
			}
			if created.GetNamespace() != ns || created.GetName() != "one" || created.GetLabels()["app"] != "crud" {
				t.Fatalf("created object has the wrong identity: %v", created.Object["metadata"])
			}
			if created.GetKind() != tc.mk("x").GetKind() || created.GetAPIVersion() != tc.mk("x").GetAPIVersion() {
				t.Fatalf("created object has type %s %s", created.GetAPIVersion(), created.GetKind())
			}
			lastRV := cgRV(t, created.GetResourceVersion())

			// The object returned by each write is the one stored: later
			// reads return it, with a larger resourceVersion each write.
			check := func(step string, got *unstructured.Unstructured, want string) {
				t.Helper()
				if got.GetUID() != created.GetUID() {
					t.Errorf("%s: uid changed from %s to %s", step, created.GetUID(), got.GetUID())
				}
				if ts := got.GetCreationTimestamp(); !ts.Equal(cgPtr(created.GetCreationTimestamp())) {
					t.Errorf("%s: creationTimestamp changed from %v to %v", step, created.GetCreationTimestamp(), got.GetCreationTimestamp())
				}
				rv := cgRV(t, got.GetResourceVersion())
				if rv <= lastRV {
					t.Errorf("%s: resourceVersion %d is not after the previous write's %d", step, rv, lastRV)
				}
				lastRV = rv
				if f := field(got); f != want {
					t.Errorf("%s: field %v is %q, want %q", step, tc.field, f, want)
				}
				again, err := ri.Get(ctx, got.GetName(), metav1.GetOptions{})
				if err != nil {
					t.Fatalf("%s: get: %v", step, err)
				}
				if again.GetResourceVersion() != got.GetResourceVersion() || field(again) != want {
					t.Errorf("%s: get returned resourceVersion %s and %q, the write %s and %q",
						step, again.GetResourceVersion(), field(again), got.GetResourceVersion(), want)
				}
			}

			got, err := ri.Get(ctx, "one", metav1.GetOptions{})
			if err != nil {
				t.Fatalf("get: %v", err)
			}
			if got.GetResourceVersion() != created.GetResourceVersion() || got.GetUID() != created.GetUID() {
				t.Fatalf("get returned %v, create %v", got.Object["metadata"], created.Object["metadata"])
			}

			// Update.
			upd := got.DeepCopy()
			if err := unstructured.SetNestedField(upd.Object, "updated", tc.field...); err != nil {
				t.Fatal(err)
			}
			updated, err := ri.Update(ctx, upd, metav1.UpdateOptions{})
			if err != nil {
				t.Fatalf("update: %v", err)
			}
			check("update", updated, "updated")

			// An update carrying the old resourceVersion conflicts.
			stale := got.DeepCopy()
			unstructured.SetNestedField(stale.Object, "stale", tc.field...)
			if _, err := ri.Update(ctx, stale, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
				t.Fatalf("update at a stale resourceVersion: got %v, want a Conflict", err)
			}

			// An update without resourceVersion is unconditional for a
			// built-in kind; custom resources' strategies refuse it (422),
			// as kube-apiserver's, and change nothing.
			uncond := updated.DeepCopy()
			uncond.SetResourceVersion("")
			unstructured.SetNestedField(uncond.Object, "unconditional", tc.field...)
			unconditional, err := ri.Update(ctx, uncond, metav1.UpdateOptions{})
			if tc.gvr.Group != "" {
				if !apierrors.IsInvalid(err) {
					t.Fatalf("unconditional update of a custom resource: got %v, want Invalid", err)
				}
				if kept, err := ri.Get(ctx, "one", metav1.GetOptions{}); err != nil || kept.GetResourceVersion() != updated.GetResourceVersion() || field(kept) != "updated" {
					t.Fatalf("after a refused unconditional update: %v, %v", kept, err)
				}
				uncond.SetResourceVersion(updated.GetResourceVersion())
				if unconditional, err = ri.Update(ctx, uncond, metav1.UpdateOptions{}); err != nil {
					t.Fatalf("update: %v", err)
				}
			} else if err != nil {
				t.Fatalf("unconditional update: %v", err)
			}
			check("unconditional update", unconditional, "unconditional")

			// Merge patch.
			mergePatch := fmt.Sprintf(`{"metadata":{"labels":{"patched":"merge"}},%s}`, cgNestedJSON(tc.field, "merged"))
			merged, err := ri.Patch(ctx, "one", types.MergePatchType, []byte(mergePatch), metav1.PatchOptions{})
			if err != nil {
				t.Fatalf("merge patch: %v", err)
			}
			check("merge patch", merged, "merged")
			if l := merged.GetLabels(); l["patched"] != "merge" || l["app"] != "crud" {
				t.Errorf("merge patch: labels are %v", l)
			}

			// JSON patch, with a test operation that holds.
			jsonPatch := fmt.Sprintf(`[{"op":"test","path":"/%[1]s","value":"merged"},{"op":"replace","path":"/%[1]s","value":"json"}]`,
				strings.Join(tc.field, "/"))
			jsonPatched, err := ri.Patch(ctx, "one", types.JSONPatchType, []byte(jsonPatch), metav1.PatchOptions{})
			if err != nil {
				t.Fatalf("JSON patch: %v", err)
			}
			check("JSON patch", jsonPatched, "json")
			// A JSON patch whose test fails changes nothing.
			if _, err := ri.Patch(ctx, "one", types.JSONPatchType, []byte(`[{"op":"test","path":"/metadata/name","value":"other"}]`), metav1.PatchOptions{}); err == nil {
				t.Errorf("JSON patch with a failing test: no error")
			}

			// Strategic merge patch: built-in kinds only.
			smp := cgNestedJSONObject(tc.field, "strategic")
			smPatched, err := ri.Patch(ctx, "one", types.StrategicMergePatchType, []byte(smp), metav1.PatchOptions{})
			if tc.strategic {
				if err != nil {
					t.Fatalf("strategic merge patch: %v", err)
				}
				check("strategic merge patch", smPatched, "strategic")
			} else if !apierrors.IsUnsupportedMediaType(err) {
				t.Fatalf("strategic merge patch of a custom resource: got %v, want 415 UnsupportedMediaType", err)
			}

			// Patching a missing object is NotFound.
			if _, err := ri.Patch(ctx, "missing", types.MergePatchType, []byte(`{}`), metav1.PatchOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("patch of a missing object: got %v, want NotFound", err)
			}

			// generateName.
			gen := tc.mk("")
			gen.SetName("")
			gen.SetGenerateName("gen-")
			generated, err := ri.Create(ctx, gen, metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("create with generateName: %v", err)
			}
			if n := generated.GetName(); !strings.HasPrefix(n, "gen-") || len(n) != len("gen-")+5 {
				t.Errorf("generated name %q is not gen- and 5 characters", n)
			}
			if cgRV(t, generated.GetResourceVersion()) <= lastRV {
				t.Errorf("generated object's resourceVersion %s is not after %d", generated.GetResourceVersion(), lastRV)
			}

			// Creating the same name again is AlreadyExists.
			if _, err := ri.Create(ctx, tc.mk("one"), metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
				t.Errorf("second create: got %v, want AlreadyExists", err)
			}

			// Delete with a stale resourceVersion precondition conflicts.
			staleRV := created.GetResourceVersion()
			if err := ri.Delete(ctx, "one", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &staleRV}}); !apierrors.IsConflict(err) {
				t.Errorf("delete with a stale precondition: got %v, want Conflict", err)
			}
			uid := created.GetUID()
			if err := ri.Delete(ctx, "one", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}); err != nil {
				t.Fatalf("delete: %v", err)
			}
			if _, err := ri.Get(ctx, "one", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("get after delete: got %v, want NotFound", err)
			}
			if err := ri.Delete(ctx, "one", metav1.DeleteOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("second delete: got %v, want NotFound", err)
			}
			list, err := ri.List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatalf("list: %v", err)
			}
			if names := cgNames(list); !slices.Equal(names, []string{generated.GetName()}) {
				t.Errorf("list after delete: %v, want only %s", names, generated.GetName())
			}
		})
	}
}

func cgPtr[T any](v T) *T { return &v }

// cgNestedJSON renders "a":{"b":"v"} for path [a b].
func cgNestedJSON(path []string, value string) string {
	s := strconv.Quote(value)
	for i := len(path) - 1; i >= 1; i-- {
		s = fmt.Sprintf("{%q:%s}", path[i], s)
	}
	return fmt.Sprintf("%q:%s", path[0], s)
}

func cgNestedJSONObject(path []string, value string) string {
	return "{" + cgNestedJSON(path, value) + "}"
}

// TestClientGoTypedClientset uses the typed clientset with JSON bodies and,
// as kubectl and most controllers do, protobuf bodies.
func TestClientGoTypedClientset(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name        string
		contentType string
		accept      string
	}{
		{"json", "", ""},
		{"protobuf", "application/vnd.kubernetes.protobuf", "application/vnd.kubernetes.protobuf,application/json"},
		{"protobuf-only", "application/vnd.kubernetes.protobuf", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := cgContext(t)
			var mu sync.Mutex
			contentTypes := map[string]bool{}
			cfg := cgConfig(func(rt http.RoundTripper) http.RoundTripper {
				return cgRoundTripFunc(func(r *http.Request) (*http.Response, error) {
					if ct := r.Header.Get("Content-Type"); ct != "" {
						mu.Lock()
						contentTypes[r.Method+" "+ct] = true
						mu.Unlock()
					}
					return rt.RoundTrip(r)
				})
			})
			cfg.ContentType, cfg.AcceptContentTypes = tc.contentType, tc.accept
			cs, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				t.Fatal(err)
			}
			nsObj, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "typed-"}}, metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("create namespace: %v", err)
			}
			ns := nsObj.Name
			t.Cleanup(func() { cs.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
			waitForRootCA(t, ns)
			if nsObj.UID == "" || nsObj.ResourceVersion == "" {
				t.Fatalf("namespace lacks uid or resourceVersion: %+v", nsObj.ObjectMeta)
			}

			pods := cs.CoreV1().Pods(ns)
			w, err := pods.Watch(ctx, metav1.ListOptions{ResourceVersion: nsObj.ResourceVersion})
			if err != nil {
				t.Fatalf("watch pods: %v", err)
			}
			defer w.Stop()

			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "p1", Labels: map[string]string{"app": "typed"}},
				Spec: corev1.PodSpec{NodeName: "node-a", Containers: []corev1.Container{
					{Name: "main", Image: "busybox:1"}, {Name: "side", Image: "busybox:1"},
				}},
			}
			created, err := pods.Create(ctx, pod, metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("create pod: %v", err)
			}
			if created.UID == "" || created.CreationTimestamp.IsZero() || created.Spec.NodeName != "node-a" || len(created.Spec.Containers) != 2 {
				t.Fatalf("created pod: %+v", created)
			}
			select {
			case ev := <-w.ResultChan():
				if p, ok := ev.Object.(*corev1.Pod); ev.Type != watch.Added || !ok || p.Name != "p1" {
					t.Fatalf("watch event: %v %#v", ev.Type, ev.Object)
				}
			case <-time.After(cgTimeout):
				t.Fatal("no watch event for the created pod")
			}

			got, err := pods.Get(ctx, "p1", metav1.GetOptions{})
			if err != nil || got.ResourceVersion != created.ResourceVersion {
				t.Fatalf("get pod: %v %+v", err, got)
			}

			// Strategic merge patch merges containers by name.
			patched, err := pods.Patch(ctx, "p1", types.StrategicMergePatchType,
				[]byte(`{"spec":{"containers":[{"name":"side","image":"busybox:2"}]}}`), metav1.PatchOptions{})
			if err != nil {
				t.Fatalf("strategic merge patch: %v", err)
			}
			if len(patched.Spec.Containers) != 2 || patched.Spec.Containers[0].Image != "busybox:1" || patched.Spec.Containers[1].Image != "busybox:2" {
				t.Errorf("strategic merge patch did not merge by name: %+v", patched.Spec.Containers)
			}

			// Update through the typed client (a protobuf body for protobuf).
			patched.Labels["tier"] = "web"
			updated, err := pods.Update(ctx, patched, metav1.UpdateOptions{})
			if err != nil {
				t.Fatalf("update pod: %v", err)
			}
			if updated.Labels["tier"] != "web" || cgRV(t, updated.ResourceVersion) <= cgRV(t, patched.ResourceVersion) {
				t.Errorf("updated pod: %+v", updated.ObjectMeta)
			}
			if _, err := pods.Update(ctx, patched, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
				t.Errorf("update at a stale resourceVersion: got %v, want Conflict", err)
			}

			cms := cs.CoreV1().ConfigMaps(ns)
			for i := range 3 {
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i), Labels: map[string]string{"i": strconv.Itoa(i)}},
					Data: map[string]string{"k": "v"}, BinaryData: map[string][]byte{"b": {0, 1, 2}}}
				got, err := cms.Create(ctx, cm, metav1.CreateOptions{})
				if err != nil {
					t.Fatalf("create configmap: %v", err)
				}
				if got.Data["k"] != "v" || string(got.BinaryData["b"]) != "\x00\x01\x02" {
					t.Errorf("created configmap: %+v", got)
				}
			}
			cmList, err := cms.List(ctx, metav1.ListOptions{LabelSelector: "i in (0,2)"})
			if err != nil {
				t.Fatalf("list configmaps: %v", err)
			}
			if len(cmList.Items) != 2 || cmList.Items[0].Name != "cm-0" || cmList.Items[1].Name != "cm-2" || cmList.ResourceVersion == "" {
				t.Errorf("list configmaps with a label selector: %+v", cmList)
			}
			podList, err := pods.List(ctx, metav1.ListOptions{})
			if err != nil || len(podList.Items) != 1 || podList.Items[0].Labels["tier"] != "web" {
				t.Fatalf("list pods: %v %+v", err, podList)
			}

			// Deletes carry DeleteOptions bodies (protobuf for protobuf).
			stale := created.UID + "x"
			if err := pods.Delete(ctx, "p1", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &stale}}); !apierrors.IsConflict(err) {
				t.Errorf("delete with a wrong uid precondition: got %v, want Conflict", err)
			}
			// p1 is bound to a node: grace 0 deletes it at once.
			zero := int64(0)
			if err := pods.Delete(ctx, "p1", metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions(string(created.UID)), GracePeriodSeconds: &zero}); err != nil {
				t.Fatalf("delete pod: %v", err)
			}
			if err := cms.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "i=1"}); err != nil {
				t.Fatalf("delete configmaps: %v", err)
			}
			if err := cms.Delete(ctx, "cm-0", metav1.DeleteOptions{}); err != nil {
				t.Fatalf("delete configmap: %v", err)
			}
			if _, err := pods.Get(ctx, "p1", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("get deleted pod: got %v, want NotFound", err)
			}
			cmList, err = cms.List(ctx, metav1.ListOptions{})
			if err != nil || len(cmList.Items) != 2 || cmList.Items[0].Name != "cm-2" || cmList.Items[1].Name != rootCAConfigMap {
				t.Errorf("configmaps left: %v %+v", err, cmList)
			}

			mu.Lock()
			defer mu.Unlock()
			if tc.contentType != "" && !contentTypes["POST "+tc.contentType] {
				t.Errorf("no POST was sent as %s: %v", tc.contentType, contentTypes)
			}
		})
	}
}

type cgRoundTripFunc func(*http.Request) (*http.Response, error)

func (f cgRoundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// cgClassicListWatch is a ListerWatcher that opts out of watch lists, so
// that a reflector lists (in pages, from resourceVersion "0") and then
// watches, as clients without the WatchListClient feature do.
type cgClassicListWatch struct{ *cache.ListWatch }

func (cgClassicListWatch) IsWatchListSemanticsUnSupported() bool { return true }

// cgRecorder records what an informer's event handler sees.
type cgRecorder struct {
	mu                      sync.Mutex
	added, updated, deleted map[string]int
	colors                  map[string]string // from updates
}

func (r *cgRecorder) handler() cache.ResourceEventHandlerFuncs {
	name := func(obj any) string {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		return obj.(*unstructured.Unstructured).GetName()
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { r.mu.Lock(); r.added[name(obj)]++; r.mu.Unlock() },
		UpdateFunc: func(_, obj any) {
			r.mu.Lock()
			defer r.mu.Unlock()
			u := obj.(*unstructured.Unstructured)
			color, _, _ := unstructured.NestedString(u.Object, "spec", "color")
			if color != "red" { // not a resync
				r.updated[u.GetName()]++
				r.colors[u.GetName()] = color
			}
		},
		DeleteFunc: func(obj any) { r.mu.Lock(); r.deleted[name(obj)]++; r.mu.Unlock() },
	}
}

// TestClientGoInformer syncs shared informers over 1,000 widgets (one by a
// watch list, one by paged list and watch), then checks that they follow
// adds, updates and deletes.
func TestClientGoInformer(t *testing.T) {
	t.Parallel()
	dyn := cgDynamic(t)
	ns := cgNamespace(t, dyn, "informer")
	ri := dyn.Resource(cgWidgets).Namespace(ns)
	const n = 1000
	cgCreateMany(t, ri, n, func(i int) *unstructured.Unstructured {
		return cgWidget(fmt.Sprintf("w-%04d", i), "red", nil)
	})

	// Each informer's client records what it asks for.
	type informerCase struct {
		name     string
		informer cache.SharedIndexInformer
		requests []string
		rec      *cgRecorder
		reg      cache.ResourceEventHandlerRegistration
	}
	var mu sync.Mutex
	recordingClient := func(c *informerCase) *dynamic.DynamicClient {
		client, err := dynamic.NewForConfig(cgConfig(func(rt http.RoundTripper) http.RoundTripper {
			return cgRoundTripFunc(func(r *http.Request) (*http.Response, error) {
				mu.Lock()
				c.requests = append(c.requests, r.URL.RawQuery)
				mu.Unlock()
				return rt.RoundTrip(r)
			})
		}))
		if err != nil {
			t.Fatal(err)
		}
		return client
	}
	stop := make(chan struct{})

	watchList := &informerCase{name: "watch list"}
	factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(recordingClient(watchList), 0, ns, nil)
	watchList.informer = factory.ForResource(cgWidgets).Informer()
	defer factory.Shutdown() // after close(stop)
	defer close(stop)

	classic := &informerCase{name: "list and watch"}
	classicClient := recordingClient(classic).Resource(cgWidgets).Namespace(ns)
	classic.informer = cache.NewSharedIndexInformer(cgClassicListWatch{&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return classicClient.List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return classicClient.Watch(ctx, opts)
		},
	}}, &unstructured.Unstructured{}, 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})

	cases := []*informerCase{watchList, classic}
	for _, c := range cases {
		c.rec = &cgRecorder{added: map[string]int{}, updated: map[string]int{}, deleted: map[string]int{}, colors: map[string]string{}}
		var err error
		if c.reg, err = c.informer.AddEventHandler(c.rec.handler()); err != nil {
			t.Fatal(err)
		}
	}
	factory.Start(stop)
	go classic.informer.Run(stop)

	syncCtx, cancel := context.WithTimeout(context.Background(), cgTimeout)
	defer cancel()
	for _, c := range cases {
		if !cache.WaitForCacheSync(syncCtx.Done(), c.informer.HasSynced, c.reg.HasSynced) {
			t.Fatalf("%s: the informer did not sync", c.name)
		}
		if got := len(c.informer.GetStore().List()); got != n {
			t.Errorf("%s: the synced store holds %d objects, want %d", c.name, got, n)
		}
		c.rec.mu.Lock()
		if len(c.rec.added) != n {
			t.Errorf("%s: handler saw %d adds at sync, want %d", c.name, len(c.rec.added), n)
		}
		for k, count := range c.rec.added {
			if count != 1 {
				t.Errorf("%s: handler saw %d adds of %s", c.name, count, k)
			}
		}
		c.rec.mu.Unlock()
	}
	mu.Lock()
	t.Logf("requests: watch list %q; list and watch %q", watchList.requests, classic.requests)
	// With the WatchListClient feature (on by default) an informer syncs by
	// one watch with sendInitialEvents, ended by the initial-events-end
	// bookmark; a failure there would make it fall back to a list.
	if clientfeatures.FeatureGates().Enabled(clientfeatures.WatchListClient) {
		for _, q := range watchList.requests {
			if !strings.Contains(q, "sendInitialEvents=true") || !strings.Contains(q, "watch=true") {
				t.Errorf("the watch list informer made a request other than a watch list: %q", watchList.requests)
				break
			}
		}
	}
	// The classic informer lists from "0" in pages of 500 (here, as from
	// etcd, the limit is honoured), then watches.
	if len(classic.requests) < 3 || !strings.Contains(classic.requests[0], "limit=500") || !strings.Contains(classic.requests[0], "resourceVersion=0") ||
		!strings.Contains(classic.requests[1], "continue=") {
		t.Errorf("the classic informer's requests: %q", classic.requests)
	}
	mu.Unlock()

	ctx := cgContext(t)
	for i := range 10 {
		if _, err := ri.Create(ctx, cgWidget(fmt.Sprintf("new-%d", i), "green", nil), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := ri.Patch(ctx, fmt.Sprintf("w-%04d", i), types.MergePatchType, []byte(`{"spec":{"color":"blue"}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := ri.Delete(ctx, fmt.Sprintf("w-%04d", n-1-i), metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range cases {
		s := c.rec
		deadline := time.Now().Add(cgTimeout)
		for {
			s.mu.Lock()
			done := len(s.added) == n+10 && len(s.updated) == 10 && len(s.deleted) == 10
			s.mu.Unlock()
			if done || time.Now().After(deadline) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		s.mu.Lock()
		for i := range 10 {
			if k := fmt.Sprintf("new-%d", i); s.added[k] != 1 {
				t.Errorf("%s: adds of %s: %d, want 1", c.name, k, s.added[k])
			}
			if k := fmt.Sprintf("w-%04d", i); s.updated[k] != 1 || s.colors[k] != "blue" {
				t.Errorf("%s: updates of %s: %d (color %q), want 1 (blue)", c.name, k, s.updated[k], s.colors[k])
			}
			if k := fmt.Sprintf("w-%04d", n-1-i); s.deleted[k] != 1 {
				t.Errorf("%s: deletes of %s: %d, want 1", c.name, k, s.deleted[k])
			}
		}
		if len(s.added) != n+10 || len(s.updated) != 10 || len(s.deleted) != 10 {
			t.Errorf("%s: handler saw %d objects added, %d updated, %d deleted; want %d, 10, 10", c.name, len(s.added), len(s.updated), len(s.deleted), n+10)
		}
		s.mu.Unlock()
		store := c.informer.GetStore()
		if got := len(store.List()); got != n {
			t.Errorf("%s: store holds %d objects, want %d", c.name, got, n)
		}
		for i := range 10 {
			if _, ok, _ := store.GetByKey(ns + "/" + fmt.Sprintf("new-%d", i)); !ok {
				t.Errorf("%s: store lacks new-%d", c.name, i)
			}
			if _, ok, _ := store.GetByKey(ns + "/" + fmt.Sprintf("w-%04d", n-1-i)); ok {
				t.Errorf("%s: store still holds deleted w-%04d", c.name, n-1-i)
			}
			obj, ok, _ := store.GetByKey(ns + "/" + fmt.Sprintf("w-%04d", i))
			if !ok {
				t.Errorf("%s: store lacks w-%04d", c.name, i)
				continue
			}
			if color, _, _ := unstructured.NestedString(obj.(*unstructured.Unstructured).Object, "spec", "color"); color != "blue" {
				t.Errorf("%s: store's w-%04d has color %q, want blue", c.name, i, color)
			}
		}
	}
}

// TestClientGoPager lists 1,000 configmaps in pages of 50, all at the
// first page's resourceVersion even though the collection changes
// meanwhile.
func TestClientGoPager(t *testing.T) {
	t.Parallel()
	dyn := cgDynamic(t)
	ctx := cgContext(t)
	ns := cgNamespace(t, dyn, "pager")
	ri := dyn.Resource(cgConfigMaps).Namespace(ns)
	const n = 1000
	cgCreateMany(t, ri, n, func(i int) *unstructured.Unstructured {
		return cgConfigMap(fmt.Sprintf("cm-%04d", i), nil, map[string]any{"i": strconv.Itoa(i)})
	})

	type page struct {
		limit     int64
		continued bool
		rv        string
		items     int
	}
	var pages []page
	p := pager.New(func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		list, err := ri.List(ctx, opts)
		if err != nil {
			return nil, err
		}
		pages = append(pages, page{limit: opts.Limit, continued: opts.Continue != "", rv: list.GetResourceVersion(), items: len(list.Items)})
		if len(pages) == 1 {
			// Changes after the first page are not seen by later pages.
			if _, err := ri.Create(ctx, cgConfigMap("cm-late", nil, nil), metav1.CreateOptions{}); err != nil {
				return nil, err
			}
			if err := ri.Delete(ctx, fmt.Sprintf("cm-%04d", n-1), metav1.DeleteOptions{}); err != nil {
				return nil, err
			}
			if _, err := ri.Patch(ctx, fmt.Sprintf("cm-%04d", n-2), types.MergePatchType, []byte(`{"data":{"i":"changed"}}`), metav1.PatchOptions{}); err != nil {
				return nil, err
			}
		}
		return list, nil
	})
	p.PageSize = 50
	seen := map[string]int{}
	err := p.EachListItem(ctx, metav1.ListOptions{}, func(obj runtime.Object) error {
		u := obj.(*unstructured.Unstructured)
		seen[u.GetName()]++
		if u.GetName() == "cm-late" || u.GetName() == rootCAConfigMap {
			return nil
		}
		idx, err := strconv.Atoi(strings.TrimPrefix(u.GetName(), "cm-"))
		if err != nil {
			return fmt.Errorf("unexpected item %s", u.GetName())
		}
		if i, _, _ := unstructured.NestedString(u.Object, "data", "i"); i != strconv.Itoa(idx) {
			return fmt.Errorf("%s has data.i %q: not the first page's snapshot", u.GetName(), i)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("pager: %v", err)
	}
	if want := n/50 + 1; len(pages) != want { // rootCAConfigMap is the last
		t.Errorf("%d pages, want %d", len(pages), want)
	}
	for i, pg := range pages {
		wantItems := 50
		if i == len(pages)-1 {
			wantItems = 1
		}
		if pg.limit != 50 || pg.rv != pages[0].rv || pg.items != wantItems || pg.continued != (i > 0) {
			t.Errorf("page %d: limit %d, resourceVersion %s (first page: %s), %d items, continued %v", i, pg.limit, pg.rv, pages[0].rv, pg.items, pg.continued)
		}
	}
	if len(seen) != n+1 {
		t.Errorf("%d distinct items, want %d", len(seen), n+1)
	}
	for i := range n {
		if k := fmt.Sprintf("cm-%04d", i); seen[k] != 1 {
			t.Errorf("%s seen %d times", k, seen[k])
		}
	}
	if seen["cm-late"] != 0 {
		t.Errorf("an object created after the first page was listed")
	}
}

// cgNext returns the next watch event, failing after cgTimeout.
func cgNext(t *testing.T, w watch.Interface) watch.Event {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatal("the watch ended")
		}
		if ev.Type == watch.Error {
			t.Fatalf("watch error: %v", apierrors.FromObject(ev.Object))
		}
		return ev
	case <-time.After(cgTimeout):
		t.Fatal("no watch event")
	}
	return watch.Event{}
}

// cgNextNonBookmark skips bookmarks.
func cgNextNonBookmark(t *testing.T, w watch.Interface) watch.Event {
	t.Helper()
	for {
		if ev := cgNext(t, w); ev.Type != watch.Bookmark {
			return ev
		}
	}
}

func cgMeta(t *testing.T, obj runtime.Object) *unstructured.Unstructured {
	t.Helper()
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		t.Fatalf("event object is %T", obj)
	}
	return u
}

// TestClientGoWatch covers bookmarks, sendInitialEvents and replays from an
// old resourceVersion.
func TestClientGoWatch(t *testing.T) {
	t.Parallel()
	dyn := cgDynamic(t)
	ns := cgNamespace(t, dyn, "watch")
	ri := dyn.Resource(cgWidgets).Namespace(ns)

	t.Run("bookmarks", func(t *testing.T) {
		ctx := cgContext(t)
		first, err := ri.Create(ctx, cgWidget("bm-1", "red", nil), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// With the watch cache bookmarks come every minute and just before
		// the watch's timeout (as from kube-apiserver); from etcd, with each
		// progress notification.
		w, err := ri.Watch(ctx, metav1.ListOptions{ResourceVersion: first.GetResourceVersion(), AllowWatchBookmarks: true, TimeoutSeconds: cgPtr(int64(5))})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		last, err := ri.Create(ctx, cgWidget("bm-2", "red", nil), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if ev := cgNextNonBookmark(t, w); ev.Type != watch.Added || cgMeta(t, ev.Object).GetName() != "bm-2" {
			t.Fatalf("first event: %v %v", ev.Type, ev.Object)
		}
		lastRV := cgRV(t, last.GetResourceVersion())
		for {
			ev := cgNext(t, w)
			if ev.Type != watch.Bookmark {
				t.Fatalf("unexpected %v event", ev.Type)
			}
			u := cgMeta(t, ev.Object)
			if u.GetKind() != "Widget" || u.GetAPIVersion() != "example.com/v1" {
				t.Errorf("bookmark object is %s %s", u.GetAPIVersion(), u.GetKind())
			}
			if cgRV(t, u.GetResourceVersion()) >= lastRV {
				return
			}
		}
	})

	t.Run("sendInitialEvents", func(t *testing.T) {
		ctx := cgContext(t)
		var lastRV uint64
		names := []string{"init-1", "init-2", "init-3"}
		for _, name := range names {
			obj, err := ri.Create(ctx, cgWidget(name, "blue", map[string]string{"set": "initial"}), metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			lastRV = cgRV(t, obj.GetResourceVersion())
		}
		w, err := ri.Watch(ctx, metav1.ListOptions{LabelSelector: "set=initial", SendInitialEvents: cgPtr(true),
			ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, AllowWatchBookmarks: true})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		var got []string
		for {
			ev := cgNext(t, w)
			u := cgMeta(t, ev.Object)
			if ev.Type == watch.Bookmark {
				if u.GetAnnotations()[metav1.InitialEventsAnnotationKey] != "true" {
					// An ordinary bookmark may not come before the initial
					// events end.
					t.Fatalf("bookmark without %s before the initial events ended: %v", metav1.InitialEventsAnnotationKey, u.Object)
				}
				if rv := cgRV(t, u.GetResourceVersion()); rv < lastRV {
					t.Errorf("initial-events-end bookmark at %d, before the last write %d", rv, lastRV)
				}
				break
			}
			if ev.Type != watch.Added {
				t.Fatalf("initial event of type %v", ev.Type)
			}
			got = append(got, u.GetName())
		}
		if !slices.Equal(got, names) {
			t.Errorf("initial events for %v, want %v", got, names)
		}
		// Then changes stream.
		if _, err := ri.Create(ctx, cgWidget("init-4", "blue", map[string]string{"set": "initial"}), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if ev := cgNextNonBookmark(t, w); ev.Type != watch.Added || cgMeta(t, ev.Object).GetName() != "init-4" {
			t.Errorf("event after the initial ones: %v %v", ev.Type, ev.Object)
		}
	})

	t.Run("fromOldResourceVersion", func(t *testing.T) {
		ctx := cgContext(t)
		start, err := ri.Create(ctx, cgWidget("old-1", "red", map[string]string{"set": "old"}), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		type change struct {
			typ  watch.EventType
			name string
			rv   string
		}
		var want []change
		obj, err := ri.Patch(ctx, "old-1", types.MergePatchType, []byte(`{"spec":{"color":"green"}}`), metav1.PatchOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, change{watch.Modified, "old-1", obj.GetResourceVersion()})
		obj, err = ri.Create(ctx, cgWidget("old-2", "red", map[string]string{"set": "old"}), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, change{watch.Added, "old-2", obj.GetResourceVersion()})
		if err := ri.Delete(ctx, "old-1", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		want = append(want, change{watch.Deleted, "old-1", ""})

		w, err := ri.Watch(ctx, metav1.ListOptions{ResourceVersion: start.GetResourceVersion(), LabelSelector: "set=old"})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		var prev uint64
		for i, wc := range want {
			ev := cgNext(t, w)
			u := cgMeta(t, ev.Object)
			rv := cgRV(t, u.GetResourceVersion())
			if ev.Type != wc.typ || u.GetName() != wc.name || (wc.rv != "" && u.GetResourceVersion() != wc.rv) || rv <= prev {
				t.Errorf("event %d: %v %s at %s, want %v %s at %s (after %d)", i, ev.Type, u.GetName(), u.GetResourceVersion(), wc.typ, wc.name, wc.rv, prev)
			}
			prev = rv
		}
	})
}

// TestClientGoDeleteCollection deletes by label selector.
func TestClientGoDeleteCollection(t *testing.T) {
	t.Parallel()
	dyn := cgDynamic(t)
	ctx := cgContext(t)
	ns := cgNamespace(t, dyn, "delcoll")
	other := cgNamespace(t, dyn, "delcoll-other")
	cases := []struct {
		gvr schema.GroupVersionResource
		mk  func(name string, labels map[string]string) *unstructured.Unstructured
	}{
		{cgConfigMaps, func(n string, l map[string]string) *unstructured.Unstructured { return cgConfigMap(n, l, nil) }},
		{cgWidgets, func(n string, l map[string]string) *unstructured.Unstructured { return cgWidget(n, "red", l) }},
	}
	for _, tc := range cases {
		t.Run(tc.gvr.Resource, func(t *testing.T) {
			ri := dyn.Resource(tc.gvr).Namespace(ns)
			for i := range 6 {
				app := []string{"doomed", "kept"}[i%2]
				if _, err := ri.Create(ctx, tc.mk(fmt.Sprintf("o-%d", i), map[string]string{"app": app}), metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			// The same labels in another namespace are out of scope.
			if _, err := dyn.Resource(tc.gvr).Namespace(other).Create(ctx, tc.mk("o-0", map[string]string{"app": "doomed"}), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := ri.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "app=doomed"}); err != nil {
				t.Fatalf("delete collection: %v", err)
			}
			list, err := ri.List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if names := cgNames(list); !slices.Equal(names, []string{"o-1", "o-3", "o-5"}) {
				t.Errorf("left after delete collection: %v", names)
			}
			if _, err := dyn.Resource(tc.gvr).Namespace(other).Get(ctx, "o-0", metav1.GetOptions{}); err != nil {
				t.Errorf("the other namespace's object: %v", err)
			}
		})
	}
}

// TestClientGoFieldSelectors lists and watches pods by spec.nodeName and
// widgets by spec.color.
func TestClientGoFieldSelectors(t *testing.T) {
	t.Parallel()
	dyn := cgDynamic(t)
	ns := cgNamespace(t, dyn, "fields")
	cases := []struct {
		gvr         schema.GroupVersionResource
		field       []string
		mk          func(name, value string) *unstructured.Unstructured
		unsupported string
		// recreate says a change of the field is a delete and a create:
		// a pod's spec.nodeName may not be updated.
		recreate bool
	}{
		{cgPods, []string{"spec", "nodeName"}, func(n, v string) *unstructured.Unstructured { return cgPod(n, v, nil) }, "spec.hostname=x", true},
		{cgWidgets, []string{"spec", "color"}, func(n, v string) *unstructured.Unstructured { return cgWidget(n, v, nil) }, "spec.size=1", false},
	}
	for _, tc := range cases {
		t.Run(tc.gvr.Resource, func(t *testing.T) {
			ctx := cgContext(t)
			ri := dyn.Resource(tc.gvr).Namespace(ns)
			path := strings.Join(tc.field, ".")
			for i, v := range []string{"a", "b", "a", "b"} {
				if _, err := ri.Create(ctx, tc.mk(fmt.Sprintf("o-%d", i), v), metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			list, err := ri.List(ctx, metav1.ListOptions{FieldSelector: path + "=a"})
			if err != nil {
				t.Fatalf("list: %v", err)
			}
			if names := cgNames(list); !slices.Equal(names, []string{"o-0", "o-2"}) {
				t.Errorf("list %s=a: %v", path, names)
			}
			list, err = ri.List(ctx, metav1.ListOptions{FieldSelector: path + "!=a,metadata.name!=o-1"})
			if err != nil {
				t.Fatalf("list: %v", err)
			}
			if names := cgNames(list); !slices.Equal(names, []string{"o-3"}) {
				t.Errorf("list %s!=a,metadata.name!=o-1: %v", path, names)
			}
			// All namespaces: the selector and the namespace field together.
			all, err := dyn.Resource(tc.gvr).List(ctx, metav1.ListOptions{FieldSelector: path + "=b,metadata.namespace=" + ns})
			if err != nil {
				t.Fatalf("list across namespaces: %v", err)
			}
			if names := cgNames(all); !slices.Equal(names, []string{"o-1", "o-3"}) {
				t.Errorf("list across namespaces %s=b: %v", path, names)
			}

			w, err := ri.Watch(ctx, metav1.ListOptions{FieldSelector: path + "=a", ResourceVersion: list.GetResourceVersion()})
			if err != nil {
				t.Fatalf("watch: %v", err)
			}
			defer w.Stop()
			if _, err := ri.Create(ctx, tc.mk("o-4", "b"), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := ri.Create(ctx, tc.mk("o-5", "a"), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			// o-0 stops matching: DELETED for this watch; o-1 starts: ADDED.
			set := func(name, value string) {
				t.Helper()
				if !tc.recreate {
					if _, err := ri.Patch(ctx, name, types.MergePatchType, []byte(cgNestedJSONObject(tc.field, value)), metav1.PatchOptions{}); err != nil {
						t.Fatal(err)
					}
					return
				}
				zero := int64(0)
				if err := ri.Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
					t.Fatal(err)
				}
				if _, err := ri.Create(ctx, tc.mk(name, value), metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			set("o-0", "c")
			set("o-1", "a")
			want := []struct {
				typ   watch.EventType
				name  string
				value string
			}{{watch.Added, "o-5", "a"}, {watch.Deleted, "o-0", "a"}, {watch.Added, "o-1", "a"}}
			for i, wc := range want {
				ev := cgNext(t, w)
				u := cgMeta(t, ev.Object)
				v, _, _ := unstructured.NestedString(u.Object, tc.field...)
				if ev.Type != wc.typ || u.GetName() != wc.name || v != wc.value {
					t.Errorf("event %d: %v %s (%s=%q), want %v %s (%q)", i, ev.Type, u.GetName(), path, v, wc.typ, wc.name, wc.value)
				}
			}

			// An unsupported field is a 400, for list and watch.
			if _, err := ri.List(ctx, metav1.ListOptions{FieldSelector: tc.unsupported}); !apierrors.IsBadRequest(err) ||
				!strings.Contains(err.Error(), "field label not supported") {
				t.Errorf("list with %s: got %v, want 400 field label not supported", tc.unsupported, err)
			}
			if w, err := ri.Watch(ctx, metav1.ListOptions{FieldSelector: tc.unsupported}); !apierrors.IsBadRequest(err) {
				if w != nil {
					w.Stop()
				}
				t.Errorf("watch with %s: got %v, want 400", tc.unsupported, err)
			}
		})
	}
}
