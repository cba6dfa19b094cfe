package e2e

import (
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	applycorev1 "k8s.io/client-go/applyconfigurations/core/v1"
)

// TestServerSideApply, through kubectl and client-go: every write keeps
// managedFields; an apply merges by field ownership, a second manager
// changing a field gets a 409 naming it and its manager unless it forces;
// a client-side apply followed by a server-side one hands the fields over
// (kubectl migrates their ownership), so a field dropped from the
// configuration goes.
func TestServerSideApply(t *testing.T) {
	k := newKubectl(t, "apply")
	cm := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"settings"},"data":{"a":"1","b":"2"}}`
	k.must("apply", "--server-side", "-f", k.file("cm.yaml", cm))
	if out := k.must("get", "cm", "settings", "-o", `jsonpath={.metadata.managedFields[*].manager}/{.metadata.managedFields[*].operation}`); out != "kubectl/Apply" {
		t.Errorf("managedFields after an apply: %s", out)
	}

	other := strings.Replace(cm, `"a":"1","b":"2"`, `"a":"changed"`, 1)
	msg := k.fail("apply", "--server-side", "--field-manager=other", "-f", k.file("other.yaml", other))
	if !strings.Contains(msg, `conflict with "kubectl"`) || !strings.Contains(msg, ".data.a") {
		t.Errorf("a conflicting apply: %s", msg)
	}
	k.must("apply", "--server-side", "--field-manager=other", "--force-conflicts", "-f", k.file("other.yaml", other))
	if out := k.must("get", "cm", "settings", "-o", "jsonpath={.data.a} {.data.b}"); out != "changed 2" {
		t.Errorf("after the forced apply: %q", out)
	}
	// kubectl's own apply drops a, which it no longer owns, and b: b goes.
	k.must("apply", "--server-side", "-f", k.file("cm.yaml", strings.Replace(cm, `"a":"1","b":"2"`, `"c":"3"`, 1)))
	if out := k.must("get", "cm", "settings", "-o", "jsonpath={.data}"); out != `{"a":"changed","c":"3"}` {
		t.Errorf("after an apply dropping fields: %s", out)
	}

	// A create through kubectl is an Update by its manager.
	k.must("create", "configmap", "created", "--from-literal=x=y")
	if out := k.must("get", "cm", "created", "-o", `jsonpath={.metadata.managedFields[0].manager}/{.metadata.managedFields[0].operation}`); out != "kubectl-create/Update" {
		t.Errorf("managedFields after kubectl create: %s", out)
	}

	// Client-side apply, then server-side: the fields change hands.
	csa := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"migrated"},"data":{"a":"1","b":"2"}}`
	k.must("apply", "-f", k.file("csa.yaml", csa))
	k.must("apply", "--server-side", "-f", k.file("csa.yaml", strings.Replace(csa, `,"b":"2"`, "", 1)))
	if out := k.must("get", "cm", "migrated", "-o", "jsonpath={.data}"); out != `{"a":"1"}` {
		t.Errorf("after a client-side apply then a server-side one without b: %s", out)
	}

	// client-go's typed Apply creates, then updates.
	cs := clientset(t, cgConfig(nil))
	applied, err := cs.CoreV1().ConfigMaps(k.ns).Apply(cgContext(t), applycorev1.ConfigMap("typed", k.ns).WithData(map[string]string{"k": "v"}),
		metav1.ApplyOptions{FieldManager: "typed-client"})
	if err != nil || applied.Data["k"] != "v" || len(applied.ManagedFields) != 1 || applied.ManagedFields[0].Manager != "typed-client" {
		t.Fatalf("client-go Apply: %+v, %v", applied, err)
	}

	// A custom resource is applied the same way.
	k.must("apply", "--server-side", "-f", k.file("widget.yaml", `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"color":"red"}}`))
	if out := k.must("get", "widgets", "w", "-o", "jsonpath={.spec.color} {.metadata.managedFields[0].operation}"); out != "red Apply" {
		t.Errorf("applied widget: %s", out)
	}
	// ...and a second manager's apply of its field conflicts, unless forced.
	blue := `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"color":"blue"}}`
	msg = k.fail("apply", "--server-side", "--field-manager=painter", "-f", k.file("blue.yaml", blue))
	if !strings.Contains(msg, `conflict with "kubectl"`) || !strings.Contains(msg, ".spec.color") {
		t.Errorf("a conflicting apply of a widget: %s", msg)
	}
	k.must("apply", "--server-side", "--field-manager=painter", "--force-conflicts", "-f", k.file("blue.yaml", blue))
	if out := k.must("get", "widgets", "w", "-o", "jsonpath={.spec.color} {.metadata.managedFields[*].manager}"); out != "blue painter" {
		t.Errorf("the widget after the forced apply: %s", out)
	}

	// An apply names its manager.
	resp, body := htDo(t, "PATCH", "/api/v1/namespaces/"+k.ns+"/configmaps/settings", "application/apply-patch+yaml", []byte(cm))
	if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(string(body), "fieldManager: Required value") {
		t.Errorf("an apply without fieldManager: %d %s", resp.StatusCode, body)
	}
}

// kubeCreatedPodFields is the managedFields entry a kube-apiserver 1.37.2
// (the reference server) records for `kubectl create
// --validate=warn` of managedFieldsPod: every field the client's body and
// the defaults set (the containers' empty resources struct included; the
// unknown spec.foo not), none of the status the strategy sets, and no "."
// for spec or its containers, which the zero pod it compares with has.
const kubeCreatedPodFields = `{"f:spec":{"f:containers":{"k:{\"name\":\"c\"}":{".":{},"f:image":{},"f:imagePullPolicy":{},"f:name":{},"f:resources":{},` +
	`"f:terminationMessagePath":{},"f:terminationMessagePolicy":{}}},"f:dnsPolicy":{},"f:enableServiceLinks":{},"f:restartPolicy":{},` +
	`"f:schedulerName":{},"f:securityContext":{},"f:terminationGracePeriodSeconds":{}}}`

const managedFieldsPod = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"bad"},"spec":{"foo":"bar","containers":[{"name":"c","image":"nginx"}]}}`

// TestCreatedPodManagedFields: a pod created with an unknown field gets
// kube-apiserver's managedFields (it had none: the unknown field failed
// their recording), without the fields its Priority and
// DefaultTolerationSeconds admission plugins set after recording; an update
// lacking the priority keeps it, as the Priority plugin does.
func TestCreatedPodManagedFields(t *testing.T) {
	k := newKubectl(t, "podfields")
	k.must("create", "--validate=warn", "-f", k.file("pod.yaml", managedFieldsPod))
	got := k.must("get", "pod", "bad", "-o", `jsonpath={.metadata.managedFields[0].manager} {.metadata.managedFields[0].fieldsV1}`)
	if want := "kubectl-create " + kubeCreatedPodFields; got != want {
		t.Errorf("managedFields of the created pod:\n%s\nwant (kube-apiserver's)\n%s", got, want)
	}
	if out := k.must("get", "pod", "bad", "-o", "jsonpath={.spec.priority} {.spec.preemptionPolicy} {.spec.tolerations[*].key}"); out != "0 PreemptLowerPriority node.kubernetes.io/not-ready node.kubernetes.io/unreachable" {
		t.Errorf("the admission plugins' fields: %q", out)
	}
	k.must("patch", "pod", "bad", "--type=json", "-p", `[{"op":"remove","path":"/spec/priority"},{"op":"add","path":"/metadata/labels","value":{"l":"v"}}]`)
	if out := k.must("get", "pod", "bad", "-o", "jsonpath={.spec.priority} {.metadata.labels.l}"); out != "0 v" {
		t.Errorf("after an update without the priority: %q", out)
	}
}

// appliedDeployment is applied by TestAppliedDeploymentManagedFields;
// kubeAppliedDeploymentFields is the managedFields entry kube-apiserver
// 1.37.2 records for it: a label selector and tolerations are atomic (one
// field each), a container's ports are keyed by port and protocol.
const (
	appliedDeployment = `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"applied"},"spec":{"selector":{"matchLabels":{"app":"d1"}},` +
		`"template":{"metadata":{"labels":{"app":"d1"}},"spec":{"containers":[{"name":"c","image":"nginx","ports":[{"containerPort":80}],` +
		`"env":[{"name":"A","value":"b"}]}],"tolerations":[{"key":"k","operator":"Exists"}]}}}}`
	kubeAppliedDeploymentFields = `{"f:spec":{"f:selector":{},"f:template":{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:containers":` +
		`{"k:{\"name\":\"c\"}":{".":{},"f:env":{"k:{\"name\":\"A\"}":{".":{},"f:name":{},"f:value":{}}},"f:image":{},"f:name":{},` +
		`"f:ports":{"k:{\"containerPort\":80,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{}}}}},"f:tolerations":{}}}}}`
)

// TestAppliedDeploymentManagedFields: a server-side apply records the
// fields as kube-apiserver does, by the list and map types of its OpenAPI
// schemas (recorded from kube-apiserver, not derivable from the Go types).
func TestAppliedDeploymentManagedFields(t *testing.T) {
	k := newKubectl(t, "applytypes")
	k.must("apply", "--server-side", "-f", k.file("deployment.yaml", appliedDeployment))
	got := k.must("get", "deployment", "applied", "-o", `jsonpath={.metadata.managedFields[0].manager} {.metadata.managedFields[0].fieldsV1}`)
	if want := "kubectl " + kubeAppliedDeploymentFields; got != want {
		t.Errorf("managedFields of the applied deployment:\n%s\nwant (kube-apiserver's)\n%s", got, want)
	}
}
