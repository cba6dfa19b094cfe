package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// kubectlPath is the kubectl these tests run (v1.32).
const kubectlPath = "/usr/bin/kubectl"

// kcTimeout bounds one kubectl run.
const kcTimeout = 30 * time.Second

// kc runs kubectl against testServer in a namespace of the test's own,
// with a discovery and OpenAPI cache of its own. Validation is kubectl's
// default (strict: kubectl sends fieldValidation=Strict, having found the
// parameter in the server's OpenAPI v3 document).
type kc struct {
	t     *testing.T
	ns    string
	cache string
	dir   string
}

// newKubectl skips the test without kubectl, creates the namespace (with
// kubectl), waits for its rootCAConfigMap, and deletes it when the test
// ends.
func newKubectl(t *testing.T, name string) *kc {
	t.Helper()
	if _, err := os.Stat(kubectlPath); err != nil {
		t.Skipf("kubectl is not installed: %v", err)
	}
	t.Parallel()
	k := &kc{t: t, ns: fmt.Sprintf("kubectl-%s-%d", name, time.Now().UnixNano()), cache: t.TempDir(), dir: t.TempDir()}
	if out := k.must("create", "namespace", k.ns); !strings.Contains(out, "namespace/"+k.ns+" created") {
		t.Fatalf("create namespace printed %q", out)
	}
	t.Cleanup(func() {
		req, _ := http.NewRequest(http.MethodDelete, testServer.URL+"/api/v1/namespaces/"+k.ns, nil)
		if resp, err := htClient.Do(req); err == nil {
			resp.Body.Close()
		}
	})
	waitForRootCA(t, k.ns)
	return k
}

// args are kubectl's arguments: connection, cache and namespace first.
func (k *kc) args(args ...string) []string {
	return append([]string{"--kubeconfig", testServer.Kubeconfig, "--cache-dir", k.cache, "--namespace", k.ns}, args...)
}

// run runs kubectl to completion.
func (k *kc) run(args ...string) (stdout, stderr string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), kcTimeout)
	defer cancel()
	var out, errOut bytes.Buffer
	cmd := exec.CommandContext(ctx, kubectlPath, k.args(args...)...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

// must runs kubectl and fails the test unless it succeeds; it returns stdout.
func (k *kc) must(args ...string) string {
	k.t.Helper()
	out, errOut, err := k.run(args...)
	if err != nil {
		k.t.Fatalf("kubectl %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, out, errOut)
	}
	return out
}

// fail runs kubectl and fails the test unless kubectl exits with an error
// status; it returns stderr.
func (k *kc) fail(args ...string) string {
	k.t.Helper()
	out, errOut, err := k.run(args...)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() == 0 {
		k.t.Fatalf("kubectl %s: err = %v, want a failure exit status\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, out, errOut)
	}
	return errOut
}

// file writes a manifest into the test's directory and returns its path.
func (k *kc) file(name, content string) string {
	k.t.Helper()
	p := filepath.Join(k.dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		k.t.Fatal(err)
	}
	return p
}

// getPod reads a pod with kubectl get -o json.
func (k *kc) getPod(name string) *corev1.Pod {
	k.t.Helper()
	var pod corev1.Pod
	if err := json.Unmarshal([]byte(k.must("get", "pod", name, "-o", "json")), &pod); err != nil {
		k.t.Fatalf("get -o json: %v", err)
	}
	return &pod
}

// kcPod is a pod manifest.
func kcPod(name, node, labels string, extraSpec ...string) string {
	m := fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\n  labels: {%s}\nspec:\n", name, labels)
	if node != "" {
		m += "  nodeName: " + node + "\n"
	}
	for _, s := range extraSpec {
		m += "  " + s + "\n"
	}
	return m + "  containers:\n  - name: main\n    image: nginx:1.27\n"
}

// kcLines splits output into its non-empty lines, sorted.
func kcLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	slices.Sort(out)
	return out
}

func TestKubectlCreateGetDelete(t *testing.T) {
	k := newKubectl(t, "crud")
	path := k.file("pod.yaml", kcPod("web", "node-1", "app: web, tier: front"))
	if out := k.must("create", "-f", path); strings.TrimSpace(out) != "pod/web created" {
		t.Errorf("create printed %q", out)
	}
	k.fail("create", "-f", path) // already exists
	out := k.must("get", "pods")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 2 ||
		!strings.HasPrefix(lines[0], "NAME") || !strings.HasPrefix(lines[1], "web ") {
		t.Errorf("get pods printed %q", out)
	}
	pod := k.getPod("web")
	if pod.Name != "web" || pod.Namespace != k.ns || pod.UID == "" || pod.ResourceVersion == "" ||
		pod.Labels["tier"] != "front" || pod.Spec.NodeName != "node-1" || pod.Spec.Containers[0].Image != "nginx:1.27" {
		t.Errorf("get -o json = %+v", pod)
	}
	if out := k.must("get", "pod", "web", "-o", "jsonpath={.metadata.labels.app}"); out != "web" {
		t.Errorf("get -o jsonpath printed %q", out)
	}
	// Bound to a node, the pod is deleted gracefully: with no kubelet to
	// confirm, only a forced delete removes it at once.
	if out := k.must("delete", "pod", "web", "--grace-period=0", "--force"); strings.TrimSpace(out) != `pod "web" force deleted` {
		t.Errorf("delete printed %q", out)
	}
	if errOut := k.fail("get", "pod", "web"); !strings.Contains(errOut, `pods "web" not found`) {
		t.Errorf("get after delete: %s", errOut)
	}
	if errOut := k.fail("delete", "pod", "web"); !strings.Contains(errOut, `pods "web" not found`) {
		t.Errorf("second delete: %s", errOut)
	}
}

func TestKubectlApply(t *testing.T) {
	k := newKubectl(t, "apply")
	path := k.file("pod.yaml", kcPod("app", "", "version: v1"))
	if out := k.must("apply", "-f", path); strings.TrimSpace(out) != "pod/app created" {
		t.Errorf("first apply printed %q", out)
	}
	before := k.getPod("app")
	if before.Annotations["kubectl.kubernetes.io/last-applied-configuration"] == "" {
		t.Errorf("no last-applied-configuration: %v", before.Annotations)
	}

	// Changed: a strategic merge patch, computed from the OpenAPI v3
	// schema (a list merged by key: the container keeps its place).
	k.file("pod.yaml", kcPod("app", "", "version: v2", "terminationGracePeriodSeconds: 5"))
	out, errOut, err := k.run("apply", "-f", path, "-v=8")
	if err != nil || strings.TrimSpace(out) != "pod/app configured" {
		t.Fatalf("second apply: %v\nstdout: %s\nstderr: %s", err, out, errOut)
	}
	if !strings.Contains(errOut, "PATCH "+testServer.URL+"/api/v1/namespaces/"+k.ns+"/pods/app") ||
		!strings.Contains(errOut, "Content-Type: application/strategic-merge-patch+json") {
		t.Errorf("second apply did not send a strategic merge patch:\n%s", errOut)
	}
	if strings.Contains(errOut, "warning") {
		t.Errorf("second apply warned:\n%s", errOut)
	}
	after := k.getPod("app")
	if after.UID != before.UID || after.Labels["version"] != "v2" ||
		after.Spec.TerminationGracePeriodSeconds == nil || *after.Spec.TerminationGracePeriodSeconds != 5 ||
		len(after.Spec.Containers) != 1 {
		t.Errorf("after the second apply: uid %s (was %s), labels %v, spec %+v", after.UID, before.UID, after.Labels, after.Spec)
	}
	if out := k.must("apply", "-f", path); strings.TrimSpace(out) != "pod/app unchanged" {
		t.Errorf("third apply printed %q", out)
	}
}

func TestKubectlSelectors(t *testing.T) {
	k := newKubectl(t, "select")
	k.must("create", "-f", k.file("pods.yaml", strings.Join([]string{
		kcPod("a", "node-1", "app: web"),
		kcPod("b", "node-2", "app: web"),
		kcPod("c", "node-1", "app: db"),
	}, "---\n")))
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"-l", "app=web"}, []string{"pod/a", "pod/b"}},
		{[]string{"-l", "app in (db)"}, []string{"pod/c"}},
		{[]string{"-l", "app!=web"}, []string{"pod/c"}},
		{[]string{"--field-selector", "spec.nodeName=node-1"}, []string{"pod/a", "pod/c"}},
		{[]string{"--field-selector", "spec.nodeName!=node-1"}, []string{"pod/b"}},
		{[]string{"--field-selector", "spec.nodeName=node-1", "-l", "app=web"}, []string{"pod/a"}},
		{[]string{"--field-selector", "metadata.name=b"}, []string{"pod/b"}},
	} {
		out := k.must(append([]string{"get", "pods", "-o", "name"}, c.args...)...)
		if got := kcLines(out); !slices.Equal(got, c.want) {
			t.Errorf("get pods %v = %v, want %v", c.args, got, c.want)
		}
	}
	if errOut := k.fail("get", "pods", "--field-selector", "spec.hostname=x"); !strings.Contains(errOut, "spec.hostname") {
		t.Errorf("unselectable field: %s", errOut)
	}
	if _, errOut, err := k.run("get", "pods", "-l", "app=none"); err != nil || !strings.Contains(errOut, "No resources found in "+k.ns+" namespace.") {
		t.Errorf("empty selection: %v, %s", err, errOut)
	}
}

func TestKubectlChunking(t *testing.T) {
	k := newKubectl(t, "chunks")
	// 100 config maps, created through the API directly (quicker than
	// kubectl).
	const n = 100
	var want []string
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		name := fmt.Sprintf("cm-%03d", i)
		want = append(want, name)
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q},"data":{"i":"%d"}}`, name, i)
			resp, err := htClient.Post(testServer.URL+"/api/v1/namespaces/"+k.ns+"/configmaps", "application/json", strings.NewReader(body))
			if err != nil {
				errs <- err
				return
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusCreated {
				errs <- fmt.Errorf("create %s: %s", name, resp.Status)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	want = append(want, rootCAConfigMap)

	out, errOut, err := k.run("get", "configmaps", "--chunk-size=10", "-o", "name", "-v=6")
	if err != nil {
		t.Fatalf("get --chunk-size: %v\n%s", err, errOut)
	}
	var names []string
	for _, l := range kcLines(out) {
		names = append(names, strings.TrimPrefix(l, "configmap/"))
	}
	if !slices.Equal(names, want) {
		t.Errorf("get --chunk-size=10 -o name printed %d names: %v", len(names), names)
	}
	if pages := strings.Count(errOut, "limit=10"); pages < 10 || strings.Count(errOut, "continue=") < 9 {
		t.Errorf("get --chunk-size=10 made %d requests with limit=10, want 10 or more:\n%s", pages, errOut)
	}

	// The table output too: one header, each name once.
	out = k.must("get", "cm", "--chunk-size=10")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != len(want)+1 || strings.Count(out, "NAME") != 1 {
		t.Fatalf("get cm --chunk-size=10 printed %d lines:\n%s", len(lines), out)
	}
	for i, l := range lines[1:] {
		if f := strings.Fields(l); len(f) == 0 || f[0] != want[i] {
			t.Errorf("line %d = %q, want %s", i+1, l, want[i])
		}
	}
}

func TestKubectlWatch(t *testing.T) {
	k := newKubectl(t, "watch")
	k.must("create", "-f", k.file("w1.yaml", kcPod("w1", "", "stage: one")))

	ctx, cancel := context.WithTimeout(context.Background(), kcTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, kubectlPath, k.args("get", "pods", "--watch", "--output-watch-events",
		"-o", `jsonpath={.type} {.object.metadata.name}={.object.metadata.labels.stage}{"\n"}`)...)
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 100)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	var seen []string
	stop := func() {
		cancel()
		for range lines {
		}
		cmd.Wait()
	}
	expect := func(want string) {
		t.Helper()
		timeout := time.After(15 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				if ok {
					seen = append(seen, l)
					if l == want {
						return
					}
					continue
				}
			case <-timeout:
			}
			stop()
			t.Fatalf("kubectl get -w: no %q; printed %q; stderr: %s", want, seen, errOut.String())
		}
	}
	expect("ADDED w1=one") // the list before the watch
	k.must("label", "pod", "w1", "stage=two", "--overwrite")
	expect("MODIFIED w1=two")
	k.must("create", "-f", k.file("w2.yaml", kcPod("w2", "", "stage: new")))
	expect("ADDED w2=new")
	k.must("delete", "pod", "w1")
	expect("DELETED w1=two")
	stop()
}

func TestKubectlStrictValidation(t *testing.T) {
	k := newKubectl(t, "strict")
	path := k.file("bad.yaml", kcPod("bad", "", "app: bad", "foo: bar"))

	errOut := k.fail("create", "-f", path)
	if !strings.Contains(errOut, "BadRequest") || !strings.Contains(errOut, `Pod in version "v1" cannot be handled as a Pod: strict decoding error: unknown field "spec.foo"`) {
		t.Errorf("create with an unknown field: %s", errOut)
	}
	if errOut := k.fail("get", "pod", "bad"); !strings.Contains(errOut, "not found") {
		t.Errorf("the refused pod exists: %s", errOut)
	}
	errOut = k.fail("apply", "-f", path)
	if !strings.Contains(errOut, `Pod in version "v1" cannot be handled as a Pod: strict decoding error: unknown field "spec.foo"`) {
		t.Errorf("apply with an unknown field: %s", errOut)
	}

	out, errOut, err := k.run("create", "-f", path, "--validate=warn")
	if err != nil || strings.TrimSpace(out) != "pod/bad created" || !strings.Contains(errOut, `Warning: unknown field "spec.foo"`) {
		t.Errorf("create --validate=warn: %v\nstdout: %s\nstderr: %s", err, out, errOut)
	}
	k.must("delete", "pod", "bad")

	out, errOut, err = k.run("create", "-f", path, "--validate=false")
	if err != nil || strings.TrimSpace(out) != "pod/bad created" || errOut != "" {
		t.Errorf("create --validate=false: %v\nstdout: %s\nstderr: %s", err, out, errOut)
	}
}

func TestKubectlCustomResource(t *testing.T) {
	k := newKubectl(t, "widgets")
	widget := func(size, color string) string {
		return fmt.Sprintf("apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: gear\n  labels: {size: %s}\n"+
			"spec:\n  color: %s\n  parts: [{name: axle, count: 2}]\n", size, color)
	}
	path := k.file("widget.yaml", widget("small", "red"))
	if out := k.must("create", "-f", path); strings.TrimSpace(out) != "widget.example.com/gear created" {
		t.Errorf("create printed %q", out)
	}
	if out := k.must("get", "widgets"); !strings.HasPrefix(out, "NAME") || !strings.Contains(out, "\ngear ") {
		t.Errorf("get widgets printed %q", out)
	}
	if out := k.must("get", "wd", "gear", "-o", "jsonpath={.spec.color}/{.spec.parts[0].count}"); out != "red/2" {
		t.Errorf("get wd gear printed %q", out)
	}
	if out := k.must("get", "wd", "--field-selector", "spec.color=red", "-o", "name"); strings.TrimSpace(out) != "widget.example.com/gear" {
		t.Errorf("get wd --field-selector printed %q", out)
	}
	uid := k.must("get", "wd", "gear", "-o", "jsonpath={.metadata.uid}")

	// The first apply adopts the created object (kubectl warns that the
	// last-applied annotation is missing), the second changes it: JSON
	// merge patches, custom resources having no patch strategies.
	if out := k.must("apply", "-f", path); strings.TrimSpace(out) != "widget.example.com/gear configured" {
		t.Errorf("first apply printed %q", out)
	}
	k.file("widget.yaml", widget("large", "blue"))
	out, errOut, err := k.run("apply", "-f", path, "-v=8")
	if err != nil || strings.TrimSpace(out) != "widget.example.com/gear configured" {
		t.Fatalf("second apply: %v\nstdout: %s\nstderr: %s", err, out, errOut)
	}
	if !strings.Contains(errOut, "PATCH "+testServer.URL+"/apis/example.com/v1/namespaces/"+k.ns+"/widgets/gear") ||
		!strings.Contains(errOut, "Content-Type: application/merge-patch+json") {
		t.Errorf("second apply did not send a merge patch:\n%s", errOut)
	}
	got := k.must("get", "wd", "gear", "-o", "jsonpath={.metadata.uid} {.metadata.labels.size} {.spec.color}")
	if want := uid + " large blue"; got != want {
		t.Errorf("after the second apply: %q, want %q", got, want)
	}
	if out := k.must("apply", "-f", path); strings.TrimSpace(out) != "widget.example.com/gear unchanged" {
		t.Errorf("third apply printed %q", out)
	}

	if out := k.must("delete", "wd", "gear"); strings.TrimSpace(out) != `widget.example.com "gear" deleted` {
		t.Errorf("delete printed %q", out)
	}
	if errOut := k.fail("get", "widget", "gear"); !strings.Contains(errOut, `widgets.example.com "gear" not found`) {
		t.Errorf("get after delete: %s", errOut)
	}
}

// TestKubectlExplain reads the OpenAPI v3 documents as kubectl explain
// does: the built-in kinds' reflected schemas and the custom resource's.
func TestKubectlExplain(t *testing.T) {
	k := newKubectl(t, "explain")
	out := k.must("explain", "pods.spec.containers")
	for _, want := range []string{"KIND:       Pod", "FIELD: containers <[]Container>", "image\t<string>", "env\t<[]EnvVar>"} {
		if !strings.Contains(out, want) {
			t.Errorf("explain pods.spec.containers: no %q in\n%s", want, out)
		}
	}
	out = k.must("explain", "widgets")
	for _, want := range []string{"GROUP:      example.com", "KIND:       Widget", "metadata\t<ObjectMeta>"} {
		if !strings.Contains(out, want) {
			t.Errorf("explain widgets: no %q in\n%s", want, out)
		}
	}
}
