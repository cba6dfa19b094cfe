package app

import (
	"bufio"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/watchcache/watchcache/pkg/encoding"
	"github.com/watchcache/watchcache/pkg/encryption"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// The reference data recorded from a kube-apiserver 1.37.2's etcd, in
// package resource's testdata (see its TestStorageLayoutMatchesReference).
const referenceData = "../resource/testdata/"

func readReference[T any](t *testing.T, file string) []T {
	t.Helper()
	f, err := os.Open(referenceData + file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []T
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	return out
}

// TestServesReferenceEtcd: an etcd written by kube-apiserver 1.37.2 (its
// keys and values, an aescbc-encrypted Secret and aesgcm-encrypted
// ConfigMaps among them) is served by watchcache with the same encryption
// configuration as kube-apiserver served it: every recorded object, read
// by GET, equals kube-apiserver's answer but for its resourceVersion and
// the fields kube-apiserver's defaulters add on reads
// (package resource's reference-read-defaults.json, whose readDefaults says why).
func TestServesReferenceEtcd(t *testing.T) {
	dir := t.TempDir()
	start := func() *App {
		a, err := Start(Config{DataDir: dir, EtcdPrefix: "/registry", EtcdUnsafeNoFsync: true, WatchCache: true,
			ConsistentListFromCache: true, ConsistentGetFromCache: true, Controllers: []string{},
			EncryptionProviderConfig: referenceData + "reference-encryption.yaml", Log: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	// The first start makes the data directory; the reference's keys are
	// written over what it wrote, and the second start serves them.
	a := start()
	ctx := context.Background()
	for _, kv := range readReference[struct {
		Key   string
		Value []byte
	}](t, "reference-etcd.jsonl") {
		if _, err := a.client.Put(ctx, kv.Key, string(kv.Value)); err != nil {
			t.Fatal(err)
		}
	}
	a.Close()
	a = start()
	defer a.Close()
	_, cs := adminClient(t, a)

	var readDefaults map[string][]string
	data, err := os.ReadFile(referenceData + "reference-read-defaults.json")
	if err != nil || json.Unmarshal(data, &readDefaults) != nil {
		t.Fatal(err)
	}
	served := readReference[struct {
		Key, Path string
		Object    map[string]any
	}](t, "reference-served.jsonl")
	for _, s := range served {
		body, err := cs.RESTClient().Get().AbsPath(s.Path).DoRaw(ctx)
		if err != nil {
			t.Errorf("GET %s: %v", s.Path, err)
			continue
		}
		var got map[string]any
		if err := json.Unmarshal(body, &got); err != nil {
			t.Fatal(err)
		}
		want := s.Object
		for _, obj := range []map[string]any{got, want} {
			delete(obj["metadata"].(map[string]any), "resourceVersion")
		}
		for _, p := range readDefaults[s.Key] {
			unsetPath(want, p)
		}
		if s.Key == "/registry/clusterroles/admin" {
			// Aggregated by watchcache (on every server; the reference runs
			// no kube-controller-manager, which would): its rules differ.
			delete(got, "rules")
			delete(want, "rules")
		}
		if !reflect.DeepEqual(got, want) {
			g, _ := json.Marshal(got)
			w, _ := json.Marshal(want)
			t.Errorf("GET %s:\n%s\nkube-apiserver served\n%s", s.Path, g, w)
		}
	}
	// The node ports kube-apiserver allocated (its RangeAllocation, which
	// has no creationTimestamp) are taken; a new one is allocated beside.
	svc := func(name string, port int32) (*corev1.Service, error) {
		return cs.CoreV1().Services("storage").Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Ports: []corev1.ServicePort{{Port: 80, NodePort: port}}}}, metav1.CreateOptions{})
	}
	if _, err := svc("taken", 30080); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "provided port is already allocated") {
		t.Errorf("node port 30080, kube-apiserver's: %v; want it refused as allocated", err)
	}
	if s, err := svc("beside", 0); err != nil || s.Spec.Ports[0].NodePort == 30080 || s.Spec.Ports[0].NodePort == 0 {
		t.Errorf("a new node port beside kube-apiserver's: %v %v", s, err)
	}
}

// unsetPath deletes a dotted path from obj.
func unsetPath(obj map[string]any, path string) {
	parts := strings.Split(path, ".")
	for _, p := range parts[:len(parts)-1] {
		obj, _ = obj[p].(map[string]any)
	}
	delete(obj, parts[len(parts)-1])
}

// TestStoredAsKubeAPIServerReads: what watchcache writes is at
// kube-apiserver's key, in protobuf that kube-apiserver's decoding
// (client-go's scheme, the k8s.io/api types) reads back equal, and a
// custom resource in JSON.
func TestStoredAsKubeAPIServerReads(t *testing.T) {
	a, err := Start(Config{DataDir: t.TempDir(), EtcdPrefix: "/registry", EtcdUnsafeNoFsync: true, WatchCache: true, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	_, cs := adminClient(t, a)
	ctx := context.Background()
	svc, err := cs.CoreV1().Services("default").Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: map[string]string{"app": "web"}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Ports: []corev1.ServicePort{{Port: 80}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]runtime.Object{"/registry/services/specs/default/web": svc, "/registry/minions/node-1": node} {
		resp, err := a.client.Get(ctx, key)
		if err != nil || len(resp.Kvs) != 1 {
			t.Fatalf("%s: %v %v", key, resp, err)
		}
		got, _, err := encoding.ProtobufDecoder.Decode(resp.Kvs[0].Value, nil, nil)
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		// kube-apiserver stores no resourceVersion and reads it from the key.
		want.(metav1.Object).SetResourceVersion("")
		want.GetObjectKind().SetGroupVersionKind(got.GetObjectKind().GroupVersionKind())
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s decodes to\n%+v\nwant\n%+v", key, got, want)
		}
	}
	// The node port is in kube-apiserver's RangeAllocation.
	resp, err := a.client.Get(ctx, "/registry/ranges/servicenodeports")
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("node port record: %v %v", resp, err)
	}
	var ranges corev1.RangeAllocation
	if _, _, err := encoding.ProtobufDecoder.Decode(resp.Kvs[0].Value, nil, &ranges); err != nil {
		t.Fatal(err)
	}
	port := int(svc.Spec.Ports[0].NodePort) - 30000
	if ranges.Range != "30000-32767" || len(ranges.Data) <= port/8 || ranges.Data[len(ranges.Data)-1-port/8]&(1<<(port%8)) == 0 {
		t.Errorf("node port %d not in the stored bitmap %q of %s", svc.Spec.Ports[0].NodePort, ranges.Data, ranges.Range)
	}
}

// TestMigratesOldLayout: objects an older watchcache stored under its own
// keys (<prefix>/core/<plural>/..., <prefix>/<group>/<plural>/..., JSON,
// a Secret encrypted with aesgcm, which binds the value to its key) are
// moved to kube-apiserver's keys and encoding at the next start and served
// there; the old keys are gone.
func TestMigratesOldLayout(t *testing.T) {
	dir := t.TempDir()
	config := encryptionConfig(t, "[{aesgcm: {keys: [{name: key1, secret: dGhpcyBpcyBrZXkgb25lLCB0aGlydHktdHdvIGJ5dGU=}]}}]")
	start := func() *App {
		a, err := Start(Config{DataDir: dir, EtcdPrefix: "/registry", EtcdUnsafeNoFsync: true, WatchCache: true,
			EncryptionProviderConfig: config, Log: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	a := start()
	ctx := context.Background()
	enc, err := encryption.Load(config)
	if err != nil {
		t.Fatal(err)
	}
	old := map[string]string{
		"/registry/core/configmaps/default/old":   `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"old","namespace":"default","uid":"u1","creationTimestamp":"2026-11-01T00:00:00Z"},"data":{"a":"b"}}`,
		"/registry/apps/deployments/default/old":  `{"kind":"Deployment","apiVersion":"apps/v1","metadata":{"name":"old","namespace":"default","uid":"u2","generation":1,"creationTimestamp":"2026-11-01T00:00:00Z"},"spec":{"replicas":1,"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"nginx"}]}}}}`,
		"/registry/core/secrets/default/old":      `{"kind":"Secret","apiVersion":"v1","metadata":{"name":"old","namespace":"default","uid":"u3","creationTimestamp":"2026-11-01T00:00:00Z"},"data":{"p":"aHVudGVyMg=="},"type":"Opaque"}`,
		"/registry/core/namespaces/old-namespace": `{"kind":"Namespace","apiVersion":"v1","metadata":{"name":"old-namespace","uid":"u4","creationTimestamp":"2026-11-01T00:00:00Z"},"spec":{"finalizers":["kubernetes"]},"status":{"phase":"Active"}}`,
	}
	for key, value := range old {
		if strings.Contains(key, "/secrets/") {
			sealed, err := enc.For("", "secrets").ToStorage([]byte(value), key)
			if err != nil {
				t.Fatal(err)
			}
			value = string(sealed)
		}
		if _, err := a.client.Put(ctx, key, value); err != nil {
			t.Fatal(err)
		}
	}
	a.Close()
	a = start()
	defer a.Close()
	_, cs := adminClient(t, a)
	if cm, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "old", metav1.GetOptions{}); err != nil || cm.Data["a"] != "b" || cm.UID != "u1" {
		t.Errorf("config map after the move: %v %v", cm, err)
	}
	if d, err := cs.AppsV1().Deployments("default").Get(ctx, "old", metav1.GetOptions{}); err != nil || d.UID != "u2" || *d.Spec.Replicas != 1 {
		t.Errorf("deployment after the move: %v %v", d, err)
	}
	if s, err := cs.CoreV1().Secrets("default").Get(ctx, "old", metav1.GetOptions{}); err != nil || string(s.Data["p"]) != "hunter2" {
		t.Errorf("secret after the move: %v %v", s, err)
	}
	if ns, err := cs.CoreV1().Namespaces().Get(ctx, "old-namespace", metav1.GetOptions{}); err != nil || ns.UID != "u4" {
		t.Errorf("namespace after the move: %v %v", ns, err)
	}
	for key := range old {
		if resp, err := a.client.Get(ctx, key, clientv3.WithCountOnly()); err != nil || resp.Count != 0 {
			t.Errorf("%s still there: %v %v", key, resp, err)
		}
	}
	for key, magic := range map[string]string{"/registry/configmaps/default/old": "k8s\x00", "/registry/deployments/default/old": "k8s\x00",
		"/registry/secrets/default/old": "k8s:enc:aesgcm:v1:key1:", "/registry/namespaces/old-namespace": "k8s\x00"} {
		if resp, err := a.client.Get(ctx, key); err != nil || len(resp.Kvs) != 1 || !strings.HasPrefix(string(resp.Kvs[0].Value), magic) {
			t.Errorf("%s: %v %v, want a value starting %q", key, resp, err, magic)
		}
	}
}
