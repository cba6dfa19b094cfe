// Command recordprotobuf records pkg/encoding/testdata/protobuf from a
// running kube-apiserver: for each built-in resource watchcache stores, it
// creates the object of the resource's fixture (testdata/protobuf/fixtures,
// namespaced ones in the namespace of the Namespace fixture; a fixture's
// status is written through the status subresource), then records what the
// server answers about it:
//
//	<base>.json       GET, Accept application/json
//	<base>.pb         GET, Accept application/vnd.kubernetes.protobuf
//	<base>.list.pb    LIST fieldSelector=metadata.name=<name>, Accept protobuf
//	<base>.list.json  the same LIST at the same resourceVersion (resourceVersionMatch=Exact), as JSON
//	<base>.watch.pb   the first frame (ADDED) of a WATCH from resourceVersion 0, Accept protobuf;stream=watch
//	<base>.bookmark.pb a BOOKMARK frame of a WATCH with allowWatchBookmarks and timeoutSeconds
//
// where <base> is <group, "core" for the core group>_<version>_<plural>,
// and notfound_<base>.{json,pb}, the Status of a GET of a missing object.
// Run it from the repository's root against a fresh kube-apiserver of the
// release watchcache matches (it fails on objects that already exist):
//
//	go run ./pkg/encoding/internal/recordprotobuf -kubeconfig <kube-apiserver's kubeconfig>
//
// Tests do not run it; they read the recorded files.
package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/watchcache/watchcache/pkg/resource"
	"google.golang.org/protobuf/encoding/protowire"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"
)

const (
	jsonType     = "application/json"
	protobufType = "application/vnd.kubernetes.protobuf"
	watchType    = protobufType + ";stream=watch"
)

// protobufMagic starts every protobuf body of kube-apiserver.
var protobufMagic = []byte("k8s\x00")

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the kube-apiserver to record from")
	dir := flag.String("dir", "pkg/encoding/testdata/protobuf", "directory of the fixtures (fixtures/) and of the recorded files")
	flag.Parse()
	if *kubeconfig == "" {
		log.Fatal("-kubeconfig is required")
	}
	r, err := newRecorder(*kubeconfig, *dir)
	if err != nil {
		log.Fatal(err)
	}
	if err := r.run(context.Background()); err != nil {
		log.Fatal(err)
	}
}

type recorder struct {
	host string
	http *http.Client
	dyn  dynamic.Interface
	dir  string
	// namespace is the namespace of the namespaced fixtures: the name of
	// the Namespace fixture, created first.
	namespace string
}

// recorded is an object whose files are written, for the bookmarks.
type recorded struct {
	res  *resource.Resource
	name string
}

func newRecorder(kubeconfig, dir string) (*recorder, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	// The user agent names the field manager of the objects' managedFields.
	cfg.UserAgent = "recordprotobuf"
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, err
	}
	return &recorder{host: strings.TrimSuffix(cfg.Host, "/"), http: hc, dyn: dyn, dir: dir}, nil
}

// base names a resource's files.
func base(res *resource.Resource) string {
	group := res.Group
	if group == "" {
		group = "core"
	}
	return group + "_" + res.Version + "_" + res.Plural
}

func (r *recorder) run(ctx context.Context) error {
	var done []recorded
	for _, res := range resource.Builtins() {
		if !res.Stored() || res.StrategicMergeType == nil {
			continue
		}
		name, err := r.record(ctx, res)
		if err != nil {
			fmt.Printf("skip %s: %v\n", base(res), err)
			continue
		}
		fmt.Printf("recorded %s (%s)\n", base(res), name)
		done = append(done, recorded{res, name})
	}
	if r.namespace == "" {
		return errors.New("the Namespace fixture was not created")
	}
	reg, err := resource.NewRegistry(resource.Builtins()...)
	if err != nil {
		return err
	}
	for _, res := range []*resource.Resource{reg.Lookup("", "v1", "pods"), reg.Lookup("apps", "v1", "deployments")} {
		if err := r.recordNotFound(ctx, res); err != nil {
			return fmt.Errorf("not found of %s: %w", base(res), err)
		}
	}
	r.recordBookmarks(ctx, done)
	return nil
}

// record creates the fixture of res and records its files; it returns the
// object's name.
func (r *recorder) record(ctx context.Context, res *resource.Resource) (string, error) {
	fixture, err := os.ReadFile(filepath.Join(r.dir, "fixtures", base(res)+".yaml"))
	if err != nil {
		return "", fmt.Errorf("no fixture: %w", err)
	}
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(fixture, &u.Object); err != nil {
		return "", fmt.Errorf("fixture: %w", err)
	}
	status, hasStatus := u.Object["status"]
	delete(u.Object, "status")
	namespace := ""
	if res.Namespaced {
		if r.namespace == "" {
			return "", errors.New("no namespace: the Namespace fixture was not created")
		}
		namespace = r.namespace
		u.SetNamespace(namespace)
	}
	gvr := res.GroupVersionKind().GroupVersion().WithResource(res.Plural)
	client := r.dyn.Resource(gvr).Namespace(namespace)
	created, err := client.Create(ctx, u, metav1.CreateOptions{FieldManager: "recordprotobuf"})
	if err != nil {
		return "", fmt.Errorf("create: %w", err)
	}
	if res.Kind == "Namespace" && res.Group == "" {
		r.namespace = created.GetName()
	}
	if hasStatus && res.Status {
		created.Object["status"] = status
		if _, err := client.UpdateStatus(ctx, created, metav1.UpdateOptions{FieldManager: "recordprotobuf"}); err != nil {
			return "", fmt.Errorf("update of the status: %w", err)
		}
	}
	name := created.GetName()
	if res.Kind == "CustomResourceDefinition" {
		if err := r.waitEstablished(ctx, res, name); err != nil {
			return "", err
		}
	}
	// The object may still change (controllers in the server): record until
	// its resourceVersion is the same before and after.
	for attempt := 0; attempt < 5; attempt++ {
		files, rv, err := r.recordObject(ctx, res, namespace, name)
		if err != nil {
			return "", err
		}
		after, err := r.get(ctx, r.objectPath(res, namespace, name), jsonType)
		if err != nil {
			return "", err
		}
		if afterRV, err := resourceVersionOf(after); err != nil || afterRV != rv {
			time.Sleep(time.Second)
			continue
		}
		for suffix, data := range files {
			if err := os.WriteFile(filepath.Join(r.dir, base(res)+suffix), data, 0o644); err != nil {
				return "", err
			}
		}
		return name, nil
	}
	return "", errors.New("the object keeps changing")
}

// recordObject records the files of one object, by suffix, and the
// resourceVersion of its JSON.
func (r *recorder) recordObject(ctx context.Context, res *resource.Resource, namespace, name string) (map[string][]byte, string, error) {
	objectPath := r.objectPath(res, namespace, name)
	getJSON, err := r.get(ctx, objectPath, jsonType)
	if err != nil {
		return nil, "", err
	}
	rv, err := resourceVersionOf(getJSON)
	if err != nil {
		return nil, "", err
	}
	getPB, err := r.get(ctx, objectPath, protobufType)
	if err != nil {
		return nil, "", err
	}
	selector := url.Values{"fieldSelector": {"metadata.name=" + name}}
	listPB, err := r.get(ctx, r.collectionPath(res, namespace)+"?"+selector.Encode(), protobufType)
	if err != nil {
		return nil, "", err
	}
	listRV, err := listResourceVersion(listPB)
	if err != nil {
		return nil, "", fmt.Errorf("protobuf list: %w", err)
	}
	exact := url.Values{"fieldSelector": {"metadata.name=" + name}, "resourceVersion": {listRV}, "resourceVersionMatch": {"Exact"}}
	listJSON, err := r.get(ctx, r.collectionPath(res, namespace)+"?"+exact.Encode(), jsonType)
	if err != nil {
		return nil, "", err
	}
	watch := url.Values{"watch": {"true"}, "fieldSelector": {"metadata.name=" + name}, "resourceVersion": {"0"}}
	frames, err := r.watch(ctx, r.collectionPath(res, namespace)+"?"+watch.Encode(), func(frame []byte) bool { return true })
	if err != nil {
		return nil, "", fmt.Errorf("watch: %w", err)
	}
	if len(frames) == 0 {
		return nil, "", errors.New("watch: no event")
	}
	if err := checkWatchFrame(frames[0], "ADDED", getPB); err != nil {
		return nil, "", fmt.Errorf("watch: %w", err)
	}
	return map[string][]byte{".json": getJSON, ".pb": getPB, ".list.pb": listPB, ".list.json": listJSON, ".watch.pb": frames[0]}, rv, nil
}

// waitEstablished waits until a CustomResourceDefinition is established
// (the server's controllers set its status).
func (r *recorder) waitEstablished(ctx context.Context, res *resource.Resource, name string) error {
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		data, err := r.get(ctx, r.objectPath(res, "", name), jsonType)
		if err != nil {
			return err
		}
		var crd struct {
			Status struct {
				Conditions []struct{ Type, Status string } `json:"conditions"`
			} `json:"status"`
		}
		if err := json.Unmarshal(data, &crd); err != nil {
			return err
		}
		for _, c := range crd.Status.Conditions {
			if c.Type == "Established" && c.Status == "True" {
				// Let the other controllers finish their status writes.
				time.Sleep(2 * time.Second)
				return nil
			}
		}
	}
	return errors.New("the definition was not established within 30s")
}

// recordNotFound records the Status of a GET of a missing object of res.
func (r *recorder) recordNotFound(ctx context.Context, res *resource.Resource) error {
	path := r.objectPath(res, r.namespace, "missing")
	for suffix, accept := range map[string]string{".json": jsonType, ".pb": protobufType} {
		code, data, err := r.do(ctx, path, accept)
		if err != nil {
			return err
		}
		if code != http.StatusNotFound {
			return fmt.Errorf("GET %s: status %d, not 404", path, code)
		}
		if err := os.WriteFile(filepath.Join(r.dir, "notfound_"+base(res)+suffix), data, 0o644); err != nil {
			return err
		}
	}
	fmt.Printf("recorded notfound_%s\n", base(res))
	return nil
}

// recordBookmarks records a BOOKMARK frame of each recorded object's
// resource, the watches in parallel. kube-apiserver sends one two seconds
// before the watch's timeout if the resource's watch cache is past the
// watch's resourceVersion: each watch starts from its object's
// resourceVersion, after a write of something else (a ConfigMap) and a
// consistent list of the resource, which brings its watch cache to the
// revision of that write.
func (r *recorder) recordBookmarks(ctx context.Context, done []recorded) {
	bump := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "bookmark-bump", "namespace": r.namespace}}}
	configmaps := r.dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace(r.namespace)
	if _, err := configmaps.Create(ctx, bump, metav1.CreateOptions{}); err != nil {
		fmt.Printf("skip bookmarks: %v\n", err)
		return
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, d := range done {
		wg.Add(1)
		go func() {
			defer wg.Done()
			msg := "recorded bookmark of " + base(d.res)
			// The first watch of a resource sometimes sees no bookmark.
			err := r.recordBookmark(ctx, d)
			for attempt := 1; attempt < 3 && err != nil; attempt++ {
				err = r.recordBookmark(ctx, d)
			}
			if err != nil {
				msg = fmt.Sprintf("skip bookmark of %s: %v", base(d.res), err)
			}
			mu.Lock()
			defer mu.Unlock()
			fmt.Println(msg)
		}()
	}
	wg.Wait()
}

func (r *recorder) recordBookmark(ctx context.Context, d recorded) error {
	namespace := ""
	if d.res.Namespaced {
		namespace = r.namespace
	}
	if _, err := r.get(ctx, r.collectionPath(d.res, namespace)+"?"+url.Values{"fieldSelector": {"metadata.name=" + d.name}}.Encode(), protobufType); err != nil {
		return err
	}
	obj, err := r.get(ctx, r.objectPath(d.res, namespace, d.name), jsonType)
	if err != nil {
		return err
	}
	rv, err := resourceVersionOf(obj)
	if err != nil {
		return err
	}
	watch := url.Values{"watch": {"true"}, "fieldSelector": {"metadata.name=" + d.name}, "resourceVersion": {rv},
		"allowWatchBookmarks": {"true"}, "timeoutSeconds": {"5"}}
	isBookmark := func(frame []byte) bool { return checkWatchFrame(frame, "BOOKMARK", nil) == nil }
	frames, err := r.watch(ctx, r.collectionPath(d.res, namespace)+"?"+watch.Encode(), isBookmark)
	if err != nil {
		return err
	}
	for _, frame := range frames {
		if isBookmark(frame) {
			return os.WriteFile(filepath.Join(r.dir, base(d.res)+".bookmark.pb"), frame, 0o644)
		}
	}
	return fmt.Errorf("no bookmark before the watch's timeout (%d other frames)", len(frames))
}

func (r *recorder) collectionPath(res *resource.Resource, namespace string) string {
	p := "/apis/" + res.Group + "/" + res.Version
	if res.Group == "" {
		p = "/api/" + res.Version
	}
	if namespace != "" {
		p += "/namespaces/" + namespace
	}
	return p + "/" + res.Plural
}

func (r *recorder) objectPath(res *resource.Resource, namespace, name string) string {
	return r.collectionPath(res, namespace) + "/" + name
}

// do sends a GET of path accepting accept and returns the status code and
// body.
func (r *recorder) do(ctx context.Context, path, accept string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.host+path, nil)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Accept", accept)
	resp, err := r.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, err
	}
	if got := resp.Header.Get("Content-Type"); !strings.HasPrefix(got, strings.SplitN(accept, ";", 2)[0]) {
		return 0, nil, fmt.Errorf("GET %s: content type %q, not %q", path, got, accept)
	}
	return resp.StatusCode, data, nil
}

// get is do for a GET that must succeed.
func (r *recorder) get(ctx context.Context, path, accept string) ([]byte, error) {
	code, data, err := r.do(ctx, path, accept)
	if err != nil {
		return nil, err
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("GET %s: status %d: %q", path, code, data)
	}
	return data, nil
}

// watch starts a protobuf watch of path and reads its frames (each with its
// 4-byte length) until stop returns true for one or the server ends the
// watch.
func (r *recorder) watch(ctx context.Context, path string, stop func(frame []byte) bool) ([][]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.host+path, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", watchType)
	resp, err := r.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(resp.Body)
		return nil, fmt.Errorf("GET %s: status %d: %q", path, resp.StatusCode, data)
	}
	if got := resp.Header.Get("Content-Type"); got != watchType {
		return nil, fmt.Errorf("GET %s: content type %q, not %q", path, got, watchType)
	}
	var frames [][]byte
	for {
		var length [4]byte
		if _, err := io.ReadFull(resp.Body, length[:]); err != nil {
			if errors.Is(err, io.EOF) {
				return frames, nil
			}
			return frames, err
		}
		frame := make([]byte, 4+binary.BigEndian.Uint32(length[:]))
		copy(frame, length[:])
		if _, err := io.ReadFull(resp.Body, frame[4:]); err != nil {
			return frames, err
		}
		frames = append(frames, frame)
		if stop(frame) {
			return frames, nil
		}
	}
}

// checkWatchFrame checks that frame is a watch event of type typ whose
// object, if object is not nil, is object.
func checkWatchFrame(frame []byte, typ string, object []byte) error {
	var ev metav1.WatchEvent
	if err := ev.Unmarshal(frame[4:]); err != nil {
		return err
	}
	if ev.Type != typ {
		return fmt.Errorf("event of type %s, not %s", ev.Type, typ)
	}
	if object != nil && !bytes.Equal(ev.Object.Raw, object) {
		return errors.New("the event's object is not the object read")
	}
	return nil
}

// unknown is the runtime.Unknown a protobuf body holds.
func unknown(body []byte) (*runtime.Unknown, error) {
	if !bytes.HasPrefix(body, protobufMagic) {
		return nil, errors.New("not a protobuf body")
	}
	u := &runtime.Unknown{}
	if err := u.Unmarshal(body[len(protobufMagic):]); err != nil {
		return nil, err
	}
	return u, nil
}

// listResourceVersion is the resourceVersion of a protobuf list: its
// ListMeta is field 1 of every list kind's message.
func listResourceVersion(body []byte) (string, error) {
	u, err := unknown(body)
	if err != nil {
		return "", err
	}
	for b := u.Raw; len(b) > 0; {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return "", protowire.ParseError(n)
		}
		b = b[n:]
		if num == 1 && typ == protowire.BytesType {
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return "", protowire.ParseError(n)
			}
			var meta metav1.ListMeta
			if err := meta.Unmarshal(v); err != nil {
				return "", err
			}
			return meta.ResourceVersion, nil
		}
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return "", protowire.ParseError(n)
		}
		b = b[n:]
	}
	return "", errors.New("the list has no metadata")
}

// resourceVersionOf is the metadata.resourceVersion of a JSON object.
func resourceVersionOf(data []byte) (string, error) {
	var obj struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(data, &obj); err != nil {
		return "", err
	}
	if obj.Metadata.ResourceVersion == "" {
		return "", errors.New("the object has no resourceVersion")
	}
	return obj.Metadata.ResourceVersion, nil
}
