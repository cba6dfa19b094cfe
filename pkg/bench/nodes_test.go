package bench

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/watchcache/watchcache/pkg/benchdata"
)

func TestStoredPod(t *testing.T) {
	key, value := storedPod(1234, 100, 50)
	if want := "/registry/pods/ns-034/pod-001234"; key != want {
		t.Errorf("key %q, want %q", key, want)
	}
	var pod map[string]any
	if err := json.Unmarshal(value, &pod); err != nil {
		t.Fatalf("%v\n%s", err, value)
	}
	meta, spec := pod["metadata"].(map[string]any), pod["spec"].(map[string]any)
	if meta["name"] != "pod-001234" || meta["namespace"] != "ns-034" || meta["generation"] != 1.0 || meta["ownerReferences"] != nil {
		t.Errorf("metadata %v", meta)
	}
	if spec["nodeName"] != "node-0034" || spec["enableServiceLinks"] != true || len(spec["tolerations"].([]any)) != 2 {
		t.Errorf("spec %v", spec)
	}
	if c := spec["containers"].([]any)[0].(map[string]any); c["terminationMessagePolicy"] != "File" {
		t.Errorf("container %v", c)
	}
	if pod["status"].(map[string]any)["phase"] != "Running" {
		t.Errorf("status %v", pod["status"])
	}
	if n := len(value); n < 2000 || n > 3000 {
		t.Errorf("%d bytes, want about 2.5 KB", n)
	}
}

func TestWithoutOwners(t *testing.T) {
	pod := benchdata.Pod(7, 3, 5)
	stripped := withoutOwners(pod)
	if !json.Valid(stripped) || strings.Contains(string(stripped), "ownerReferences") {
		t.Errorf("%s", stripped)
	}
	if !strings.Contains(string(pod), "ownerReferences") {
		t.Error("the original was changed")
	}
	if ns, name := podIdentity(pod); ns != "ns-001" || name != "pod-000007" {
		t.Errorf("podIdentity = %q, %q", ns, name)
	}
}

func TestNodeObjectsAreJSON(t *testing.T) {
	now := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	for name, b := range map[string][]byte{
		"node": nodeObject("node-0042", 42), "status": nodeStatus("node-0042", 42, now),
		"heartbeat": heartbeatPatch(now), "lease": leaseObject("node-0042", "17", now),
	} {
		var v map[string]any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Errorf("%s: %v\n%s", name, err, b)
		}
	}
	var hb struct {
		Status struct {
			Order      []map[string]string `json:"$setElementOrder/conditions"`
			Conditions []map[string]string `json:"conditions"`
		} `json:"status"`
	}
	if err := json.Unmarshal(heartbeatPatch(now), &hb); err != nil || len(hb.Status.Order) != 4 || hb.Status.Conditions[3]["lastHeartbeatTime"] != "2026-11-01T10:00:00Z" {
		t.Errorf("heartbeat %+v (%v)", hb, err)
	}
	if lease := string(leaseObject("n", "", now)); strings.Contains(lease, "resourceVersion") || !strings.Contains(lease, `"renewTime":"2026-11-01T10:00:00.000000Z"`) {
		t.Errorf("lease %s", lease)
	}
}

func TestEventClock(t *testing.T) {
	var c eventClock
	var into sharedOutcome
	t0 := time.Now()
	c.acknowledged(eventKey("ns", "a", "5"), t0)
	c.received(eventKey("ns", "a", "5"), t0.Add(3*time.Millisecond), &into)
	// Received before its acknowledgement: no delay.
	c.received(eventKey("ns", "b", "6"), t0, &into)
	c.acknowledged(eventKey("ns", "b", "6"), t0.Add(time.Millisecond))
	// Never acknowledged: not counted.
	c.received(eventKey("ns", "c", "7"), t0, &into)
	if into.o.ops != 2 {
		t.Fatalf("%d events timed, want 2", into.o.ops)
	}
	if p := into.o.latency.percentile(1); p < 2900*time.Microsecond || p > 3100*time.Microsecond {
		t.Errorf("max %v, want 3 ms", p)
	}
	if p := into.o.latency.percentile(0.5); p != 0 {
		t.Errorf("median %v, want 0", p)
	}
}

func TestListField(t *testing.T) {
	list := []byte(`{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"123","continue":"abc"},"items":[{"metadata":{"resourceVersion":"9"}}]}`)
	if rv, token := listField(list, "resourceVersion"), continueToken(list); rv != "123" || token != "abc" {
		t.Errorf("resourceVersion %q, continue %q", rv, token)
	}
	if rv := listField([]byte(`{"metadata":{},"items":[{"metadata":{"resourceVersion":"9"}}]}`), "resourceVersion"); rv != "" {
		t.Errorf("an item's resourceVersion %q taken for the list's", rv)
	}
	if got := withQuery("/api/v1/pods", "watch=1"); got != "/api/v1/pods?watch=1" {
		t.Error(got)
	}
	if got := withQuery("/api/v1/pods?fieldSelector=x", "watch=1"); got != "/api/v1/pods?fieldSelector=x&watch=1" {
		t.Error(got)
	}
}

func TestParseScenarios(t *testing.T) {
	got, err := ParseScenarios("curves, fanout,initialization")
	if want := []string{"initialization", "fanout", "curves"}; err != nil || !slices.Equal(got, want) {
		t.Errorf("%v (%v), want %v", got, err, want)
	}
	if all, err := ParseScenarios("all"); err != nil || !slices.Equal(all, ScenarioNames()) {
		t.Errorf("all: %v (%v)", all, err)
	}
	for _, bad := range []string{"nope", "matrix,,kubelet", "matrix,matrix", "all,matrix"} {
		if _, err := ParseScenarios(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	help := ScenarioHelp()
	for _, name := range ScenarioNames() {
		if !strings.Contains(help, "  "+name+" ") {
			t.Errorf("the help does not list %s:\n%s", name, help)
		}
	}
	cfg := DefaultConfig()
	if !cfg.runsShared() || cfg.runs("nodes") || cfg.runs("curves") {
		t.Errorf("the default run: %v", cfg.Scenarios)
	}
	cfg.Scenarios = []string{"curves"}
	if cfg.runsShared() {
		t.Error("curves alone runs the shared setup")
	}
}
