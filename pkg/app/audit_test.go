package app

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/watchcache/watchcache/pkg/audit"
	"k8s.io/client-go/rest"
)

const auditTestPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitManagedFields: true
rules:
- level: Metadata
  verbs: [watch]
  namespaces: [audited]
  omitStages: [RequestReceived]
- level: RequestResponse
  namespaces: [audited]
  resources: [{group: "", resources: [configmaps]}]
- level: Request
  namespaces: [audited]
  resources: [{group: "", resources: [secrets]}]
  omitManagedFields: false
`

// TestAuditPolicyAndWebhook starts the server with --audit-policy-file,
// --audit-log-path and a webhook, and checks both backends' events:
// levels, stages, bodies and managedFields left out.
func TestAuditPolicyAndWebhook(t *testing.T) {
	dir := t.TempDir()
	policy, logPath := filepath.Join(dir, "policy.yaml"), filepath.Join(dir, "audit.log")
	writeTestFile(t, policy, auditTestPolicy)
	var mu sync.Mutex
	var received []audit.Event
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var list struct{ Items []audit.Event }
		if err := json.NewDecoder(r.Body).Decode(&list); err != nil {
			t.Errorf("webhook: %v", err)
		}
		mu.Lock()
		received = append(received, list.Items...)
		mu.Unlock()
	}))
	defer hook.Close()
	kubeconfig := filepath.Join(dir, "webhook.kubeconfig")
	writeTestFile(t, kubeconfig, "apiVersion: v1\nkind: Config\nclusters: [{name: a, cluster: {server: '"+hook.URL+"'}}]\n"+
		"contexts: [{name: a, context: {cluster: a}}]\ncurrent-context: a\n")

	a, err := Start(Config{DataDir: filepath.Join(dir, "data"), EtcdPrefix: "/registry", EtcdUnsafeNoFsync: true, Log: slog.New(slog.DiscardHandler),
		AuditLogPath: logPath, AuditPolicyFile: policy,
		AuditWebhook: audit.WebhookConfig{ConfigFile: kubeconfig, BatchMaxWait: 50 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	rc, _ := adminClient(t, a)
	client, err := rest.HTTPClientFor(rc)
	if err != nil {
		t.Fatal(err)
	}
	do := func(method, path, body string, want int) []byte {
		t.Helper()
		req, _ := http.NewRequest(method, a.URL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != want {
			t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, out)
		}
		return out
	}
	do("POST", "/api/v1/namespaces", `{"metadata":{"name":"audited"}}`, 201)
	created := do("POST", "/api/v1/namespaces/audited/configmaps", `{"metadata":{"name":"cm"},"data":{"k":"v"}}`, 201)
	if !bytes.Contains(created, []byte("managedFields")) {
		t.Fatalf("the created configmap has no managedFields to leave out: %s", created)
	}
	do("POST", "/api/v1/namespaces/audited/secrets", `{"metadata":{"name":"s"},"stringData":{"k":"v"}}`, 201)
	do("GET", "/api/v1/namespaces/audited/configmaps?watch=1&timeoutSeconds=1", "", 200)
	do("GET", "/api/v1/namespaces/other/configmaps", "", 200)
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}

	logged := readAuditLog(t, logPath)
	mu.Lock()
	defer mu.Unlock()
	for name, evs := range map[string][]audit.Event{"log": logged, "webhook": received} {
		var got []string
		for _, ev := range evs {
			if ev.ObjectRef == nil || ev.ObjectRef.Namespace != "audited" {
				continue
			}
			got = append(got, ev.Verb+" "+ev.ObjectRef.Resource+" "+string(ev.Level)+" "+string(ev.Stage))
			cm := ev.ObjectRef.Resource == "configmaps" && ev.Verb == "create" && ev.Stage == audit.StageResponseComplete
			if cm && (!bytes.Contains(ev.RequestObject, []byte(`"name":"cm"`)) || !bytes.Contains(ev.ResponseObject, []byte(`"uid"`)) ||
				bytes.Contains(ev.ResponseObject, []byte("managedFields")) || ev.ResponseStatus.Code != 201) {
				t.Errorf("%s: configmap's create: %s → %s", name, ev.RequestObject, ev.ResponseObject)
			}
			secret := ev.ObjectRef.Resource == "secrets" && ev.Stage == audit.StageResponseComplete
			if secret && (!bytes.Contains(ev.RequestObject, []byte(`"stringData"`)) || ev.ResponseObject != nil) {
				t.Errorf("%s: secret's create at Request: %s → %s", name, ev.RequestObject, ev.ResponseObject)
			}
		}
		want := "create configmaps RequestResponse RequestReceived|create configmaps RequestResponse ResponseComplete|" +
			"create secrets Request RequestReceived|create secrets Request ResponseComplete|" +
			"watch configmaps Metadata ResponseStarted|watch configmaps Metadata ResponseComplete"
		if strings.Join(got, "|") != want {
			t.Errorf("%s's events:\n%s\nwant\n%s", name, strings.Join(got, "\n"), strings.ReplaceAll(want, "|", "\n"))
		}
	}
	if len(logged) != len(received) {
		t.Errorf("%d events logged, %d received by the webhook", len(logged), len(received))
	}
}

// TestStartRefusesBadAuditConfig: a bad policy or webhook kubeconfig
// refuses the start, naming the flag.
func TestStartRefusesBadAuditConfig(t *testing.T) {
	dir := t.TempDir()
	policy := filepath.Join(dir, "policy.yaml")
	writeTestFile(t, policy, "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: Loud}]\n")
	for name, tc := range map[string]struct {
		cfg  Config
		want string
	}{
		"policy":  {Config{AuditPolicyFile: policy}, `--audit-policy-file: rules[0].level: Unsupported value: "Loud"`},
		"webhook": {Config{AuditWebhook: audit.WebhookConfig{ConfigFile: filepath.Join(dir, "none")}}, "--audit-webhook-config-file " + filepath.Join(dir, "none")},
	} {
		cfg := tc.cfg
		cfg.DataDir, cfg.EtcdUnsafeNoFsync, cfg.Log = t.TempDir(), true, slog.New(slog.DiscardHandler)
		a, err := Start(cfg)
		if err == nil {
			a.Close()
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
	}
}

func readAuditLog(t *testing.T, path string) []audit.Event {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []audit.Event
	lines := bufio.NewScanner(f)
	lines.Buffer(nil, 1<<24)
	for lines.Scan() {
		var ev audit.Event
		if err := json.Unmarshal(lines.Bytes(), &ev); err != nil {
			t.Fatalf("%v: %s", err, lines.Bytes())
		}
		out = append(out, ev)
	}
	return out
}
