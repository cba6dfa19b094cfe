package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// namedCRD is a CustomResourceDefinition of group with the given names
// (shortNames a YAML list), served and stored in v1.
func namedCRD(group, plural, singular, kind, listKind, shortNames string) string {
	return fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: %[2]s.%[1]s}
spec:
  group: %[1]s
  scope: Namespaced
  names: {plural: %[2]s, singular: %[3]s, kind: %[4]s, listKind: %[5]s, shortNames: %[6]s}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`, group, plural, singular, kind, listKind, shortNames)
}

// crdNamesStatus prints a CRD's accepted names and its NamesAccepted and
// Established conditions (status, reason, message).
const crdNamesStatus = `jsonpath={.status.acceptedNames}` +
	`|{.status.conditions[?(@.type=="NamesAccepted")].status} {.status.conditions[?(@.type=="NamesAccepted")].reason} {.status.conditions[?(@.type=="NamesAccepted")].message}` +
	`|{.status.conditions[?(@.type=="Established")].status} {.status.conditions[?(@.type=="Established")].reason} {.status.conditions[?(@.type=="Established")].message}`

// applyCRD applies a CRD, deleting it when the test ends.
func applyCRD(k *kc, file, manifest, name string) {
	k.t.Helper()
	k.must("apply", "-f", k.file(file, manifest))
	k.t.Cleanup(func() { k.run("delete", "crd", name, "--wait=false") })
}

// waitCRDNames waits for a CRD's names and conditions (crdNamesStatus) to
// be want.
func waitCRDNames(k *kc, name, want string) {
	k.t.Helper()
	var last string
	waitFor(k.t, name+"'s names and conditions", func() bool {
		last, _, _ = k.run("get", "crd", name, "-o", crdNamesStatus)
		return last == want
	})
}

// TestCustomResourceDefinitionNameConflicts: every name of a CRD (plural,
// singular, short names, kind, list kind) is checked against the names the
// other CRDs of its group accepted; the status says which, accepts the
// others, and the CRD is not established nor served. The statuses are
// those kube-apiserver 1.37 gives.
func TestCustomResourceDefinitionNameConflicts(t *testing.T) {
	k := newKubectl(t, "crdnames")
	const g = "names.e2e.io"
	applyCRD(k, "widgets.yaml", namedCRD(g, "widgets", "widget", "Widget", "WidgetList", "[wd]"), "widgets."+g)
	waitCRDNames(k, "widgets."+g, `{"kind":"Widget","listKind":"WidgetList","plural":"widgets","shortNames":["wd"],"singular":"widget"}`+
		`|True NoConflicts no conflicts found|True InitialNamesAccepted the initial names have been accepted`)
	k.must("create", "-f", k.file("w1.yaml", `{"apiVersion":"names.e2e.io/v1","kind":"Widget","metadata":{"name":"w1"}}`))

	const notAccepted = "|False NotAccepted not all names are accepted"
	for _, c := range []struct{ plural, singular, kind, listKind, shortNames, want string }{
		{"widgets2", "widget", "Widget2", "Widget2List", "[wd]",
			`{"kind":"Widget2","listKind":"Widget2List","plural":"widgets2"}|False ShortNamesConflict "wd" is already in use`},
		{"gadgets", "gadget", "Widget", "WidgetList", "[]",
			`{"kind":"","plural":"gadgets","singular":"gadget"}|False ListKindConflict "WidgetList" is already in use`},
		{"things", "thing", "Thing", "WidgetList", "[]",
			`{"kind":"Thing","plural":"things","singular":"thing"}|False ListKindConflict "WidgetList" is already in use`},
		{"boxes", "box", "Box", "BoxList", "[wd, widget]",
			`{"kind":"Box","listKind":"BoxList","plural":"boxes","singular":"box"}|False ShortNamesConflict ["wd" is already in use, "widget" is already in use]`},
		{"sprockets", "widgets", "Sprocket", "SprocketList", "[]",
			`{"kind":"Sprocket","listKind":"SprocketList","plural":"sprockets"}|False SingularConflict "widgets" is already in use`},
	} {
		name := c.plural + "." + g
		applyCRD(k, c.plural+".yaml", namedCRD(g, c.plural, c.singular, c.kind, c.listKind, c.shortNames), name)
		waitCRDNames(k, name, c.want+notAccepted)
	}

	// The names resolve to widgets only; the refused CRDs are not served.
	if out := k.must("get", "widget.names.e2e.io", "-o", "name"); out != "widget.names.e2e.io/w1\n" {
		t.Errorf("get widget: %q", out)
	}
	if out := k.must("get", "wd.names.e2e.io", "w1", "-o", "jsonpath={.kind}"); out != "Widget" {
		t.Errorf("get wd w1: %q", out)
	}
	if resp, body := htDo(t, http.MethodGet, "/apis/names.e2e.io/v1/namespaces/"+k.ns+"/widgets2", "", nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("list of a refused CRD's objects: %d %s", resp.StatusCode, body)
	}
}

// TestCustomResourceDefinitionNamesFreed: a CRD refused for names another
// holds gets them once that one is deleted, as kube-apiserver requeues a
// group's other CRDs when one goes.
func TestCustomResourceDefinitionNamesFreed(t *testing.T) {
	k := newKubectl(t, "crdfreed")
	const g = "freed.e2e.io"
	applyCRD(k, "widgets.yaml", namedCRD(g, "widgets", "widget", "Widget", "WidgetList", "[wd]"), "widgets."+g)
	waitCRDNames(k, "widgets."+g, `{"kind":"Widget","listKind":"WidgetList","plural":"widgets","shortNames":["wd"],"singular":"widget"}`+
		`|True NoConflicts no conflicts found|True InitialNamesAccepted the initial names have been accepted`)
	applyCRD(k, "gizmos.yaml", namedCRD(g, "gizmos", "widget", "Gizmo", "GizmoList", "[wd]"), "gizmos."+g)
	waitCRDNames(k, "gizmos."+g, `{"kind":"Gizmo","listKind":"GizmoList","plural":"gizmos"}`+
		`|False ShortNamesConflict "wd" is already in use|False NotAccepted not all names are accepted`)

	k.must("delete", "crd", "widgets."+g, "--timeout=20s")
	waitCRDNames(k, "gizmos."+g, `{"kind":"Gizmo","listKind":"GizmoList","plural":"gizmos","shortNames":["wd"],"singular":"widget"}`+
		`|True NoConflicts no conflicts found|True InitialNamesAccepted the initial names have been accepted`)
	k.must("create", "-f", k.file("g1.yaml", `{"apiVersion":"freed.e2e.io/v1","kind":"Gizmo","metadata":{"name":"g1"}}`))
	if out := k.must("get", "wd.freed.e2e.io", "g1", "-o", "jsonpath={.kind}"); out != "Gizmo" {
		t.Errorf("get wd g1: %q", out)
	}
}

// TestCustomResourceStorageVersionChange: objects stored in a version no
// longer served nor stored are read in the version asked for, its
// apiVersion theirs (conversion None), as kube-apiserver serves them.
func TestCustomResourceStorageVersionChange(t *testing.T) {
	k := newKubectl(t, "crdstorage")
	const name = "parts.storage.e2e.io"
	v1 := namedCRD("storage.e2e.io", "parts", "part", "Part", "PartList", "[]")
	applyCRD(k, "crd.yaml", v1, name)
	waitFor(t, "the CRD to be established", func() bool {
		out, _, _ := k.run("get", "crd", name, "-o", `jsonpath={.status.conditions[?(@.type=="Established")].status}`)
		return out == "True"
	})
	k.must("create", "-f", k.file("p1.yaml", `{"apiVersion":"storage.e2e.io/v1","kind":"Part","metadata":{"name":"p1"},"spec":{"a":1}}`))

	v2 := strings.Replace(v1, "    served: true\n    storage: true\n", "    served: false\n    storage: false\n", 1) + `  - name: v2
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`
	k.must("apply", "-f", k.file("crd.yaml", v2))
	waitFor(t, "v2 to be served", func() bool {
		_, _, err := k.run("get", "parts.v2.storage.e2e.io", "p1")
		return err == nil
	})
	if out := k.must("get", "parts.v2.storage.e2e.io", "p1", "-o", "jsonpath={.apiVersion} {.spec.a}"); out != "storage.e2e.io/v2 1" {
		t.Errorf("get of an object stored in v1, in v2: %q", out)
	}
	if out := k.must("get", "parts.v2.storage.e2e.io", "-o", "jsonpath={.items[*].apiVersion}"); out != "storage.e2e.io/v2" {
		t.Errorf("list in v2: %q", out)
	}
	if out := k.must("get", "crd", name, "-o", "jsonpath={.status.storedVersions}"); out != `["v1","v2"]` {
		t.Errorf("storedVersions %s", out)
	}
}

// TestCustomResourceCreateWhileTerminating: while a deleted CRD's objects
// are being deleted, creates of new ones are refused with kube-apiserver's
// 403 (once its Terminating condition is set, the
// server that set it refuses them); other verbs work.
func TestCustomResourceCreateWhileTerminating(t *testing.T) {
	k := newKubectl(t, "crdterminating")
	const g, name = "terminating.e2e.io", "widgets.terminating.e2e.io"
	applyCRD(k, "crd.yaml", namedCRD(g, "widgets", "widget", "Widget", "WidgetList", "[]"), name)
	waitFor(t, "the CRD to be established", func() bool {
		out, _, _ := k.run("get", "crd", name, "-o", `jsonpath={.status.conditions[?(@.type=="Established")].status}`)
		return out == "True"
	})
	k.must("create", "-f", k.file("w1.yaml", `{"apiVersion":"terminating.e2e.io/v1","kind":"Widget","metadata":{"name":"w1","finalizers":["e2e.io/hold"]}}`))
	k.must("delete", "crd", name, "--wait=false")
	waitFor(t, "the CRD to be terminating", func() bool {
		out, _, _ := k.run("get", "crd", name, "-o", `jsonpath={.status.conditions[?(@.type=="Terminating")].status}`)
		return out == "True"
	})

	path := "/apis/terminating.e2e.io/v1/namespaces/" + k.ns + "/widgets"
	for body, want := range map[string]metav1.Status{
		`{"apiVersion":"terminating.e2e.io/v1","kind":"Widget","metadata":{"name":"w2"}}`: {
			Message: `widgets.terminating.e2e.io "w2" is forbidden: create not allowed while custom resource definition is terminating`,
			Details: &metav1.StatusDetails{Name: "w2", Group: g, Kind: "widgets"}},
		`{"apiVersion":"terminating.e2e.io/v1","kind":"Widget","metadata":{"generateName":"w-"}}`: {
			Message: `widgets.terminating.e2e.io is forbidden: create not allowed while custom resource definition is terminating`,
			Details: &metav1.StatusDetails{Group: g, Kind: "widgets"}},
	} {
		resp, data := htDo(t, http.MethodPost, path, "application/json", []byte(body))
		var st metav1.Status
		json.Unmarshal(data, &st)
		if resp.StatusCode != http.StatusForbidden || st.Code != http.StatusForbidden || st.Reason != metav1.StatusReasonForbidden ||
			st.Message != want.Message || !reflect.DeepEqual(st.Details, want.Details) {
			t.Errorf("create while terminating: %d %s", resp.StatusCode, data)
		}
	}
	k.must("patch", "widgets.terminating.e2e.io", "w1", "--type=merge", "-p", `{"metadata":{"finalizers":null}}`)
	waitFor(t, "the CRD to go", func() bool {
		_, errOut, _ := k.run("get", "crd", name)
		return strings.Contains(errOut, "NotFound")
	})
}

// TestCustomResourceDefinitionLowerCaseKind: kube-apiserver 1.37 has no
// CamelCase rule for a CRD's kind, nor a Kubernetes-like rule for its
// version names: a kind "lower" with versions v1 and foo is established
// and served in both.
func TestCustomResourceDefinitionLowerCaseKind(t *testing.T) {
	k := newKubectl(t, "crdlower")
	const g = "lower.e2e.io"
	applyCRD(k, "lowers.yaml", namedCRD(g, "lowers", "lower", "lower", "lowerList", "[]")+`  - name: foo
    served: true
    storage: false
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`, "lowers."+g)
	waitCRDNames(k, "lowers."+g, `{"kind":"lower","listKind":"lowerList","plural":"lowers","singular":"lower"}`+
		`|True NoConflicts no conflicts found|True InitialNamesAccepted the initial names have been accepted`)
	k.must("create", "-f", k.file("l1.yaml", `{"apiVersion":"lower.e2e.io/v1","kind":"lower","metadata":{"name":"l1"}}`))
	if out := k.must("get", "lowers.v1."+g, "l1", "-o", "jsonpath={.apiVersion} {.kind}"); out != "lower.e2e.io/v1 lower" {
		t.Errorf("get l1 in v1: %q", out)
	}
	resp, body := htDo(t, http.MethodGet, "/apis/lower.e2e.io/foo/namespaces/"+k.ns+"/lowers", "", nil)
	var list struct {
		Kind  string `json:"kind"`
		Items []struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		} `json:"items"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &list) != nil || list.Kind != "lowerList" ||
		len(list.Items) != 1 || list.Items[0].APIVersion != "lower.e2e.io/foo" || list.Items[0].Kind != "lower" {
		t.Errorf("list in version foo: %d %s", resp.StatusCode, body)
	}
}
