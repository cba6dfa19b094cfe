package cluster

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/diff"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
)

// interopEncryption encrypts Secrets with aescbc and lists no identity
// provider, so that neither server can read a Secret the other left in
// clear: reading each other's Secrets shows both encrypt as the other
// expects.
const interopEncryption = `apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources: [secrets]
  providers:
  - aescbc:
      keys:
      - name: key1
        secret: c2VjcmV0IGlzIHNlY3VyZSwgb3IgaXMgaXQ/IDMyYnk=
`

// interopObject is a manifest and its resource.
type interopObject struct {
	resource string // the plural, of group interopGroups[resource], version v1
	manifest string
}

var interopGroups = map[string]string{"deployments": "apps",
	"customresourcedefinitions": "apiextensions.k8s.io", "widgets": "interop.example.com"}

func interopGVR(resource string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: interopGroups[resource], Version: "v1", Resource: resource}
}

// kubeAPIServerObjects are written through kube-apiserver, in order.
var kubeAPIServerObjects = []interopObject{
	{"namespaces", `{apiVersion: v1, kind: Namespace, metadata: {name: interop, labels: {team: a}}}`},
	{"customresourcedefinitions", `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.interop.example.com}
spec:
  group: interop.example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer}
              color: {type: string, default: blue}
          status: {type: object, x-kubernetes-preserve-unknown-fields: true}`},
	{"configmaps", `{apiVersion: v1, kind: ConfigMap, metadata: {name: settings, namespace: interop}, data: {a: "1", b: two}}`},
	{"secrets", `{apiVersion: v1, kind: Secret, metadata: {name: password, namespace: interop}, type: Opaque, stringData: {password: hunter2}}`},
	{"deployments", `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: interop, labels: {app: web}}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - {name: web, image: "nginx:1.27", ports: [{containerPort: 80}]}`},
	{"services", `
apiVersion: v1
kind: Service
metadata: {name: web, namespace: interop}
spec: {selector: {app: web}, ports: [{port: 80, targetPort: 8080}]}`},
	{"services", `
apiVersion: v1
kind: Service
metadata: {name: web-nodeport, namespace: interop}
spec: {type: NodePort, selector: {app: web}, ports: [{port: 80, nodePort: 30080}]}`},
	{"nodes", `
apiVersion: v1
kind: Node
metadata: {name: node-1, labels: {kubernetes.io/hostname: node-1}}
spec: {podCIDR: 10.244.1.0/24, taints: [{key: dedicated, value: interop, effect: NoSchedule}]}
status: {capacity: {cpu: "4", memory: 16Gi, pods: "110"}}`},
	{"widgets", `{apiVersion: interop.example.com/v1, kind: Widget, metadata: {name: w1, namespace: interop}, spec: {size: 3}}`},
}

// watchcacheObjects are written through watchcache: an update of
// kube-apiserver's ConfigMap and new objects.
var watchcacheObjects = []interopObject{
	{"configmaps", `{apiVersion: v1, kind: ConfigMap, metadata: {name: settings, namespace: interop}, data: {a: "1", b: changed, c: new}}`},
	{"secrets", `{apiVersion: v1, kind: Secret, metadata: {name: token, namespace: interop}, type: Opaque, data: {token: c2VjcmV0}}`},
	{"services", `
apiVersion: v1
kind: Service
metadata: {name: api, namespace: interop}
spec: {type: NodePort, selector: {app: api}, ports: [{port: 443, nodePort: 30443}]}`},
	{"widgets", `{apiVersion: interop.example.com/v1, kind: Widget, metadata: {name: w2, namespace: interop}, spec: {size: 5, color: red}}`},
}

// TestEtcdInterop writes objects through kube-apiserver, serves its etcd
// with watchcache and reads them back equal, writes through watchcache,
// and serves the etcd with kube-apiserver again, which reads those back
// equal: a user can move a cluster's etcd to watchcache and back.
func TestEtcdInterop(t *testing.T) {
	c := newCluster(t, "cluster-interop-")
	writeFile(t, c.pki.path("encryption.yaml"), interopEncryption)
	etcdURL := c.startEtcd(t)
	kubeAPIServer := func() dynamic.Interface {
		return c.serve(t, func() string {
			return c.runKubeAPIServer(t, etcdURL, "--encryption-provider-config="+c.pki.path("encryption.yaml"))
		})
	}
	watchcache := func() dynamic.Interface {
		return c.serve(t, func() string {
			return c.runWatchcache(t, "--etcd-servers="+etcdURL, "--etcd-prefix=/registry",
				"--encryption-provider-config="+c.pki.path("encryption.yaml"),
				// Nothing but the test writes.
				"--controllers=")
		})
	}

	// kube-apiserver writes.
	kas := kubeAPIServer()
	written := c.write(t, kas, kubeAPIServerObjects)
	clusterIP := c.serviceField(t, written, "web", "clusterIP")
	nodePort := c.serviceField(t, written, "web-nodeport", "nodePort")
	c.server.stop()

	// watchcache reads them, refuses their Service allocations, writes.
	wc := watchcache()
	c.readEqual(t, wc, kubeAPIServerObjects, written)
	c.refuseAllocated(t, wc, "clusterIP", clusterIP)
	c.refuseAllocated(t, wc, "nodePort", nodePort)
	written = c.write(t, wc, watchcacheObjects)
	clusterIP = c.serviceField(t, written, "api", "clusterIP")
	nodePort = c.serviceField(t, written, "api", "nodePort")
	c.server.stop()

	// kube-apiserver reads them and refuses their allocations.
	kas = kubeAPIServer()
	c.readEqual(t, kas, watchcacheObjects, written)
	c.refuseAllocated(t, kas, "clusterIP", clusterIP)
	c.refuseAllocated(t, kas, "nodePort", nodePort)
}

// serve starts a server with start, waits until it is ready and returns a
// client of it.
func (c *cluster) serve(t *testing.T, start func() string) dynamic.Interface {
	began := time.Now()
	c.url = start()
	c.waitReady(t)
	t.Logf("%s ready in %.1fs", c.server.name, time.Since(began).Seconds())
	return dynamic.NewForConfigOrDie(c.connect(t))
}

// write creates objects through client (updating those that exist) and
// returns them as the server then serves them.
func (c *cluster) write(t *testing.T, client dynamic.Interface, objects []interopObject) []*unstructured.Unstructured {
	t.Helper()
	var names []*unstructured.Unstructured
	for _, o := range objects {
		obj := &unstructured.Unstructured{}
		check(t, utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(o.manifest), 4096).Decode(&obj.Object))
		ri := client.Resource(interopGVR(o.resource)).Namespace(obj.GetNamespace())
		var err error
		c.waitFor(t, 30*time.Second, "create "+o.resource+" "+obj.GetName(), func() (bool, string, error) {
			_, err = ri.Create(ctx, obj, metav1.CreateOptions{})
			// A custom resource is not found until its CRD is served.
			return !apierrors.IsNotFound(err), fmt.Sprint(err), nil
		})
		if apierrors.IsAlreadyExists(err) {
			var old *unstructured.Unstructured
			old, err = ri.Get(ctx, obj.GetName(), metav1.GetOptions{})
			check(t, err)
			obj.SetResourceVersion(old.GetResourceVersion())
			_, err = ri.Update(ctx, obj, metav1.UpdateOptions{})
		}
		if err != nil {
			t.Fatalf("writing %s %s: %v", o.resource, obj.GetName(), err)
		}
		names = append(names, obj)
	}
	// Read back once all are written: the CRD's status has its
	// conditions by then.
	c.waitFor(t, 30*time.Second, "CRD established", func() (bool, string, error) {
		crd, err := client.Resource(interopGVR("customresourcedefinitions")).Get(ctx, "widgets.interop.example.com", metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		conditions, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
		return len(conditions) >= 2, fmt.Sprint(conditions), nil
	})
	var written []*unstructured.Unstructured
	for i, o := range objects {
		got, err := client.Resource(interopGVR(o.resource)).Namespace(names[i].GetNamespace()).Get(ctx, names[i].GetName(), metav1.GetOptions{})
		check(t, err)
		written = append(written, got)
	}
	return written
}

// readEqual reads objects through client and fails where they differ from
// want, what the other server served of them.
//
// Nothing is dropped before comparing: what is read is what etcd holds,
// and the two servers must agree on all of it (resourceVersion, uid,
// creationTimestamp, managedFields, the CRD's status, the defaults
// kube-apiserver set on create). No field was found to differ
// legitimately: neither server changes an object on read here (no
// defaulting on read applies to these objects, see README "An etcd
// kube-apiserver can read").
func (c *cluster) readEqual(t *testing.T, client dynamic.Interface, objects []interopObject, want []*unstructured.Unstructured) {
	t.Helper()
	for i, o := range objects {
		w := want[i]
		got, err := client.Resource(interopGVR(o.resource)).Namespace(w.GetNamespace()).Get(ctx, w.GetName(), metav1.GetOptions{})
		if err != nil {
			t.Errorf("%s %s/%s: %v", o.resource, w.GetNamespace(), w.GetName(), err)
			continue
		}
		if !reflect.DeepEqual(got.Object, w.Object) {
			t.Errorf("%s %s/%s differs (-written +read):\n%s", o.resource, w.GetNamespace(), w.GetName(), diff.Diff(w.Object, got.Object))
		}
	}
}

// serviceField is the clusterIP or the first port's nodePort of the
// Service name among objects.
func (c *cluster) serviceField(t *testing.T, objects []*unstructured.Unstructured, name, field string) any {
	t.Helper()
	for _, o := range objects {
		if o.GetKind() != "Service" || o.GetName() != name {
			continue
		}
		if field == "clusterIP" {
			ip, _, _ := unstructured.NestedString(o.Object, "spec", "clusterIP")
			return ip
		}
		ports, _, _ := unstructured.NestedSlice(o.Object, "spec", "ports")
		return ports[0].(map[string]any)["nodePort"]
	}
	t.Fatalf("no Service %s", name)
	return nil
}

// refuseAllocated checks that client refuses a Service asking for a
// clusterIP or nodePort (field) already taken: 422, "already allocated".
func (c *cluster) refuseAllocated(t *testing.T, client dynamic.Interface, field string, value any) {
	t.Helper()
	spec := map[string]any{"type": "NodePort", "ports": []any{map[string]any{"port": int64(81)}}}
	if field == "clusterIP" {
		spec["clusterIP"] = value
	} else {
		spec["ports"] = []any{map[string]any{"port": int64(81), "nodePort": value}}
	}
	svc := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Service",
		"metadata": map[string]any{"generateName": "taken-", "namespace": "interop"}, "spec": spec}}
	_, err := client.Resource(interopGVR("services")).Namespace("interop").Create(ctx, svc, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "already allocated") {
		t.Errorf("a Service with the %s %v taken: got %v, want 422 already allocated", field, value, err)
	}
}
