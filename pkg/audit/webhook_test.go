package audit

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/watchcache/watchcache/pkg/requestinfo"
)

// webhookServer records the EventLists POSTed to it; its first answer is
// failing (a 503), which the webhook retries.
type webhookServer struct {
	*httptest.Server
	mu      sync.Mutex
	posts   int
	batches [][]Event
}

func newWebhookServer(t *testing.T) *webhookServer {
	s := &webhookServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.posts++
		if s.posts == 1 {
			http.Error(w, "not yet", http.StatusServiceUnavailable)
			return
		}
		body, _ := io.ReadAll(r.Body)
		var list struct {
			Kind, APIVersion string
			Items            []Event
		}
		if err := json.Unmarshal(body, &list); err != nil || r.Method != http.MethodPost || list.Kind != "EventList" || list.APIVersion != "audit.k8s.io/v1" {
			t.Errorf("webhook got %s %s: %v", r.Method, body, err)
		}
		s.batches = append(s.batches, list.Items)
	}))
	t.Cleanup(s.Close)
	return s
}

// events are the events received, in order.
func (s *webhookServer) events() []Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Event
	for _, b := range s.batches {
		out = append(out, b...)
	}
	return out
}

// WriteKubeconfig writes a kubeconfig of the webhook at url.
func writeKubeconfig(t *testing.T, url string) string {
	path := filepath.Join(t.TempDir(), "webhook.kubeconfig")
	config := `apiVersion: v1
kind: Config
clusters:
- name: audit
  cluster: {server: "` + url + `/audit"}
users:
- name: apiserver
  user: {token: secret}
contexts:
- name: audit
  context: {cluster: audit, user: apiserver}
current-context: audit
`
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

const pipelinePolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitManagedFields: true
rules:
- level: None
  nonResourceURLs: ["/version"]
- level: RequestResponse
  resources: [{group: "", resources: ["configmaps"]}]
- level: Request
  resources: [{group: "", resources: ["secrets"]}]
  omitManagedFields: false
- level: Metadata
  omitStages: [RequestReceived]
`

// TestPolicyAndWebhook: the policy's levels and stages, in the log and at
// the webhook, batched (2 a batch), its first POST retried.
func TestPolicyAndWebhook(t *testing.T) {
	hook := newWebhookServer(t)
	wh, err := NewWebhook(WebhookConfig{ConfigFile: writeKubeconfig(t, hook.URL), BatchMaxSize: 2, BatchMaxWait: 50 * time.Millisecond, InitialBackoff: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	policy, err := ParsePolicy([]byte(pipelinePolicy))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "audit.log")
	l, err := New(Config{Path: path, Policy: policy, Webhook: wh})
	if err != nil {
		t.Fatal(err)
	}
	echo := func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	}
	var h http.Handler = http.HandlerFunc(echo)
	h = l.WithUser(h)
	h = l.Handler(h)
	h = requestinfoFor(h)
	const withMF = `{"kind":"ConfigMap","metadata":{"name":"a","managedFields":[{"manager":"kubectl"}]}}`
	for _, target := range []string{"/api/v1/namespaces/ns/configmaps", "/api/v1/namespaces/ns/secrets", "/api/v1/namespaces/ns/pods", "/version"} {
		r := httptest.NewRequest(http.MethodPost, target, strings.NewReader(withMF))
		r.Header.Set("Content-Type", "application/json")
		h.ServeHTTP(httptest.NewRecorder(), r)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	logged := events(t, path)
	received := hook.events()
	if len(received) != len(logged) {
		t.Errorf("webhook got %d events, the log %d", len(received), len(logged))
	}
	var got []string
	for _, ev := range logged {
		got = append(got, ev.ObjectRef.Resource+" "+string(ev.Level)+" "+string(ev.Stage))
	}
	want := "configmaps RequestResponse RequestReceived|configmaps RequestResponse ResponseComplete|secrets Request RequestReceived|secrets Request ResponseComplete|pods Metadata ResponseComplete"
	if strings.Join(got, "|") != want {
		t.Errorf("events:\n%s\nwant\n%s", strings.Join(got, "|"), want)
	}
	if len(logged) == 5 {
		cm, secret, pod := logged[1], logged[3], logged[4]
		if string(cm.RequestObject) != `{"kind":"ConfigMap","metadata":{"name":"a"}}` || string(cm.ResponseObject) != string(cm.RequestObject) {
			t.Errorf("configmap bodies (managedFields omitted): %s %s", cm.RequestObject, cm.ResponseObject)
		}
		if string(secret.RequestObject) != withMF || secret.ResponseObject != nil {
			t.Errorf("secret bodies (managedFields kept, no response): %s %s", secret.RequestObject, secret.ResponseObject)
		}
		if pod.RequestObject != nil || pod.ResponseObject != nil || logged[0].RequestObject != nil {
			t.Errorf("bodies at Metadata or RequestReceived: %+v %+v", pod, logged[0])
		}
	}
	hook.mu.Lock()
	defer hook.mu.Unlock()
	// The batches are sent concurrently, in any order.
	if sizes := batchSizes(hook.batches); !slices.Equal(sizes, []int{1, 2, 2}) || hook.posts != 4 {
		t.Errorf("batches of %v events in %d posts, want 1, 2, 2 in 4 (one retried)", sizes, hook.posts)
	}
}

func batchSizes(b [][]Event) []int {
	var out []int
	for _, events := range b {
		out = append(out, len(events))
	}
	slices.Sort(out)
	return out
}

// TestWebhookBlocking: in blocking mode the event has been received when
// the request returns.
func TestWebhookBlocking(t *testing.T) {
	hook := newWebhookServer(t)
	wh, err := NewWebhook(WebhookConfig{ConfigFile: writeKubeconfig(t, hook.URL), Mode: ModeBlocking, InitialBackoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	l, _ := New(Config{Webhook: wh})
	h := requestinfoFor(l.Handler(l.WithUser(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))))
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/api/v1/pods", nil))
	if evs := hook.events(); len(evs) != 1 || evs[0].Stage != StageResponseComplete {
		t.Errorf("received %+v", evs)
	}
	l.Close()
	for _, bad := range []WebhookConfig{{ConfigFile: "/nonexistent"}, {ConfigFile: writeKubeconfig(t, hook.URL), Mode: "blocking-strict"}} {
		if _, err := NewWebhook(bad); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

// requestinfoFor is the request info filter.
func requestinfoFor(h http.Handler) http.Handler { return requestinfo.WithRequestInfo(h) }
