package e2e

import (
	"bytes"
	"encoding/json"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// tbRows are the lines of kubectl get's output: the header's column
// names (split where kubectl aligns columns: two spaces or more) and the
// rows by their first field.
func tbRows(t *testing.T, out string) (header []string, rows map[string]string) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	header = regexp.MustCompile(`\s{2,}`).Split(strings.TrimSpace(lines[0]), -1)
	rows = map[string]string{}
	for _, l := range lines[1:] {
		rows[strings.Fields(l)[0]] = l
	}
	return header, rows
}

// tbMatch checks a row of kubectl get's output against a pattern of its
// cells separated by spaces.
func tbMatch(t *testing.T, what, row string, cells ...string) {
	t.Helper()
	if !regexp.MustCompile(`^` + strings.Join(cells, `\s+`) + `$`).MatchString(row) {
		t.Errorf("%s: row %q, want cells %q", what, row, cells)
	}
}

// TestTableKubectlPods checks kubectl get pods -o wide: kube-apiserver's
// columns, with the status a kubelet writes summarized as kubectl shows it.
func TestTableKubectlPods(t *testing.T) {
	k := newKubectl(t, "table-pods")
	k.must("create", "-f", k.file("web.yaml", kcPod("web", "node-1", "app: web")))
	k.must("create", "-f", k.file("pending.yaml", kcPod("pending", "", "app: web", "readinessGates: [{conditionType: example.com/gate}]")))
	finished := time.Now().Add(-10 * time.Minute).UTC().Format(time.RFC3339)
	k.must("patch", "pod", "web", "--subresource=status", "--type=merge", "-p", `{"status":{"phase":"Running",`+
		`"podIP":"10.1.2.3","podIPs":[{"ip":"10.1.2.3"}],"conditions":[{"type":"Ready","status":"True"}],`+
		`"containerStatuses":[{"name":"main","image":"nginx:1.27","imageID":"","ready":true,"restartCount":2,`+
		`"state":{"running":{"startedAt":"`+finished+`"}},"lastState":{"terminated":{"exitCode":1,"startedAt":"`+finished+`","finishedAt":"`+finished+`"}}}]}}`)

	header, rows := tbRows(t, k.must("get", "pods", "-o", "wide"))
	if want := []string{"NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE", "NOMINATED NODE", "READINESS GATES"}; !slices.Equal(header, want) {
		t.Errorf("header %q, want %q", header, want)
	}
	tbMatch(t, "web", rows["web"], "web", "1/1", "Running", `2 \(10m ago\)`, `\d+s`, `10\.1\.2\.3`, "node-1", "<none>", "<none>")
	tbMatch(t, "pending", rows["pending"], "pending", "0/1", "Pending", "0", `\d+s`, "<none>", "<none>", "<none>", "0/1")

	// Without -o wide, the columns of priority 0; a deleted bound pod is
	// Terminating until its kubelet (there is none) confirms.
	k.must("delete", "pod", "web", "--wait=false")
	header, rows = tbRows(t, k.must("get", "pods"))
	if want := []string{"NAME", "READY", "STATUS", "RESTARTS", "AGE"}; !slices.Equal(header, want) {
		t.Errorf("header %q, want %q", header, want)
	}
	tbMatch(t, "web deleted", rows["web"], "web", "1/1", "Terminating", `2 \(10m ago\)`, `\d+s`)
}

// TestTableKubectlDeployments checks kubectl get deployments, with and
// without -o wide.
func TestTableKubectlDeployments(t *testing.T) {
	k := newKubectl(t, "table-deploy")
	k.must("create", "deployment", "web", "--image=nginx")
	header, rows := tbRows(t, k.must("get", "deployments"))
	if want := []string{"NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"}; !slices.Equal(header, want) {
		t.Errorf("header %q, want %q", header, want)
	}
	tbMatch(t, "web", rows["web"], "web", "0/1", "0", "0", `\d+s`)

	k.must("patch", "deployment", "web", "--subresource=status", "--type=merge", "-p",
		`{"status":{"replicas":1,"readyReplicas":1,"updatedReplicas":1,"availableReplicas":1}}`)
	header, rows = tbRows(t, k.must("get", "deployments", "-o", "wide"))
	if want := []string{"NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE", "CONTAINERS", "IMAGES", "SELECTOR"}; !slices.Equal(header, want) {
		t.Errorf("header %q, want %q", header, want)
	}
	tbMatch(t, "web wide", rows["web"], "web", "1/1", "1", "1", `\d+s`, "nginx", "nginx", "app=web")
}

// TestTableKubectlKinds checks the columns of a few more kinds: config
// maps, services, cluster roles (kube-apiserver's default table).
func TestTableKubectlKinds(t *testing.T) {
	k := newKubectl(t, "table-kinds")
	k.must("create", "configmap", "settings", "--from-literal=a=1", "--from-literal=b=2")
	header, rows := tbRows(t, k.must("get", "configmaps"))
	if want := []string{"NAME", "DATA", "AGE"}; !slices.Equal(header, want) {
		t.Errorf("configmaps: header %q, want %q", header, want)
	}
	tbMatch(t, "settings", rows["settings"], "settings", "2", `\d+s`)

	// A node port of the band kept for requested ports, which no other
	// test asks for (the e2e tests share one server and its node ports).
	k.must("create", "service", "nodeport", "web", "--tcp=80:8080", "--node-port=30050")
	header, rows = tbRows(t, k.must("get", "services", "-o", "wide"))
	if want := []string{"NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE", "SELECTOR"}; !slices.Equal(header, want) {
		t.Errorf("services: header %q, want %q", header, want)
	}
	tbMatch(t, "web", rows["web"], "web", "NodePort", `\S+`, "<none>", "80:30050/TCP", `\d+s`, "app=web")

	header, rows = tbRows(t, k.must("get", "clusterroles"))
	if want := []string{"NAME", "CREATED AT"}; !slices.Equal(header, want) {
		t.Errorf("clusterroles: header %q, want %q", header, want)
	}
	tbMatch(t, "cluster-admin", rows["cluster-admin"], "cluster-admin", `\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`)
}

// TestTableWatch checks a watch of Tables: as kube-apiserver, only the
// first event carries the column definitions.
func TestTableWatch(t *testing.T) {
	t.Parallel()
	ns := htNamespace(t, "table-watch")
	cms := "/api/v1/namespaces/" + ns + "/configmaps"
	var list htList
	htJSON(t, "GET", cms, nil, http.StatusOK, &list)
	htJSON(t, "POST", cms, htConfigMapBody("a", map[string]string{"k": "v"}), http.StatusCreated, nil)
	htJSON(t, "POST", cms, htConfigMapBody("b", nil), http.StatusCreated, nil)
	resp, data := htDo(t, "GET", cms+"?watch=1&timeoutSeconds=1&resourceVersion="+list.Metadata.ResourceVersion, "", nil,
		"Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("watch: %d %s", resp.StatusCode, data)
	}
	type event struct {
		Type   string `json:"type"`
		Object struct {
			Kind    string            `json:"kind"`
			Columns []json.RawMessage `json:"columnDefinitions"`
			Rows    []struct {
				Cells []any `json:"cells"`
			} `json:"rows"`
		} `json:"object"`
	}
	var events []event
	for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var ev event
		if err := json.Unmarshal(line, &ev); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		events = append(events, ev)
	}
	if len(events) != 2 {
		t.Fatalf("events: %s", data)
	}
	first, second := events[0].Object, events[1].Object
	if first.Kind != "Table" || len(first.Columns) != 3 || len(first.Rows) != 1 || !slices.Equal(first.Rows[0].Cells[:2], []any{"a", 1.0}) {
		t.Errorf("first event: %s %s with %d columns, rows %+v", events[0].Type, first.Kind, len(first.Columns), first.Rows)
	}
	if second.Kind != "Table" || second.Columns != nil || len(second.Rows) != 1 || !slices.Equal(second.Rows[0].Cells[:2], []any{"b", 0.0}) {
		t.Errorf("second event: %s %s with %d columns, rows %+v", events[1].Type, second.Kind, len(second.Columns), second.Rows)
	}
}

// TestTableWatchMetadataAndBookmarks: as kube-apiserver 1.37's, each
// Table of a watch carries its object's resourceVersion, and a BOOKMARK
// is a Table too, of one row: an empty object's cells and the bookmark
// object as includeObject asks (recorded from kube-apiserver).
func TestTableWatchMetadataAndBookmarks(t *testing.T) {
	t.Parallel()
	ns := htNamespace(t, "table-watch-bookmark")
	cms := "/api/v1/namespaces/" + ns + "/configmaps"
	htJSON(t, "POST", cms, htConfigMapBody("a", map[string]string{"k": "v"}), http.StatusCreated, nil)
	for _, include := range []string{"", "Object"} {
		resp, data := htDo(t, "GET", cms+"?watch=1&timeoutSeconds=1&allowWatchBookmarks=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&includeObject="+include, "", nil,
			"Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("watch: %d %s", resp.StatusCode, data)
		}
		lines := bytes.Split(bytes.TrimSpace(data), []byte("\n"))
		if len(lines) < 2 {
			t.Fatalf("includeObject=%s: events: %s", include, data)
		}
		var added struct {
			Type   string
			Object struct {
				Kind     string
				Metadata map[string]any
				Rows     []struct {
					Object struct {
						Metadata struct{ ResourceVersion string }
					}
				}
			}
		}
		if err := json.Unmarshal(lines[0], &added); err != nil {
			t.Fatal(err)
		}
		if added.Type != "ADDED" || len(added.Object.Rows) != 1 || added.Object.Metadata["resourceVersion"] == nil ||
			added.Object.Metadata["resourceVersion"] != added.Object.Rows[0].Object.Metadata.ResourceVersion {
			t.Errorf("includeObject=%s: ADDED event's Table metadata: %s", include, lines[0])
		}
		var bookmark struct {
			Type   string
			Object struct {
				Metadata struct{ ResourceVersion string }
			}
		}
		var bookmarkLine []byte
		for _, l := range lines {
			if bytes.HasPrefix(l, []byte(`{"type":"BOOKMARK"`)) {
				bookmarkLine = l // the initial-events-end one, first
				break
			}
		}
		if err := json.Unmarshal(bookmarkLine, &bookmark); err != nil {
			t.Fatalf("includeObject=%s: no bookmark: %s", include, data)
		}
		rv := bookmark.Object.Metadata.ResourceVersion
		kind, apiVersion := "PartialObjectMetadata", "meta.k8s.io/v1"
		if include == "Object" {
			kind, apiVersion = "ConfigMap", "v1"
		}
		want := `{"type":"BOOKMARK","object":{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"` + rv + `"},"columnDefinitions":null,` +
			`"rows":[{"cells":["",0,"\u003cunknown\u003e"],"object":{"kind":"` + kind + `","apiVersion":"` + apiVersion + `","metadata":{"resourceVersion":"` + rv + `","annotations":{"k8s.io/initial-events-end":"true"}}}}]}}`
		var got, wanted any
		json.Unmarshal(bookmarkLine, &got)
		json.Unmarshal([]byte(want), &wanted)
		if rv == "" || !reflect.DeepEqual(got, wanted) {
			t.Errorf("includeObject=%s: bookmark\n%s\nwant\n%s", include, bookmarkLine, want)
		}
	}
}
